@preconcurrency import Glibc
import Synchronization

/// A small HTTP/1.1 server: one thread accepts, one thread serves each
/// connection (`Connection: close`). Enough for a live viewer, metrics and
/// snapshots on loopback; not a general web server.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked Sendable: `listener` is immutable; the handler is Sendable.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var query: [String: String]
    }

    /// A connection the handler writes its response to.
    public final class Connection {
        let fd: Int32
        init(fd: Int32) { self.fd = fd }

        /// Writes all of `bytes`; false when the peer is gone.
        @discardableResult
        public func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
            var offset = 0
            while offset < bytes.count {
                let n = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { return false }
                offset += n
            }
            return true
        }

        @discardableResult
        public func write(_ text: String) -> Bool {
            var text = text
            return text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
        }

        @discardableResult
        public func write(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { write($0) } }

        /// Sends a complete response with a body.
        public func respond(status: String = "200 OK", contentType: String, body: [UInt8]) {
            write("HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n")
            write(body)
        }

        /// Starts a response whose body runs until the connection closes.
        public func startStream(contentType: String) -> Bool {
            write("HTTP/1.1 200 OK\r\nContent-Type: \(contentType)\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n")
        }
    }

    public let address: String
    public let port: Int
    private let listener: Int32
    private let handler: @Sendable (Request, Connection) -> Void
    /// Connections being served now; past ``maxConnections`` a client gets 503 at once.
    private let active = Atomic<Int>(0)
    public static let maxConnections = 128

    /// Binds `address:port` (loopback unless told otherwise); throws a
    /// ``UsageError`` naming the address when it is taken or invalid.
    public init(address: String, port: Int, handler: @escaping @Sendable (Request, Connection) -> Void) throws {
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_port = UInt16(port).bigEndian
        guard inet_pton(AF_INET, address, &local.sin_addr) == 1 else {
            throw UsageError("invalid HTTP address \"\(address)\": expected an IPv4 address such as 127.0.0.1")
        }
        let fd = try valueOrErrno("socket", "tcp") { socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, 4)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(fd, 64) == 0 else {
            let code = errno
            close(fd)
            if code == EADDRINUSE { throw UsageError("HTTP address \(address):\(port) is already in use") }
            throw UsageError("cannot listen on \(address):\(port): \(SystemError.name(of: code))")
        }
        self.address = address
        self.port = port
        self.listener = fd
        self.handler = handler
    }

    /// Accepts connections on a background thread until the process ends.
    public func start() {
        startDetachedThread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 {
                    switch errno {
                    case EINTR, ECONNABORTED: continue
                    // Out of descriptors or memory for now: the viewer waits for some to come back rather than ending.
                    case EMFILE, ENFILE, ENOBUFS, ENOMEM: usleep(100_000); continue
                    default: return
                    }
                }
                guard active.add(1, ordering: .relaxed).newValue <= Self.maxConnections,
                    startDetachedThread({ [self] in
                        serve(client)
                        active.subtract(1, ordering: .relaxed)
                    })
                else {
                    // Answered on the accept thread: the send cannot block (the socket buffer is empty).
                    var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
                    setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                    Connection(fd: client).respond(status: "503 Service Unavailable", contentType: "text/plain", body: Array("too many connections\n".utf8))
                    close(client)
                    active.subtract(1, ordering: .relaxed)
                    continue
                }
            }
        }
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var request = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while request.count < 16_384 {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { return }
            request += buffer[..<n]
            if request.count >= 4, request.suffix(from: max(0, request.count - n - 3)).windowsContain([13, 10, 13, 10]) { break }
        }
        let line = String(decoding: request.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self).split(separator: " ")
        let connection = Connection(fd: fd)
        guard line.count >= 2 else {
            connection.respond(status: "400 Bad Request", contentType: "text/plain", body: Array("bad request\n".utf8))
            return
        }
        let target = String(line[1])
        let parts = target.split(separator: "?", maxSplits: 1)
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                query[String(kv[0])] = kv.count == 2 ? String(kv[1]) : ""
            }
        }
        handler(Request(method: String(line[0]), path: String(parts.first ?? "/"), query: query), connection)
    }
}

extension ArraySlice where Element == UInt8 {
    func windowsContain(_ pattern: [UInt8]) -> Bool {
        guard count >= pattern.count else { return false }
        var index = startIndex
        while index + pattern.count <= endIndex {
            if self[index..<(index + pattern.count)].elementsEqual(pattern) { return true }
            index += 1
        }
        return false
    }
}
