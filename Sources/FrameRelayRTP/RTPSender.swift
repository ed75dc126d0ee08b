import FrameRelaySystem

/// One RTP stream's sending side as a state machine, with no socket, clock
/// or thread (the shape of pion/interceptor and swift-nio's
/// `EmbeddedChannel`): a frame goes in and becomes packets, each due at the
/// time the pacing sets; RTCP comes in and becomes resends and keyframe
/// asks; Sender Reports fall due on a schedule. The caller hands it `now`
/// and bytes, transmits what ``poll(now:_:)`` hands back, and calls again
/// by the deadline it returns.
///
/// Pacing (a token bucket, in the manner of libwebrtc's pacer): packets
/// leave in order at ``Configuration/pacingFactor`` times the stream's
/// target bitrate, with up to ``Configuration/burstInterval`` of that rate
/// at once after a pause, so a typical frame goes at once and a keyframe's
/// hundreds of packets are spread out rather than overflowing a narrow
/// link's queue. A queue that would take longer than
/// ``Configuration/maxQueueTime`` to drain at that rate is sent faster,
/// to drain in that time. Resends answer NACKs from the last 1,024 packets
/// (``RetransmissionHistory``) ahead of the queue, go only to the
/// destinations that asked (a NACK from no destination's host is no one's),
/// and count in the bucket; as in libwebrtc, they may take at most the
/// target bitrate over a second to each destination, and the encoder is
/// given the target less what the most repaired destination took
/// (``encoderBitrate(now:)``), so that the stream with its repairs stays
/// within what each receiver carries.
package struct RTPSender: ~Copyable {
    package struct Configuration: Sendable {
        package var ssrc: UInt32
        package var payloadType: UInt8 = 96
        package var maxPacketSize = 1200
        /// How many destinations get the stream (each one's feedback is told apart).
        package var destinations = 1
        /// The stream's target bitrate, bits/s (the encoder's); the pacing
        /// rate is ``pacingFactor`` times it (``RTPSender/setTargetBitrate(_:)`` changes it).
        package var targetBitrate = 2_500_000
        /// libwebrtc paces at 2.5 times the target: room for the encoder's
        /// overshoot on a big change without letting a keyframe out at once.
        package var pacingFactor = 2.5
        /// How much of the pacing rate may leave at once after a pause (libwebrtc's burst interval).
        package var burstInterval: UInt64 = 40_000_000
        /// The longest the queue may take to drain: past it, packets leave faster.
        package var maxQueueTime: UInt64 = 500_000_000
        /// Whether the target follows the receivers' reports (``BitrateController``),
        /// between ``floorBitrate`` and the target it started at.
        package var adapts = false
        /// LiveKit's floor for a screen share's layer, bits/s.
        package var floorBitrate = 150_000
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
        /// RTP sent again, to this destination's media port (it asked for it).
        case repair(Int)
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

    package private(set) var configuration: Configuration
    /// The wall clock's NTP time (RFC 3550: seconds since 1900 in the high
    /// 32 bits, the fraction in the low), for Sender Reports.
    private let wallClock: () -> UInt64
    private var packetizer: RTPPacketizer
    private var history: RetransmissionHistory
    private let scratch: UnsafeMutableRawPointer
    /// Packets written into the history and sent in order from `firstQueued`:
    /// `queued` of them, `queuedSent` gone, `queuedBytes` still waiting.
    private var firstQueued: UInt16 = 0
    private var queued = 0
    private var queuedSent = 0
    private var queuedBytes = 0
    /// The token bucket, in whole numbers so that a deadline is exact: the
    /// bytes that may leave (negative: owed) as of `budgetTime`, times 10^9,
    /// refilled at `rate` bytes/s (so by `rate` a nanosecond).
    private var budget: Int64 = 0
    private var budgetTime: UInt64?
    private var rate: Int64
    /// Packets handed out of the queue so far (sent, or counted as overwritten), and queued so far:
    /// a frame whose ``send(_:keyframe:layer:captureTime:now:)`` returned `through` has left once `released` reaches it.
    package private(set) var released: UInt64 = 0
    private var enqueued: UInt64 = 0
    /// Each destination's NACKed sequence numbers to send it again at the next poll (at most the history's capacity each).
    private var resends: [[UInt16]]
    private var feedback = RTCP.Feedback()
    /// Bytes resent to each destination in each 100 ms of the last second (the slot of `now / 100 ms` modulo 10), and the slot last written.
    private var resentBytes: [[Int]]
    private var resentSlot: UInt64 = 0
    /// The target from the receivers' reports, when the stream adapts.
    package private(set) var controller: BitrateController?
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
        precondition(configuration.destinations >= 1 && configuration.targetBitrate > 0 && configuration.pacingFactor > 0)
        self.configuration = configuration
        rate = Self.pacingRate(configuration)
        if configuration.adapts {
            controller = BitrateController(floor: min(configuration.floorBitrate, configuration.targetBitrate), ceiling: configuration.targetBitrate,
                                           receivers: configuration.destinations)
        }
        self.wallClock = wallClock
        packetizer = RTPPacketizer(ssrc: configuration.ssrc, payloadType: configuration.payloadType, maxPacketSize: configuration.maxPacketSize,
                                   sequence: sequence, pictureID: pictureID)
        history = RetransmissionHistory(packetSize: configuration.maxPacketSize, destinations: configuration.destinations)
        scratch = .allocate(byteCount: max(configuration.maxPacketSize, 64), alignment: 16)
        self.rtpBase = rtpBase
        stats.ssrc = configuration.ssrc
        asks = Array(repeating: false, count: configuration.destinations)
        promised = Array(repeating: 0, count: configuration.destinations)
        resentBytes = Array(repeating: Array(repeating: 0, count: 10), count: configuration.destinations)
        resends = Array(repeating: [], count: configuration.destinations)
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
    /// are queued behind any still waiting, paced from `now`. Returns its
    /// PictureID, and the count ``released`` reaches when its last packet has gone.
    @discardableResult
    package mutating func send(_ frame: UnsafeRawBufferPointer, keyframe: Bool, layer: VP8TemporalLayer? = nil, captureTime: UInt64,
                               now: UInt64) -> (pictureID: UInt16, through: UInt64) {
        if monotonicBase == nil {
            monotonicBase = captureTime
            nextSenderReport = now
        }
        if queued == queuedSent {
            firstQueued = packetizer.sequence
            (queued, queuedSent) = (0, 0)
        }
        refill(now: now)
        let pictureID = packetizer.pictureID
        packetizer.packetize(frame, timestamp: rtpTimestamp(captureTime), layer: layer, scratch: scratch) { packet, sequence in
            history.record(packet, sequence: sequence)
            stats.packets += 1
            stats.octets += UInt64(packet.count - RTPPacketizer.headerSize)
            queuedBytes += packet.count
        }
        let added = Int(packetizer.sequence &- firstQueued) - queued
        queued += added
        enqueued += UInt64(added)
        // A queue too long for the pacing rate drains within maxQueueTime instead.
        rate = max(Self.pacingRate(configuration), Int64(queuedBytes) * 1_000_000_000 / Int64(max(1, configuration.maxQueueTime)))
        stats.frames += 1
        if keyframe { stats.keyframes += 1 }
        return (pictureID, enqueued)
    }

    /// Sets the target bitrate (bits/s) the pacing follows, from the next frame on.
    package mutating func setTargetBitrate(_ bitsPerSecond: Int) {
        precondition(bitsPerSecond > 0)
        configuration.targetBitrate = bitsPerSecond
    }

    /// Bytes a second: the pacing factor times the target bitrate.
    private static func pacingRate(_ configuration: Configuration) -> Int64 {
        max(1, Int64((Double(configuration.targetBitrate) * configuration.pacingFactor / 8).rounded()))
    }

    /// What the bucket holds at most (×10^9): a burst interval at the pacing rate, at least one packet.
    private var burstBudget: Int64 {
        max(Int64(configuration.maxPacketSize), rate * Int64(configuration.burstInterval) / 1_000_000_000) * 1_000_000_000
    }

    /// Brings the bucket to `now`: what the time since it last did earns, up to a burst.
    private mutating func refill(now: UInt64) {
        guard let since = budgetTime else {
            (budget, budgetTime) = (burstBudget, now)
            return
        }
        guard now > since else { return }
        // Past a second, the bucket is full whatever it owed.
        budget = min(burstBudget, budget + Int64(min(now - since, 1_000_000_000)) * rate)
        budgetTime = now
    }

    /// When the next of the queued packets is due (nil: none waits): at
    /// once while the bucket holds bytes, else the first nanosecond it has
    /// earned back what it owes.
    package var nextPacketDue: UInt64? {
        guard queuedSent < queued, let since = budgetTime else { return nil }
        guard budget <= 0 else { return since }
        return since &+ UInt64(-budget / rate) &+ 1
    }

    /// Bytes queued and not yet sent.
    package var waitingBytes: Int { queuedBytes }

    /// Brings the slots of resent bytes to `now`: those that passed since
    /// the last one written are emptied, all ten after a long pause.
    private mutating func advanceResentSlots(now: UInt64) {
        let slot = now / 100_000_000
        guard slot > resentSlot else { return }
        for passed in (resentSlot + 1)...max(resentSlot + 1, min(slot, resentSlot + 10)) {
            for destination in resentBytes.indices { resentBytes[destination][Int(passed % 10)] = 0 }
        }
        resentSlot = slot
    }

    /// Bytes resent to `destination` within the last second (ten slots of 100 ms, the current one included).
    private func resentInLastSecond(to destination: Int) -> Int { resentBytes[destination].reduce(0, +) }

    /// What the encoder may take, bits/s: the target less the resends of
    /// the last second to the destination that took most (libwebrtc's
    /// protection overhead), at least the floor when the stream adapts.
    package mutating func encoderBitrate(now: UInt64) -> Int {
        advanceResentSlots(now: now)
        // Asked once a frame: a loop, no array.
        var most = 0
        for destination in resentBytes.indices { most = max(most, resentInLastSecond(to: destination)) }
        let left = configuration.targetBitrate - most * 8
        return max(min(configuration.floorBitrate, configuration.targetBitrate), left)
    }

    /// Hands `transmit` every datagram due by `now`, in order: resends
    /// first, then the queued packets whose burst is due, then a Sender
    /// Report when one is; returns when the next is due (nil: nothing waits).
    package mutating func poll(now: UInt64, _ transmit: (UnsafeRawBufferPointer, Route) -> Void) -> UInt64? {
        refill(now: now)
        // Time moves the target too: a REMB or a report goes stale (``BitrateController/tick(now:)``).
        if controller != nil {
            controller!.tick(now: now)
            followController(now: now)
        }
        for destination in resends.indices where !resends[destination].isEmpty {
            advanceResentSlots(now: now)
            // Each destination's own budget: the target over a second, and the history's limits for it.
            var allowed = configuration.targetBitrate / 8 - resentInLastSecond(to: destination)
            for sequence in resends[destination] where allowed > 0 {
                guard let packet = history.resend(sequence, to: destination, now: now) else { continue }
                transmit(packet, .repair(destination))
                stats.retransmitted += 1
                budget -= Int64(packet.count) * 1_000_000_000
                resentBytes[destination][Int(resentSlot % 10)] += packet.count
                allowed -= packet.count
            }
            resends[destination].removeAll(keepingCapacity: true)
        }
        while queuedSent < queued, budget > 0 {
            // A packet overwritten in the history (a frame of more packets than it holds) is counted, never sent wrong.
            if let packet = history.packet(firstQueued &+ UInt16(truncatingIfNeeded: queuedSent)) {
                transmit(packet, .media)
                budget -= Int64(packet.count) * 1_000_000_000
                queuedBytes -= packet.count
            } else {
                stats.overwritten += 1
            }
            queuedSent += 1
            released += 1
        }
        if queuedSent == queued {
            queuedBytes = 0
            rate = Self.pacingRate(configuration)
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

    /// Sets the target to the controller's at `now`.
    private mutating func followController(now: UInt64) {
        guard let controller else { return }
        let target = controller.target(now: now)
        if target != configuration.targetBitrate { setTargetBitrate(target) }
        stats.targetBitrate = target
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
        // What a receiver reports is its figures only when it speaks from a destination's host (a stranger's are not shown).
        if !fromHostOf.isEmpty || !fromRTCPPortOf.isEmpty {
            if let lost = feedback.fractionLost { stats.lastFractionLost = Double(lost) / 256 }
            if let estimate = feedback.estimatedBitrate { stats.estimatedBitrate = estimate }
        }
        // A receiver's report moves the target: it speaks from its RTCP port, or at least from its host.
        if var controller, let receiver = fromRTCPPortOf.first ?? fromHostOf.first {
            // The REMB first: the report it came with grows the rate from it.
            if let estimate = feedback.estimatedBitrate { controller.remb(estimate, from: receiver, now: now) }
            if let lost = feedback.fractionLost { controller.report(fractionLost: Double(lost) / 256, from: receiver, now: now) }
            self.controller = controller
            followController(now: now)
        }
        stats.receiverReports += UInt64(feedback.receiverReports)
        // An ask speaks for the destination whose RTCP port it comes from, when one's does (Janus's:
        // an `--rtp` player on Janus's host that never asks keeps its periodic keyframes), else for
        // those on its host (a receiver that answers from another port).
        if feedback.pictureLoss || feedback.fullIntraRequest || !feedback.nacked.isEmpty {
            for index in fromRTCPPortOf.isEmpty ? fromHostOf : fromRTCPPortOf where asks.indices.contains(index) { asks[index] = true }
        }
        // A promise speaks for the one destination whose RTCP port it comes from.
        if feedback.asksForRepair {
            for index in fromRTCPPortOf where promised.indices.contains(index) { promised[index] = now }
        }
        // Resends go to the destinations that asked, as an ask does (none from a stranger), each into its own queue.
        let asking = (fromRTCPPortOf.isEmpty ? fromHostOf : fromRTCPPortOf).filter { resends.indices.contains($0) }
        guard !asking.isEmpty else { return asked }
        stats.nacked += UInt64(feedback.nacked.count)
        for destination in asking { resends[destination] += feedback.nacked.prefix(max(0, RetransmissionHistory.capacity - resends[destination].count)) }
        asked.resends = feedback.nacked.count
        return asked
    }

    /// Whether every destination has asked for keyframes or resends (browsers
    /// and Janus when they join; Janus for every substream, ``noteAsked(by:)``), or said it will (`frame-relay
    /// receive`, in its receiver reports, within ``Configuration/promiseLifetime``),
    /// so that keyframes can wait until one is asked for; a destination that
    /// never asks (an SDP file read by ffmpeg, a plain UDP sink) needs periodic ones.
    package func everyDestinationAsks(now: UInt64) -> Bool {
        asks.indices.allSatisfy { asks[$0] || (promised[$0] != 0 && now &- promised[$0] < configuration.promiseLifetime) }
    }

    /// Notes that destination `index` asked for this stream in feedback that
    /// names another (Janus names substream 0's SSRC in every PLI it passes
    /// on), as if it had named it (``everyDestinationAsks(now:)``).
    package mutating func noteAsked(by index: Int) {
        if asks.indices.contains(index) { asks[index] = true }
    }
}
