import FrameRelaySystem

/// The regression gate: compares a run with a baseline so that noise does
/// not fail it. A case regresses only when even the best of its runs is
/// worse than the worst of the baseline's by more than the threshold (the
/// ranges over repeats do not overlap, with room to spare); with one run
/// each, that is the plain threshold. Differences of two times (added
/// latency) and cases whose values are zero or negative anywhere are not
/// compared: a percentage of a signed value means nothing (−370 → +370 µs
/// is not "200 % worse", nor 379 → 644 µs "70 % worse" when it was 5 µs in
/// another run).
///
/// Absolute times and CPU figures drift between sessions of a shared
/// machine by more than their spread within one (on this 2-core machine,
/// content frames per CPU second of one binary ranged 128–176 over three
/// runs minutes apart); ratios measured side by side within one run do not.
/// ``ratiosOnly`` gates on those alone, for a baseline made at another time.
///
/// A case with an objective (``BenchmarkResult/atMost``) fails when its
/// median is above it, whatever the baseline holds.
public struct BenchmarkGate {
    public var thresholdPercent: Double
    /// Compare only ratios measured side by side (unit `x`): relay against plain libvpx, CPU saved.
    public var ratiosOnly: Bool

    public init(thresholdPercent: Double, ratiosOnly: Bool = false) {
        self.thresholdPercent = thresholdPercent
        self.ratiosOnly = ratiosOnly
    }

    public struct Outcome: Equatable, Sendable {
        /// One line per case that regressed.
        public var regressions: [String] = []
        /// Cases in both runs that cannot be compared as ratios (differences, zero or signed values).
        public var signed: [String] = []
        /// Cases compared.
        public var compared = 0
    }

    public func compare(_ results: [BenchmarkResult], baseline: [BenchmarkResult]) -> Outcome {
        var outcome = Outcome()
        let base = Dictionary(baseline.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for result in results {
            guard let most = result.atMost, result.value > most else { continue }
            outcome.regressions.append("\(result.name): \(Self.describe(result)), above its objective of at most \(fixed(most, 3)) \(result.unit)")
        }
        for result in results where !ratiosOnly || result.unit == "x" {
            // A baseline entry of another unit is another figure.
            guard let old = base[result.name], old.unit == result.unit else { continue }
            guard !result.isDifference, result.range.lowerBound > 0, old.range.lowerBound > 0 else {
                outcome.signed.append(result.name)
                continue
            }
            outcome.compared += 1
            let limit = 1 + thresholdPercent / 100
            // Best of the new runs against the worst of the old ones.
            let regressed = result.higherIsBetter
                ? result.range.upperBound * limit < old.range.lowerBound
                : result.range.lowerBound > old.range.upperBound * limit
            guard regressed else { continue }
            let worse = (result.higherIsBetter ? old.value / result.value : result.value / old.value) * 100 - 100
            outcome.regressions.append(
                "\(result.name): \(Self.describe(result)) vs baseline \(Self.describe(old)) (median \(fixed(worse, 1))% worse, beyond the runs' spread and the \(fixed(thresholdPercent, 1))% threshold)")
        }
        return outcome
    }

    private static func describe(_ result: BenchmarkResult) -> String {
        let value = "\(fixed(result.value, 3)) \(result.unit)"
        guard let low = result.low, let high = result.high, let repeats = result.repeats else { return value }
        return value + " [\(fixed(low, 3))…\(fixed(high, 3)) over \(repeats) runs]"
    }
}
