@preconcurrency import Glibc
internal import CLinux

/// A socket with one owner (closed when it goes away), and the calls made
/// on it. Calls on a non-blocking socket return `nil` for `EAGAIN`.
public struct Socket: ~Copyable {
    public let descriptor: FileDescriptor
    public var rawValue: Int32 { descriptor.rawValue }

    /// A new socket (`SOCK_CLOEXEC` always; `SOCK_NONBLOCK` when `nonBlocking`).
    package init(family: Int32, type: __socket_type, nonBlocking: Bool = false) throws(SystemError) {
        let name = family == AF_UNIX ? "unix socket" : type == SOCK_DGRAM ? "udp" : "tcp"
        let flags = Int32(SOCK_CLOEXEC.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        let fd = try valueOrErrno("socket", name) { Glibc.socket(family, Int32(type.rawValue) | flags, 0) }
        descriptor = FileDescriptor(adopting: fd, name: name)
    }

    /// Takes ownership of an accepted connection.
    package init(adopting fd: Int32, name: String) { descriptor = FileDescriptor(adopting: fd, name: name) }

    /// Gives up ownership without closing.
    package consuming func release() -> Int32 { descriptor.release() }

    /// `setsockopt(2)` with an `Int32` or `timeval` value.
    package func setOption<Value: BitwiseCopyable>(_ level: Int32, _ option: Int32, _ value: Value) throws(SystemError) {
        _ = try valueOrErrno("setsockopt", descriptor.name) {
            withUnsafePointer(to: value) { setsockopt(rawValue, level, option, $0, socklen_t(MemoryLayout<Value>.size)) }
        }
    }

    /// Timeouts for blocking sends and receives (`SO_SNDTIMEO`, `SO_RCVTIMEO`), in seconds.
    package func setTimeouts(send: Double? = nil, receive: Double? = nil) throws(SystemError) {
        func time(_ seconds: Double) -> timeval { timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1e6)) }
        if let send { try setOption(SOL_SOCKET, SO_SNDTIMEO, time(send)) }
        if let receive { try setOption(SOL_SOCKET, SO_RCVTIMEO, time(receive)) }
    }

    /// Asks for a receive buffer of `bytes`: past `rmem_max` where allowed (CAP_NET_ADMIN), else up to it.
    package func setReceiveBuffer(_ bytes: Int32) {
        if (try? setOption(SOL_SOCKET, SO_RCVBUFFORCE, bytes)) == nil { try? setOption(SOL_SOCKET, SO_RCVBUF, bytes) }
    }

    package func bind(to address: SocketAddress) throws(SystemError) {
        _ = try valueOrErrno("bind", "\(descriptor.name) port \(address.port)") { address.withSockaddr { Glibc.bind(rawValue, $0, $1) } }
    }

    package func listen(backlog: Int32) throws(SystemError) {
        _ = try valueOrErrno("listen", descriptor.name) { Glibc.listen(rawValue, backlog) }
    }

    package func connect(to address: SocketAddress) throws(SystemError) {
        _ = try valueOrErrno("connect", descriptor.name) { address.withSockaddr { Glibc.connect(rawValue, $0, $1) } }
    }

    /// A connection waiting on this listening socket (blocking).
    package func accept() throws(SystemError) -> Socket {
        let fd = try valueOrErrno("accept", descriptor.name) { Glibc.accept(rawValue, nil, nil) }
        return Socket(adopting: fd, name: "tcp connection")
    }

    /// The process at the other end of a connected Unix socket (`SO_PEERCRED`).
    package func peerProcess() -> (pid: Int32, uid: UInt32)? {
        var pid: Int32 = 0, uid: UInt32 = 0
        return clinux_peer_credentials(rawValue, &pid, &uid) == 0 && pid > 0 ? (pid, uid) : nil
    }

    /// The address this socket is bound to.
    package func localAddress() throws(SystemError) -> SocketAddress {
        var address = SocketAddress()
        _ = try valueOrErrno("getsockname", descriptor.name) { address.fill { getsockname(rawValue, $0, $1) } }
        return address
    }

    /// Sends one datagram to `address` without blocking; nil when the socket buffer is full.
    @discardableResult
    package func send(_ bytes: UnsafeRawBufferPointer, to address: SocketAddress) throws(SystemError) -> Int? {
        try valueOrWouldBlock("sendto", descriptor.name) {
            address.withSockaddr { sendto(rawValue, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, $1) }
        }
    }

    /// Receives one datagram without blocking, and where it came from; nil when none is waiting.
    package func receive(into buffer: UnsafeMutableRawBufferPointer, from source: inout SocketAddress) throws(SystemError) -> Int? {
        try valueOrWouldBlock("recvfrom", descriptor.name) {
            source.fill { recvfrom(rawValue, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, $1) }
        }
    }

    /// Receives what is there on a stream socket (blocking unless `wait` is
    /// false); 0 at the end of the stream, nil when nothing is waiting or a
    /// receive timeout ran out.
    package func receive(into buffer: UnsafeMutableRawBufferPointer, wait: Bool = true) throws(SystemError) -> Int? {
        try valueOrWouldBlock("recv", descriptor.name) { recv(rawValue, buffer.baseAddress, buffer.count, wait ? 0 : Int32(MSG_DONTWAIT)) }
    }

    /// Sends all of `bytes` on a stream socket (no SIGPIPE: a peer that is
    /// gone is an `EPIPE` error; a send timeout that runs out is `EAGAIN`).
    package func sendAll(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            done += try valueOrErrno("send", descriptor.name) { Glibc.send(rawValue, bytes.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL)) }
        }
    }

    /// Sends all of `bytes` on a stream socket, failing with `EAGAIN` once
    /// none of them could go for `stallLimit` seconds (a peer that stopped
    /// reading); no SIGPIPE (a peer that is gone is `EPIPE`).
    package func sendAll(_ bytes: UnsafeRawBufferPointer, stallLimit: Double) throws(SystemError) {
        var done = 0
        var progress = MonotonicClock.now()
        let limit = UInt64(stallLimit * 1e9)
        while done < bytes.count {
            let sent = try valueOrWouldBlock("send", descriptor.name) {
                Glibc.send(rawValue, bytes.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            let now = MonotonicClock.now()
            if let sent {
                done += sent
                progress = now
                continue
            }
            guard now &- progress < limit else { throw SystemError("send", descriptor.name, code: .wouldBlock) }
            var ready = pollfd(fd: rawValue, events: Int16(POLLOUT), revents: 0)
            _ = poll(&ready, 1, Int32((limit - (now &- progress)) / 1_000_000) + 1)
        }
    }

    package func shutdown(_ how: Int32) { _ = Glibc.shutdown(rawValue, how) }

    package func waitReadable(milliseconds: Int32) -> Bool { descriptor.waitReadable(milliseconds: milliseconds) }
}
