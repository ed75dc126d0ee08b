@preconcurrency import Glibc

/// An IPv4 or IPv6 socket address and its length: the one place that turns
/// `sockaddr_storage` into the `sockaddr *` the socket calls take.
public struct SocketAddress: Sendable {
    package var storage = sockaddr_storage()
    package var length: socklen_t

    /// An empty address, room for any family (filled by `recvfrom`, `getsockname`).
    package init() { length = socklen_t(MemoryLayout<sockaddr_storage>.size) }

    /// `address` (IPv4 dotted quad) and `port`; nil when it is not one.
    package init?(ipv4 address: String, port: Int) {
        var inet = sockaddr_in()
        inet.sin_family = sa_family_t(AF_INET)
        inet.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
        guard inet_pton(AF_INET, address, &inet.sin_addr) == 1 else { return nil }
        length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: withUnsafeBytes(of: &inet) { UnsafeRawBufferPointer($0) }) }
    }

    /// A Unix socket's abstract `name` (Linux: no file, gone with the last socket bound to it).
    package init(abstractUnix name: String) {
        var unix = sockaddr_un()
        unix.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(name.utf8.prefix(MemoryLayout.size(ofValue: unix.sun_path) - 1))
        withUnsafeMutableBytes(of: &unix.sun_path) { path in
            path[0] = 0
            path.baseAddress!.advanced(by: 1).copyMemory(from: bytes, byteCount: bytes.count)
        }
        length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + 1 + bytes.count)
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: withUnsafeBytes(of: &unix) { UnsafeRawBufferPointer($0) }) }
    }

    /// The address `getaddrinfo` returned.
    package init(_ info: addrinfo) {
        length = info.ai_addrlen
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: info.ai_addr, count: Int(info.ai_addrlen))) }
    }

    /// Every address `host` resolves to for `port` (IPv6 and IPv4, in
    /// `getaddrinfo`'s order); throws `getaddrinfo`'s reason.
    package static func resolve(_ host: String, port: Int, type: __socket_type) throws(ResolutionError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(type.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &found)
        guard status == 0, found != nil else { throw ResolutionError(reason: String(cString: gai_strerror(status))) }
        defer { freeaddrinfo(found) }
        var addresses: [SocketAddress] = []
        while let info = found {
            addresses.append(SocketAddress(info.pointee))
            found = info.pointee.ai_next
        }
        return addresses
    }

    /// Why a host name did not resolve (`gai_strerror`'s text).
    package struct ResolutionError: Error { package var reason: String }

    package var family: Int32 { Int32(storage.ss_family) }

    /// The port (sin_port and sin6_port both sit at offset 2, network byte order).
    package var port: Int {
        get { withUnsafeBytes(of: storage) { Int(UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self))) } }
        set { withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: UInt16(truncatingIfNeeded: newValue).bigEndian, toByteOffset: 2, as: UInt16.self) } }
    }

    /// The IPv4 address as a number (10.200.0.1 is 0x0AC80001); nil for IPv6.
    package var ipv4: UInt32? {
        guard family == AF_INET else { return nil }
        return withUnsafeBytes(of: storage) { UInt32(bigEndian: $0.loadUnaligned(fromByteOffset: 4, as: UInt32.self)) }
    }

    /// The address without its port, as text ("10.200.0.1", "::1").
    package var host: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        return withUnsafeBytes(of: storage) { bytes in
            let at = family == AF_INET6 ? 8 : 4
            guard inet_ntop(family, bytes.baseAddress! + at, &text, socklen_t(text.count)) != nil else { return "?" }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// This address with another port.
    package func withPort(_ port: Int) -> SocketAddress {
        var copy = self
        copy.port = port
        return copy
    }

    /// Calls `body` with the address as the `sockaddr` pointer and length the socket calls take.
    package func withSockaddr<R, E: Error>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws(E) -> R) throws(E) -> R {
        var storage = storage
        return try withUnsafePointer(to: &storage) { pointer throws(E) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddr throws(E) in try body(sockaddr, length) }
        }
    }

    /// Lets a call fill the address (`recvfrom`, `getsockname`, `accept`).
    package mutating func fill<R>(_ body: (UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> R) -> R {
        length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, &length) }
        }
    }

    /// Whether two addresses name the same host (ports aside).
    package func sameHost(as other: SocketAddress) -> Bool {
        guard family == other.family else { return false }
        return withUnsafeBytes(of: storage) { x in
            withUnsafeBytes(of: other.storage) { y in
                switch family {
                case AF_INET: x[4..<8].elementsEqual(y[4..<8])  // sin_addr
                case AF_INET6: x[8..<24].elementsEqual(y[8..<24])  // sin6_addr
                default: false
                }
            }
        }
    }

    /// Whether two addresses are the same bytes (any family, an empty one too).
    package func isIdentical(to other: SocketAddress) -> Bool {
        guard length == other.length else { return false }
        return withUnsafeBytes(of: storage) { x in withUnsafeBytes(of: other.storage) { y in x.prefix(Int(length)).elementsEqual(y.prefix(Int(length))) } }
    }

    /// Whether two addresses are the same host and port: the peer a datagram came from.
    package func isSame(as other: SocketAddress) -> Bool { sameHost(as: other) && port == other.port }

    /// The local address this machine sends from toward `destination` (a
    /// UDP socket connected there, which sends nothing); nil if there is no route.
    package static func local(toward destination: SocketAddress) -> SocketAddress? {
        guard let socket = try? Socket(family: destination.family, type: SOCK_DGRAM), (try? socket.connect(to: destination)) != nil else { return nil }
        return try? socket.localAddress()
    }

    /// This machine's IPv4 addresses on interfaces that are up, loopback
    /// left out, in the kernel's order: where a server listening on every
    /// interface (0.0.0.0) is reached from elsewhere.
    package static func interfaceIPv4Addresses() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var addresses: [String] = []
        var entry = list
        while let current = entry?.pointee {
            defer { entry = current.ifa_next }
            guard let address = current.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET),
                current.ifa_flags & UInt32(IFF_UP) != 0, current.ifa_flags & UInt32(IFF_LOOPBACK) == 0
            else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
                var host = inet.pointee.sin_addr
                _ = inet_ntop(AF_INET, &host, &text, socklen_t(text.count))
            }
            addresses.append(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return addresses
    }

    /// A TCP port on `address` (IPv4) that is free now.
    public static func freeTCPPort(address: String = "127.0.0.1") throws(SystemError) -> Int {
        guard let local = SocketAddress(ipv4: address, port: 0) else { throw SystemError("inet_pton", address, code: .invalidArgument) }
        let socket = try Socket(family: AF_INET, type: SOCK_STREAM)
        try socket.bind(to: local)
        return try socket.localAddress().port
    }
}
