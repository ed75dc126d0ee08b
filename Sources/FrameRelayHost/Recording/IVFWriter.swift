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
/// 24 length (u32)                 28 unused
/// ```
/// All little-endian. The time base is 1/90,000 s, as RTP's and the live
/// `/stream.ivf`'s (and WebRTC's own IVF writer's): each frame's pts is its
/// capture time from the first frame's (strictly after the one before), so a
/// recording plays at the pace it was captured, whatever the producer's rate
/// against the host's `--frame-rate`. The length is the last pts + one frame
/// of the share's frame rate: what ffmpeg reads as the duration in time
/// base units (libvpx's writer puts a frame count there; no reader we know
/// plays by it). At 90 kHz it holds 13 h 15 min 21 s: a longer recording's
/// length stops there, and its frames keep their times. Each frame goes out in one
/// `writev` and the length is patched after it, so a file cut short by a
/// `kill -9` holds whole frames and says how long they last. A write that
/// fails (a full disk) cuts the file back to its last whole frame.
public final class IVFWriter {
    public let path: String
    /// Frames written whole.
    public private(set) var frameCount: UInt32 = 0
    private let file: FileDescriptor
    private var isFinished = false
    private var header = [UInt8](repeating: 0, count: 12)
    /// The frames' pts, and where the last whole frame ends.
    private var clock = IVFClock()
    private var end = 32
    /// One frame of the share's frame rate, in pts units (the last frame's duration).
    private let frameDuration: Int64

    /// Creates (or truncates) `path`, holding its lock; throws a ``SystemError`` naming it.
    public init(path: String, width: Int, height: Int, frameRate: Int = 30) throws(SystemError) {
        file = try OutputFile.open(path)
        self.path = path
        frameDuration = Int64(VP8Settings.frameTicks(frameRate))
        let header = Self.fileHeader(width: width, height: height)
        try header.withUnsafeBytes { bytes in Result { () throws(SystemError) in try file.writeAll(bytes) } }.get()
    }

    deinit { finish() }

    /// The 32-byte IVF file header (length 0), also the start of a live IVF stream.
    static func fileHeader(width: Int, height: Int) -> [UInt8] {
        var file = [UInt8](repeating: 0, count: 32)
        file.replaceSubrange(0..<4, with: Array("DKIF".utf8))
        put(&file, 6, UInt16(32))
        file.replaceSubrange(8..<12, with: Array("VP80".utf8))
        put(&file, 12, UInt16(clamping: width))
        put(&file, 14, UInt16(clamping: height))
        put(&file, 16, UInt32(IVFClock.rate))
        put(&file, 20, UInt32(1))
        return file
    }

    private static func put<T: FixedWidthInteger>(_ bytes: inout [UInt8], _ offset: Int, _ value: T) {
        withUnsafeBytes(of: value.littleEndian) { for (i, b) in $0.enumerated() { bytes[offset + i] = b } }
    }

    /// Appends one frame (its pts in 90 kHz units); on a failed write, the
    /// file is cut back to its last whole frame and the error thrown.
    public func write(_ frame: EncodedFrame) throws(SystemError) {
        guard !isFinished else { throw SystemError("writev", path, code: Errno(EBADF)) }  // the file was finished
        var clock = self.clock
        let pts = clock.pts(of: frame.pts)
        Self.put(&header, 0, UInt32(frame.bytes.count))
        Self.put(&header, 4, UInt64(pts))
        do {
            try header.withUnsafeBytes { head in Result { () throws(SystemError) in try file.writeAll(head, frame.bytes) } }.get()
        } catch {
            try? file.truncate(to: end)
            patchLength()
            throw error
        }
        end += 12 + frame.bytes.count
        self.clock = clock
        frameCount += 1
        patchLength()
    }

    private func patchLength() {
        withUnsafeBytes(of: UInt32(clamping: length).littleEndian) { bytes in _ = try? file.write(bytes, at: 24) }
    }

    /// The file's length in pts units: the last frame's pts + one frame (0 before the first).
    private var length: Int64 { clock.last < 0 ? 0 : clock.last + frameDuration }

    /// How long the file plays, in seconds (past the length's limit too).
    public var seconds: Double { Double(length) / Double(IVFClock.rate) }

    /// Sets the picture size in the file header (known once the first frame arrives).
    public func setDimensions(width: Int, height: Int) {
        let size = (UInt16(clamping: width).littleEndian, UInt16(clamping: height).littleEndian)
        withUnsafeBytes(of: size) { bytes in _ = try? file.write(bytes, at: 12) }
    }

    /// Writes the final length (the file closes when the writer goes away).
    public func finish() {
        guard !isFinished else { return }
        isFinished = true
        patchLength()
    }
}

/// A recording's timestamps: the capture clock at 90 kHz from the first
/// frame, each strictly after the one before (two frames never share a pts,
/// which ffmpeg refuses).
struct IVFClock {
    /// Pts units a second.
    static let rate: Int64 = 90_000
    private var first: Int64?
    /// The last pts given (-1 before the first).
    private(set) var last: Int64 = -1

    /// The pts of a frame captured at `pts90kHz`.
    mutating func pts(of pts90kHz: Int64) -> Int64 {
        let first = self.first ?? pts90kHz
        self.first = first
        last = max(last + 1, pts90kHz - first)
        return last
    }
}
