@preconcurrency import Glibc

/// One share's RTP stream: packetizes encoded frames to every destination,
/// paces bursts, keeps a short history for NACKs, sends Sender Reports and
/// reads RTCP feedback. Single-threaded: the share's thread calls ``send``
/// for each frame and ``poll`` between frames, so nothing needs a lock.
public final class RTPSession {
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
    private let rtpSocket: Int32
    private let rtcpSocket: Int32
    /// The local port receivers send RTCP to.
    public let rtcpPort: Int
    private let scratch: UnsafeMutableRawPointer
    private let historySize = 1024
    private let history: UnsafeMutableRawPointer
    private var historyLengths: [Int]
    private var historySequences: [UInt16]
    /// When each history slot was last sent again (CLOCK_MONOTONIC ns).
    private var historyResent: [UInt64]
    /// Retransmissions allowed now: one more for each packet sent first, up
    /// to a burst of ``resendBurst``, so that NACKs (which anyone who knows
    /// the SSRC can send) never make the stream more than twice its rate.
    private var resendTokens = RTPSession.resendBurst
    static let resendBurst = 256
    /// The least time between two retransmissions of one packet.
    static let resendInterval: UInt64 = 100_000_000
    private let receiveBuffer: UnsafeMutableRawPointer
    private let rtcpDestinations: [Destination]
    private var monotonicBase: UInt64?
    private let rtpBase = UInt32.random(in: 0...UInt32.max)
    private var lastSenderReport: UInt64 = 0
    private var lastFIRSequence: UInt8?
    private var feedback = RTCP.Feedback()
    public private(set) var stats = TransportStats()
    /// Per destination: whether its host has asked for anything (NACK, PLI,
    /// FIR): a receiver that asks needs no periodic keyframes.
    private var asks: [Bool]

    /// Opens the sockets; throws a ``SystemError`` naming the failing call.
    public init(options: Options) throws {
        precondition(!options.destinations.isEmpty)
        guard (64...9000).contains(options.maxPacketSize) else {
            throw UsageError("invalid packet size \(options.maxPacketSize): must be 64...9000")
        }
        let family = options.destinations[0].family
        let rtp = try valueOrErrno("socket", "udp") { socket(family, Int32(SOCK_DGRAM.rawValue), 0) }
        let rtcp: Int32
        do {
            rtcp = try valueOrErrno("socket", "udp") { socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0) }
        } catch {
            close(rtp)
            throw error
        }
        var size: Int32 = 4 << 20
        setsockopt(rtp, SOL_SOCKET, SO_SNDBUF, &size, 4)
        // Bind RTCP to an ephemeral port so receivers can answer our reports,
        // on the address the stream leaves from (loopback for a loopback
        // stream: feedback from other hosts cannot reach it); on every
        // address only when the destinations are reached from several.
        var local = sockaddr_storage()
        local.ss_family = sa_family_t(family)
        let sources = options.destinations.map { SocketAddress.local(toward: $0.address, length: $0.length) }
        if let first = sources.first ?? nil, sources.allSatisfy({ $0.map { SocketAddress.sameHost($0, first) } ?? false }) {
            local = first
            withUnsafeMutableBytes(of: &local) { $0.storeBytes(of: UInt16(0), toByteOffset: 2, as: UInt16.self) }
        }
        let localLength = socklen_t(family == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(rtcp, $0, localLength) }
        }
        guard bound == 0 else {
            let code = errno
            close(rtp)
            close(rtcp)
            throw SystemError("bind", "rtcp socket", code: code)
        }
        var name = sockaddr_storage()
        var nameLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutablePointer(to: &name) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(rtcp, $0, &nameLength) }
        }
        rtcpPort = withUnsafeBytes(of: &name) { Int(UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self))) }
        rtpSocket = rtp
        rtcpSocket = rtcp
        ssrc = UInt32.random(in: 1...UInt32.max)
        self.options = options
        packetizer = RTPPacketizer(ssrc: ssrc, maxPacketSize: options.maxPacketSize)
        scratch = .allocate(byteCount: options.maxPacketSize, alignment: 16)
        history = .allocate(byteCount: options.maxPacketSize * historySize, alignment: 16)
        historyLengths = Array(repeating: 0, count: historySize)
        historySequences = Array(repeating: 0, count: historySize)
        historyResent = Array(repeating: 0, count: historySize)
        receiveBuffer = .allocate(byteCount: 1500, alignment: 16)
        rtcpDestinations = options.destinations.map { $0.withPort($0.port + 1) }
        feedback.nacked.reserveCapacity(256)
        asks = Array(repeating: false, count: options.destinations.count)
    }

    /// Whether every destination has asked for keyframes or retransmissions
    /// itself (browsers, Janus, `frame-relay receive`), so that keyframes
    /// can wait until one is asked for; a destination that never asks (an
    /// SDP file read by ffmpeg, a plain UDP sink) needs periodic ones.
    public var everyDestinationAsks: Bool { !asks.contains(false) }

    deinit {
        close(rtpSocket)
        close(rtcpSocket)
        scratch.deallocate()
        history.deallocate()
        receiveBuffer.deallocate()
    }

    /// The 90 kHz RTP time of a CLOCK_MONOTONIC instant.
    func rtpTimestamp(_ monotonic: UInt64) -> UInt32 {
        let base = monotonicBase ?? monotonic
        let elapsed = monotonic &- base
        return rtpBase &+ UInt32(truncatingIfNeeded: elapsed / 100_000 * 9 + (elapsed % 100_000) * 9 / 100_000)
    }

    /// Sends one encoded frame captured at `captureTime` to every destination.
    public func send(_ frame: EncodedFrame, captureTime: UInt64) {
        if monotonicBase == nil { monotonicBase = captureTime }
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
            let slot = Int(sequence) % historySize
            (history + slot * options.maxPacketSize).copyMemory(from: packet.baseAddress!, byteCount: packet.count)
            historyLengths[slot] = packet.count
            historySequences[slot] = sequence
            historyResent[slot] = 0
            resendTokens = min(resendTokens + 1, Self.resendBurst)
            transmit(packet)
            stats.packets += 1
            stats.octets += UInt64(packet.count - RTPPacketizer.headerSize)
        }
        stats.frames += 1
        if frame.isKeyframe { stats.keyframes += 1 }
    }

    private func transmit(_ packet: UnsafeRawBufferPointer) {
        for destination in options.destinations {
            var address = destination.address
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(rtpSocket, packet.baseAddress, packet.count, Int32(MSG_DONTWAIT), $0, destination.length)
                }
            }
            if result < 0 {
                stats.sendErrors += 1
                stats.lastSendError = errno
            }
        }
    }

    /// Reads pending RTCP, answers NACKs, sends a Sender Report when one is
    /// due; returns true when a receiver asked for a keyframe.
    public func poll(now: UInt64) -> Bool {
        var keyframe = false
        while true {
            var from = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = withUnsafeMutablePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(rtcpSocket, receiveBuffer, 1500, Int32(MSG_DONTWAIT), $0, &length) }
            }
            guard count > 0 else { break }
            stats.rtcpReceived += 1
            feedback.pictureLoss = false
            feedback.fullIntraRequest = false
            feedback.nacked.removeAll(keepingCapacity: true)
            RTCP.parse(UnsafeRawBufferPointer(start: receiveBuffer, count: count), ssrc: ssrc, into: &feedback)
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
                for (index, destination) in options.destinations.enumerated() where SocketAddress.sameHost(destination.address, from) { asks[index] = true }
            }
            for sequence in feedback.nacked { resend(sequence, now: now) }
        }
        if monotonicBase != nil, now &- lastSenderReport >= 1_000_000_000 {
            lastSenderReport = now
            sendSenderReport(now: now)
        }
        return keyframe
    }

    private func resend(_ sequence: UInt16, now: UInt64) {
        stats.nacked += 1
        let slot = Int(sequence) % historySize
        guard historySequences[slot] == sequence, historyLengths[slot] > 0, resendTokens > 0,
            historyResent[slot] == 0 || now &- historyResent[slot] >= Self.resendInterval
        else { return }
        historyResent[slot] = now
        resendTokens -= 1
        transmit(UnsafeRawBufferPointer(start: history + slot * options.maxPacketSize, count: historyLengths[slot]))
        stats.retransmitted += 1
    }

    private func sendSenderReport(now: UInt64) {
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let ntpSeconds = UInt64(wall.tv_sec) + 2_208_988_800
        let ntpFraction = (UInt64(wall.tv_nsec) << 32) / 1_000_000_000
        RTCP.writeSenderReport(into: scratch, ssrc: ssrc, ntp: ntpSeconds << 32 | ntpFraction, rtpTimestamp: rtpTimestamp(now),
                               packets: UInt32(truncatingIfNeeded: stats.packets), octets: UInt32(truncatingIfNeeded: stats.octets))
        for destination in rtcpDestinations {
            var address = destination.address
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(rtcpSocket, scratch, 28, Int32(MSG_DONTWAIT), $0, destination.length)
                }
            }
        }
        stats.senderReports += 1
    }

    /// Statistics with the stream's SSRC.
    public var summary: TransportStats {
        var s = stats
        s.ssrc = ssrc
        return s
    }

    /// An SDP description that ffmpeg, ffplay, VLC and GStreamer open as written.
    public func sdp(for destination: Destination) -> String {
        let family = destination.family == AF_INET6 ? "IP6" : "IP4"
        return """
            v=0
            o=- \(ssrc) 1 IN \(family) \(destination.host)
            s=FrameRelay screen share
            c=IN \(family) \(destination.host)
            t=0 0
            m=video \(destination.port) RTP/AVP 96
            a=rtpmap:96 VP8/90000
            a=rtcp:\(destination.port + 1)
            a=rtcp-fb:96 nack
            a=rtcp-fb:96 nack pli
            a=rtcp-fb:96 ccm fir
            a=ssrc:\(ssrc) cname:framerelay
            a=recvonly

            """
    }
}

/// What one share's RTP stream did.
public struct TransportStats: Sendable, Codable {
    public var ssrc: UInt32 = 0
    public var frames: UInt64 = 0
    public var keyframes: UInt64 = 0
    public var packets: UInt64 = 0
    public var octets: UInt64 = 0
    public var sendErrors: UInt64 = 0
    /// errno of the last failed send.
    public var lastSendError: Int32?
    public var senderReports: UInt64 = 0
    public var receiverReports: UInt64 = 0
    public var rtcpReceived: UInt64 = 0
    public var pli: UInt64 = 0
    public var fir: UInt64 = 0
    public var nacked: UInt64 = 0
    public var retransmitted: UInt64 = 0
    public var lastFractionLost: Double = 0
    /// Capture → last packet sent (µs), from the share's frame timings.
    public var captureToSent = LatencySummary(count: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0)
}
