/// A frame source that could not be opened or read.
public enum SourceError: Error, CustomStringConvertible {
    case missingFile(String)
    case directory(String)
    case malformed(String, String)
    case display(String)

    public var description: String {
        switch self {
        case .missingFile(let path): "cannot open \(path): no such file or not readable"
        case .directory(let path): "\(path) is a directory, not a video file: give a .y4m file"
        case .malformed(let path, let reason): "malformed video file \(path): \(reason)"
        case .display(let reason): "X11 capture: \(reason)"
        }
    }
}
