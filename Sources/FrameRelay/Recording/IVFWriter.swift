@preconcurrency import Glibc
import FrameRelaySystem

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
    private let file: FileDescriptor
    private var isFinished = false
    private var header = [UInt8](repeating: 0, count: 12)

    /// Creates (or truncates) `path`; throws a ``SystemError`` naming it.
    public init(path: String, width: Int, height: Int, timebaseDenominator: UInt32 = 90_000) throws(SystemError) {
        file = try OutputFile.open(path)
        self.path = path
        let header = Self.fileHeader(width: width, height: height, timebaseDenominator: timebaseDenominator)
        try header.withUnsafeBytes { bytes in Result { () throws(SystemError) in try file.writeAll(bytes) } }.get()
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
        guard !isFinished else { throw SystemError("writev", path, code: Errno(EBADF)) }  // the file was finished
        try header.withUnsafeBytes { head in Result { () throws(SystemError) in try file.writeAll(head, frame.bytes) } }.get()
        frameCount += 1
        if frameCount % 16 == 0 { patchCount() }
    }

    private func patchCount() {
        withUnsafeBytes(of: frameCount.littleEndian) { bytes in _ = try? file.write(bytes, at: 24) }
    }

    /// Sets the picture size in the file header (known once the first frame arrives).
    public func setDimensions(width: Int, height: Int) {
        let size = (UInt16(clamping: width).littleEndian, UInt16(clamping: height).littleEndian)
        withUnsafeBytes(of: size) { bytes in _ = try? file.write(bytes, at: 12) }
    }

    /// Writes the final frame count (the file closes when the writer goes away).
    public func finish() {
        guard !isFinished else { return }
        isFinished = true
        patchCount()
    }
}
