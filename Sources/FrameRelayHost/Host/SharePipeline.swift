@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayFrames

/// One share's frame path after the take, in one visible sequence:
/// convert if needed → encode VP8 → deliver to each ``FrameSink``
/// (the recording, then those given: RTP, viewers), each stage's time
/// written on the frame itself. It knows its outputs only as sinks.
public final class SharePipeline {
    /// What to encode and where to put it.
    public struct Options: Sendable {
        public var settings = VP8Settings()
        /// Scale frames down to fit this size.
        public var maxSize: (width: Int, height: Int)?
        /// Record IVF here.
        public var recordPath: String?
        /// Encode every frame whole, as a camera pipeline does, instead of
        /// only what changed (``RefreshSchedule``): for comparisons.
        public var encodeEveryFrame = false
        /// The simulcast layers (one: the whole picture alone).
        public var simulcast = Simulcast(layers: 1)
        public init() {}

        /// Each simulcast stream's bitrate, kbit/s, smallest first.
        public var layerBitrates: [Int] { (0..<simulcast.streams).map { simulcast.bitrate(stream: $0, top: settings.bitrateKbps) } }
    }

    /// Converts and encodes only what changed (every frame whole with ``Options/encodeEveryFrame``).
    public let encoder: ContentAwareEncoder
    /// The recording, when the share records.
    private let recorder: ShareRecording?
    /// The recording's figures, when the share records.
    public var recording: RecordingStats? { recorder?.stats }
    /// Every output, in the order each frame reaches them.
    private let sinks: [any FrameSink]
    /// What the encoder did so far (the share's statistics add the latencies).
    public var stats: EncodeStats { encoder.stats }
    /// The frames processed whose outputs still time them (the RTP pacer's last packet), oldest first.
    private var unfinished: [FrameTiming] = []

    /// Validates the settings and opens the recording now (unless `recorder`
    /// is one opened already), so that a bad setting or an unwritable path
    /// fails before any frame arrives. Frames go to the recording and then
    /// to each of `sinks`, in order.
    public init(options: Options, recorder: IVFWriter? = nil, sinks: [any FrameSink] = []) throws {
        if let maxSize = options.maxSize {
            guard (2...FrameMetadata.maxDimension).contains(maxSize.width), (2...FrameMetadata.maxDimension).contains(maxSize.height) else {
                throw CodecError.invalidSetting("invalid maximum size \(maxSize.width)x\(maxSize.height): VP8 codes 2...16383")
            }
        }
        // Parallel BGRA conversion only when this share has the machine to itself.
        let cores = Processor.onlineCount
        let converter = FrameConverter(maxSize: options.maxSize, bands: FrameConverter.bands(concurrentEncoders: options.settings.concurrentEncoders, cores: cores))
        frameRate = options.settings.frameRate
        encoder = try ContentAwareEncoder(settings: options.settings, simulcast: options.simulcast, converter: converter, encodeEveryFrame: options.encodeEveryFrame)
        let writer = try recorder ?? options.recordPath.map { path throws(RecordingError) in try ShareRecording.open(path, frameRate: options.settings.frameRate) }
        self.recorder = writer.map(ShareRecording.init)
        self.sinks = [self.recorder].compactMap { $0 } + sinks
        unfinished.reserveCapacity(Self.unfinishedLimit)
    }

    /// Frames whose timing may wait on an output before the oldest is given up (8 s at 30 frames/s).
    private static let unfinishedLimit = 256

    /// Converts, encodes and hands one frame to every output, stamping
    /// `frame.timing` at each stage (``FrameTiming/sent``, when the RTP
    /// pacer let its last packet out, comes later: ``finishedTimings(waiting:_:)``;
    /// it stays 0 when nothing went out: no RTP, or the encoder dropped the frame).
    ///
    /// Unless every frame is encoded, only the macroblocks that changed or
    /// still refine are coded, and a frame with none is skipped: nothing is
    /// encoded or sent, ``FrameTiming/encoded`` stays 0 and
    /// ``EncodeStats/skipped`` counts it.
    ///
    /// A frame whose content cannot be converted or encoded (a JPEG that
    /// disagrees with its metadata, a corrupt one, a size libvpx refuses)
    /// throws ``InvalidFrame/undecodable(frameNumber:reason:)``: one bad
    /// frame, to count and skip. Anything else it throws (writing the
    /// recording) is about this host's own outputs.
    public func process(_ frame: inout HostFrame) throws {
        let captureTime = frame.metadata.captureTime
        // "Encoded" is when libvpx hands over the frame, before it is recorded or sent.
        var encoded: UInt64 = 0
        var timing = frame.timing
        // The keyframe policy's input, as a value: whether some receiver cannot ask for a keyframe.
        let periodicKeyframes = sinks.contains { $0.needsPeriodicKeyframes(now: frame.timing.taken) }
        // A frame captured before a held-back change went out stamped later (a producer's hand-off jitter,
        // a clock that stands still) goes out just after it, until the capture clock catches up: RTP time never goes back.
        let sentAt = sentAhead.map { max(captureTime, $0 &+ Self.tick) } ?? captureTime
        sentAhead = sentAt > captureTime ? sentAt : nil
        let result = try encoder.encode(frame.view, periodicKeyframes: periodicKeyframes, repeatWhenIdle: wantsIdleRepeats) { packet in
            // The top layer's (or, when it skipped, a lower one's) time.
            if encoded == 0 || packet.isTopLayer { encoded = MonotonicClock.now() }
            for sink in sinks { sink.deliver(packet, captureTime: sentAt, timing: &timing) }
        }
        timing.converted = result.converted
        if result.outcome != nil { timing.encoded = encoded == 0 ? MonotonicClock.now() : encoded }  // 0: the encoder dropped the frame
        frame.timing = timing
        last = timing
        awaitOutputs(timing)
    }

    /// Keeps `timing` until every output has timed it (``finishedTimings(waiting:_:)``).
    private func awaitOutputs(_ timing: FrameTiming) {
        if unfinished.count == Self.unfinishedLimit { unfinished.removeFirst() }
        unfinished.append(timing)
    }

    /// The last frame's timing, and the frame rate the encoder plans for, for ``flushHeldBack(now:)`` and ``finish(endedAt:)``.
    private var last: FrameTiming?
    /// The time stamp (on the capture clock) the outputs last had, while it is ahead of the capture clock (a held-back change's).
    private var sentAhead: UInt64?
    /// One 90 kHz tick, ns (rounded up).
    private static let tick: UInt64 = 11_112
    private let frameRate: Int

    /// Sends what a layer holds back from its base temporal layer's
    /// viewers (``ContentAwareEncoder/holdsBack``: a small change a lower
    /// layer gathered, or one only an upper-layer frame carries) when no
    /// frame came for a gathering interval (``Simulcast/gathering(frameRate:)``)
    /// to carry it: a producer that sends nothing while its screen is
    /// still, or one paused. The share's loop calls it between frames. What
    /// it sends carries the last frame's picture, captured (on the capture
    /// clock) as long after it as `now` is after the frame was taken, with
    /// a timing of its own (``FrameTiming/heldBack``: in the trace, out of the latency figures).
    public func flushHeldBack(now: UInt64) throws {
        guard encoder.holdsBack, let last, let limit = Simulcast.gathering(frameRate: frameRate), now > last.taken,
              now - last.taken >= limit.interval else { return }
        var timing = FrameTiming()
        let stamp = max(last.captured &+ (now - last.taken), sentAhead.map { $0 &+ Self.tick } ?? 0)
        (timing.frame, timing.shows, timing.captured, timing.published) = (last.frame, last.shows, stamp, last.published)
        (timing.taken, timing.converted, timing.heldBack) = (now, now, true)
        let captured = timing.captured
        guard try encoder.flushHeldBack(captureTime: captured, output: { packet in
            for sink in sinks { sink.deliver(packet, captureTime: captured, timing: &timing) }
        }) else { return }
        sentAhead = captured
        timing.encoded = MonotonicClock.now()
        awaitOutputs(timing)
    }

    /// Hands `body` the timing of each frame processed, in order, once
    /// every output has timed it (``FrameSink/complete(_:)``: the RTP
    /// pacer's last packet); `waiting: false` hands over the rest as they
    /// are (when the outputs have finished).
    public func finishedTimings(waiting: Bool = true, _ body: (FrameTiming) -> Void) {
        var done = 0
        for index in unfinished.indices {
            var timing = unfinished[index]
            guard sinks.allSatisfy({ $0.complete(&timing) }) || !waiting else { break }
            body(timing)
            done += 1
        }
        unfinished.removeFirst(done)
    }

    /// Whether something waits on this share between frames (RTCP to
    /// answer, viewers to serve): its loop then wakes often.
    public var hasLiveOutputs: Bool { sinks.contains(where: \.isLive) }

    /// Whether an output wants a frame now and then on a still screen.
    private var wantsIdleRepeats: Bool { sinks.contains(where: \.wantsIdleRepeats) }

    /// Each output's work between frames (feedback answered, reports due);
    /// the simulcast streams their receivers asked a keyframe on. The top
    /// layer's bitrate follows what an output's receivers carry (the least, when several say).
    public func pollOutputs(now: UInt64) -> KeyframeRequests.Streams {
        var streams: KeyframeRequests.Streams = []
        var target: Int?
        for sink in sinks {
            streams.formUnion(sink.poll(now: now))
            if let kbps = sink.targetBitrateKbps { target = min(target ?? kbps, kbps) }
        }
        if let target, target != encoder.topBitrateKbps { try? encoder.setTopBitrate(target) }
        return streams
    }

    /// The outputs' figures (the RTP stream's), and the encoder's, into the share's statistics.
    public func report(into stats: inout ShareStats) {
        stats.encoded = encoder.stats
        stats.recording = recording
        for sink in sinks { sink.report(into: &stats) }
    }

    /// Makes the next frame a keyframe on `streams` (simulcast layers).
    public func requestKeyframe(on streams: KeyframeRequests.Streams = .all) {
        let top = encoder.simulcast.streams - 1
        for stream in 0...top where streams.contains(.stream(stream)) || (stream == top && streams.contains(.top)) {
            encoder.requestKeyframe(stream: stream)
        }
    }

    /// Closes the outputs (the recording its last frame and its length; the RTP
    /// pacer sends what waits); ``finishedTimings(waiting:_:)`` then hands over the last frames.
    /// `endedAt` (CLOCK_MONOTONIC ns): when the share ended (its producer
    /// finished or went, else now). A recording whose last frame came half a
    /// second or more before that (a screen still to the end, from a producer that sends
    /// nothing while still or one that keeps sending) gets one more frame,
    /// coding nothing, captured as long after the last frame as the end
    /// was after it was taken, so that it plays as long as the share lasted.
    public func finish(endedAt: UInt64) {
        if let recorder, recorder.isRecording, let last {
            let captured = last.captured &+ (endedAt > last.taken ? endedAt - last.taken : 0)
            var timing = FrameTiming()
            // Losing this one empty frame to libvpx costs the file its still end only; a failed write says so in the recording's stats.
            _ = try? encoder.encodeTail(captureTime: captured) { packet in recorder.deliver(packet, captureTime: captured, timing: &timing) }
        }
        for sink in sinks { sink.finish() }
    }
}

/// What a share's encoder did.
public struct EncodeStats: Sendable, Codable {
    public var frames: UInt64 = 0
    public var keyframes: UInt64 = 0
    /// Frames not encoded because nothing changed and every still region had
    /// converged (zero-hertz), and frames coded only where they changed or refine.
    public var skipped: UInt64 = 0
    public var partial: UInt64 = 0
    /// Frames the producer said repeat the picture before it (``FrameMetadata/picture``): taken as unchanged, not converted or compared.
    public var repeated: UInt64 = 0
    /// Frames the producer said where they changed (``FrameMetadata/changed``): converted and compared only there.
    public var located: UInt64 = 0
    /// Empty frames sent once a second (twice with layers) while the screen is still (``ContentAwareEncoder/idleRepeatInterval``),
    /// and the one a recording gets when its share ends on a still screen (``SharePipeline/finish(endedAt:)``).
    public var idleRepeats: UInt64 = 0
    /// Macroblocks coded in the partial frames, all together.
    public var activeMacroblocks: UInt64 = 0
    /// Macroblocks still refining after the last frame.
    public var refining = 0
    /// Each simulcast layer's figures, smallest first (the fields above are the top layer's).
    public var layers: [LayerStats] = []
    public var bytes: UInt64 = 0
    /// Every layer's encoded bytes: what the share sends (the top's ``bytes`` with one layer).
    public var allLayersBytes: UInt64 { layers.count > 1 ? layers.reduce(0) { $0 &+ $1.bytes } : bytes }
    public var width = 0
    public var height = 0
    public var threads = 0
    /// Taken → converted, converted → encoded, captured → encoded (µs).
    public var convert = LatencySummary(count: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0)
    public var encode = LatencySummary(count: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0)
    public var captureToEncoded = LatencySummary(count: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0)
    /// Captured → encoded as a distribution (four ranges per power of two).
    public var captureToEncodedBins: [LatencyBin] = []

    public init() {}
}
