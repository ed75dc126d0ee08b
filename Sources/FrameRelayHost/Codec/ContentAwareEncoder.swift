import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing

/// VP8 that codes only what changed, in one call per frame: it converts the
/// frame (only where the producer says it changed, or not at all when it
/// says it repeats), finds what changed since the picture it keeps
/// (``DamageDetector``), chooses the macroblocks to code or refine
/// (``RefreshSchedule``) and whether a keyframe is due
/// (``KeyframeSchedule``), and encodes; a frame with nothing to code is
/// skipped. With `encodeEveryFrame` it converts and encodes every frame
/// whole, as a camera pipeline does.
public final class ContentAwareEncoder {
    /// What one frame came to: when its picture was ready to encode, and
    /// what the encoder did (nil: skipped, nothing to code).
    public struct Result {
        public var converted: UInt64
        public var outcome: EncodeOutcome?
    }

    public let encoder: VP8Encoder
    private let converter: FrameConverter
    /// What changed since the last picture; nil when every frame is encoded whole.
    private let damage: DamageDetector?
    private var schedule = RefreshSchedule()
    private var keyframes: KeyframeSchedule
    /// When the last frame was encoded (its capture time), for the idle repeat.
    private var lastEncodedCapture: UInt64 = 0
    /// What it did so far (the share's statistics add the latencies).
    public private(set) var stats = EncodeStats()
    /// WebRTC's zero-hertz repeat: on a still screen streamed over RTP, one
    /// frame a second that codes nothing (a few hundred bytes, about 1 ms of
    /// libvpx at 720p), so that a receiver joining hears the stream, and can
    /// ask for a keyframe, and middleboxes keep its path open. Viewers and
    /// recordings need none: a viewer asks for its keyframe itself.
    public static let idleRepeatInterval: UInt64 = 1_000_000_000

    /// `converter` scales and converts what the ring holds into what VP8 reads.
    public init(settings: VP8Settings, converter: FrameConverter, encodeEveryFrame: Bool) throws {
        encoder = try VP8Encoder(settings: settings)
        keyframes = KeyframeSchedule(interval: settings.keyframeInterval)
        self.converter = converter
        damage = encodeEveryFrame ? nil : DamageDetector()
    }

    /// Makes the next frame a keyframe.
    public func requestKeyframe() { keyframes.request() }

    /// Converts and encodes one frame, handing each packet to `output`
    /// (valid only during the call). `periodicKeyframes`: whether the
    /// periodic keyframe applies (some receiver cannot ask for one: the
    /// transport's answer, given as a value; the encoder never asks the transport);
    /// `repeatWhenIdle`: send the idle repeat (``idleRepeatInterval``) on a
    /// still screen. A frame whose content cannot be converted or encoded
    /// throws ``InvalidFrame/undecodable(frameNumber:reason:)``.
    public func encode(
        _ view: FrameView, periodicKeyframes: Bool, repeatWhenIdle: Bool, output: (EncodedFrame) throws -> Void
    ) throws -> Result {
        let metadata = view.metadata
        // The producer says this is the picture already held: nothing to convert or compare.
        let held = damage?.heldPicture(for: metadata)
        // It says where the frame changed since the picture held: convert and compare only there.
        let region = held != nil || converter.scales(metadata) ? nil : damage?.changes(in: metadata)
        var input: EncoderInput
        do {
            input = try held ?? converter.convert(view, only: region)
        } catch {
            throw InvalidFrame.undecodable(frameNumber: metadata.frameNumber, reason: "\(error)")
        }
        let converted = MonotonicClock.now()
        // Periodic keyframes only while some receiver cannot ask for one (always when every frame is encoded whole).
        let periodic = damage == nil || periodicKeyframes
        let keyframe = keyframes.isDue(width: input.width, height: input.height, pts: encoder.timestamp(for: metadata.captureTime), periodic: periodic)
        var plan = RefreshSchedule.Plan.everything
        if let damage {
            schedule.prepare(columns: (input.width + 15) / 16, rows: (input.height + 15) / 16)
            if held != nil {
                stats.repeated += 1
            } else {
                let comparison: DamageDetector.Comparison
                do {
                    comparison = try schedule.withDamage { try damage.compare(input, source: metadata, region: region, into: $0) }
                } catch {
                    throw InvalidFrame.undecodable(frameNumber: metadata.frameNumber, reason: "\(error)")
                }
                if region != nil {
                    // Converted only in the region: the kept copy is the whole picture.
                    stats.located += 1
                    input = comparison.picture
                }
            }
            plan = schedule.plan(keyframe: keyframe)
        }
        let outcome: EncodeOutcome
        switch plan {
        case .skip where !repeatWhenIdle || metadata.captureTime &- lastEncodedCapture < Self.idleRepeatInterval:
            stats.skipped += 1
            return Result(converted: converted, outcome: nil)
        case .skip:
            stats.idleRepeats += 1
            // Nothing coded, nothing loop-filtered again: every macroblock kept.
            outcome = try schedule.withMaps { active, segments in try encode(input, metadata, keyframe: keyframe, activeMap: active, segments: segments, output) }
        case .everything where damage == nil || keyframe:
            outcome = try encode(input, metadata, keyframe: keyframe, activeMap: nil, output)
        case .everything:
            // Whole, with the regions at rest in the refine segment.
            outcome = try schedule.withMaps { _, segments in try encode(input, metadata, keyframe: keyframe, activeMap: nil, segments: segments, output) }
        case .some(let active):
            stats.partial += 1
            stats.activeMacroblocks += UInt64(active)
            outcome = try schedule.withMaps { active, segments in try encode(input, metadata, keyframe: keyframe, activeMap: active, segments: segments, output) }
        }
        keyframes.encoded(outcome, width: input.width, height: input.height)
        if damage != nil {
            if outcome.keyframe { schedule.restart() }
            if let reconstruction = encoder.reconstruction() {
                schedule.converge(source: input, reconstruction: reconstruction, quantizer: outcome.quantizer, measure: plan != .everything)
            }
        }
        stats.refining = schedule.refiningCount
        return Result(converted: converted, outcome: outcome)
    }

    /// Encodes `input` (only the macroblocks marked in `activeMap`, when
    /// given, each in the segment `segments` names).
    private func encode(
        _ input: EncoderInput, _ metadata: FrameMetadata, keyframe: Bool, activeMap: UnsafeMutablePointer<UInt8>?,
        segments: UnsafeMutablePointer<UInt8>? = nil, _ output: (EncodedFrame) throws -> Void
    ) throws -> EncodeOutcome {
        let outcome: EncodeOutcome
        do {
            outcome = try encoder.encode(
                input, captureTime: metadata.captureTime, keyframe: keyframe, activeMap: activeMap, segments: segments,
                refineDelta: RefreshSchedule.refineDelta, output: output)
        } catch let error as CodecError {
            throw InvalidFrame.undecodable(frameNumber: metadata.frameNumber, reason: "\(error)")
        }
        lastEncodedCapture = metadata.captureTime
        stats.bytes += UInt64(outcome.bytes)
        stats.frames = encoder.framesEncoded
        stats.keyframes = encoder.keyframes
        stats.width = input.width
        stats.height = input.height
        stats.threads = encoder.threads
        return outcome
    }
}
