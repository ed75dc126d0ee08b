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
/// All little-endian. The time base is one frame of the share's frame rate
/// and the first frame's pts is 0, each frame at its capture time's frame
/// (strictly after the one before). The length is the last pts + 1: the
/// number of frames when every frame is encoded, and what ffmpeg reads as
/// the duration in time base units either way. Each frame goes out in one
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
    private var clock: IVFClock
    private var end = 32

    /// Creates (or truncates) `path`, holding its lock; throws a ``SystemError`` naming it.
    public init(path: String, width: Int, height: Int, frameRate: Int = 30) throws(SystemError) {
        file = try OutputFile.open(path)
        self.path = path
        clock = IVFClock(frameRate: frameRate)
        let header = Self.fileHeader(width: width, height: height, timebaseDenominator: UInt32(clock.frameRate))
        try header.withUnsafeBytes { bytes in Result { () throws(SystemError) in try file.writeAll(bytes) } }.get()
    }

    deinit { finish() }

    /// The 32-byte IVF file header (length 0), also the start of a live IVF stream.
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
        withUnsafeBytes(of: UInt32(clamping: clock.last + 1).littleEndian) { bytes in _ = try? file.write(bytes, at: 24) }
    }

    /// How long the file plays: its length in frames (the last pts + 1) at its frame rate.
    public var seconds: Double { Double(clock.last + 1) / Double(clock.frameRate) }

    /// How far the last frame's time runs ahead of its capture time, in seconds (``IVFClock``).
    public var secondsAhead: Double { Double(clock.ahead) / Double(clock.frameRate) }

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

/// A recording's timestamps, in frames of the share's frame rate: the
/// first frame at 0, each frame at its capture time's frame, strictly
/// after the one before. Two frames captured within one frame of each
/// other (a producer catching up after a stall) get two frames: a player
/// that takes the time base as the frame rate, as ffmpeg does, never sees a
/// pts twice. Frames that come faster than the frame rate for long run
/// ahead of their capture times (a producer at 60 frames/s recorded at the
/// host's `--frame-rate 30` plays at half speed; the host says so once the
/// recording runs half a second ahead): `--max-fps` holds
/// producers to the host's rate. The live `/stream.ivf` is timed by the
/// capture clock itself (90 kHz), so it always plays in real time.
struct IVFClock {
    let frameRate: Int
    private var first: Int64?
    /// The last pts given (-1 before the first).
    private(set) var last: Int64 = -1
    /// How many frames the last pts runs ahead of its capture time's frame.
    private(set) var ahead: Int64 = 0

    init(frameRate: Int) { self.frameRate = max(1, frameRate) }

    /// The pts of a frame captured at `pts90kHz`.
    mutating func pts(of pts90kHz: Int64) -> Int64 {
        let first = self.first ?? pts90kHz
        self.first = first
        let captured = (pts90kHz - first) * Int64(frameRate) / 90_000
        last = max(last + 1, captured)
        ahead = last - captured
        return last
    }
}
