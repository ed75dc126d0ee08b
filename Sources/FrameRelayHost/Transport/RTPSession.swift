@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayRTP

/// One share's RTP stream on its sockets: the adapter around ``RTPSender``,
/// the stream's state (packets, pacing, resends, Sender Reports, feedback),
/// which never sees a socket or a clock. It opens the sockets, makes one
/// sender per simulcast stream, and hands the frames to its ``Pacer``,
/// whose thread sends them to every destination and reads the RTCP that
/// comes back; its SDP is ``SDP``. The share's thread calls ``deliver``
/// for each frame (which returns once the frame is queued, so a keyframe
/// being paced out never delays the next encode) and ``poll`` between
/// frames, for the keyframes asked for.
public final class RTPSession: FrameSink {
    public struct Options: Sendable {
        /// Receivers of the whole picture (the top simulcast stream).
        public var destinations: [Destination] = []
        /// Where each simulcast stream goes, smallest first (a Janus
        /// mountpoint's port for each substream, with its RTCP port); the
        /// top one also goes to ``destinations``. Empty: one stream, the whole picture.
        public var simulcast: [Destination] = []
        public var maxPacketSize = 1200
        /// Each stream's target bitrate, kbit/s, smallest first (empty:
        /// VP8Settings' default; fewer than the streams: the lowest given
        /// for those below): a stream's packets leave at a multiple of it
        /// (``RTPSender/Configuration/pacingFactor``).
        public var bitratesKbps: [Int] = []
        /// Whether the top stream's bitrate follows what its ``destinations``
        /// report (loss, REMB: ``BitrateController``), from its bitrate down
        /// to 150 kbit/s. Janus's substreams never adapt: its viewers pick a layer.
        public var adaptsBitrate = true
        public init() {}
    }

    public let options: Options
    /// Each stream's SSRC, smallest first.
    public let ssrcs: [UInt32]
    /// The local port receivers send RTCP to.
    public let rtcpPort: Int
    private let pacer: Pacer

    /// The whole picture's SSRC (the one an SDP file names).
    public var ssrc: UInt32 { ssrcs[ssrcs.count - 1] }

    /// Opens the sockets and starts the pacer's thread; throws a ``TransportError`` naming what failed.
    public init(options: Options) throws(TransportError) {
        let every = options.destinations + options.simulcast
        precondition(!every.isEmpty)
        guard (64...9000).contains(options.maxPacketSize) else { throw .invalidPacketSize(options.maxPacketSize) }
        let count = max(1, options.simulcast.count)
        let family = every[0].family
        let rtp = try Self.system { () throws(SystemError) in try Socket(family: family, type: SOCK_DGRAM) }
        try? rtp.setOption(SOL_SOCKET, SO_SNDBUF, Int32(4 << 20))
        let rtcp = try Self.system { () throws(SystemError) in try Socket(family: family, type: SOCK_DGRAM, nonBlocking: true) }
        // Bind RTCP to an ephemeral port so receivers can answer our reports,
        // on the address the stream leaves from (loopback for a loopback
        // stream: feedback from other hosts cannot reach it); on every
        // address only when the destinations are reached from several.
        let sources = every.map { SocketAddress.local(toward: $0.address) }
        var local = SocketAddress()
        local.storage.ss_family = sa_family_t(family)
        local.length = socklen_t(family == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        if let first = sources.first ?? nil, sources.allSatisfy({ $0?.sameHost(as: first) ?? false }) { local = first.withPort(0) }
        try Self.system { () throws(SystemError) in try rtcp.bind(to: local) }
        rtcpPort = try Self.system { () throws(SystemError) in try rtcp.localAddress().port }
        // The RTP socket only sends: on the same address, and with one
        // destination connected to it, so that the kernel drops what anyone
        // else sends it (nothing reads it; it would fill its buffer).
        try Self.system { () throws(SystemError) in try rtp.bind(to: local) }
        if every.count == 1 { try Self.system { () throws(SystemError) in try rtp.connect(to: every[0].address) } }
        self.options = options
        var ssrcs: [UInt32] = []
        let streams = (0..<count).map { index in
            var ssrc = UInt32.random(in: 1...UInt32.max)
            while ssrcs.contains(ssrc) { ssrc = UInt32.random(in: 1...UInt32.max) }
            ssrcs.append(ssrc)
            let destinations = (options.simulcast.isEmpty ? [] : [options.simulcast[index]]) + (index == count - 1 ? options.destinations : [])
            var configuration = RTPSender.Configuration(ssrc: ssrc)
            configuration.maxPacketSize = options.maxPacketSize
            configuration.destinations = destinations.count
            // The bitrates counted from the top, should they be fewer than the streams.
            let bitrates = options.bitratesKbps.isEmpty ? [VP8Settings().bitrateKbps] : options.bitratesKbps
            configuration.targetBitrate = 1000 * max(1, bitrates[max(0, bitrates.count - count + index)])
            // Direct receivers move the whole picture only where it is no Janus substream too: with layers, Janus's viewers pick theirs.
            configuration.adapts = options.adaptsBitrate && index == count - 1 && !options.destinations.isEmpty && options.simulcast.count <= 1
            return Pacer.Stream(RTPSender(configuration), destinations: destinations, mountpoint: options.simulcast.isEmpty ? nil : 0)
        }
        self.ssrcs = ssrcs
        do throws(SystemError) {
            pacer = try Pacer(streams: streams, rtp: rtp, rtcp: rtcp, simulcastHosts: options.simulcast.count > 1 ? options.simulcast.map(\.address) : [])
        } catch {
            throw .system(error)
        }
        guard pacer.start() else { throw .system(SystemError("pthread_create", "the RTP pacer's thread", code: .current)) }
    }

    private static func system<T: ~Copyable>(_ body: () throws(SystemError) -> T) throws(TransportError) -> T {
        do throws(SystemError) { return try body() } catch { throw .system(error) }
    }

    /// Lets the pacer's thread end (what still waits is dropped).
    deinit { pacer.stop(drainFor: 0, wait: false) }

    /// Whether every destination of every stream asks for what it misses
    /// (``RTPSender/everyDestinationAsks(now:)``): then keyframes wait until one is asked for.
    public func everyDestinationAsks(now: UInt64) -> Bool { pacer.everyDestinationAsks(now: now) }

    /// Queues the frame on its simulcast stream (a sink of the share's
    /// pipeline; without simulcast destinations, only the whole picture):
    /// the whole picture's `timing` gets when it was queued and its
    /// PictureID; when its last packet left comes later (``complete(_:)``).
    public func deliver(_ frame: EncodedFrame, captureTime: UInt64, timing: inout FrameTiming) {
        let index = options.simulcast.isEmpty ? (frame.isTopLayer ? 0 : nil) : frame.layer
        guard let index, ssrcs.indices.contains(index) else { return }
        let now = MonotonicClock.now()
        let pictureID = pacer.enqueue(frame.bytes, stream: index, keyframe: frame.isKeyframe, layer: frame.temporalLayer, captureTime: captureTime, now: now)
        if ssrcs.count > 1 { timing.streams.record(.init(stream: index, picture: pictureID, width: frame.width, keyframe: frame.isKeyframe, bytes: frame.bytes.count)) }
        if frame.isTopLayer {
            timing.pictureID = pictureID
            timing.queued = now
        }
    }

    /// Queues one encoded frame of the whole picture captured at
    /// `captureTime` for every destination; returns the PictureID it goes
    /// with (the one thing a receiver behind Janus, which rewrites sequence
    /// numbers and timestamps, can name it by).
    @discardableResult
    public func send(_ frame: EncodedFrame, captureTime: UInt64) -> UInt16 {
        pacer.enqueue(frame.bytes, stream: ssrcs.count - 1, keyframe: frame.isKeyframe, layer: frame.temporalLayer, captureTime: captureTime, now: MonotonicClock.now())
    }

    /// When the frame's last packet left (``FrameTiming/sent``): false while it waits in the pacer.
    public func complete(_ timing: inout FrameTiming) -> Bool {
        guard timing.queued != 0 else { return true }
        guard let left = pacer.departure(queuedAt: timing.queued) else { return false }
        timing.sent = left
        return true
    }

    /// The streams a receiver asked a keyframe on since the last call (the pacer's thread reads the RTCP).
    public func poll(now: UInt64) -> KeyframeRequests.Streams { pacer.takeAsked() }

    /// What waits in the pacer leaves (for up to a second), then its thread ends.
    public func finish() { pacer.stop(drainFor: 1_000_000_000, wait: true) }

    /// Keyframes asked for wait on the stream between frames.
    public var isLive: Bool { true }

    /// A still screen still sends a frame a second: Janus and players take a long silence for a lost stream.
    public var wantsIdleRepeats: Bool { true }

    /// What the top stream's encoder may take, kbit/s: its receivers' target less the resends (nil: it does not adapt).
    public var targetBitrateKbps: Int? { pacer.encoderBitrate(now: MonotonicClock.now()).map { $0 / 1000 } }

    /// Periodic keyframes while some destination cannot ask for one.
    public func needsPeriodicKeyframes(now: UInt64) -> Bool { !everyDestinationAsks(now: now) }

    /// The stream's figures, as the share's `transport` (the whole picture's), and each simulcast stream's.
    public func report(into stats: inout ShareStats) {
        let (streams, sendErrors, lastSendError) = pacer.stats()
        stats.transport = Self.summary(streams, sendErrors: sendErrors, lastSendError: lastSendError)
        stats.streams = streams.count > 1 ? streams.map(SimulcastStreamStats.init) : []
    }

    /// The whole picture's figures: its sender's, and what the socket
    /// refused; with simulcast streams, the feedback (RTCP, PLI, FIR, NACK)
    /// every stream's sender took (Janus names substream 0 in its PLIs); every
    /// stream's sender reads every datagram, so the datagrams and reports are counted once.
    public var summary: TransportStats {
        let (streams, sendErrors, lastSendError) = pacer.stats()
        return Self.summary(streams, sendErrors: sendErrors, lastSendError: lastSendError)
    }

    private static func summary(_ streams: [TransportStats], sendErrors: UInt64, lastSendError: Int32?) -> TransportStats {
        var stats = streams[streams.count - 1]
        for other in streams.dropLast() {
            stats.pli += other.pli
            stats.fir += other.fir
            stats.nacked += other.nacked
        }
        stats.sendErrors = sendErrors
        stats.lastSendError = lastSendError
        return stats
    }
}
