@preconcurrency import Glibc

/// Helpers over `sockaddr_storage` holding an IPv4 or IPv6 address.
public enum SocketAddress {
    /// Whether two addresses name the same host (ports aside).
    static func sameHost(_ a: sockaddr_storage, _ b: sockaddr_storage) -> Bool {
        guard a.ss_family == b.ss_family else { return false }
        var a = a, b = b
        switch Int32(a.ss_family) {
        case AF_INET:
            return withUnsafeBytes(of: &a) { x in
                withUnsafeBytes(of: &b) { y in x.load(fromByteOffset: 4, as: UInt32.self) == y.load(fromByteOffset: 4, as: UInt32.self) }
            }
        case AF_INET6:
            // sin6_addr: 16 bytes at offset 8.
            return withUnsafeBytes(of: &a) { x in withUnsafeBytes(of: &b) { y in x[8..<24].elementsEqual(y[8..<24]) } }
        default:
            return false
        }
    }

    /// The local address this machine sends from toward `destination` (a
    /// UDP socket connected there, which sends nothing); nil if there is no route.
    static func local(toward destination: sockaddr_storage, length: socklen_t) -> sockaddr_storage? {
        let fd = socket(Int32(destination.ss_family), Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var target = destination
        let connected = withUnsafePointer(to: &target) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) } }
        guard connected == 0 else { return nil }
        var local = sockaddr_storage()
        var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &localLength) } }
        return named == 0 ? local : nil
    }

    /// A TCP port on `address` (IPv4) that is free now.
    public static func freeTCPPort(address: String = "127.0.0.1") throws(SystemError) -> Int {
        let fd = try valueOrErrno("socket", "tcp") { socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        defer { close(fd) }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        guard inet_pton(AF_INET, address, &local.sin_addr) == 1 else { throw SystemError("inet_pton", address, code: EINVAL) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = try valueOrErrno("bind", "\(address):0") {
            withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        }
        _ = try valueOrErrno("getsockname", address) {
            withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        }
        return Int(UInt16(bigEndian: local.sin_port))
    }
}
