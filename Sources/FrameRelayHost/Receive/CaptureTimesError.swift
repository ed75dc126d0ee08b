/// Why a file of capture times (JSON lines with `frame` and `captured`) could not be read.
public enum CaptureTimesError: Error, CustomStringConvertible, Equatable {
    case unreadable(String)
    case malformedLine(String, line: Int)
    case empty(String)

    public var description: String {
        switch self {
        case .unreadable(let path): "cannot read \(path)"
        case .malformedLine(let path, let line): "line \(line) of \(path) is not a capture record like {\"frame\":1,\"captured\":123}"
        case .empty(let path): "no capture records in \(path): expected JSON lines like {\"frame\":1,\"captured\":123}"
        }
    }
}
