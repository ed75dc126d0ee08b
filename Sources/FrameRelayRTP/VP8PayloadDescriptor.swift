/// What a VP8 RTP payload (RFC 7741 §4.2) says about its frame, read
/// without decoding: whether it starts the frame, the PictureID, the
/// temporal layer and TL0PICIDX, and, on a frame's first packet, whether
/// the frame is a keyframe.
///
/// ### Layout
/// ```
///  0  X R N S R PID (3 bits)        S: start of a partition, PID: its index
///  1  I L T K RSV                   when X
///  2  M PictureID (7 or 15 bits)    when I (M: 15 bits)
///     TL0PICIDX when L, TID/KEYIDX when T or K
///     VP8 payload header: bit 0 of its first byte is P, 0 on a keyframe (RFC 6386 §9.1)
/// ```
package struct VP8PayloadDescriptor: Equatable {
    /// The packet starts the frame (S=1, PID=0).
    package var startsFrame: Bool
    /// The frame is a keyframe (known only on the packet that starts it).
    package var keyframe: Bool
    /// The PictureID (7 or 15 bits), when the descriptor carries one.
    package var pictureID: UInt16?
    /// The temporal layer (TID, Y, N), when the descriptor carries one (T).
    package var temporalLayer: VP8TemporalLayer?
    /// TL0PICIDX, when the descriptor carries it (L).
    package var baseLayerIndex: UInt8?
    /// Where the VP8 data starts, past the descriptor.
    package var dataOffset: Int

    /// Reads a payload; nil when the descriptor is malformed (runs past the payload).
    package init?(_ payload: UnsafeRawBufferPointer) {
        guard let first = payload.first else { return nil }
        var offset = 1
        pictureID = nil
        temporalLayer = nil
        baseLayerIndex = nil
        if first & 0x80 != 0 {
            guard payload.count > 1 else { return nil }
            let extensions = payload[1]
            offset = 2
            if extensions & 0x80 != 0 {
                guard payload.count > offset else { return nil }
                if payload[offset] & 0x80 != 0 {
                    guard payload.count > offset + 1 else { return nil }
                    pictureID = UInt16(payload[offset] & 0x7F) << 8 | UInt16(payload[offset + 1])
                    offset += 2
                } else {
                    pictureID = UInt16(payload[offset])
                    offset += 1
                }
            }
            if extensions & 0x40 != 0 {
                guard payload.count > offset else { return nil }
                baseLayerIndex = payload[offset]
                offset += 1
            }
            if extensions & 0x30 != 0 {
                guard payload.count > offset else { return nil }
                if extensions & 0x20 != 0 {
                    temporalLayer = VP8TemporalLayer(id: payload[offset] >> 6, sync: payload[offset] & 0x20 != 0, discardable: first & 0x20 != 0)
                }
                offset += 1
            }
        }
        guard offset <= payload.count else { return nil }
        dataOffset = offset
        startsFrame = first & 0x10 != 0 && first & 0x07 == 0
        keyframe = startsFrame && offset < payload.count && payload[offset] & 0x01 == 0
    }
}
