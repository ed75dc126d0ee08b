import FrameRelaySystem
/// The `--trace` file: one JSON line per frame with its time at every
/// stage, appended off the frame path a few times a second.
public final class TraceFile {
    private let file: FileDescriptor
    private var pending = ""

    /// Creates (or truncates) `path`.
    public init(path: String) throws(SystemError) { file = try OutputFile.open(path) }

    /// Adds a line to what the next ``flush()`` writes.
    public func append(_ line: String) { pending += line }

    /// Writes what was appended; a full disk loses trace lines, not the share.
    public func flush() {
        guard !pending.isEmpty else { return }
        pending.withUTF8 { bytes in _ = try? file.writeAll(UnsafeRawBufferPointer(bytes)) }
        pending.removeAll(keepingCapacity: true)
    }
}
