@preconcurrency import Glibc
import FrameRelaySystem

/// Where RTP goes: a resolved address and port; RTCP goes to the next
/// port unless the receiver named another (a Janus mountpoint's).
public struct Destination: Sendable, CustomStringConvertible {
    public let host: String
    public let port: Int
    public let rtcpPort: Int
    let address: SocketAddress

    /// Parses and resolves `HOST:PORT` (`[::1]:5004` for IPv6); throws a
    /// ``DestinationError`` that names what is wrong.
    public init(_ text: String) throws(DestinationError) {
        var host: Substring, portText: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(after: close)...].drop { $0 == ":" }
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        } else {
            throw .notHostAndPort(text)
        }
        guard let port = Int(portText), (1...65534).contains(port) else { throw .invalidPort(text) }
        guard !host.isEmpty else { throw .missingHost(text) }
        do {
            address = try SocketAddress.resolve(String(host), port: port, type: SOCK_DGRAM)[0]
        } catch {
            throw .unresolved(host: String(host), text, reason: error.reason)
        }
        self.host = String(host)
        self.port = port
        rtcpPort = port + 1
    }

    private init(host: String, port: Int, rtcpPort: Int, address: SocketAddress) {
        self.host = host
        self.port = port
        self.rtcpPort = rtcpPort
        self.address = address
    }

    var family: Int32 { address.family }

    /// The same host, `offset` ports further (the Nth share of a host).
    public func withPortOffset(_ offset: Int) -> Destination {
        Destination(host: host, port: port + offset, rtcpPort: rtcpPort + offset, address: address.withPort(port + offset))
    }

    /// The same RTP port, with RTCP going to `newPort`.
    public func withRTCPPort(_ newPort: Int) -> Destination { Destination(host: host, port: port, rtcpPort: newPort, address: address) }

    /// Where this destination's RTCP goes.
    var rtcpAddress: SocketAddress { address.withPort(rtcpPort) }

    public var description: String { family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

