import FrameRelaySystem
/// Why the viewer's HTTP server could not start.
public enum HTTPServerError: Error, CustomStringConvertible, Equatable {
    case invalidAddress(String)
    case addressInUse(String, Int)
    case cannotListen(String, Int, Errno)

    public var description: String {
        switch self {
        case .invalidAddress(let address): "invalid HTTP address \"\(address)\": expected an IPv4 address such as 127.0.0.1"
        case .addressInUse(let address, let port):
            "HTTP address \(address):\(port) is already in use: another program listens there; choose another port, such as --http \(address):\(port < 65535 ? port + 1 : 8081)"
        case .cannotListen(let address, let port, let code): "cannot listen on \(address):\(port): \(code.name)"
        }
    }
}
