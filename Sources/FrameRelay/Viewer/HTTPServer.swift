@preconcurrency import Glibc
import Synchronization

/// A small HTTP/1.1 server: one thread accepts, one thread serves each
/// connection (`Connection: close`). Enough for a live viewer, metrics and
/// snapshots on loopback; not a general web server.
///
/// Slow or idle clients cannot lock it up: a request's head must arrive
/// within ``requestDeadline``, and when every slot is taken a new client
/// closes the connection that has waited longest for its request. A few
/// slots past ``maxConnections`` are kept for `/stats.json` and `/metrics`,
/// so monitoring gets through while viewers fill the rest.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked Sendable: `listener` is immutable; the handler is Sendable;
    // the rest is in atomics.
    public typealias Request = HTTPRequestHead

    /// A connection the handler writes its response to.
    public final class Connection {
        let fd: Int32
        /// A HEAD request: responses send their headers only.
        public let isHead: Bool
        init(fd: Int32, isHead: Bool = false) {
            self.fd = fd
            self.isHead = isHead
        }

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

        /// Sends a complete response with a body (its headers only, for HEAD).
        public func respond(status: String = "200 OK", contentType: String, body: [UInt8], extraHeaders: String = "") {
            write("HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\nCache-Control: no-store\r\n\(extraHeaders)Connection: close\r\n\r\n")
            if !isHead { write(body) }
        }

        /// Starts a response whose body runs until the connection closes;
        /// false when there is no body to send (the peer is gone, or HEAD).
        public func startStream(contentType: String) -> Bool {
            write("HTTP/1.1 200 OK\r\nContent-Type: \(contentType)\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n") && !isHead
        }
    }

    public let address: String
    public let port: Int
    private let listener: Int32
    private let handler: @Sendable (Request, Connection) -> Void
    /// Connections being served now, and those of them past their head on a path other than ``reservedPaths``.
    private let active = Atomic<Int>(0)
    private let viewing = Atomic<Int>(0)
    /// Connections still reading their request, by descriptor: when each
    /// was accepted (CLOCK_MONOTONIC ns), 0 for none, ``evicting`` while
    /// one is being shut. Atomics rather than a lock: the accept thread and
    /// the connection threads touch it at once, and a connection's thread
    /// must not close its descriptor while another thread shuts it.
    private let reading: UnsafeMutablePointer<Atomic<UInt64>>
    /// Descriptors past this are served but cannot be made to make way.
    static let readingSlots = 4096
    private static let evicting: UInt64 = 1
    public static let maxConnections = 128
    /// Slots past ``maxConnections`` that only `/stats.json` and `/metrics` may use.
    public static let reservedConnections = 4
    static let reservedPaths: Set<String> = ["/stats.json", "/metrics"]
    /// The most time a client has to send its request's head.
    public static let requestDeadline: UInt64 = 5_000_000_000
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
        let table = UnsafeMutableRawPointer.allocate(byteCount: Self.readingSlots * 8, alignment: 8)
        table.initializeMemory(as: UInt64.self, repeating: 0, count: Self.readingSlots)
        reading = table.assumingMemoryBound(to: Atomic<UInt64>.self)
    }

    deinit {
        close(listener)
        UnsafeMutableRawPointer(reading).deallocate()
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
                // Full: the connection that has waited longest for its request makes way (its thread ends it at once).
                let full = active.load(ordering: .relaxed) >= Self.maxConnections + Self.reservedConnections
                let madeWay = full && evictSlowestReader()
                if client < Self.readingSlots { reading[Int(client)].store(MonotonicClock.now(), ordering: .releasing) }
                guard active.add(1, ordering: .relaxed).newValue <= Self.maxConnections + Self.reservedConnections || madeWay,
                    startDetachedThread({ [self] in
                        serve(client)
                        active.subtract(1, ordering: .relaxed)
                    })
                else {
                    stopReading(client)
                    refuse(client, "503 Service Unavailable", "too many connections")
                    close(client)
                    active.subtract(1, ordering: .relaxed)
                    continue
                }
            }
        }
    }

    /// Answers and shuts a connection that will not be served; the send
    /// cannot block long (a short send timeout, an empty socket buffer).
    private func refuse(_ fd: Int32, _ status: String, _ text: String, extraHeaders: String = "") {
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        Connection(fd: fd).respond(status: status, contentType: "text/plain", body: Array((text + "\n").utf8), extraHeaders: extraHeaders)
    }

    /// Takes `fd` off the reading table; if another thread is shutting it
    /// at this moment, waits until it has (so the descriptor stays ours).
    private func stopReading(_ fd: Int32) {
        guard fd < Self.readingSlots else { return }
        let slot = reading + Int(fd)
        while true {
            let accepted = slot.pointee.load(ordering: .acquiring)
            if accepted == Self.evicting { usleep(50); continue }
            if slot.pointee.compareExchange(expected: accepted, desired: 0, ordering: .acquiringAndReleasing).exchanged { return }
        }
    }

    /// Makes room: shuts the connection that has waited longest for its
    /// request (its thread then closes it); false when none is waiting.
    private func evictSlowestReader() -> Bool {
        for _ in 0..<3 {
            var oldest: (fd: Int, accepted: UInt64)?
            for fd in 0..<Self.readingSlots {
                let accepted = reading[fd].load(ordering: .relaxed)
                if accepted > Self.evicting, accepted < oldest?.accepted ?? .max { oldest = (fd, accepted) }
            }
            guard let oldest else { return false }
            let slot = reading + oldest.fd
            guard slot.pointee.compareExchange(expected: oldest.accepted, desired: Self.evicting, ordering: .acquiringAndReleasing).exchanged else {
                continue  // it finished reading meanwhile, or another thread took it
            }
            shutdown(Int32(oldest.fd), Int32(SHUT_RDWR))
            slot.pointee.store(0, ordering: .releasing)
            return true
        }
        return false
    }

    private func serve(_ fd: Int32) {
        let parse = readHead(fd)
        // Off the reading list before the descriptor can be closed (an evicted one is off it already).
        stopReading(fd)
        defer { close(fd) }
        switch parse {
        case .incomplete:
            return  // the client went away, was too slow, or was evicted
        case .refused(let status):
            refuse(fd, status, status)
            drainBeforeClosing(fd)
        case .request(let request):
            guard request.method == "GET" || request.method == "HEAD" else {
                refuse(fd, "405 Method Not Allowed", "only GET and HEAD", extraHeaders: "Allow: GET, HEAD\r\n")
                drainBeforeClosing(fd)
                return
            }
            // Monitoring is always served (the accept thread keeps slots for it); anything else only within maxConnections.
            let reserved = Self.reservedPaths.contains(request.path)
            if !reserved {
                guard viewing.add(1, ordering: .relaxed).newValue <= Self.maxConnections else {
                    viewing.subtract(1, ordering: .relaxed)
                    refuse(fd, "503 Service Unavailable", "too many connections")
                    return
                }
            }
            defer { if !reserved { viewing.subtract(1, ordering: .relaxed) } }
            handler(request, Connection(fd: fd, isHead: request.method == "HEAD"))
        }
    }

    /// Ends our side and reads what the client still sends (a body, the
    /// rest of oversized headers) for a moment: closing with unread bytes
    /// would reset the connection before the client read our answer.
    private func drainBeforeClosing(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_WR))
        let deadline = MonotonicClock.now() &+ 1_000_000_000
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var drained = 0
        while drained < 1 << 20, MonotonicClock.now() < deadline {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, 100)
            if polled < 0, errno != EINTR { return }
            guard polled > 0 else { continue }
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n < 0, errno == EINTR || errno == EAGAIN { continue }
            guard n > 0 else { return }
            drained += n
        }
    }

    /// Reads until the request's head is complete, refused, or its deadline passes.
    private func readHead(_ fd: Int32) -> HTTPRequestHead.Parse {
        let deadline = MonotonicClock.now() &+ Self.requestDeadline
        var request = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let now = MonotonicClock.now()
            guard now < deadline else { return .incomplete }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, Int32((deadline - now) / 1_000_000) + 1)
            if polled < 0, errno == EINTR { continue }
            guard polled > 0 else { return .incomplete }
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n < 0, errno == EINTR || errno == EAGAIN { continue }
            guard n > 0 else { return .incomplete }
            request += buffer[..<n]
            let parse = HTTPRequestHead.parse(request[...])
            if parse != .incomplete { return parse }
        }
    }
}
