/// A codec library call that failed, named with the library's own message.
public enum CodecError: Error, CustomStringConvertible {
    case library(String, String)
    case invalidSetting(String)

    public var description: String {
        switch self {
        case .library(let call, let message): "\(call): \(message)"
        case .invalidSetting(let message): message
        }
    }
}
