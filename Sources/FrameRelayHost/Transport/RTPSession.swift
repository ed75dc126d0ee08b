@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayRTP

/// One share's RTP stream on its sockets: the thin adapter around
/// ``RTPSender``, the stream's state (packets, pacing, resends, Sender
/// Reports, feedback), which never sees a socket or a clock. It sends what
/// the sender hands out to every destination, reads RTCP from its port into
/// it, and keeps the sockets' own errors; its SDP is ``SDP``.
/// Single-threaded: the share's thread calls ``send`` for each frame (and
/// waits out that frame's pacing) and ``poll`` between frames.
public final class RTPSession: FrameSink {
    public struct Options: Sendable {
        public var destinations: [Destination] = []
        public var maxPacketSize = 1200
        /// Packets sent back to back before a pause (keyframe bursts).
        public var burstPackets = 16
        /// Pause between bursts, ns.
        public var burstGap: UInt64 = 300_000
        public init() {}
    }

    public let ssrc: UInt32
    public let options: Options
    private var sender: RTPSender
    private let rtpSocket: Socket
    private let rtcpSocket: Socket
    /// The local port receivers send RTCP to.
    public let rtcpPort: Int
    private let receiveBuffer: UnsafeMutableRawBufferPointer
    private let rtcpDestinations: [SocketAddress]
    /// What the sockets refused: how many packets, and the last error.
    private var sendErrors: UInt64 = 0
    private var lastSendError: Int32?

    /// Opens the sockets; throws a ``TransportError`` naming what failed.
    public init(options: Options) throws(TransportError) {
        precondition(!options.destinations.isEmpty)
        guard (64...9000).contains(options.maxPacketSize) else { throw .invalidPacketSize(options.maxPacketSize) }
        let family = options.destinations[0].family
        let rtp = try Self.system { () throws(SystemError) in try Socket(family: family, type: SOCK_DGRAM) }
        try? rtp.setOption(SOL_SOCKET, SO_SNDBUF, Int32(4 << 20))
        let rtcp = try Self.system { () throws(SystemError) in try Socket(family: family, type: SOCK_DGRAM, nonBlocking: true) }
        // Bind RTCP to an ephemeral port so receivers can answer our reports,
        // on the address the stream leaves from (loopback for a loopback
        // stream: feedback from other hosts cannot reach it); on every
        // address only when the destinations are reached from several.
        let sources = options.destinations.map { SocketAddress.local(toward: $0.address) }
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
        if options.destinations.count == 1 { try Self.system { () throws(SystemError) in try rtp.connect(to: options.destinations[0].address) } }
        rtpSocket = rtp
        rtcpSocket = rtcp
        ssrc = UInt32.random(in: 1...UInt32.max)
        self.options = options
        var configuration = RTPSender.Configuration(ssrc: ssrc)
        configuration.maxPacketSize = options.maxPacketSize
        configuration.destinations = options.destinations.count
        configuration.burstPackets = max(1, options.burstPackets)
        configuration.burstGap = options.burstGap
        sender = RTPSender(configuration)
        receiveBuffer = .allocate(byteCount: 1500, alignment: 16)
        rtcpDestinations = options.destinations.map(\.rtcpAddress)
    }

    private static func system<T: ~Copyable>(_ body: () throws(SystemError) -> T) throws(TransportError) -> T {
        do throws(SystemError) { return try body() } catch { throw .system(error) }
    }

    /// Whether every destination asks for what it misses (``RTPSender/everyDestinationAsks(now:)``):
    /// then keyframes wait until one is asked for.
    public func everyDestinationAsks(now: UInt64) -> Bool { sender.everyDestinationAsks(now: now) }

    deinit { receiveBuffer.deallocate() }

    /// Sends the frame (a sink of the share's pipeline): `timing` gets when
    /// its last packet went and its PictureID.
    public func deliver(_ frame: EncodedFrame, captureTime: UInt64, timing: inout FrameTiming) {
        timing.pictureID = send(frame, captureTime: captureTime)
        timing.sent = MonotonicClock.now()
    }

    /// Sends one encoded frame captured at `captureTime` to every
    /// destination, its bursts paced on this thread; returns the PictureID
    /// it went with (the one thing a receiver behind Janus, which rewrites
    /// sequence numbers and timestamps, can name it by).
    @discardableResult
    public func send(_ frame: EncodedFrame, captureTime: UInt64) -> UInt16 {
        let pictureID = sender.send(frame.bytes, keyframe: frame.isKeyframe, captureTime: captureTime, now: MonotonicClock.now())
        // Bursts on a schedule from the frame's first packet: a sleep that overshoots
        // (they do, by 0.1 ms and more here) is caught up by the next burst.
        flush(now: MonotonicClock.now())
        while let due = sender.nextPacketDue {
            MonotonicClock.sleep(until: due)
            flush(now: MonotonicClock.now())
        }
        return pictureID
    }

    /// Sends what the sender has due by `now`.
    private func flush(now: UInt64) {
        _ = sender.poll(now: now) { datagram, route in
            switch route {
            case .media: transmit(datagram)
            case .control: for destination in rtcpDestinations { _ = try? rtcpSocket.send(datagram, to: destination) }
            }
        }
    }

    private func transmit(_ packet: UnsafeRawBufferPointer) {
        for destination in options.destinations {
            do {
                // A full socket buffer (nil) drops the packet, as a full network queue would.
                if try rtpSocket.send(packet, to: destination.address) == nil {
                    sendErrors += 1
                    lastSendError = Errno.wouldBlock.rawValue
                }
            } catch {
                sendErrors += 1
                lastSendError = error.code.rawValue
            }
        }
    }

    /// Reads pending RTCP into the sender, then sends what is due (resends,
    /// a Sender Report); returns true when a receiver asked for a keyframe.
    public func poll(now: UInt64) -> Bool {
        var keyframe = false
        var from = SocketAddress()
        while let count = try? rtcpSocket.receive(into: receiveBuffer, from: &from), count > 0 {
            // Feedback speaks for the destinations on its host; a promise, for the one whose RTCP port it comes from.
            let hosts = options.destinations.indices.filter { options.destinations[$0].address.sameHost(as: from) }
            let ports = rtcpDestinations.indices.filter { rtcpDestinations[$0].sameHost(as: from) && rtcpDestinations[$0].port == from.port }
            if sender.receiveRTCP(UnsafeRawBufferPointer(rebasing: receiveBuffer[..<count]), fromHostOf: hosts, fromRTCPPortOf: ports, now: now).keyframe {
                keyframe = true
            }
        }
        flush(now: now)
        return keyframe
    }

    /// Keyframes, resends and reports wait on the stream between frames.
    public var isLive: Bool { true }

    /// A still screen still sends a frame a second: Janus and players take a long silence for a lost stream.
    public var wantsIdleRepeats: Bool { true }

    /// Periodic keyframes while some destination cannot ask for one.
    public func needsPeriodicKeyframes(now: UInt64) -> Bool { !everyDestinationAsks(now: now) }

    /// The stream's figures, as the share's `transport`.
    public func report(into stats: inout ShareStats) { stats.transport = summary }

    /// The stream's figures: the sender's, and what the sockets refused.
    public var summary: TransportStats {
        var stats = sender.stats
        stats.sendErrors = sendErrors
        stats.lastSendError = lastSendError
        return stats
    }
}
