/// Splits VP8 frames into RTP packets (RFC 3550 header, RFC 7741 payload).
///
/// ### Layout of each packet
/// ```
///  0  V=2 P=0 X=0 CC=0 | M PT=96 | sequence (u16)   RTP header, 12 bytes
///  4  timestamp (u32, 90 kHz)
///  8  SSRC (u32)
/// 12  X=1 R N S=first PID=0 | I=1 | M=1 PictureID (15 bits)   VP8 descriptor, 4 bytes
/// 16  VP8 partition bytes
/// ```
/// Sizes are even across a frame's packets; the marker bit is on the last.
package struct RTPPacketizer {
    package static let headerSize = RTPHeader.size
    package static let descriptorSize = 4
    package let ssrc: UInt32
    package let payloadType: UInt8
    package let maxPacketSize: Int
    private(set) var sequence: UInt16
    package private(set) var pictureID: UInt16

    /// Starts at a random sequence number and PictureID unless given (RFC 3550 §5.1).
    package init(
        ssrc: UInt32, payloadType: UInt8 = 96, maxPacketSize: Int,
        sequence: UInt16 = .random(in: 0...UInt16.max), pictureID: UInt16 = .random(in: 0...0x7FFF)
    ) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.maxPacketSize = maxPacketSize
        self.sequence = sequence
        self.pictureID = pictureID & 0x7FFF
    }

    /// Writes each packet of `frame` into `scratch` (at least
    /// `maxPacketSize` bytes) and hands it to `send` with its sequence number.
    package mutating func packetize(
        _ frame: UnsafeRawBufferPointer, timestamp: UInt32, scratch: UnsafeMutableRawPointer,
        _ send: (UnsafeRawBufferPointer, UInt16) throws -> Void
    ) rethrows {
        let room = maxPacketSize - Self.headerSize - Self.descriptorSize
        let count = max(1, (frame.count + room - 1) / room)
        let even = (frame.count + count - 1) / count
        var offset = 0
        for index in 0..<count {
            let length = min(even, frame.count - offset)
            let last = index == count - 1
            RTPHeader(marker: last, payloadType: payloadType, sequence: sequence, timestamp: timestamp, ssrc: ssrc).write(to: scratch)
            scratch.storeBytes(of: index == 0 ? 0x90 : 0x80, toByteOffset: 12, as: UInt8.self)
            scratch.storeBytes(of: 0x80, toByteOffset: 13, as: UInt8.self)
            scratch.storeBytes(of: (0x8000 | pictureID).bigEndian, toByteOffset: 14, as: UInt16.self)
            (scratch + 16).copyMemory(from: frame.baseAddress! + offset, byteCount: length)
            try send(UnsafeRawBufferPointer(start: scratch, count: 16 + length), sequence)
            sequence &+= 1
            offset += length
        }
        pictureID = (pictureID &+ 1) & 0x7FFF
    }
}
