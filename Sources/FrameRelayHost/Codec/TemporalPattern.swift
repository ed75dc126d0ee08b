/// Which temporal layer each encoded frame goes in, by capture time: the
/// base layer (TL0) at most at half the frame rate (a frame at least one
/// and a half frame intervals after the last base frame, and every
/// keyframe), the frames between in the upper layer (TL1). By time rather
/// than by count, because a content-aware share skips frames: after a
/// pause the next frame is a base frame, so a viewer of the base layer
/// alone sees every change within two frame intervals.
struct TemporalPattern {
    /// One and a half frame intervals, ns.
    private let baseGap: UInt64
    private var lastBase: UInt64?

    init(frameRate: Int) { baseGap = 1_500_000_000 / UInt64(max(1, frameRate)) }

    /// The layer a frame captured at `captureTime` would go in.
    func layer(captureTime: UInt64, keyframe: Bool) -> Int {
        keyframe || lastBase.map({ captureTime &- $0 >= baseGap }) ?? true ? 0 : 1
    }

    /// Notes that a frame captured at `captureTime` was encoded in `layer`.
    mutating func encoded(captureTime: UInt64, layer: Int) {
        if layer == 0 { lastBase = captureTime }
    }
}
