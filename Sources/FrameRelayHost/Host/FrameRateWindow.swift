/// The frame rate the host shows (the status line, `/stats.json`,
/// `/metrics`, the load test): the frames taken in each ``length`` over the
/// time their producer took to capture them (the capture clock is the
/// host's CLOCK_MONOTONIC). Counted against the host's own clock instead, a
/// producer at 30 frames a second read 28–32 as frames fell either side of
/// a window's edge (a summary said 31.1).
///
/// A frame after a ``length`` or more with none starts the count afresh,
/// as the first frame does, and frames that stop coming within a window
/// count to the window's end: three frames 33 ms apart after a quiet spell,
/// then nothing, read 4, not 30. Before the first window closes the rate
/// is that of the frames so far; nil before two frames (a rate needs two).
struct FrameRateWindow {
    static let length: UInt64 = 500_000_000
    /// A window's frames stopped coming when none came for three of their intervals, and at least this long (ns).
    static let quietAtLeast = 100_000_000.0
    private var opened: UInt64
    /// The capture time this window counts from (the last frame before it, or the first after a quiet spell; nil before any), and the latest.
    private var from: UInt64?
    private var latest: UInt64 = 0
    /// Frames taken after `from`.
    private var frames = 0
    /// The last closed window's rate.
    private var closed: Double?

    init(now: UInt64) { opened = now }

    /// A frame captured at `captured` was taken.
    mutating func took(captured: UInt64) {
        if from == nil || (captured > latest && captured - latest >= Self.length) {
            (from, frames) = (captured, 0)
        } else {
            frames += 1
        }
        latest = max(latest, captured)
    }

    /// The rate at `now`; closes the window once it is ``length`` old.
    mutating func rate(now: UInt64) -> Double? {
        let measured = measure(now: now)
        guard now &- opened >= Self.length else { return closed ?? measured }
        opened = now
        // A window with no frames after one that had some: 0. Before two frames: still none.
        if measured != nil || closed != nil { closed = measured ?? 0 }
        if from != nil { from = latest }
        frames = 0
        return closed
    }

    private func measure(now: UInt64) -> Double? {
        guard let from, frames > 0, latest > from else { return nil }
        let span = Double(latest - from)
        let quiet = now > latest ? Double(now - latest) : 0
        let stopped = quiet > max(3 * span / Double(frames), Self.quietAtLeast)
        return Double(frames) * 1e9 / (stopped ? span + quiet : span)
    }
}
