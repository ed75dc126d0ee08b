@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayFrames

/// One share's frame path after the take, in one visible sequence:
/// convert if needed → encode VP8 → deliver to each ``FrameSink``
/// (recording, RTP, viewers), each stage's time written on the frame itself.
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
        public init() {}
    }

    public let encoder: VP8Encoder
    private let converter: FrameConverter
    /// The recording, when the share records.
    private let recorder: ShareRecording?
    /// The recording's figures, when the share records.
    public var recording: RecordingStats? { recorder?.stats }
    /// The share's RTP stream and live viewers, when it has them.
    public let rtp: RTPSession?
    public let viewers: FrameBroadcast?
    /// Every output, in the order each frame reaches them.
    private let sinks: [any FrameSink]
    /// What the encoder did so far (the share's statistics add the latencies).
    public private(set) var stats = EncodeStats()
    /// What changed since the last picture and which macroblocks to code; nil with ``Options/encodeEveryFrame``.
    private let damage: DamageDetector?
    private var schedule = RefreshSchedule()
    /// When the next frame is a keyframe.
    private var keyframes: KeyframeSchedule
    /// When the last frame was encoded (its capture time): a still screen
    /// still sends an empty frame every ``idleRepeatInterval``.
    private var lastEncodedCapture: UInt64 = 0
    /// WebRTC's zero-hertz repeat: on a still screen streamed over RTP, one
    /// frame a second that codes nothing (a few hundred bytes, about 1 ms of
    /// libvpx at 720p), so that a receiver joining hears the stream, and can
    /// ask for a keyframe, and middleboxes keep its path open. Viewers and
    /// recordings need none: a viewer asks for its keyframe itself.
    public static let idleRepeatInterval: UInt64 = 1_000_000_000

    /// Validates the settings and opens the recording now (unless `recorder`
    /// is one opened already), so that a bad setting or an unwritable path
    /// fails before any frame arrives. Frames go to the recording, `rtp`,
    /// `viewers` and then each of `sinks`.
    public init(
        options: Options, rtp: RTPSession? = nil, viewers: FrameBroadcast? = nil, recorder: IVFWriter? = nil, sinks: [any FrameSink] = []
    ) throws {
        encoder = try VP8Encoder(settings: options.settings)
        keyframes = KeyframeSchedule(interval: options.settings.keyframeInterval)
        if let maxSize = options.maxSize {
            guard (2...FrameMetadata.maxDimension).contains(maxSize.width), (2...FrameMetadata.maxDimension).contains(maxSize.height) else {
                throw CodecError.invalidSetting("invalid maximum size \(maxSize.width)x\(maxSize.height): VP8 codes 2...16383")
            }
        }
        // Parallel BGRA conversion only when this share has the machine to itself.
        let cores = Processor.onlineCount
        converter = FrameConverter(maxSize: options.maxSize, bands: FrameConverter.bands(concurrentEncoders: options.settings.concurrentEncoders, cores: cores))
        let writer = try recorder ?? options.recordPath.map { path throws(RecordingError) in try ShareRecording.open(path, frameRate: options.settings.frameRate) }
        self.recorder = writer.map(ShareRecording.init)
        self.rtp = rtp
        self.viewers = viewers
        self.sinks = [self.recorder as (any FrameSink)?, rtp, viewers].compactMap { $0 } + sinks
        damage = options.encodeEveryFrame ? nil : DamageDetector()
    }

    /// Converts, encodes and hands one frame to every output, stamping
    /// `frame.timing` at each stage (``FrameTiming/sent`` stays 0 when
    /// nothing went out: no RTP, or the encoder dropped the frame).
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
        let metadata = frame.metadata
        // The producer says this is the picture already held: nothing to convert or compare.
        let repeated = damage?.holds(metadata) == true
        // It says where the frame changed since the picture held: convert and compare only there.
        let region = repeated || converter.scales(metadata) ? nil : damage?.changes(in: metadata)
        var input: EncoderInput
        do {
            input = repeated ? damage!.kept! : try converter.convert(frame.view, only: region)
        } catch {
            throw InvalidFrame.undecodable(frameNumber: metadata.frameNumber, reason: "\(error)")
        }
        frame.timing.converted = MonotonicClock.now()
        // Periodic keyframes only while some receiver cannot ask for one (always when every frame is encoded whole).
        let periodic = damage == nil || (rtp.map { !$0.everyDestinationAsks(now: MonotonicClock.now()) } ?? false)
        let keyframe = keyframes.isDue(width: input.width, height: input.height, pts: encoder.timestamp(for: metadata.captureTime), periodic: periodic)
        var plan = RefreshSchedule.Plan.everything
        if let damage {
            schedule.prepare(columns: (input.width + 15) / 16, rows: (input.height + 15) / 16)
            if repeated {
                stats.repeated += 1
            } else {
                do {
                    _ = try schedule.withDamage { try damage.compare(input, source: metadata, region: region, into: $0) }
                } catch {
                    throw InvalidFrame.undecodable(frameNumber: metadata.frameNumber, reason: "\(error)")
                }
                if region != nil {
                    // Converted only in the region: the kept copy is the whole picture.
                    stats.located += 1
                    input = damage.kept!
                }
            }
            plan = schedule.plan(keyframe: keyframe)
        }
        let outcome: EncodeOutcome
        switch plan {
        case .skip where rtp == nil || metadata.captureTime &- lastEncodedCapture < Self.idleRepeatInterval:
            stats.skipped += 1
            return
        case .skip:
            stats.idleRepeats += 1
            // Nothing coded, nothing loop-filtered again: every macroblock kept.
            outcome = try schedule.withMaps { active, segments in try encode(input, frame: &frame, keyframe: keyframe, activeMap: active, segments: segments) }
        case .everything where damage == nil || keyframe:
            outcome = try encode(input, frame: &frame, keyframe: keyframe, activeMap: nil)
        case .everything:
            // Whole, with the regions at rest in the refine segment.
            outcome = try schedule.withMaps { _, segments in try encode(input, frame: &frame, keyframe: keyframe, activeMap: nil, segments: segments) }
        case .some(let active):
            stats.partial += 1
            stats.activeMacroblocks += UInt64(active)
            outcome = try schedule.withMaps { active, segments in try encode(input, frame: &frame, keyframe: keyframe, activeMap: active, segments: segments) }
        }
        keyframes.encoded(outcome, width: input.width, height: input.height)
        if damage != nil {
            if outcome.keyframe { schedule.restart() }
            if let reconstruction = encoder.reconstruction() {
                schedule.converge(source: input, reconstruction: reconstruction, quantizer: outcome.quantizer, measure: plan != .everything)
            }
        }
        stats.refining = schedule.refiningCount
    }

    /// Encodes `input` (only the macroblocks marked in `activeMap`, when
    /// given, each in the segment `segments` names) and hands the frame to
    /// every sink.
    private func encode(
        _ input: EncoderInput, frame: inout HostFrame, keyframe: Bool, activeMap: UnsafeMutablePointer<UInt8>?,
        segments: UnsafeMutablePointer<UInt8>? = nil
    ) throws -> EncodeOutcome {
        let captureTime = frame.metadata.captureTime
        // "Encoded" is when libvpx hands over the frame, before it is recorded or sent.
        var encoded: UInt64 = 0
        let outcome: EncodeOutcome
        do {
            outcome = try encoder.encode(
                input, captureTime: captureTime, keyframe: keyframe, activeMap: activeMap, segments: segments, refineDelta: RefreshSchedule.refineDelta
            ) { packet in
                if encoded == 0 { encoded = MonotonicClock.now() }
                stats.bytes += UInt64(packet.bytes.count)
                for sink in sinks {
                    sink.deliver(packet, width: encoder.width, height: encoder.height, captureTime: captureTime, timing: &frame.timing)
                }
            }
        } catch let error as CodecError {
            throw InvalidFrame.undecodable(frameNumber: frame.metadata.frameNumber, reason: "\(error)")
        }
        frame.timing.encoded = encoded == 0 ? MonotonicClock.now() : encoded  // 0: the encoder dropped the frame
        lastEncodedCapture = captureTime
        stats.frames = encoder.framesEncoded
        stats.keyframes = encoder.keyframes
        stats.width = input.width
        stats.height = input.height
        stats.threads = encoder.threads
        return outcome
    }

    /// Makes the next frame a keyframe.
    public func requestKeyframe() { keyframes.request() }

    /// Closes the outputs (the recording writes its frame count).
    public func finish() {
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
    /// Empty frames sent once a second while the screen is still (``SharePipeline/idleRepeatInterval``).
    public var idleRepeats: UInt64 = 0
    /// Macroblocks coded in the partial frames, all together.
    public var activeMacroblocks: UInt64 = 0
    /// Macroblocks still refining after the last frame.
    public var refining = 0
    public var bytes: UInt64 = 0
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
