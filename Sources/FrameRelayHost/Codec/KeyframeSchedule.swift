/// When the next frame must be a keyframe: when asked (a receiver's PLI, a
/// viewer joining), for the first picture and each new size, and every
/// ``VP8Settings/keyframeInterval`` while periodic keyframes are on. The
/// encoder makes a keyframe when told; this decides when to tell it.
public struct KeyframeSchedule: Sendable {
    /// The periodic interval in 90 kHz ticks (0: none).
    private let interval: Int64
    private var requested = true
    private var lastKeyframe: Int64?
    private var width = 0
    private var height = 0

    public init(interval seconds: Double) { interval = Int64(seconds * 90_000) }

    /// Makes the next frame a keyframe.
    public mutating func request() { requested = true }

    /// Whether a `width`×`height` picture with the 90 kHz time stamp `pts`
    /// (``VP8Encoder/timestamp(for:)``) must be a keyframe; `periodic`:
    /// whether the interval applies now (off while every receiver asks for
    /// the keyframes it needs).
    public func isDue(width: Int, height: Int, pts: Int64, periodic: Bool) -> Bool {
        if requested || width != self.width || height != self.height { return true }
        guard periodic, interval > 0, let lastKeyframe else { return false }
        return pts - lastKeyframe >= interval
    }

    /// Notes what the encoder did with a `width`×`height` picture.
    public mutating func encoded(_ outcome: EncodeOutcome, width: Int, height: Int) {
        requested = false
        self.width = width
        self.height = height
        if outcome.keyframe { lastKeyframe = outcome.pts }
    }
}
