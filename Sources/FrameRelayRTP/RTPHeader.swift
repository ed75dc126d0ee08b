/// The fixed RTP header (RFC 3550 §5.1).
///
/// ### Layout
/// ```
///  0  V=2 P X CC (4 bits) | M PT (7 bits) | sequence (u16)
///  4  timestamp (u32, 90 kHz for video)
///  8  SSRC (u32)
/// 12  CSRCs (4 bytes each), then a header extension when X is set
/// ```
/// All big-endian.
package struct RTPHeader: Equatable {
    package static let size = 12
    package var marker: Bool
    package var payloadType: UInt8
    package var sequence: UInt16
    package var timestamp: UInt32
    package var ssrc: UInt32
    /// Where the payload starts (past CSRCs and a header extension); may be
    /// at or past the packet's end in a malformed packet.
    package var payloadOffset: Int

    /// Parses the header of `packet`; nil unless it is at least 12 bytes of RTP version 2.
    package init?(parsing packet: UnsafeRawBufferPointer) {
        guard packet.count >= Self.size, packet[0] >> 6 == 2 else { return nil }
        func u32(_ at: Int) -> UInt32 { UInt32(packet[at]) << 24 | UInt32(packet[at + 1]) << 16 | UInt32(packet[at + 2]) << 8 | UInt32(packet[at + 3]) }
        marker = packet[1] & 0x80 != 0
        payloadType = packet[1] & 0x7F
        sequence = UInt16(packet[2]) << 8 | UInt16(packet[3])
        timestamp = u32(4)
        ssrc = u32(8)
        var offset = Self.size + 4 * Int(packet[0] & 0x0F)
        if packet[0] & 0x10 != 0, offset + 4 <= packet.count {
            offset += 4 + 4 * (Int(packet[offset + 2]) << 8 | Int(packet[offset + 3]))
        }
        payloadOffset = offset
    }

    package init(marker: Bool, payloadType: UInt8, sequence: UInt16, timestamp: UInt32, ssrc: UInt32) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequence = sequence
        self.timestamp = timestamp
        self.ssrc = ssrc
        payloadOffset = Self.size
    }

    /// Writes the 12-byte header (no CSRCs, no extension) at `out`.
    package func write(to out: UnsafeMutableRawPointer) {
        out.storeBytes(of: 0x80, as: UInt8.self)
        out.storeBytes(of: (marker ? 0x80 : 0) | payloadType, toByteOffset: 1, as: UInt8.self)
        out.storeBytes(of: sequence.bigEndian, toByteOffset: 2, as: UInt16.self)
        out.storeBytes(of: timestamp.bigEndian, toByteOffset: 4, as: UInt32.self)
        out.storeBytes(of: ssrc.bigEndian, toByteOffset: 8, as: UInt32.self)
    }
}
