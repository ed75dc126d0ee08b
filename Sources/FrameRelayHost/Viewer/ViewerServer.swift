@preconcurrency import Glibc
import FoundationEssentials
import Synchronization
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayDecoding
import FrameRelayHTTP

/// The live viewer over HTTP: a page that plays each share in the browser
/// (live IVF decoded with WebCodecs), `/stream.ivf` (ffplay reads it),
/// `/metrics` (Prometheus text), `/stats.json`, `/snapshot.jpg`, and
/// `/clock` (CLOCK_MONOTONIC in ns, for a page to put its frames on the
/// host's clock). `?share=N` picks a share (default 0).
public final class ViewerServer: Sendable {
    public struct Share: Sendable {
        public let appGroup: String
        public let broadcast: FrameBroadcast
        public let stats: @Sendable () -> ShareStats
        /// Where a viewer that needs a keyframe asks the share's loop for one.
        public let keyframes: KeyframeRequests
        /// The last snapshot and when it was made.
        let snapshots = SnapshotCache()
        public init(appGroup: String, broadcast: FrameBroadcast, keyframes: KeyframeRequests, stats: @escaping @Sendable () -> ShareStats) {
            self.appGroup = appGroup
            self.broadcast = broadcast
            self.keyframes = keyframes
            self.stats = stats
        }
    }

    public let shares: [Share]
    private let server: HTTPServer

    /// Binds the viewer; throws an ``HTTPServerError`` when the address is taken.
    public init(address: String, port: Int, shares: [Share]) throws {
        self.shares = shares
        let box = SharesBox(shares: shares)
        server = try HTTPServer(address: address, port: port) { request, connection in
            ViewerServer.route(request, connection, box.shares)
        }
    }

    public func start() { server.start() }

    /// Where a browser finds the viewer: listening on every interface
    /// (0.0.0.0), at this machine's first address other than loopback
    /// (loopback where it has none).
    public var url: String {
        let host = listensEverywhere ? SocketAddress.interfaceIPv4Addresses().first ?? "127.0.0.1" : server.address
        return "http://\(host):\(server.port)/"
    }

    /// Whether the viewer listens on every interface.
    public var listensEverywhere: Bool { server.address == "0.0.0.0" }

    private struct SharesBox: Sendable { let shares: [Share] }

    final class SnapshotCache: Sendable {
        let last = Locked<(time: UInt64, jpeg: [UInt8])?>(nil)
    }

    private static func route(_ request: HTTPServer.Request, _ connection: HTTPServer.Connection, _ shares: [Share]) {
        let index = Int(request.query["share"] ?? "0") ?? -1
        guard shares.indices.contains(index) else {
            connection.respond(status: "404 Not Found", contentType: "text/plain", body: Array("no share \(request.query["share"] ?? "")\n".utf8))
            return
        }
        let share = shares[index]
        switch request.path {
        case "/", "/index.html":
            connection.respond(contentType: "text/html; charset=utf-8", body: Array(ViewerPage.html(shares: shares.map(\.appGroup)).utf8))
        case "/stream.ivf":
            streamIVF(share, connection)
        case "/stats.json":
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let body = (try? encoder.encode(shares.map { $0.stats() })) ?? Data()
            connection.respond(contentType: "application/json", body: Array(body))
        case "/metrics":
            connection.respond(contentType: "text/plain; version=0.0.4", body: Array(PrometheusText.render(shares.map { $0.stats() }).utf8))
        case "/clock":
            connection.respond(contentType: "text/plain", body: Array("\(MonotonicClock.now())\n".utf8))
        case "/snapshot.jpg":
            if let jpeg = snapshot(share) {
                connection.respond(contentType: "image/jpeg", body: jpeg)
            } else {
                connection.respond(status: "503 Service Unavailable", contentType: "text/plain", body: Array("no picture yet\n".utf8))
            }
        default:
            connection.respond(status: "404 Not Found", contentType: "text/plain", body: Array("not found\n".utf8))
        }
    }

    /// A live IVF: the file header, then every frame from a fresh keyframe on.
    private static func streamIVF(_ share: Share, _ connection: HTTPServer.Connection) {
        if connection.isHead {
            _ = connection.startStream(contentType: "video/x-ivf")
            return
        }
        share.keyframes.ask(.viewer, on: .top)
        guard let first = waitForKeyframe(share.broadcast, after: share.broadcast.count) else {
            connection.respond(status: "503 Service Unavailable", contentType: "text/plain", body: Array("no stream yet\n".utf8))
            return
        }
        var frame = [UInt8]()
        guard connection.startStream(contentType: "video/x-ivf") else { return }
        var next = first
        var headerSent = false
        var header = [UInt8](repeating: 0, count: 12)  // each frame's IVF header, reused
        while true {
            let got: FrameBroadcast.Frame?
            do {
                got = try share.broadcast.read(next, into: &frame)
            } catch {
                // Fell behind: start again from a new keyframe.
                share.keyframes.ask(.viewer, on: .top)
                guard let resync = waitForKeyframe(share.broadcast, after: share.broadcast.count) else { return }
                next = resync
                continue
            }
            guard let got else {
                share.broadcast.waitForFrame(next, timeoutNanoseconds: 100_000_000)
                continue
            }
            if !headerSent {
                headerSent = true
                guard connection.write(IVFWriter.fileHeader(width: got.width, height: got.height)) else { return }
            }
            withUnsafeBytes(of: UInt32(got.size).littleEndian) { for i in 0..<4 { header[i] = $0[i] } }
            withUnsafeBytes(of: UInt64(bitPattern: got.pts).littleEndian) { for i in 0..<8 { header[4 + i] = $0[i] } }
            let sent = connection.write(header) && frame.withUnsafeBytes { connection.write(UnsafeRawBufferPointer(rebasing: $0[..<got.size])) }
            guard sent else { return }
            next += 1
        }
    }

    /// A keyframe published at or after `sequence` (waits up to 5 s), else
    /// the newest one still held, else nil.
    private static func waitForKeyframe(_ broadcast: FrameBroadcast, after sequence: UInt64) -> UInt64? {
        let deadline = MonotonicClock.now() + 5_000_000_000
        while MonotonicClock.now() < deadline {
            if let key = broadcast.startSequence, key >= sequence { return key }
            usleep(5_000)
        }
        return broadcast.startSequence
    }

    /// Decodes from the newest keyframe to the newest frame and encodes the
    /// picture as JPEG (turbojpeg). Nothing of this runs on the frame path.
    private static func snapshot(_ share: Share) -> [UInt8]? {
        // One at a time, and at most two a second: a request within 500 ms of the last picture gets that picture.
        share.snapshots.last.withLock { last in
            if let last = last, MonotonicClock.now() &- last.time < 500_000_000 { return last.jpeg }
            let jpeg = makeSnapshot(share)
            if let jpeg { last = (MonotonicClock.now(), jpeg) }
            return jpeg
        }
    }

    private static func makeSnapshot(_ share: Share) -> [UInt8]? {
        // From the newest keyframe held; when the broadcast no longer holds
        // it (more frames since than it keeps, as on a host with no periodic
        // keyframes) or holds none, a new keyframe is asked for and waited for.
        if let picture = decodeFromNewestKeyframe(share.broadcast) { return try? JPEGEncoder(quality: 85).jpeg(of: picture) }
        let before = share.broadcast.startSequence
        share.keyframes.ask(.viewer, on: .top)
        let deadline = MonotonicClock.now() + 2_000_000_000
        while share.broadcast.startSequence == before, MonotonicClock.now() < deadline { usleep(10_000) }
        guard share.broadcast.startSequence != before, let picture = decodeFromNewestKeyframe(share.broadcast) else { return nil }
        return try? JPEGEncoder(quality: 85).jpeg(of: picture)
    }

    /// Decodes from the newest keyframe to the newest frame; nil when none is
    /// held, or a frame on the way has been overwritten.
    private static func decodeFromNewestKeyframe(_ broadcast: FrameBroadcast) -> PixelBuffer? {
        guard let start = broadcast.startSequence, let decoder = try? VP8Decoder() else { return nil }
        let end = broadcast.count
        var frame = [UInt8]()
        var picture: PixelBuffer?
        var sequence = start
        while sequence < end {
            guard let got = try? broadcast.read(sequence, into: &frame) else { return nil }
            frame.withUnsafeBytes { bytes in
                _ = decoder.decode(UnsafeRawBufferPointer(rebasing: bytes[..<got.size])) { picture = try? $0.copyI420() }
            }
            sequence += 1
        }
        return picture
    }
}
