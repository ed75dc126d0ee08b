/// A frame source that could not be opened or read.
public enum SourceError: Error, CustomStringConvertible {
    case missingFile(String)
    case directory(String)
    case malformed(String, String)
    case display(String)
    /// A desktop screen cast (D-Bus, the portal or Mutter, PipeWire) that could not start or went on.
    case screenCast(String)
    /// A D-Bus call answered with error `name`.
    case dbus(name: String, call: String, message: String)

    public var description: String {
        switch self {
        case .missingFile(let path): "cannot open \(path): no such file or not readable"
        case .directory(let path): "\(path) is a directory, not a video file: give a .y4m file"
        case .malformed(let path, let reason): "malformed video file \(path): \(reason)"
        case .display(let reason): "X11 capture: \(reason)"
        case .screenCast(let reason): "screen cast: \(reason)"
        case .dbus(let name, let call, let message): "screen cast: \(call) failed: \(message)\(name.isEmpty ? "" : " (\(name))")"
        }
    }
}
