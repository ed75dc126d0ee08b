/// Why a `HOST:PORT` destination is not one.
import FrameRelayRTP

public enum DestinationError: Error, CustomStringConvertible, Equatable {
    case notHostAndPort(String)
    case invalidPort(String)
    case missingHost(String)
    case unresolved(host: String, String, reason: String)

    public var description: String {
        switch self {
        case .notHostAndPort(let text): "invalid destination \"\(text)\": expected HOST:PORT, for example 127.0.0.1:5004"
        case .invalidPort(let text): "invalid destination \"\(text)\": port must be 1...65534 (RTCP uses the next one)"
        case .missingHost(let text): "invalid destination \"\(text)\": missing host"
        case .unresolved(let host, let text, let reason): "cannot resolve host \"\(host)\" in destination \"\(text)\": \(reason)"
        }
    }
}
