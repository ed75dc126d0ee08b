import FrameRelaySystem

/// One RTP stream's sending side as a state machine, with no socket, clock
/// or thread (the shape of pion/interceptor and swift-nio's
/// `EmbeddedChannel`): a frame goes in and becomes packets, each due at the
/// time the pacing sets; RTCP comes in and becomes resends and keyframe
/// asks; Sender Reports fall due on a schedule. The caller hands it `now`
/// and bytes, transmits what ``poll(now:_:)`` hands back, and calls again
/// by the deadline it returns.
///
/// Pacing: a frame's packets leave in bursts of ``Configuration/burstPackets``,
/// ``Configuration/burstGap`` apart from when the frame came, so that a
/// keyframe's hundreds of packets do not reach the network at once.
/// Resends answer NACKs from the last 1,024 packets (``RetransmissionHistory``).
package struct RTPSender: ~Copyable {
    package struct Configuration: Sendable {
        package var ssrc: UInt32
        package var payloadType: UInt8 = 96
        package var maxPacketSize = 1200
        /// How many destinations get the stream (each one's feedback is told apart).
        package var destinations = 1
        /// Packets sent back to back before a pause, and the pause.
        package var burstPackets = 16
        package var burstGap: UInt64 = 300_000
        /// How often a Sender Report goes out. A receiver learns from the
        /// first one where to send its feedback (the sender's RTCP port is
        /// ephemeral), so a receiver joining mid-stream can ask for its
        /// keyframe only then: once a second put its first picture 0.24–1.18 s
        /// after it joined (loopback, 640×360 at 30 frames/s), every 250 ms
        /// 0.27–0.51 s. RFC 3550's reduced minimum (360 s divided by the
        /// session's kbit/s) is 144 ms at 2.5 Mbit/s, and 28 bytes every
        /// 150 ms is under 0.1 % of the stream.
        package var senderReportInterval: UInt64 = 150_000_000
        /// How long a receiver's promise to ask (``RTCP/asksForRepairName``) holds without another.
        package var promiseLifetime: UInt64 = 5_000_000_000

        package init(ssrc: UInt32) { self.ssrc = ssrc }
    }

    /// Where a datagram from ``poll(now:_:)`` goes.
    package enum Route: Equatable {
        /// RTP, to every destination's media port.
        case media
        /// RTCP (a Sender Report), to every destination's RTCP port.
        case control
    }

    /// What a datagram of RTCP asked for.
    package struct Asked: Equatable {
        /// A keyframe: a PLI, or a FIR with a new sequence number.
        package var keyframe = false
        /// Packets queued to go again.
        package var resends = 0

        package init(keyframe: Bool = false, resends: Int = 0) {
            self.keyframe = keyframe
            self.resends = resends
        }
    }

    package let configuration: Configuration
    /// The wall clock's NTP time (RFC 3550: seconds since 1900 in the high
    /// 32 bits, the fraction in the low), for Sender Reports.
    private let wallClock: () -> UInt64
    private var packetizer: RTPPacketizer
    private var history: RetransmissionHistory
    private let scratch: UnsafeMutableRawPointer
    /// Packets written into the history and sent in order from `firstQueued`:
    /// `queued` of them, `queuedSent` gone. Those from `pacedFrom` on leave
    /// in bursts from `pacedSince`; those before it (a frame's rest when the
    /// next came) are due at once.
    private var firstQueued: UInt16 = 0
    private var queued = 0
    private var queuedSent = 0
    private var pacedFrom = 0
    private var pacedSince: UInt64 = 0
    /// NACKed sequence numbers to send again at the next poll.
    private var resends: [UInt16] = []
    private var feedback = RTCP.Feedback()
    private var lastFIRSequence: UInt8?
    private var monotonicBase: UInt64?
    private let rtpBase: UInt32
    private var nextSenderReport: UInt64?
    /// Per destination: whether it asked for anything (NACK, PLI, FIR), and when its RTCP port last promised to.
    private var asks: [Bool]
    private var promised: [UInt64]
    /// What it did (the socket's refusals and the latency are added by others).
    package private(set) var stats = TransportStats()

    /// A stream starting at a random sequence number, PictureID and RTP time (RFC 3550 §5.1) unless given.
    package init(_ configuration: Configuration, sequence: UInt16 = .random(in: 0...UInt16.max), pictureID: UInt16 = .random(in: 0...0x7FFF),
                 rtpBase: UInt32 = .random(in: 0...UInt32.max), wallClock: @escaping () -> UInt64 = WallClock.ntpNow) {
        precondition(configuration.destinations >= 1 && configuration.burstPackets >= 1)
        self.configuration = configuration
        self.wallClock = wallClock
        packetizer = RTPPacketizer(ssrc: configuration.ssrc, payloadType: configuration.payloadType, maxPacketSize: configuration.maxPacketSize,
                                   sequence: sequence, pictureID: pictureID)
        history = RetransmissionHistory(packetSize: configuration.maxPacketSize)
        scratch = .allocate(byteCount: max(configuration.maxPacketSize, 64), alignment: 16)
        self.rtpBase = rtpBase
        stats.ssrc = configuration.ssrc
        asks = Array(repeating: false, count: configuration.destinations)
        promised = Array(repeating: 0, count: configuration.destinations)
        resends.reserveCapacity(256)
        feedback.nacked.reserveCapacity(256)
    }

    deinit { scratch.deallocate() }

    /// The 90 kHz RTP time of a CLOCK_MONOTONIC instant.
    package func rtpTimestamp(_ monotonic: UInt64) -> UInt32 {
        let elapsed = monotonic &- (monotonicBase ?? monotonic)
        return rtpBase &+ UInt32(truncatingIfNeeded: elapsed / 100_000 * 9 + (elapsed % 100_000) * 9 / 100_000)
    }

    /// Packetizes one frame captured at `captureTime`, arriving at `now`
    /// (`layer`: its temporal layer, when the stream has them): its packets
    /// are queued, the first burst due at once; returns its PictureID.
    /// A frame that comes while the one before still waits sends that one's rest first.
    @discardableResult
    package mutating func send(_ frame: UnsafeRawBufferPointer, keyframe: Bool, layer: VP8TemporalLayer? = nil, captureTime: UInt64, now: UInt64) -> UInt16 {
        if monotonicBase == nil {
            monotonicBase = captureTime
            nextSenderReport = now
        }
        if queued == queuedSent {
            firstQueued = packetizer.sequence
            (queued, queuedSent) = (0, 0)
        }
        // What still waits of the frame before is due at once, ahead of this one's, whose pacing starts now.
        (pacedFrom, pacedSince) = (queued, now)
        let pictureID = packetizer.pictureID
        packetizer.packetize(frame, timestamp: rtpTimestamp(captureTime), layer: layer, scratch: scratch) { packet, sequence in
            history.record(packet, sequence: sequence)
            stats.packets += 1
            stats.octets += UInt64(packet.count - RTPPacketizer.headerSize)
        }
        queued = Int(packetizer.sequence &- firstQueued)
        stats.frames += 1
        if keyframe { stats.keyframes += 1 }
        return pictureID
    }

    /// When the next of the queued packets is due (nil: none waits).
    package var nextPacketDue: UInt64? {
        guard queuedSent < queued else { return nil }
        guard queuedSent >= pacedFrom else { return pacedSince }
        return pacedSince &+ UInt64((queuedSent - pacedFrom) / configuration.burstPackets) * configuration.burstGap
    }

    /// Hands `transmit` every datagram due by `now`, in order: resends
    /// first, then the queued packets whose burst is due, then a Sender
    /// Report when one is; returns when the next is due (nil: nothing waits).
    package mutating func poll(now: UInt64, _ transmit: (UnsafeRawBufferPointer, Route) -> Void) -> UInt64? {
        for sequence in resends {
            guard let packet = history.resend(sequence, now: now) else { continue }
            transmit(packet, .media)
            stats.retransmitted += 1
        }
        resends.removeAll(keepingCapacity: true)
        while let due = nextPacketDue, due <= now {
            // A packet overwritten in the history (a frame of more packets than it holds) is counted, never sent wrong.
            if let packet = history.packet(firstQueued &+ UInt16(truncatingIfNeeded: queuedSent)) { transmit(packet, .media) } else { stats.overwritten += 1 }
            queuedSent += 1
        }
        if let due = nextSenderReport, due <= now {
            nextSenderReport = now + configuration.senderReportInterval
            RTCP.writeSenderReport(into: scratch, ssrc: configuration.ssrc, ntp: wallClock(), rtpTimestamp: rtpTimestamp(now),
                                   packets: UInt32(truncatingIfNeeded: stats.packets), octets: UInt32(truncatingIfNeeded: stats.octets))
            transmit(UnsafeRawBufferPointer(start: scratch, count: RTCP.senderReportSize), .control)
            stats.senderReports += 1
        }
        return [nextPacketDue, nextSenderReport].compactMap { $0 }.min()
    }

    /// Takes one RTCP datagram that came at `now`, from the host of the
    /// destinations `fromHostOf` (their indexes; empty: a stranger) and the
    /// RTCP port of those in `fromRTCPPortOf`: NACKs for this stream queue
    /// resends for the next poll; a PLI, or a FIR with a new sequence
    /// number, asks for a keyframe.
    @discardableResult
    package mutating func receiveRTCP(_ datagram: UnsafeRawBufferPointer, fromHostOf: [Int], fromRTCPPortOf: [Int], now: UInt64) -> Asked {
        stats.rtcpReceived += 1
        feedback.reset()
        RTCP.parse(datagram, ssrc: configuration.ssrc, into: &feedback)
        var asked = Asked()
        if feedback.pictureLoss {
            stats.pli += 1
            asked.keyframe = true
        }
        if feedback.fullIntraRequest, feedback.firSequence != lastFIRSequence {
            lastFIRSequence = feedback.firSequence
            stats.fir += 1
            asked.keyframe = true
        }
        if let lost = feedback.fractionLost { stats.lastFractionLost = Double(lost) / 256 }
        stats.receiverReports += UInt64(feedback.receiverReports)
        if feedback.pictureLoss || feedback.fullIntraRequest || !feedback.nacked.isEmpty {
            for index in fromHostOf where asks.indices.contains(index) { asks[index] = true }
        }
        // A promise speaks for the one destination whose RTCP port it comes from.
        if feedback.asksForRepair {
            for index in fromRTCPPortOf where promised.indices.contains(index) { promised[index] = now }
        }
        stats.nacked += UInt64(feedback.nacked.count)
        resends.append(contentsOf: feedback.nacked.prefix(max(0, 1024 - resends.count)))
        asked.resends = feedback.nacked.count
        return asked
    }

    /// Whether every destination has asked for keyframes or resends itself
    /// (browsers and Janus when they join), or said it will (`frame-relay
    /// receive`, in its receiver reports, within ``Configuration/promiseLifetime``),
    /// so that keyframes can wait until one is asked for; a destination that
    /// never asks (an SDP file read by ffmpeg, a plain UDP sink) needs periodic ones.
    package func everyDestinationAsks(now: UInt64) -> Bool {
        asks.indices.allSatisfy { asks[$0] || (promised[$0] != 0 && now &- promised[$0] < configuration.promiseLifetime) }
    }
}
