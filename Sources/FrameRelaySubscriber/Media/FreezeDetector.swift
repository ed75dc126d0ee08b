/// A freeze the viewer saw and the host did not mean: the viewer waited
/// between two frames longer than the host did between sending them (their
/// RTP timestamps, 90 kHz from the capture clock), by at least
/// max(2 × the host's usual gap, 150 ms). The usual gap is the mean of the
/// host's last 30 gaps before this one (once there are 5), or this gap when
/// it is shorter. A still screen sends nothing on purpose, so a host's gap
/// is no freeze however long; on a stream sent at a steady rate (every gap
/// the mean) this is libwebrtc's rule for `getStats()`' `freezeCount`, a
/// gap of at least max(3 × the mean, the mean + 150 ms)
/// (video_quality_observer2.cc), with the mean taken at the host.
///
/// The viewer page's JavaScript (`FreezeDetector` in the viewer page)
/// mirrors this type line for line; `FreezeRuleTests` holds both to the same
/// recorded sequences.
struct FreezeDetector {
    static let window = 30
    static let minimumGaps = 5
    static let minimumIncrease: UInt64 = 150_000_000
    private var hostGaps = [UInt64](repeating: 0, count: window)
    private var count = 0
    private var last: (arrival: UInt64, timestamp: UInt32)?
    private(set) var freezes: UInt64 = 0
    /// What the freezes added to the host's gaps, added up (ns): the time the viewer missed.
    private(set) var frozen: UInt64 = 0

    /// Notes a frame with RTP timestamp `timestamp` that the viewer got at
    /// `now` (ns); true when the wait before it was a freeze.
    mutating func frame(at now: UInt64, timestamp: UInt32) -> Bool {
        defer { last = (now, timestamp) }
        guard let last else { return false }
        let viewerGap = now &- last.arrival
        // A timestamp that went back (a new stream) says nothing of the host's gap.
        let ticks = Int32(bitPattern: timestamp &- last.timestamp)
        let hostGap = ticks > 0 ? UInt64(ticks) * 1_000_000_000 / 90_000 : 0
        defer {
            hostGaps[count % Self.window] = hostGap
            count += 1
        }
        let samples = min(count, Self.window)
        guard samples >= Self.minimumGaps, viewerGap > hostGap else { return false }
        let usual = min(hostGaps.prefix(samples).reduce(0, +) / UInt64(samples), hostGap)
        let excess = viewerGap - hostGap
        guard excess >= max(2 * usual, Self.minimumIncrease) else { return false }
        freezes += 1
        frozen += excess
        return true
    }
}
