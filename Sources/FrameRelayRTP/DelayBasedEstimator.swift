/// A receiver's estimate of the bitrate its path carries, from when the
/// packets arrive (GCC's receiver side, draft-ietf-rmcat-gcc-02 §5, sent
/// to the sender as a REMB): loss says a queue overflowed, delay says it is
/// filling, a round-trip sooner.
///
/// Each frame's first packet is timed against its RTP timestamp (the
/// capture clock): that delay, less its least over the last
/// ``baseSeconds`` s, is the queueing on the path (plus the sender's own
/// encode time, which the least takes out as far as it is steady). Once a
/// report (``report(now:)``, a second apart):
///
/// - **Overuse**, the mean queueing of the report's frames over 50 ms and
///   not draining (not 5 ms under the report's before): the estimate
///   becomes 0.85 of the rate received over the last second, and that rate
///   goes into the path's capacity (a moving average of the rates at overuse).
/// - **Under 20 ms**: the estimate grows, up to 1.5 times the rate received
///   (a still screen's trickle earns no growth, nor loses what it had):
///   within 20 % of the capacity, by a packet per 300 ms (GCC's additive
///   increase near convergence, so the queue fills slowly enough to be
///   seen well before it overflows); further from it, 8 % a second. A rate
///   received 15 % over the capacity forgets it (the path widened).
/// - Between, or draining: it holds.
///
/// Before the first overuse there is no estimate (nothing to send: the
/// sender's loss-based rate rules). A value: packets and reports go in with
/// their times; no socket or clock.
package struct DelayBasedEstimator: Sendable {
    /// Queueing above which the path is overused, and below which the estimate may grow, ns.
    package static let overuse: Int64 = 50_000_000
    package static let underuse: Int64 = 20_000_000
    /// How long the least delay is remembered (a path that changed is learned again in this time).
    package static let baseSeconds = 10

    /// The estimate, bits/s (nil before the first overuse).
    package private(set) var estimate: Int?
    /// The rate received at overuses, bits/s, a moving average (nil before the first, or once the path widened).
    package private(set) var capacity: Int?
    /// The last report's mean queueing, ns (nil: no frame in it).
    package private(set) var queueing: Int64?

    /// The RTP timestamp of the frame whose first packet came last, unwrapped (90 kHz).
    private var lastTimestamp: Int64?
    private var timestampBase: UInt32?
    /// The least delay of each of the last seconds (ns, on an arbitrary origin), by second.
    private var minima = [Int64](repeating: .max, count: baseSeconds)
    private var minimaSecond = -1
    /// This report's frames: their delays (sum, count).
    private var delaySum: Int64 = 0
    private var delayCount: Int64 = 0
    /// Bytes received in each 100 ms of the last second, by tenth.
    private var bytes = [Int](repeating: 0, count: 10)
    private var bytesTenth = -1
    private var lastReport: UInt64?
    private var started: UInt64?

    package init() {}

    /// One RTP packet of `size` bytes, stamped `timestamp`, arriving at `arrival` (CLOCK_MONOTONIC ns).
    package mutating func packet(timestamp: UInt32, size: Int, arrival: UInt64) {
        if started == nil { started = arrival }
        let elapsed = arrival &- started!
        // The received rate, in tenths of a second.
        let tenth = Int(elapsed / 100_000_000)
        if tenth != bytesTenth {
            for gone in max(bytesTenth + 1, tenth - 9)...tenth { bytes[gone % 10] = 0 }
            bytesTenth = tenth
        }
        bytes[tenth % 10] += size
        // The RTP timestamp unwrapped from the first, in 90 kHz ticks.
        let base = timestampBase ?? timestamp
        timestampBase = base
        var unwrapped = Int64(Int32(bitPattern: timestamp &- base))
        if let last = lastTimestamp {
            // Within half the timestamp's range of the last frame.
            unwrapped = last + Int64(Int32(bitPattern: timestamp &- UInt32(truncatingIfNeeded: last + Int64(base))))
            guard unwrapped > last else { return }  // a later packet of a frame already timed, or one reordered
        }
        lastTimestamp = unwrapped
        let delay = Int64(elapsed) - unwrapped * 100_000 / 9
        let second = Int(elapsed / 1_000_000_000)
        if second != minimaSecond {
            for gone in max(minimaSecond + 1, second - Self.baseSeconds + 1)...second { minima[gone % Self.baseSeconds] = .max }
            minimaSecond = second
        }
        minima[second % Self.baseSeconds] = min(minima[second % Self.baseSeconds], delay)
        delaySum += delay - minima.min()!
        delayCount += 1
    }

    /// The rate received over the last second, bits/s.
    package var receivedRate: Int { bytes.reduce(0, +) * 8 }

    /// Judges the frames since the last report and returns the estimate to
    /// send (nil: none yet).
    package mutating func report(now: UInt64) -> Int? {
        defer {
            lastReport = now
            delaySum = 0
            delayCount = 0
        }
        let previous = queueing
        guard delayCount > 0 else {
            queueing = nil
            return estimate
        }
        let mean = delaySum / delayCount
        queueing = mean
        let draining = previous.map { mean < $0 - 5_000_000 } ?? false
        let rate = receivedRate
        if mean > Self.overuse, !draining {
            estimate = max(1, rate * 85 / 100)
            capacity = capacity.map { ($0 * 3 + rate) / 4 } ?? rate
        } else if mean < Self.underuse, let current = estimate, let last = lastReport {
            if let known = capacity, rate > known * 115 / 100 { capacity = nil }
            let seconds = min(1, Double(now &- last) / 1e9)
            let grown: Int
            if let known = capacity, current >= known * 80 / 100 {
                // A packet (or a frame at 30 a second, when smaller) per 300 ms, at least 4 kbit/s a second.
                let packet = Double(min(1200 * 8, current / 30))
                grown = current + Int(max(4_000, packet / 0.3) * seconds)
            } else {
                grown = Int(Double(current) * (1 + 0.08 * seconds))
            }
            estimate = min(grown, max(current, rate * 3 / 2))
        }
        return estimate
    }
}
