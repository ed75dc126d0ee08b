import FrameRelaySystem
/// Why an RTP stream (sending or receiving) could not start.
public enum TransportError: Error, CustomStringConvertible, Equatable {
    case invalidPacketSize(Int)
    case invalidPort(Int)
    case system(SystemError)

    public var description: String {
        switch self {
        case .invalidPacketSize(let size): "invalid packet size \(size): must be 64...9000"
        case .invalidPort(let port): "invalid port \(port): must be 1...65534"
        case .system(let error): error.description
        }
    }
}
