/// When the next frame must be a keyframe: when asked (a receiver's PLI, a
/// viewer joining), for the first picture and each new size, and every
/// ``VP8Settings/keyframeInterval`` while periodic keyframes are on. The
/// encoder makes a keyframe when told; this decides when to tell it.
///
/// A request soon after a keyframe waits: until the last keyframe could
/// have crossed a link at the encoder's bitrate twice over, and at least
/// ``minimumRequestGap`` (libwebrtc's minimum between requested keyframes).
/// A receiver behind a narrow link asks again while the keyframe it asked
/// for is still on its way (every 200 ms, as Chrome does); answering each
/// would fill the link with keyframes that push each other out.
public struct KeyframeSchedule: Sendable {
    /// The periodic interval in 90 kHz ticks (0: none).
    private let interval: Int64
    private var requested = true
    private var lastKeyframe: Int64?
    /// How long after the last keyframe a request waits, 90 kHz ticks.
    private var requestGap: Int64 = 0
    /// 300 ms in 90 kHz ticks.
    public static let minimumRequestGap: Int64 = 27_000
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
        if width != self.width || height != self.height { return true }
        if requested { return lastKeyframe.map { pts - $0 >= requestGap } ?? true }
        guard periodic, interval > 0, let lastKeyframe else { return false }
        return pts - lastKeyframe >= interval
    }

    /// Notes what the encoder did with a `width`×`height` picture, at `bitrateKbps`.
    public mutating func encoded(_ outcome: EncodeOutcome, width: Int, height: Int, bitrateKbps: Int) {
        self.width = width
        self.height = height
        guard outcome.keyframe else { return }
        requested = false
        lastKeyframe = outcome.pts
        // Its bits at the bitrate, twice, in 90 kHz ticks: bytes × 8 × 2 × 90 000 / (kbps × 1000).
        requestGap = max(Self.minimumRequestGap, Int64(outcome.bytes) * 1_440 / Int64(max(1, bitrateKbps)))
    }
}
