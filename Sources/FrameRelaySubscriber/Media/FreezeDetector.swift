/// WebRTC's freeze, as libwebrtc counts it for `getStats()` (`freezeCount`,
/// `totalFreezesDuration`; video_quality_observer2.cc): a gap between two
/// frames at least max(3 × the mean gap, the mean + 150 ms), the mean taken
/// over the last 30 gaps, this one included, once there are 5 of them.
struct FreezeDetector {
    static let window = 30
    static let minimumGaps = 5
    static let minimumIncrease: UInt64 = 150_000_000
    private var gaps = [UInt64](repeating: 0, count: window)
    private var count = 0
    private var last: UInt64?
    private(set) var freezes: UInt64 = 0
    /// The freezes' gaps added up (ns).
    private(set) var frozen: UInt64 = 0

    /// Notes a frame at `now`; true when the gap before it was a freeze.
    mutating func frame(at now: UInt64) -> Bool {
        defer { last = now }
        guard let last else { return false }
        let gap = now - last
        gaps[count % Self.window] = gap
        count += 1
        let samples = min(count, Self.window)
        guard samples >= Self.minimumGaps else { return false }
        let mean = gaps.prefix(samples).reduce(0, +) / UInt64(samples)
        guard gap >= max(3 * mean, mean + Self.minimumIncrease) else { return false }
        freezes += 1
        frozen += gap
        return true
    }
}
