/// WebRTC's freeze, as a receiver's `getStats()` counts it (`freezeCount`,
/// `totalFreezesDuration`): a gap between two frames longer than
/// max(3 × the mean gap, the mean + 150 ms), the mean taken over the last
/// 30 gaps that were not freezes, once there are 5 of them.
struct FreezeDetector {
    private var gaps = [UInt64](repeating: 0, count: 30)
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
        let samples = min(count, gaps.count)
        let mean = samples == 0 ? 0 : gaps.prefix(samples).reduce(0, +) / UInt64(samples)
        if samples >= 5, gap > max(3 * mean, mean + 150_000_000) {
            freezes += 1
            frozen += gap
            return true
        }
        gaps[count % gaps.count] = gap
        count += 1
        return false
    }
}
