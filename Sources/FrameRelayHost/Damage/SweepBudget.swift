/// What a sweeping layer's bands may cost (``RefreshSchedule/sweeps``): a
/// bucket filled at the layer's bitrate, by capture time, and emptied by
/// every frame the layer sends, so that its bands take what its changes and
/// keyframes leave of the rate and no more. After a keyframe, whose bytes
/// run ahead of the rate, no band goes until the rate has caught up: bands
/// sized to the rate alone queued behind the keyframe in the pacer, and
/// viewers of the small layer on a free link saw 150–220 ms of queueing,
/// took it for a narrow link and stepped down. It holds at most
/// ``burstFrames`` base-layer frame intervals' bytes, so that a band after
/// a quiet spell is no larger than two frames' share. A frame whose capture
/// time has not moved on adds a frame interval's bytes: a capture clock
/// that stands still does not stop the bands.
struct SweepBudget {
    static let burstFrames = 2.0
    private let bytesPerSecond: Double
    /// The most the bucket holds (bytes).
    let most: Double
    /// A frame interval (ns) at the layer's frame rate.
    private let frameInterval: Double
    private var bytes = 0.0
    private var last: UInt64?

    /// A layer of `bitrateKbps` at `frameRate`, whose base temporal layer runs at `baseFrameRate`.
    init(bitrateKbps: Int, frameRate: Int, baseFrameRate: Double) {
        bytesPerSecond = Double(bitrateKbps) * 125
        most = Self.burstFrames * bytesPerSecond / max(1, baseFrameRate)
        frameInterval = 1e9 / Double(max(1, frameRate))
    }

    /// The bytes a band may cost in the frame captured at `captureTime`.
    mutating func allowance(at captureTime: UInt64) -> Int {
        if let last {
            let elapsed = captureTime > last ? Double(captureTime - last) : frameInterval
            bytes = min(most, bytes + elapsed / 1e9 * bytesPerSecond)
        }
        last = max(last ?? captureTime, captureTime)
        return max(0, Int(bytes))
    }

    /// A frame of `count` bytes of the layer went out; a keyframe's from an
    /// empty bucket (what a scroll overspent before it is forgotten: the
    /// keyframe's bands wait for its own bytes alone).
    mutating func spent(_ count: Int, keyframe: Bool) {
        if keyframe { bytes = 0 }
        bytes -= Double(count)
    }
}
