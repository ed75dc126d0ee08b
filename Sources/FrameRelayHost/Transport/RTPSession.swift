@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayRTP

/// One share's RTP stream: packetizes encoded frames to every destination,
/// paces bursts, answers NACKs from its ``RetransmissionHistory``, sends
/// Sender Reports and reads RTCP feedback (``RTCP``); its SDP is ``SDP``. Single-threaded: the share's thread calls ``send``
/// for each frame and ``poll`` between frames, so nothing needs a lock.
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
    private var packetizer: RTPPacketizer
    private let rtpSocket: Socket
    private let rtcpSocket: Socket
    /// The local port receivers send RTCP to.
    public let rtcpPort: Int
    private let scratch: UnsafeMutableRawPointer
    private var history: RetransmissionHistory
    private let receiveBuffer: UnsafeMutableRawBufferPointer
    private let rtcpDestinations: [SocketAddress]
    private var monotonicBase: UInt64?
    private let rtpBase = UInt32.random(in: 0...UInt32.max)
    private var lastSenderReport: UInt64 = 0
    /// How often a Sender Report goes to every destination. A receiver
    /// learns from the first one where to send its feedback (this session's
    /// RTCP port is ephemeral), so a receiver joining mid-stream can ask for
    /// its keyframe only then: once a second put its first picture 0.24–1.18 s
    /// after it joined (loopback, 640×360 at 30 frames/s), every 250 ms
    /// 0.27–0.51 s. RFC 3550's reduced minimum (360 s divided by the
    /// session's kbit/s) is 144 ms at the default 2.5 Mbit/s, and 28 bytes
    /// every 150 ms is under 0.1 % of the stream.
    public static let senderReportInterval: UInt64 = 150_000_000
    private var lastFIRSequence: UInt8?
    private var feedback = RTCP.Feedback()
    public private(set) var stats = TransportStats()
    /// Per destination: whether its host has asked for anything (NACK, PLI,
    /// FIR): a receiver that asks needs no periodic keyframes.
    private var asks: [Bool]
    /// Per destination: when its RTCP port last said it will ask
    /// (``RTCP/asksForRepairName``, once a second in its reports); the
    /// promise lapses after ``promiseLifetime`` without one, when that
    /// receiver may have left and something that never asks taken its port.
    private var promised: [UInt64]
    static let promiseLifetime: UInt64 = 5_000_000_000

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
        packetizer = RTPPacketizer(ssrc: ssrc, maxPacketSize: options.maxPacketSize)
        scratch = .allocate(byteCount: options.maxPacketSize, alignment: 16)
        history = RetransmissionHistory(packetSize: options.maxPacketSize)
        receiveBuffer = .allocate(byteCount: 1500, alignment: 16)
        rtcpDestinations = options.destinations.map(\.rtcpAddress)
        feedback.nacked.reserveCapacity(256)
        asks = Array(repeating: false, count: options.destinations.count)
        promised = Array(repeating: 0, count: options.destinations.count)
    }

    private static func system<T: ~Copyable>(_ body: () throws(SystemError) -> T) throws(TransportError) -> T {
        do throws(SystemError) { return try body() } catch { throw .system(error) }
    }

    /// Whether every destination has asked for keyframes or retransmissions
    /// itself (browsers and Janus when they join), or said it will
    /// (`frame-relay receive`, in its receiver reports), so that keyframes
    /// can wait until one is asked for; a destination that never asks (an
    /// SDP file read by ffmpeg, a plain UDP sink) needs periodic ones.
    public func everyDestinationAsks(now: UInt64) -> Bool {
        asks.indices.allSatisfy { asks[$0] || (promised[$0] != 0 && now &- promised[$0] < Self.promiseLifetime) }
    }

    deinit {
        scratch.deallocate()
        receiveBuffer.deallocate()
    }

    /// The 90 kHz RTP time of a CLOCK_MONOTONIC instant.
    func rtpTimestamp(_ monotonic: UInt64) -> UInt32 {
        let base = monotonicBase ?? monotonic
        let elapsed = monotonic &- base
        return rtpBase &+ UInt32(truncatingIfNeeded: elapsed / 100_000 * 9 + (elapsed % 100_000) * 9 / 100_000)
    }

    /// Sends the frame (a sink of the share's pipeline): `timing` gets when
    /// its last packet went and its PictureID.
    public func deliver(_ frame: EncodedFrame, width: Int, height: Int, captureTime: UInt64, timing: inout FrameTiming) {
        timing.pictureID = send(frame, captureTime: captureTime)
        timing.sent = MonotonicClock.now()
    }

    /// Sends one encoded frame captured at `captureTime` to every
    /// destination; returns the PictureID it went with (the one thing a
    /// receiver behind Janus, which rewrites sequence numbers and
    /// timestamps, can name it by).
    @discardableResult
    public func send(_ frame: EncodedFrame, captureTime: UInt64) -> UInt16 {
        if monotonicBase == nil { monotonicBase = captureTime }
        let pictureID = packetizer.pictureID
        let timestamp = rtpTimestamp(captureTime)
        var inBurst = 0
        var nextBurst: UInt64 = 0
        packetizer.packetize(frame.bytes, timestamp: timestamp, scratch: scratch) { packet, sequence in
            if inBurst == options.burstPackets {
                // Bursts on a schedule from the frame's first packet: a sleep that
                // overshoots (they do, by 0.1 ms and more here) is caught up by
                // the next burst instead of adding up over a keyframe.
                let now = MonotonicClock.now()
                nextBurst = (nextBurst == 0 ? now : nextBurst) &+ options.burstGap
                if nextBurst > now { MonotonicClock.sleep(until: nextBurst) }
                inBurst = 0
            }
            inBurst += 1
            history.record(packet, sequence: sequence)
            transmit(packet)
            stats.packets += 1
            stats.octets += UInt64(packet.count - RTPPacketizer.headerSize)
        }
        stats.frames += 1
        if frame.isKeyframe { stats.keyframes += 1 }
        return pictureID
    }

    private func transmit(_ packet: UnsafeRawBufferPointer) {
        for destination in options.destinations {
            do {
                // A full socket buffer (nil) drops the packet, as a full network queue would.
                if try rtpSocket.send(packet, to: destination.address) == nil {
                    stats.sendErrors += 1
                    stats.lastSendError = Errno.wouldBlock.rawValue
                }
            } catch {
                stats.sendErrors += 1
                stats.lastSendError = error.code.rawValue
            }
        }
    }

    /// Reads pending RTCP, answers NACKs, sends a Sender Report when one is
    /// due; returns true when a receiver asked for a keyframe.
    public func poll(now: UInt64) -> Bool {
        var keyframe = false
        var from = SocketAddress()
        while let count = try? rtcpSocket.receive(into: receiveBuffer, from: &from), count > 0 {
            stats.rtcpReceived += 1
            feedback.pictureLoss = false
            feedback.fullIntraRequest = false
            feedback.nacked.removeAll(keepingCapacity: true)
            feedback.receiverReports = 0
            feedback.fractionLost = nil
            feedback.asksForRepair = false
            RTCP.parse(UnsafeRawBufferPointer(rebasing: receiveBuffer[..<count]), ssrc: ssrc, into: &feedback)
            if feedback.pictureLoss { stats.pli += 1 }
            var fir = false
            if feedback.fullIntraRequest, feedback.firSequence != lastFIRSequence {
                lastFIRSequence = feedback.firSequence
                stats.fir += 1
                fir = true
            }
            if let lost = feedback.fractionLost { stats.lastFractionLost = Double(lost) / 256 }
            stats.receiverReports = UInt64(feedback.receiverReports) + stats.receiverReports
            if feedback.pictureLoss || fir { keyframe = true }
            if feedback.pictureLoss || fir || !feedback.nacked.isEmpty {
                for (index, destination) in options.destinations.enumerated() where destination.address.sameHost(as: from) { asks[index] = true }
            }
            // A promise speaks for the one destination whose RTCP port it comes from.
            if feedback.asksForRepair {
                for (index, destination) in rtcpDestinations.enumerated() where destination.sameHost(as: from) && from.port == destination.port {
                    promised[index] = now
                }
            }
            for sequence in feedback.nacked { resend(sequence, now: now) }
        }
        if monotonicBase != nil, now &- lastSenderReport >= Self.senderReportInterval {
            lastSenderReport = now
            sendSenderReport(now: now)
        }
        return keyframe
    }

    private func resend(_ sequence: UInt16, now: UInt64) {
        stats.nacked += 1
        guard let packet = history.resend(sequence, now: now) else { return }
        transmit(packet)
        stats.retransmitted += 1
    }

    private func sendSenderReport(now: UInt64) {
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let ntpSeconds = UInt64(wall.tv_sec) + 2_208_988_800
        let ntpFraction = (UInt64(wall.tv_nsec) << 32) / 1_000_000_000
        RTCP.writeSenderReport(into: scratch, ssrc: ssrc, ntp: ntpSeconds << 32 | ntpFraction, rtpTimestamp: rtpTimestamp(now),
                               packets: UInt32(truncatingIfNeeded: stats.packets), octets: UInt32(truncatingIfNeeded: stats.octets))
        for destination in rtcpDestinations { _ = try? rtcpSocket.send(UnsafeRawBufferPointer(start: scratch, count: 28), to: destination) }
        stats.senderReports += 1
    }

    /// Statistics with the stream's SSRC.
    public var summary: TransportStats {
        var s = stats
        s.ssrc = ssrc
        return s
    }
}

