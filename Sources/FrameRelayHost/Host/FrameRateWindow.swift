/// The frame rate the host shows (the status line, `/stats.json`,
/// `/metrics`, the load test's timeline): the frames taken in each
/// ``length`` over the time their producer took to capture them. Counted
/// against the host's own clock instead, a producer at 30 frames a second
/// read 28–32 as frames fell either side of a window's edge (a summary said
/// 31.1).
///
/// The producer's capture times are not trusted beyond what the host's own
/// clock (when it took each frame, the same CLOCK_MONOTONIC) agrees with: a
/// time after the frame was taken counts as the take, one before the last
/// frame's as the last frame's, and a span that differs from the take
/// times' by more than a fifth (and 100 ms), or under a millisecond a
/// frame, gives way to theirs (a compositor's repeated stamps, a
/// producer's clock gone wrong).
///
/// A window without a frame keeps the last rate and its span goes on into
/// the next (a producer at 1 frame a second reads 1); frames that stop
/// coming, none taken for three of their intervals and 100 ms, count to the
/// window's end, then read 0, and the next frame starts the count afresh, as
/// the first does, at whatever rate it comes. Nil before two frames (a rate needs two).
///
/// Over the whole run, the frames counted and the capture time they spanned
/// (``timed``: pauses, stops and the gaps between producers left out) give
/// the exit summary's rates.
struct FrameRateWindow {
    static let length: UInt64 = 500_000_000
    /// Frames stopped coming when none was taken for three of their intervals, and at least this long (ns).
    static let quietAtLeast = 100_000_000.0
    private var opened: UInt64
    /// The frame the count runs from (its capture and take times; nil before any frame or after a stop), and the latest.
    private var from: (captured: UInt64, taken: UInt64)?
    private var latest: (captured: UInt64, taken: UInt64) = (0, 0)
    /// Frames taken after `from`.
    private var frames = 0
    /// The last closed window's rate, and the frame interval it measured (ns).
    private var closed: Double?
    private var interval: Double?
    /// Frames counted and the capture time they spanned (ns) in the windows closed so far.
    private var timedFrames = 0
    private var timedSpan = 0.0

    init(now: UInt64) { opened = now }

    /// A frame captured at `captured` (the producer's clock) was taken at `taken` (the host's).
    mutating func took(captured: UInt64, taken: UInt64) {
        let time = min(max(captured, latest.captured), taken)
        if from == nil {
            from = (time, taken)
            frames = 0
        } else {
            frames += 1
        }
        latest = (time, taken)
    }

    /// The rate at `now`; closes the window once it is ``length`` old.
    mutating func rate(now: UInt64) -> Double? {
        let measured = measure(now: now)
        guard now &- opened >= Self.length else { return closed ?? measured?.rate }
        opened = now
        if let measured {
            (closed, interval) = (measured.rate, measured.span / Double(frames))
            timedFrames += frames
            timedSpan += measured.span
            from = latest
            frames = 0
        } else if from != nil, quiet(now: now, interval: interval ?? Double(Self.length)) {
            // Stopped: 0, and the next frame counts afresh, at whatever rate it comes.
            if closed != nil { closed = 0 }
            (from, interval) = (nil, nil)
        }
        return closed
    }

    /// The frames counted over the whole run and the capture time they spanned (seconds), this window's so far included.
    func timed(now: UInt64) -> (frames: Int, seconds: Double) {
        let current = measure(now: now)
        return (timedFrames + (current == nil ? 0 : frames), (timedSpan + (current?.span ?? 0)) / 1e9)
    }

    /// This window's frames over their span (the capture times', or the take times' where those disagree),
    /// to `now` when they stopped coming; nil without a frame after the count's first.
    private func measure(now: UInt64) -> (rate: Double, span: Double)? {
        guard let from, frames > 0 else { return nil }
        let captureSpan = Double(latest.captured - from.captured), takeSpan = Double(latest.taken - from.taken)
        // Capture times under a millisecond apart (stamps repeated, or clamped to the last) are no producer's frame rate.
        let agree = abs(captureSpan - takeSpan) <= max(takeSpan / 5, Self.quietAtLeast) && captureSpan >= 1e6 * Double(frames)
        let span = agree ? captureSpan : takeSpan
        guard span > 0 else { return nil }
        let tail = quiet(now: now, interval: span / Double(frames)) ? Double(now - latest.taken) : 0
        return (Double(frames) * 1e9 / (span + tail), span)
    }

    /// Whether no frame was taken for three intervals of `interval` ns, and ``quietAtLeast``, before `now`.
    private func quiet(now: UInt64, interval: Double) -> Bool {
        now > latest.taken && Double(now - latest.taken) > max(3 * interval, Self.quietAtLeast)
    }
}
