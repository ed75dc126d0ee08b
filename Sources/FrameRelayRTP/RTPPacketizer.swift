/// Splits VP8 frames into RTP packets (RFC 3550 header, RFC 7741 payload).
///
/// ### Layout of each packet
/// ```
///  0  V=2 P=0 X=0 CC=0 | M PT=96 | sequence (u16)   RTP header, 12 bytes
///  4  timestamp (u32, 90 kHz)
///  8  SSRC (u32)
/// 12  X=1 R N S=first PID=0 | I=1 L T K=0 | M=1 PictureID (15 bits)   VP8 descriptor, 4 bytes
/// 16  TL0PICIDX | TID (2 bits) Y KEYIDX=0                  with temporal layers: 2 bytes more
/// 16 or 18  VP8 partition bytes
/// ```
/// Sizes are even across a frame's packets; the marker bit is on the last.
/// A frame of a temporal layer (``VP8TemporalLayer``) carries L and T: its
/// TID and Y, N when it is discardable, and TL0PICIDX, which counts the
/// base-layer frames (each TL0 frame carries a new one; those above it, the
/// one of the frame they build on).
package struct RTPPacketizer {
    package static let headerSize = RTPHeader.size
    package static let descriptorSize = 4
    /// The descriptor of a frame of a temporal layer: TL0PICIDX and TID/Y/KEYIDX more.
    package static let layeredDescriptorSize = 6
    package let ssrc: UInt32
    package let payloadType: UInt8
    package let maxPacketSize: Int
    private(set) var sequence: UInt16
    package private(set) var pictureID: UInt16
    /// The TL0PICIDX of the last base-layer frame.
    package private(set) var baseLayerIndex: UInt8

    /// Starts at a random sequence number, PictureID and TL0PICIDX unless given (RFC 3550 §5.1).
    package init(
        ssrc: UInt32, payloadType: UInt8 = 96, maxPacketSize: Int,
        sequence: UInt16 = .random(in: 0...UInt16.max), pictureID: UInt16 = .random(in: 0...0x7FFF), baseLayerIndex: UInt8 = .random(in: 0...255)
    ) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.maxPacketSize = maxPacketSize
        self.sequence = sequence
        self.pictureID = pictureID & 0x7FFF
        self.baseLayerIndex = baseLayerIndex
    }

    /// Writes each packet of `frame` into `scratch` (at least
    /// `maxPacketSize` bytes) and hands it to `send` with its sequence number.
    /// `layer`: the frame's temporal layer, when the stream has them.
    package mutating func packetize(
        _ frame: UnsafeRawBufferPointer, timestamp: UInt32, layer: VP8TemporalLayer? = nil, scratch: UnsafeMutableRawPointer,
        _ send: (UnsafeRawBufferPointer, UInt16) throws -> Void
    ) rethrows {
        let descriptor = layer == nil ? Self.descriptorSize : Self.layeredDescriptorSize
        if layer?.id == 0 { baseLayerIndex &+= 1 }
        let payloadStart = Self.headerSize + descriptor
        let room = maxPacketSize - payloadStart
        let count = max(1, (frame.count + room - 1) / room)
        let even = (frame.count + count - 1) / count
        let discardable: UInt8 = layer?.discardable == true ? 0x20 : 0
        var offset = 0
        for index in 0..<count {
            let length = min(even, frame.count - offset)
            let last = index == count - 1
            RTPHeader(marker: last, payloadType: payloadType, sequence: sequence, timestamp: timestamp, ssrc: ssrc).write(to: scratch)
            scratch.storeBytes(of: (index == 0 ? 0x90 : 0x80) | discardable, toByteOffset: 12, as: UInt8.self)
            scratch.storeBytes(of: layer == nil ? 0x80 : 0xE0, toByteOffset: 13, as: UInt8.self)
            scratch.storeBytes(of: (0x8000 | pictureID).bigEndian, toByteOffset: 14, as: UInt16.self)
            if let layer {
                scratch.storeBytes(of: baseLayerIndex, toByteOffset: 16, as: UInt8.self)
                scratch.storeBytes(of: layer.id << 6 | (layer.sync ? 0x20 : 0), toByteOffset: 17, as: UInt8.self)
            }
            (scratch + payloadStart).copyMemory(from: frame.baseAddress! + offset, byteCount: length)
            try send(UnsafeRawBufferPointer(start: scratch, count: payloadStart + length), sequence)
            sequence &+= 1
            offset += length
        }
        pictureID = (pictureID &+ 1) & 0x7FFF
    }
}
