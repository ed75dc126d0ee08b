import FrameRelaySystem
/// Why a recording could not be written.
public struct RecordingError: Error, CustomStringConvertible, Equatable {
    public var path: String
    public var code: Errno

    public var description: String { "cannot write recording \(path): \(code.name)" }
}
