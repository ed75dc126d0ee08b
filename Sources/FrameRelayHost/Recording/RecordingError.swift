import FrameRelaySystem
/// Why a recording could not be written.
public struct RecordingError: Error, CustomStringConvertible, Equatable {
    public var path: String
    public var code: Errno

    public var description: String {
        code == .wouldBlock ? "cannot write recording \(path): another process is writing it (it holds the file's lock)" : "cannot write recording \(path): \(code.name)"
    }
}
