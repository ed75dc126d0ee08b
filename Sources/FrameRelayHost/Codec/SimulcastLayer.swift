import FrameRelayFrames

/// One simulcast layer of a share's encoding (``Simulcast``): its VP8
/// encoder (with two temporal layers when the share has several layers),
/// the macroblocks it codes and refines (``RefreshSchedule``; a layer
/// below the top refines in sweeps), its keyframes and its temporal pattern.
/// The picture and its damage are the whole picture's, scaled down for a lower layer.
final class SimulcastLayer {
    /// The stream it goes out on (0: the smallest the share has room for).
    let stream: Int
    let isTop: Bool
    let encoder: VP8Encoder
    var schedule = RefreshSchedule()
    var keyframes: KeyframeSchedule
    var temporal: TemporalPattern
    let scaler = PictureScaler()
    /// When it last encoded a frame (its capture time), for the idle repeat and ``gathers(captureTime:keyframeDue:)``.
    var lastEncodedCapture: UInt64 = 0
    /// How many frames in a row it left to a later one (their damage kept in its schedule's).
    var framesGathered = 0
    var gathering: Bool { framesGathered > 0 }
    /// Whether its last frame was in the upper temporal layer: a viewer of its base layer alone lacks that change until its next base frame.
    var baseBehind = false
    /// Whether it holds a change back from a viewer of its base layer (gathered, or only in its upper layer).
    var holdsBack: Bool { gathering || baseBehind }
    var stats = LayerStats()
    /// Below the top: what its sweeps' bands may cost.
    var sweepBudget: SweepBudget?
    /// The top: whether it kept to its bitrate lately (its calm split needs it).
    var spend = LayerSpend()

    init(stream: Int, isTop: Bool, settings: VP8Settings) throws {
        self.stream = stream
        self.isTop = isTop
        encoder = try VP8Encoder(settings: settings)
        keyframes = KeyframeSchedule(interval: settings.keyframeInterval)
        temporal = TemporalPattern(frameRate: settings.frameRate)
        stats.stream = stream
        stats.bitrateKbps = settings.bitrateKbps
        if !isTop {
            schedule.sweeps = true
            let budget = SweepBudget(bitrateKbps: settings.bitrateKbps, frameRate: settings.frameRate,
                                     baseFrameRate: Double(settings.frameRate) / Double(settings.temporalLayers))
            schedule.bandBytesMost = Int(budget.most)
            sweepBudget = budget
        }
    }

    /// Whether this layer leaves the frame captured at `captureTime` to a
    /// later one, its damage (filled in, with what the frames it left
    /// changed) kept: it is below the top, no keyframe is due, what changed
    /// and what refines are few macroblocks (``Simulcast/smallChangeShare``),
    /// it encoded a frame less than the gathering interval ago, and it left
    /// fewer frames in a row than the interval holds at the frame rate
    /// (``Simulcast/gathering(frameRate:)``: a producer whose capture clock
    /// stands still is not gathered from forever).
    func gathers(captureTime: UInt64, keyframeDue: Bool) -> Bool {
        guard !isTop, !keyframeDue, let limit = Simulcast.gathering(frameRate: encoder.settings.frameRate), framesGathered < limit.frames,
              (schedule.changedCount + schedule.refiningCount) * Simulcast.smallChangeShare < schedule.columns * schedule.rows
        else { return false }
        return captureTime &- lastEncodedCapture < limit.interval
    }
}

/// What one simulcast layer encoded.
public struct LayerStats: Sendable, Codable, Equatable {
    /// Its stream (Janus's substream): 0 is the smallest.
    public var stream = 0
    /// Whether the last frame had this layer (a picture too small for it has none).
    public var sending = false
    public var width = 0
    public var height = 0
    public var bitrateKbps = 0
    public var frames: UInt64 = 0
    /// Frames in the base temporal layer (all of them with one temporal layer).
    public var baseFrames: UInt64 = 0
    public var keyframes: UInt64 = 0
    public var bytes: UInt64 = 0
    /// Frames it left to a later one, their change small (``Simulcast/smallChangeRate``).
    public var gathered: UInt64 = 0
    /// Frames it coded searching motion (``Simulcast/lowerLayerMotionSpeed``), much of its picture moving (``Simulcast/motionShare``).
    public var motionFrames: UInt64 = 0

    public init() {}
}
