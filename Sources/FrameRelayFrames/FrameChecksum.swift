/// A fast 64-bit checksum of a frame's payload, 8 bytes a step, that a
/// producer can store in the metadata and a host can verify to prove a frame
/// arrived whole (no torn frame).
public enum FrameChecksum {
    /// The checksum of `bytes`; never 0 (0 means "none" in the metadata).
    public static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        guard let base = bytes.baseAddress else { return 1 }
        var hash: UInt64 = 0x9e37_79b9_7f4a_7c15 ^ UInt64(bytes.count)
        let words = bytes.count / 8
        var index = 0
        while index < words {
            let word = base.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self)
            hash = (hash ^ word) &* 0x0000_0100_0000_01b3
            hash ^= hash >> 29
            index += 1
        }
        var tail = words * 8
        while tail < bytes.count {
            hash = (hash ^ UInt64(bytes[tail])) &* 0x0000_0100_0000_01b3
            tail += 1
        }
        return hash == 0 ? 1 : hash
    }
}
