import FrameRelayRTP

/// One viewer's VP8 stream after SRTP: its RTP packets (retransmissions in
/// their RFC 4588 stream included) followed into frames a decoder could
/// take (``FrameTracker``), the packets it misses asked for again
/// (``MissingPackets``), reception reports' figures, freezes, keyframe
/// waits, each decodable frame's PictureID and time, and — one viewer in K
/// — the frames decoded (``SampledDecoder``). What to send back (NACKs, a
/// PLI, reports) it says; the subscriber sends it.
package final class StreamFollower {
    let payloadType: Int
    let retransmissionPayloadType: Int?
    private var tracker = FrameTracker()
    private var missing = MissingPackets(rule: .webRTC)
    private let decoder: SampledDecoder?
    private var reception: ReceptionStatistics?
    private var freezes = FreezeDetector()
    private var events: [FrameTracker.Event] = []
    /// The stream Janus sends this viewer (its SSRC), once a packet came.
    private(set) var mediaSSRC: UInt32?
    /// Each decodable frame's PictureID and when it became decodable (for latency against the host's trace).
    private(set) var frames: [(picture: UInt16, at: UInt64)] = []
    /// Each decodable keyframe's PictureID, width, size and time: where a simulcast viewer's PictureIDs are anchored (``HostTrace/anchors(of:keyframes:)``).
    private(set) var keyframes: [HostTrace.SeenKeyframe] = []
    /// When the first and the last media packet came, the first decodable frame, and media bytes.
    private(set) var firstPacket: UInt64?
    private(set) var lastPacket: UInt64?
    private(set) var firstFrame: UInt64?
    private(set) var bytes: UInt64 = 0
    /// Since when the decoder has waited for a keyframe after giving up on a lost frame.
    private(set) var keyframeWaitStarted: UInt64?
    private var keyframeWaited: UInt64 = 0
    /// A frame was given up on since the last time this was read: ask for a keyframe now.
    private(set) var lostFrame = false
    /// Which simulcast layer to watch, from what this stream shows of the link (nil: the mountpoint has one layer).
    var layerRule: LayerRule?
    /// Decodable frames in each second from `timelineStart` (the viewer's
    /// watch), and packets given up on (lost after repair) in the second
    /// each went missing, up to ``timelineLimit`` seconds.
    var timelineStart: UInt64 = 0
    private(set) var framesEachSecond: [UInt16] = []
    private(set) var lostEachSecond: [UInt16] = []
    static let timelineLimit = 3600

    /// Counts one event at `at` in its second of `timeline`.
    private func count(at: UInt64, in timeline: inout [UInt16]) {
        let second = Int((at &- timelineStart) / 1_000_000_000)
        guard at >= timelineStart, second < Self.timelineLimit else { return }
        if timeline.count <= second { timeline += [UInt16](repeating: 0, count: second + 1 - timeline.count) }
        timeline[second] &+= 1
    }

    package init(payloadType: Int, retransmissionPayloadType: Int?, decodes: Bool, expectedFrames: Int) throws(SubscriberError) {
        self.payloadType = payloadType
        self.retransmissionPayloadType = retransmissionPayloadType
        do {
            decoder = decodes ? try SampledDecoder() : nil
        } catch {
            throw .crypto("vpx_codec_dec_init", "\(error)")
        }
        frames.reserveCapacity(expectedFrames)
        events.reserveCapacity(64)
    }

    /// Takes one RTP packet (SRTP removed) that arrived at `now`; false when it is not of this stream.
    @discardableResult
    package func receive(_ packet: UnsafeRawBufferPointer, now: UInt64) -> Bool {
        guard let header = RTPHeader(parsing: packet), header.payloadOffset < packet.count else { return false }
        var sequence = header.sequence
        var payloadStart = header.payloadOffset
        let retransmitted = Int(header.payloadType) == retransmissionPayloadType
        if retransmitted {
            // A retransmission in its own stream (RFC 4588): the original sequence number, then the original payload.
            guard payloadStart + 2 < packet.count else { return false }
            sequence = UInt16(packet[payloadStart]) << 8 | UInt16(packet[payloadStart + 1])
            payloadStart += 2
        } else {
            guard Int(header.payloadType) == payloadType else { return false }
            if mediaSSRC != header.ssrc {
                // Janus keeps one SSRC per viewer; a new one is a new stream.
                mediaSSRC = header.ssrc
                reception = ReceptionStatistics(first: header.sequence)
            }
            reception?.record(sequence: header.sequence, timestamp: header.timestamp, arrival: now)
        }
        firstPacket = firstPacket ?? now
        lastPacket = now
        bytes += UInt64(packet.count)
        let payload = UnsafeRawBufferPointer(rebasing: packet[payloadStart...])
        let before = tracker.counts.duplicates + tracker.counts.malformed, complete = tracker.counts.framesComplete
        tracker.insert(sequence: sequence, timestamp: header.timestamp, marker: header.marker, payload: payload, now: now, into: &events)
        guard tracker.counts.duplicates + tracker.counts.malformed == before else { return true }
        // A frame came whole (its packets share this timestamp): the host sent it, shown or not.
        if tracker.counts.framesComplete > complete {
            freezes.receivedWhole(timestamp: header.timestamp)
            layerRule?.frame(at: Double(now) / 1e6, timestamp: header.timestamp, bytes: tracker.lastComplete?.bytes ?? 0,
                             keyframe: tracker.lastComplete?.keyframe ?? false)
        }
        missing.received(sequence, retransmitted: retransmitted, now: now)
        decoder?.keep(payload, sequence: sequence, timestamp: header.timestamp, marker: header.marker)
        handleEvents(now: now)
        return true
    }

    private func handleEvents(now: UInt64) {
        for event in events {
            switch event {
            case .decodable(let frame, let at):
                firstFrame = firstFrame ?? at
                if frame.keyframe, let started = keyframeWaitStarted {
                    keyframeWaited += at - started
                    keyframeWaitStarted = nil
                }
                if let picture = frame.pictureID, frames.count < frames.capacity { frames.append((picture, at)) }
                count(at: at, in: &framesEachSecond)
                if frame.keyframe, let picture = frame.pictureID, keyframes.count < 4096 { keyframes.append(.init(picture: picture, width: frame.width, bytes: frame.bytes, at: at)) }
                _ = freezes.frame(at: at, timestamp: frame.timestamp)
                decoder?.decode(frame, now: at)
            case .keyframeWait:
                keyframeWaitStarted = now
                lostFrame = true
                layerRule?.missed(1)
            }
        }
        events.removeAll(keepingCapacity: true)
    }

    /// The sequence numbers to ask for now (see ``MissingPackets/due(now:into:)``).
    func missingDue(now: UInt64, into out: inout [UInt16]) {
        missing.due(now: now, into: &out) { count(at: $0, in: &lostEachSecond) }
    }

    /// Whether anything is waited for.
    var isMissing: Bool { !missing.isEmpty }

    /// Gives up on a frame missing for longer than NACK can bring it in (a
    /// few round trips); returns when to look again, if anything is waited for.
    func tick(now: UInt64) -> UInt64? {
        let patience = max(150_000_000, 4 * (missing.roundTrip ?? 50_000_000))
        tracker.tick(now: now, patience: patience, into: &events)
        handleEvents(now: now)
        return tracker.waitingSinceTime.map { $0 + patience + 1_000_000 }
    }

    /// The layer to move to at `now`, when the rule steps (``LayerRule/tick(now:expected:lost:)``).
    func layerStep(now: UInt64) -> LayerRule.Layer? {
        let expected = missing.expected
        let before = layerRule?.layer.substream
        let step = layerRule?.tick(now: Double(now) / 1e6, expected: expected, lost: expected - min(expected, missing.counts.received))
        // Janus moves the viewer at the new substream's next keyframe, cutting short the old one's frame in flight.
        if let step, step.substream != before { tracker.substreamSwitched() }
        return step
    }

    /// Whether a keyframe is wanted: frames come but none can be decoded before one.
    var wantsKeyframe: Bool { tracker.awaitingKeyframe && (keyframeWaitStarted != nil || tracker.counts.framesComplete > 0) }

    /// Reads and clears ``lostFrame``.
    func takeLostFrame() -> Bool {
        defer { lostFrame = false }
        return lostFrame
    }

    /// Notes a Sender Report (its NTP time goes back in our reports: LSR, DLSR).
    func senderReport(ntp: UInt64, arrival: UInt64) { reception?.senderReport(ntp: ntp, arrival: arrival) }

    /// The report block about the stream for a receiver report sent at `now`.
    func reportBlock(now: UInt64) -> ReceptionStatistics.Block? { reception?.block(now: now) }

    /// The stamps its decoder read (PictureID, stamp, when), when it decodes.
    var stamps: [(picture: UInt16, stamp: SampledDecoder.Scaled, at: UInt64)] { decoder?.stamps ?? [] }

    /// Writes the stream's figures into `stats` (ending any keyframe wait at `now`).
    package func fill(_ stats: inout SubscriberStats, now: UInt64) {
        let counts = tracker.counts
        stats.framesComplete = counts.framesComplete
        stats.framesDecodable = counts.framesDecodable
        stats.keyframes = counts.keyframes
        stats.framesSkipped = counts.framesSkipped
        stats.framesHeld = counts.framesHeld
        stats.keyframeWaits = counts.keyframeWaits
        stats.keyframeWaitMs = Double(keyframeWaited + (keyframeWaitStarted.map { now - $0 } ?? 0)) / 1e6
        stats.duplicates = counts.duplicates
        stats.freezes = freezes.freezes
        stats.freezeMs = Double(freezes.frozen) / 1e6
        stats.bytesReceived = bytes
        stats.packetsExpected = missing.expected
        stats.packetsReceived = missing.counts.received
        stats.packetsLost = missing.expected - min(missing.expected, missing.counts.received)
        stats.nackedPackets = missing.counts.asked
        stats.recoveredPackets = missing.counts.recovered
        stats.givenUpPackets = missing.counts.givenUp
        stats.nackRoundTripMs = missing.roundTrip.map { Double($0) / 1e6 }
        // Whole seconds only: the second in progress (the last of a watch that ended mid-second) read as a fall in the charts.
        let whole = now >= timelineStart ? Int(min(UInt64(Self.timelineLimit), (now - timelineStart) / 1_000_000_000)) : 0
        stats.framesEachSecond = Array(framesEachSecond.prefix(whole))
        stats.lostEachSecond = Array(lostEachSecond.prefix(whole))
        if let decoder {
            stats.framesDecoded = decoder.decoded
            stats.decodeErrors = decoder.errors
            stats.stampsRead = UInt64(decoder.stamps.count)
        }
    }
}
