@preconcurrency import Glibc
import Synchronization
import FrameRelaySystem

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

    /// A connection the handler writes its response to; closed when the server is done with it.
    public final class Connection {
        let socket: Socket
        /// A HEAD request: responses send their headers only.
        public internal(set) var isHead = false
        /// How long a write may wait on a client that takes nothing (seconds).
        var stallLimit = HTTPServer.sendStallLimit
        init(_ socket: consuming Socket) { self.socket = socket }

        /// Writes all of `bytes`; false when the peer is gone, or took
        /// nothing for ``stallLimit`` seconds.
        @discardableResult
        public func write(_ bytes: UnsafeRawBufferPointer) -> Bool { (try? socket.sendAll(bytes, stallLimit: stallLimit)) != nil }

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
    private let listener: Socket
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
    /// How long an answer may wait on a client that takes nothing (a live
    /// stream's reader that stopped reading): then the connection is closed
    /// and its slot makes way. The send buffer is kept small, so that little
    /// of the stream waits in it once the client's own buffers are full.
    public static let sendStallLimit = 10.0
    public static let sendBufferBytes: Int32 = 128 << 10
    /// Binds `address:port` (loopback unless told otherwise); throws an
    /// ``HTTPServerError`` naming the address when it is taken or invalid.
    public init(address: String, port: Int, handler: @escaping @Sendable (Request, Connection) -> Void) throws(HTTPServerError) {
        listener = try Self.listen(address: address, port: port)
        self.address = address
        self.port = port
        self.handler = handler
        let table = UnsafeMutableRawPointer.allocate(byteCount: Self.readingSlots * 8, alignment: 8)
        table.initializeMemory(as: UInt64.self, repeating: 0, count: Self.readingSlots)
        reading = table.assumingMemoryBound(to: Atomic<UInt64>.self)
    }

    deinit { UnsafeMutableRawPointer(reading).deallocate() }

    private static func listen(address: String, port: Int) throws(HTTPServerError) -> Socket {
        guard let local = SocketAddress(ipv4: address, port: port) else { throw .invalidAddress(address) }
        do throws(SystemError) {
            let listener = try Socket(family: AF_INET, type: SOCK_STREAM)
            try listener.setOption(SOL_SOCKET, SO_REUSEADDR, Int32(1))
            try listener.bind(to: local)
            try listener.listen(backlog: 64)
            return listener
        } catch {
            throw error.code == .addressInUse ? .addressInUse(address, port) : .cannotListen(address, port, error.code)
        }
    }

    /// Accepts connections on a background thread until the process ends.
    public func start() {
        startDetachedThread { [self] in
            while true {
                let socket: Socket
                do throws(SystemError) {
                    socket = try listener.accept()
                } catch {
                    switch error.code.rawValue {
                    case ECONNABORTED: continue
                    // Out of descriptors or memory for now: the viewer waits for some to come back rather than ending.
                    case EMFILE, ENFILE, ENOBUFS, ENOMEM: usleep(100_000); continue
                    default: return
                    }
                }
                let client = socket.release()  // its thread adopts it
                // Full: the connection that has waited longest for its request makes way (its thread ends it at once).
                let full = active.load(ordering: .relaxed) >= Self.maxConnections + Self.reservedConnections
                let madeWay = full && evictSlowestReader()
                if client < Self.readingSlots { reading[Int(client)].store(MonotonicClock.now(), ordering: .releasing) }
                guard active.add(1, ordering: .relaxed).newValue <= Self.maxConnections + Self.reservedConnections || madeWay,
                    startDetachedThread({ [self] in
                        serve(Connection(Socket(adopting: client, name: "http connection")))
                        active.subtract(1, ordering: .relaxed)
                    })
                else {
                    stopReading(client)
                    refuse(Connection(Socket(adopting: client, name: "http connection")), "503 Service Unavailable", "too many connections")
                    active.subtract(1, ordering: .relaxed)
                    continue
                }
            }
        }
    }

    /// Answers and shuts a connection that will not be served; the send
    /// cannot block long (a short send timeout, an empty socket buffer).
    private func refuse(_ connection: Connection, _ status: String, _ text: String, extraHeaders: String = "") {
        connection.stallLimit = 0.1
        connection.respond(status: status, contentType: "text/plain", body: Array((text + "\n").utf8), extraHeaders: extraHeaders)
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

    /// Reads the request and answers it; the connection closes when this returns.
    private func serve(_ connection: Connection) {
        let parse = readHead(connection.socket)
        // Off the reading list before the descriptor can be closed (an evicted one is off it already).
        stopReading(connection.socket.rawValue)
        switch parse {
        case .incomplete:
            return  // the client went away, was too slow, or was evicted
        case .refused(let status):
            refuse(connection, status, status)
            drainBeforeClosing(connection.socket)
        case .request(let request):
            guard request.method == "GET" || request.method == "HEAD" else {
                refuse(connection, "405 Method Not Allowed", "only GET and HEAD", extraHeaders: "Allow: GET, HEAD\r\n")
                drainBeforeClosing(connection.socket)
                return
            }
            // Monitoring is always served (the accept thread keeps slots for it); anything else only within maxConnections.
            let reserved = Self.reservedPaths.contains(request.path)
            if !reserved {
                guard viewing.add(1, ordering: .relaxed).newValue <= Self.maxConnections else {
                    viewing.subtract(1, ordering: .relaxed)
                    refuse(connection, "503 Service Unavailable", "too many connections")
                    return
                }
            }
            defer { if !reserved { viewing.subtract(1, ordering: .relaxed) } }
            connection.isHead = request.method == "HEAD"
            try? connection.socket.setOption(SOL_SOCKET, SO_SNDBUF, Self.sendBufferBytes)
            handler(request, connection)
            // Requests pipelined after this one are not answered (the answer
            // said Connection: close): read them away before closing, so that
            // the close is a FIN after our answer, not a reset that could
            // destroy it on its way.
            drainBeforeClosing(connection.socket)
        }
    }

    /// Ends our side and reads what the client still sends (a body, the
    /// rest of oversized headers) for a moment: closing with unread bytes
    /// would reset the connection before the client read our answer.
    private func drainBeforeClosing(_ socket: borrowing Socket) {
        socket.shutdown(Int32(SHUT_WR))
        let deadline = MonotonicClock.now() &+ 1_000_000_000
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var drained = 0
        while drained < 1 << 20, MonotonicClock.now() < deadline {
            guard socket.waitReadable(milliseconds: 100) else { continue }
            let received = buffer.withUnsafeMutableBytes { bytes in Result { () throws(SystemError) in try socket.receive(into: bytes, wait: false) } }
            guard case .success(let n) = received else { return }
            guard let n else { continue }  // nothing yet
            guard n > 0 else { return }
            drained += n
        }
    }

    /// Reads until the request's head is complete, refused, or its deadline passes.
    private func readHead(_ socket: borrowing Socket) -> HTTPRequestHead.Parse {
        let deadline = MonotonicClock.now() &+ Self.requestDeadline
        var request = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let now = MonotonicClock.now()
            guard now < deadline else { return .incomplete }
            guard socket.waitReadable(milliseconds: Int32((deadline - now) / 1_000_000) + 1) else { return .incomplete }
            let received = buffer.withUnsafeMutableBytes { bytes in Result { () throws(SystemError) in try socket.receive(into: bytes, wait: false) } }
            guard case .success(let n) = received, n != 0 else { return .incomplete }
            guard let n else { continue }  // a signal, or nothing yet
            request += buffer[..<n]
            let parse = HTTPRequestHead.parse(request[...])
            if parse != .incomplete { return parse }
        }
    }
}
