@preconcurrency import Glibc

/// Records VP8 frames to an IVF file that ffmpeg and browsers read.
///
/// ### Layout
/// ```
/// file header (32 bytes)                 frame header (12 bytes), then the frame
///  0 "DKIF"   4 version 0 (u16)           0 frame size (u32)
///  6 header size 32 (u16)                 4 pts (u64, time base units)
///  8 "VP80"  12 width (u16) 14 height (u16)
/// 16 time base denominator (u32)  20 numerator (u32)
/// 24 frame count (u32)            28 unused
/// ```
/// All little-endian. Each frame goes out in one `writev`, and the frame
/// count is patched every 16 frames and on close, so a file cut short by a
/// `kill -9` still holds only whole frames.
public final class IVFWriter {
    public let path: String
    public private(set) var frameCount: UInt32 = 0
    private let fd: Int32
    private var header = [UInt8](repeating: 0, count: 12)

    /// Creates (or truncates) `path`; throws a ``SystemError`` naming it.
    public init(path: String, width: Int, height: Int, timebaseDenominator: UInt32 = 90_000) throws(SystemError) {
        fd = try OutputFile.open(path)
        self.path = path
        let file = Self.fileHeader(width: width, height: height, timebaseDenominator: timebaseDenominator)
        let written = file.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, 32) }
        guard written == 32 else {
            let code = errno
            close(fd)
            throw SystemError("write", path, code: code)
        }
    }

    deinit { finish() }

    /// The 32-byte IVF file header (frame count 0), also the start of a live IVF stream.
    static func fileHeader(width: Int, height: Int, timebaseDenominator: UInt32 = 90_000) -> [UInt8] {
        var file = [UInt8](repeating: 0, count: 32)
        file.replaceSubrange(0..<4, with: Array("DKIF".utf8))
        put(&file, 6, UInt16(32))
        file.replaceSubrange(8..<12, with: Array("VP80".utf8))
        put(&file, 12, UInt16(clamping: width))
        put(&file, 14, UInt16(clamping: height))
        put(&file, 16, timebaseDenominator)
        put(&file, 20, UInt32(1))
        return file
    }

    private static func put<T: FixedWidthInteger>(_ bytes: inout [UInt8], _ offset: Int, _ value: T) {
        withUnsafeBytes(of: value.littleEndian) { for (i, b) in $0.enumerated() { bytes[offset + i] = b } }
    }

    /// Appends one frame.
    public func write(_ frame: EncodedFrame) throws(SystemError) {
        Self.put(&header, 0, UInt32(frame.bytes.count))
        Self.put(&header, 4, UInt64(bitPattern: frame.pts))
        let total = 12 + frame.bytes.count
        let written = header.withUnsafeMutableBytes { head in
            withUnsafeTemporaryAllocation(of: iovec.self, capacity: 2) { vectors in
                vectors[0] = iovec(iov_base: head.baseAddress, iov_len: 12)
                vectors[1] = iovec(iov_base: UnsafeMutableRawPointer(mutating: frame.bytes.baseAddress), iov_len: frame.bytes.count)
                var result: Int
                repeat { result = writev(fd, vectors.baseAddress, 2) } while result < 0 && errno == EINTR
                return result
            }
        }
        guard written == total else { throw SystemError("writev", path, code: written < 0 ? errno : EIO) }
        frameCount += 1
        if frameCount % 16 == 0 { patchCount() }
    }

    private func patchCount() {
        var count = frameCount.littleEndian
        _ = pwrite(fd, &count, 4, 24)
    }

    private var isFinished = false

    /// Sets the picture size in the file header (known once the first frame arrives).
    public func setDimensions(width: Int, height: Int) {
        var size = (UInt16(clamping: width).littleEndian, UInt16(clamping: height).littleEndian)
        _ = pwrite(fd, &size, 4, 12)
    }

    /// Writes the final frame count and closes the file.
    public func finish() {
        guard !isFinished else { return }
        isFinished = true
        patchCount()
        close(fd)
    }
}
