/// A freeze the viewer saw and the host did not mean: between two frames
/// shown, the viewer waited longer than the host did before sending the
/// next frame, by at least max(2 × the host's usual gap, 150 ms).
///
/// The host's gap runs from the frame last shown to the first frame after
/// it that the viewer received whole, shown or not (RTP timestamps, 90 kHz
/// from the capture clock): this frame when nothing came between; the
/// first of those it could not decode when it waited for a keyframe. A
/// still screen sends nothing on purpose, so its silence is no freeze
/// however long, while a viewer that received frames it could not show
/// froze. The usual gap is the mean of the host's last 30 gaps before this
/// one, or this gap when it is shorter (or the first). On a stream sent
/// at a steady rate (every gap the mean) this is libwebrtc's rule for
/// `getStats()`' `freezeCount`, a gap of at least max(3 × the mean, the
/// mean + 150 ms) (video_quality_observer2.cc), with the mean taken at the host.
///
/// The viewer page's JavaScript (`FreezeDetector` in the viewer page)
/// mirrors this type line for line; `FreezeRuleTests` holds both to the same
/// sequences.
struct FreezeDetector {
    static let window = 30
    static let minimumIncrease: UInt64 = 150_000_000
    /// How many frames received whole are remembered.
    static let remembered = 64
    private var hostGaps = [UInt64](repeating: 0, count: window)
    private var count = 0
    private var whole = [UInt32](repeating: 0, count: remembered)
    private var wholeCount = 0
    private var last: (arrival: UInt64, timestamp: UInt32)?
    private(set) var freezes: UInt64 = 0
    /// What the freezes added to the host's gaps, added up (ns): the time the viewer missed.
    private(set) var frozen: UInt64 = 0

    /// Notes a frame received whole (every packet from its first to its
    /// marker), whether or not it can be shown: the host sent it.
    mutating func receivedWhole(timestamp: UInt32) {
        whole[wholeCount % Self.remembered] = timestamp
        wholeCount += 1
    }

    /// Notes a frame shown (decodable) with RTP timestamp `timestamp`, which
    /// the viewer got at `now` (ns); true when the wait before it was a freeze.
    mutating func frame(at now: UInt64, timestamp: UInt32) -> Bool {
        defer { last = (now, timestamp) }
        guard let last else { return false }
        let viewerGap = now &- last.arrival
        // The first frame after the last one shown that came whole: this one, or one before it that could not be shown.
        var ticks = Int32(bitPattern: timestamp &- last.timestamp)
        for index in 0..<min(wholeCount, Self.remembered) {
            let after = Int32(bitPattern: whole[index] &- last.timestamp)
            if after > 0, after < ticks { ticks = after }
        }
        // A timestamp that went back (a new stream) says nothing of the host's gap.
        let hostGap = ticks > 0 ? UInt64(ticks) * 1_000_000_000 / 90_000 : 0
        defer {
            hostGaps[count % Self.window] = hostGap
            count += 1
        }
        guard viewerGap > hostGap else { return false }
        let samples = min(count, Self.window)
        let usual = samples == 0 ? hostGap : min(hostGaps.prefix(samples).reduce(0, +) / UInt64(samples), hostGap)
        let excess = viewerGap - hostGap
        guard excess >= max(2 * usual, Self.minimumIncrease) else { return false }
        freezes += 1
        frozen += excess
        return true
    }
}
