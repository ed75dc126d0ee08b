/// One stream's target bitrate from what its receivers report, in the
/// manner of GCC's sender side (draft-ietf-rmcat-gcc-02 §6, and libwebrtc's
/// loss-based estimate): the report blocks' fraction lost moves a
/// loss-based rate, and a receiver's REMB (its delay-based estimate) caps
/// it; the target never leaves `floor...ceiling` (the encoder's configured bitrate).
///
/// - Under 2 % lost, the loss-based rate grows 8 % a second.
/// - Between 2 % and 10 %, it holds.
/// - Over 10 %, it falls to (1 − loss / 2) of itself, at most once in ``decreaseInterval``.
///
/// With several receivers, the one that loses most moves the rate: its own
/// report cuts, and its last report holds the rate until it reports clean
/// or three of its own report intervals pass, at least ``reportLifetime``
/// (a receiver that left holds nothing; one on RFC 3550's 5 s schedule,
/// 2.5–7.5 s apart, never lapses between two reports); the lowest REMB caps
/// it. Once no receiver's report holds (every one gone quiet), the rate
/// grows as clean reports would grow it (``tick(now:)``). One slow receiver
/// slows its stream, never another share's.
///
/// A value: reports go in with their time, the target comes out; no socket or clock.
package struct BitrateController: Sendable {
    package let floor: Int
    package let ceiling: Int
    /// The loss-based rate, bits/s.
    package var lossBased: Int { Int(rate.rounded()) }
    /// The loss-based rate unrounded: reports close together each add a fraction of a bit.
    private var rate: Double
    /// Each receiver's last fraction lost, with when it came and the time since its report before
    /// (``reportInterval`` before a second); and its last REMB (bits/s) with when it came.
    private var losses: [(fraction: Double, at: UInt64, interval: UInt64)?]
    private var estimates: [(bitsPerSecond: Int, at: UInt64)?]
    /// The time the rate's growth has been counted to.
    private var grownTo: UInt64?
    private var lastDecrease: UInt64?

    /// A decrease waits this long after the last: the reports after a cut still count loss from before it.
    package static let decreaseInterval: UInt64 = 300_000_000
    /// A REMB older than this no longer caps the rate (its receiver went quiet).
    package static let estimateLifetime: UInt64 = 5_000_000_000
    /// The least a report holds the rate for: after three of its receiver's
    /// intervals and at least this long, it no longer does (its receiver left,
    /// or its reports no longer come).
    package static let reportLifetime: UInt64 = 5_000_000_000
    /// A receiver's report interval until its second report: RFC 3550's minimum.
    package static let reportInterval: UInt64 = 5_000_000_000

    /// When a report of a receiver whose reports come `interval` apart stops holding the rate.
    private static func lapses(at: UInt64, interval: UInt64) -> UInt64 { at &+ max(reportLifetime, 3 * min(interval, 3_600_000_000_000)) }

    /// Starts at `ceiling` (the encoder's bitrate), bits/s, for `receivers` receivers.
    package init(floor: Int, ceiling: Int, receivers: Int = 1) {
        precondition(floor > 0 && floor <= ceiling && receivers >= 1)
        self.floor = floor
        self.ceiling = ceiling
        rate = Double(ceiling)
        losses = Array(repeating: nil, count: receivers)
        estimates = Array(repeating: nil, count: receivers)
    }

    /// The lowest REMB of the receivers that sent one within ``estimateLifetime``.
    /// (A loop, not a chain of arrays: the sender asks at every poll.)
    package func estimate(now: UInt64) -> Int? {
        var lowest: Int?
        for case let estimate? in estimates where now &- estimate.at < Self.estimateLifetime { lowest = min(lowest ?? .max, estimate.bitsPerSecond) }
        return lowest
    }

    /// The rate the stream should be sent at now, bits/s.
    package func target(now: UInt64) -> Int {
        min(ceiling, max(floor, min(lossBased, estimate(now: now) ?? .max)))
    }

    /// Receiver `receiver`'s report block about the stream: `fractionLost`
    /// (0...1) since its report before. A receiver's own report over 10 % cuts;
    /// the rate grows only while every receiver's last report within
    /// ``reportLifetime`` is under 2 %.
    package mutating func report(fractionLost: Double, from receiver: Int = 0, now: UInt64) {
        guard losses.indices.contains(receiver) else { return }
        losses[receiver] = (fractionLost, now, losses[receiver].map { now &- $0.at } ?? Self.reportInterval)
        defer { grownTo = now }
        // Growth starts from what a receiver's fresh REMB says it takes, not from a rate far above it that it never carried.
        if let estimate = estimate(now: now), lossBased > 2 * estimate { rate = Double(max(floor, min(ceiling, 2 * estimate))) }
        var worst = 0.0
        for case let loss? in losses where now < Self.lapses(at: loss.at, interval: loss.interval) { worst = max(worst, loss.fraction) }
        if worst < 0.02 {
            // For the time since the last report: a long silence earns no more than a second, and reports in quick succession no more than their time.
            guard let last = grownTo else { return }
            grow(seconds: Double(now &- last) / 1e9)
        } else if fractionLost > 0.1 {
            if let last = lastDecrease, now &- last < Self.decreaseInterval { return }
            lastDecrease = now
            rate = max(Double(floor), (rate * (1 - fractionLost / 2)).rounded(.down))
        }
    }

    /// At `now`: once no receiver's report holds the rate, the rate grows as
    /// clean reports would, from the time the last lapsed (a receiver that
    /// reported loss and left, or whose reports stopped, does not hold its
    /// stream at the floor for good). Call it as time passes.
    package mutating func tick(now: UInt64) {
        // When the last report to lapse did (a loop: the sender calls this at every poll).
        var lapsed: UInt64?
        for case let loss? in losses { lapsed = max(lapsed ?? 0, Self.lapses(at: loss.at, interval: loss.interval)) }
        guard let grown = grownTo, let lapsed, now >= lapsed else { return }
        let from = max(grown, lapsed)
        guard now > from else { return }
        grow(seconds: Double(now - from) / 1e9)
        grownTo = now
    }

    /// 8 % a second (at least 1 kbit/s a second), for at most a second.
    private mutating func grow(seconds: Double) {
        let seconds = min(1, seconds)
        rate = min(Double(ceiling), max(rate + 1_000 * seconds, rate * pow108(seconds)))
    }

    /// Receiver `receiver`'s REMB about the stream: its estimate, bits/s.
    /// The lowest of those within ``estimateLifetime`` caps the rate; once
    /// none is that fresh, the rate is the loss-based one again (which the
    /// REMBs lowered only as reports came while they were fresh).
    package mutating func remb(_ bitsPerSecond: UInt64, from receiver: Int = 0, now: UInt64) {
        guard estimates.indices.contains(receiver) else { return }
        estimates[receiver] = (Int(min(bitsPerSecond, UInt64(Int.max / 4))), now)
    }

    /// 1.08 to the power `seconds` (0...1), without Foundation.
    private func pow108(_ seconds: Double) -> Double {
        // exp(seconds × ln 1.08) by its series: seconds × ln 1.08 ≤ 0.077, so four terms are exact to 1e-9.
        let x = seconds * 0.076_961_041_136_128_3
        return 1 + x + x * x / 2 + x * x * x / 6 + x * x * x * x / 24
    }
}
