/// One benchmark figure in the shape benchmark-tracking CI actions read:
/// `{"name": ..., "unit": ..., "value": ..., "extra": ...}`.
public struct BenchmarkResult: Codable, Sendable, Equatable {
    public var name: String
    public var unit: String
    public var value: Double
    /// Context shown in the table and by CI dashboards (not compared).
    public var extra: String?

    public init(name: String, unit: String, value: Double, extra: String? = nil) {
        self.name = name
        self.unit = unit
        self.value = value
        self.extra = extra
    }

    /// Whether a bigger value is better: throughputs, savings, frames per
    /// CPU second, picture quality (dB). Every other figure is a cost.
    public var higherIsBetter: Bool { name.contains("throughput") || name.contains("saving") || unit == "fps" || unit == "dB" }
}

/// The regression gate: each case present in both runs whose value got
/// worse than the baseline by more than `thresholdPercent`, as one line each.
public func regressions(_ results: [BenchmarkResult], baseline: [BenchmarkResult], thresholdPercent: Double) -> [String] {
    var found: [String] = []
    for result in results {
        guard let base = baseline.first(where: { $0.name == result.name }), base.value != 0 else { continue }
        let growth = (result.value - base.value) / abs(base.value) * 100
        let worse = result.higherIsBetter ? -growth : growth
        if worse > thresholdPercent {
            found.append("\(result.name): \(fixed(result.value, 3)) \(result.unit) vs baseline \(fixed(base.value, 3)) (\(fixed(worse, 1))% worse, threshold \(fixed(thresholdPercent, 1))%)")
        }
    }
    return found
}
