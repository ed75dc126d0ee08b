/// Why a subscriber could not join, or stopped: one line, naming what failed.
public enum SubscriberError: Error, CustomStringConvertible, Equatable {
    /// OpenSSL or libsrtp2 refused a call.
    case crypto(String, String)
    /// Janus answered with an error, or not at all.
    case janus(String)
    /// A system call failed (a socket, epoll).
    case system(String)

    public var description: String {
        switch self {
        case .crypto(let call, let reason): "\(call): \(reason)"
        case .janus(let reason): reason
        case .system(let reason): reason
        }
    }
}
