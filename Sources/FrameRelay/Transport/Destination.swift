@preconcurrency import Glibc

/// Where RTP goes: a resolved address and port; RTCP goes to the next port.
public struct Destination: Sendable, CustomStringConvertible {
    public let host: String
    public let port: Int
    let address: sockaddr_storage
    let length: socklen_t
    let family: Int32

    /// Parses and resolves `HOST:PORT` (`[::1]:5004` for IPv6); throws a
    /// ``UsageError`` that names what is wrong.
    public init(_ text: String) throws {
        var host: Substring, portText: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(after: close)...].drop { $0 == ":" }
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        } else {
            throw UsageError("invalid destination \"\(text)\": expected HOST:PORT, for example 127.0.0.1:5004")
        }
        guard let port = Int(portText), (1...65534).contains(port) else {
            throw UsageError("invalid destination \"\(text)\": port must be 1...65534 (RTCP uses the next one)")
        }
        guard !host.isEmpty else { throw UsageError("invalid destination \"\(text)\": missing host") }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(String(host), String(port), &hints, &result)
        guard status == 0, let info = result else {
            throw UsageError("cannot resolve host \"\(host)\" in destination \"\(text)\": \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(result) }
        var storage = sockaddr_storage()
        memcpy(&storage, info.pointee.ai_addr, Int(info.pointee.ai_addrlen))
        self.host = String(host)
        self.port = port
        self.address = storage
        self.length = info.pointee.ai_addrlen
        self.family = info.pointee.ai_family
    }

    /// The same host, `offset` ports further (the Nth share of a host).
    public func withPortOffset(_ offset: Int) -> Destination { withPort(port + offset) }

    /// The same host, another port.
    func withPort(_ newPort: Int) -> Destination {
        var storage = address
        withUnsafeMutableBytes(of: &storage) { bytes in
            // sin_port and sin6_port both sit at offset 2, in network byte order.
            bytes.storeBytes(of: UInt16(newPort).bigEndian, toByteOffset: 2, as: UInt16.self)
        }
        return Destination(host: host, port: newPort, address: storage, length: length, family: family)
    }

    private init(host: String, port: Int, address: sockaddr_storage, length: socklen_t, family: Int32) {
        self.host = host
        self.port = port
        self.address = address
        self.length = length
        self.family = family
    }

    public var description: String { family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
