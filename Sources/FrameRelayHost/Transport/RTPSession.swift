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
        /// Receivers of the whole picture (the top simulcast stream).
        public var destinations: [Destination] = []
        /// Where each simulcast stream goes, smallest first (a Janus
        /// mountpoint's port for each substream, with its RTCP port); the
        /// top one also goes to ``destinations``. Empty: one stream, the whole picture.
        public var simulcast: [Destination] = []
        public var maxPacketSize = 1200
        /// Packets sent back to back before a pause (keyframe bursts).
        public var burstPackets = 16
        /// Pause between bursts, ns.
        public var burstGap: UInt64 = 300_000
        public init() {}
    }

    /// One simulcast stream: its sender (its own SSRC, sequence and PictureID) and where it goes.
    private final class Stream {
        var sender: RTPSender
        let destinations: [Destination]
        let rtcpDestinations: [SocketAddress]

        init(_ sender: consuming RTPSender, destinations: [Destination]) {
            self.sender = sender
            self.destinations = destinations
            rtcpDestinations = destinations.map(\.rtcpAddress)
        }
    }

    public let options: Options
    /// Smallest first; the last is the whole picture.
    private let streams: [Stream]
    private let rtpSocket: Socket
    private let rtcpSocket: Socket
    /// The local port receivers send RTCP to.
    public let rtcpPort: Int
    private let receiveBuffer: UnsafeMutableRawBufferPointer
    /// Janus's keyframe asks that name SSRC 0 (read apart from the streams').
    private var janusFeedback = RTCP.Feedback()
    /// What the sockets refused: how many packets, and the last error.
    private var sendErrors: UInt64 = 0
    private var lastSendError: Int32?

    /// The whole picture's SSRC (the one an SDP file names).
    public var ssrc: UInt32 { streams[streams.count - 1].sender.configuration.ssrc }
    /// Each stream's SSRC, smallest first.
    public var ssrcs: [UInt32] { streams.map { $0.sender.configuration.ssrc } }

    /// Opens the sockets; throws a ``TransportError`` naming what failed.
    public init(options: Options) throws(TransportError) {
        let every = options.destinations + options.simulcast
        precondition(!every.isEmpty)
        guard (64...9000).contains(options.maxPacketSize) else { throw .invalidPacketSize(options.maxPacketSize) }
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
        rtpSocket = rtp
        rtcpSocket = rtcp
        self.options = options
        let count = max(1, options.simulcast.count)
        var ssrcs: Set<UInt32> = []
        streams = (0..<count).map { index in
            var ssrc = UInt32.random(in: 1...UInt32.max)
            while !ssrcs.insert(ssrc).inserted { ssrc = UInt32.random(in: 1...UInt32.max) }
            let destinations = (options.simulcast.isEmpty ? [] : [options.simulcast[index]]) + (index == count - 1 ? options.destinations : [])
            var configuration = RTPSender.Configuration(ssrc: ssrc)
            configuration.maxPacketSize = options.maxPacketSize
            configuration.destinations = destinations.count
            configuration.burstPackets = max(1, options.burstPackets)
            configuration.burstGap = options.burstGap
            return Stream(RTPSender(configuration), destinations: destinations)
        }
        receiveBuffer = .allocate(byteCount: 1500, alignment: 16)
    }

    private static func system<T: ~Copyable>(_ body: () throws(SystemError) -> T) throws(TransportError) -> T {
        do throws(SystemError) { return try body() } catch { throw .system(error) }
    }

    /// Whether every destination of every stream asks for what it misses
    /// (``RTPSender/everyDestinationAsks(now:)``): then keyframes wait until one is asked for.
    public func everyDestinationAsks(now: UInt64) -> Bool { streams.allSatisfy { $0.sender.everyDestinationAsks(now: now) } }

    deinit { receiveBuffer.deallocate() }

    /// Sends the frame on its simulcast stream (a sink of the share's
    /// pipeline; without simulcast destinations, only the whole picture):
    /// the whole picture's `timing` gets when its last packet went and its PictureID.
    public func deliver(_ frame: EncodedFrame, captureTime: UInt64, timing: inout FrameTiming) {
        let index = options.simulcast.isEmpty ? (frame.isTopLayer ? 0 : nil) : frame.layer
        guard let index, streams.indices.contains(index) else { return }
        let pictureID = send(frame, on: streams[index], captureTime: captureTime)
        if streams.count > 1 { timing.streams.record(.init(stream: index, picture: pictureID, width: frame.width, keyframe: frame.isKeyframe)) }
        if frame.isTopLayer {
            timing.pictureID = pictureID
            timing.sent = MonotonicClock.now()
        }
    }

    /// Sends one encoded frame of the whole picture captured at
    /// `captureTime` to every destination, its bursts paced on this thread;
    /// returns the PictureID it went with (the one thing a receiver behind
    /// Janus, which rewrites sequence numbers and timestamps, can name it by).
    @discardableResult
    public func send(_ frame: EncodedFrame, captureTime: UInt64) -> UInt16 {
        send(frame, on: streams[streams.count - 1], captureTime: captureTime)
    }

    private func send(_ frame: EncodedFrame, on stream: Stream, captureTime: UInt64) -> UInt16 {
        let pictureID = stream.sender.send(frame.bytes, keyframe: frame.isKeyframe, layer: frame.temporalLayer, captureTime: captureTime, now: MonotonicClock.now())
        // Bursts on a schedule from the frame's first packet: a sleep that overshoots
        // (they do, by 0.1 ms and more here) is caught up by the next burst.
        flush(stream, now: MonotonicClock.now())
        while let due = stream.sender.nextPacketDue {
            MonotonicClock.sleep(until: due)
            flush(stream, now: MonotonicClock.now())
        }
        return pictureID
    }

    /// Sends what `stream`'s sender has due by `now`.
    private func flush(_ stream: Stream, now: UInt64) {
        _ = stream.sender.poll(now: now) { datagram, route in
            switch route {
            case .media: transmit(datagram, to: stream.destinations)
            case .control: for destination in stream.rtcpDestinations { _ = try? rtcpSocket.send(datagram, to: destination) }
            }
        }
    }

    private func transmit(_ packet: UnsafeRawBufferPointer, to destinations: [Destination]) {
        for destination in destinations {
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

    /// Reads pending RTCP into each stream's sender, then sends what is due
    /// (resends, Sender Reports); returns the streams a receiver asked a
    /// keyframe on. A PLI or FIR names its stream by its media SSRC, and
    /// only that stream makes a keyframe, with one exception: Janus (1.1.2)
    /// names substream 0's SSRC in every PLI it passes on, whichever
    /// substream its viewer watches (janus_streaming.c sets the SSRC it
    /// names from port 1 only), so a keyframe asked on stream 0 of a
    /// simulcast mountpoint is made on every stream; and while stream 0
    /// sends nothing (a picture too narrow for it), Janus names SSRC 0.
    public func poll(now: UInt64) -> KeyframeRequests.Streams {
        var asked: KeyframeRequests.Streams = []
        var from = SocketAddress()
        while let count = try? rtcpSocket.receive(into: receiveBuffer, from: &from), count > 0 {
            let datagram = UnsafeRawBufferPointer(rebasing: receiveBuffer[..<count])
            if options.simulcast.count > 1, options.simulcast.contains(where: { $0.address.sameHost(as: from) }) {
                janusFeedback.reset()
                RTCP.parse(datagram, ssrc: 0, into: &janusFeedback)
                if janusFeedback.pictureLoss || janusFeedback.fullIntraRequest { asked.insert(.all) }
            }
            for (index, stream) in streams.enumerated() {
                // Feedback speaks for the destinations on its host; a promise, for the one whose RTCP port it comes from.
                let hosts = stream.destinations.indices.filter { stream.destinations[$0].address.sameHost(as: from) }
                let ports = stream.rtcpDestinations.indices.filter { stream.rtcpDestinations[$0].sameHost(as: from) && stream.rtcpDestinations[$0].port == from.port }
                if stream.sender.receiveRTCP(datagram, fromHostOf: hosts, fromRTCPPortOf: ports, now: now).keyframe {
                    asked.insert(index == 0 && options.simulcast.count > 1 ? .all : .stream(index))
                }
            }
        }
        for stream in streams { flush(stream, now: now) }
        return asked
    }

    /// Keyframes, resends and reports wait on the stream between frames.
    public var isLive: Bool { true }

    /// A still screen still sends a frame a second: Janus and players take a long silence for a lost stream.
    public var wantsIdleRepeats: Bool { true }

    /// Periodic keyframes while some destination cannot ask for one.
    public func needsPeriodicKeyframes(now: UInt64) -> Bool { !everyDestinationAsks(now: now) }

    /// The stream's figures, as the share's `transport` (the whole picture's), and each simulcast stream's.
    public func report(into stats: inout ShareStats) {
        stats.transport = summary
        stats.streams = streams.count > 1 ? streams.map { SimulcastStreamStats($0.sender.stats) } : []
    }

    /// The whole picture's figures: its sender's, and what the sockets
    /// refused; with simulcast streams, the feedback (RTCP, PLI, FIR, NACK)
    /// every stream's sender took (Janus names substream 0 in its PLIs).
    public var summary: TransportStats {
        var stats = streams[streams.count - 1].sender.stats
        for stream in streams.dropLast() {
            let other = stream.sender.stats
            stats.pli += other.pli
            stats.fir += other.fir
            stats.nacked += other.nacked
            stats.rtcpReceived += other.rtcpReceived
            stats.receiverReports += other.receiverReports
        }
        stats.sendErrors = sendErrors
        stats.lastSendError = lastSendError
        return stats
    }
}
