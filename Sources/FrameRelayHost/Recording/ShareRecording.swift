import FrameRelaySystem

/// A share's recording as a sink: the IVF file, sized by its first frame.
/// A recording that cannot be written (a full disk) stops with its whole
/// frames kept and says why in ``stats``; the share and its other outputs
/// go on.
public final class ShareRecording: FrameSink {
    private var writer: IVFWriter?
    private var sizeWritten = false
    public private(set) var stats: RecordingStats
    /// Whether it still writes (not stopped by a failed write).
    public var isRecording: Bool { writer != nil }

    /// Records into `writer`, opened already (its lock held).
    public init(_ writer: IVFWriter) {
        self.writer = writer
        stats = RecordingStats(path: writer.path)
    }

    /// Opens a recording (its lock held: another live host's recording is never truncated).
    public static func open(_ path: String, frameRate: Int) throws(RecordingError) -> IVFWriter {
        do {
            return try IVFWriter(path: path, width: 0, height: 0, frameRate: frameRate)
        } catch {
            throw RecordingError(path: path, code: error.code)
        }
    }

    public func deliver(_ frame: EncodedFrame, captureTime: UInt64, timing: inout FrameTiming) {
        // The whole picture only: a lower simulcast layer is for narrow links.
        guard let writer, frame.isTopLayer else { return }
        if !sizeWritten {
            writer.setDimensions(width: frame.width, height: frame.height)
            sizeWritten = true
        }
        do {
            try writer.write(frame)
            stats.frames += 1
            stats.bytes += UInt64(frame.bytes.count)
            stats.seconds = writer.seconds
        } catch {
            stats.stopped = "\(error.call): \(error.code)"
            writer.finish()
            self.writer = nil
        }
    }

    /// Writes the final length and closes the file; a recording that holds
    /// no frame (no producer came) leaves no header-only file behind.
    public func finish() {
        writer?.finish()
        if stats.frames == 0, stats.stopped == nil, OutputFile.removeIfFile(stats.path) { stats.removed = true }
    }
}
