/// One benchmark figure in the shape benchmark-tracking CI actions read:
/// `{"name": ..., "unit": ..., "value": ..., "extra": ...}`; with repeats,
/// `value` is their median and `low`/`high` their range.
public struct BenchmarkResult: Codable, Sendable, Equatable {
    public var name: String
    public var unit: String
    public var value: Double
    /// Context shown in the table and by CI dashboards (not compared).
    public var extra: String?
    /// The lowest and highest value over repeated runs (nil: one run).
    public var low: Double?
    public var high: Double?
    /// How many runs the figure is the median of (nil: one).
    public var repeats: Int?
    /// An objective: the most the figure may be, whatever the baseline (the gate fails above it).
    public var atMost: Double?

    public init(name: String, unit: String, value: Double, extra: String? = nil, low: Double? = nil, high: Double? = nil, repeats: Int? = nil,
                atMost: Double? = nil) {
        self.name = name
        self.unit = unit
        self.value = value
        self.extra = extra
        self.low = low
        self.high = high
        self.repeats = repeats
        self.atMost = atMost
    }

    /// Whether a bigger value is better: throughputs, savings, frames per
    /// CPU second, picture quality (dB). Every other figure is a cost.
    public var higherIsBetter: Bool { name.contains("throughput") || name.contains("saving") || unit == "fps" || unit == "dB" }

    /// Whether the figure is a difference of two times (added latency, one
    /// pipeline's time minus another's): near zero, of either sign, so no
    /// ratio of two of them means anything.
    public var isDifference: Bool { name.contains("added_latency") || name.contains("_minus_") }

    /// Whether the figures are ones a run could have made: finite, and the
    /// median within the range of the runs (a baseline written by hand may not be).
    public var isConsistent: Bool {
        let figures = [value, low, high, atMost].compactMap { $0 }
        return figures.allSatisfy(\.isFinite) && (low ?? value) <= value && value <= (high ?? value)
    }

    /// The range over runs (the value itself for one run).
    public var range: ClosedRange<Double> { (low ?? value)...(high ?? value) }

    /// One figure per name from several runs of the same cases: the median
    /// value, the range, and the number of runs; in the first run's order.
    public static func merge(_ runs: [[BenchmarkResult]]) -> [BenchmarkResult] {
        guard let first = runs.first else { return [] }
        var byName: [String: [BenchmarkResult]] = [:]
        for run in runs { for result in run { byName[result.name, default: []].append(result) } }
        var seen = Set<String>()
        return first.compactMap { result in
            guard seen.insert(result.name).inserted, let all = byName[result.name] else { return nil }
            let values = all.map(\.value).sorted()
            let middle = values.count / 2
            let median = values.count % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2
            return BenchmarkResult(
                name: result.name, unit: result.unit, value: median, extra: result.extra,
                low: values.count > 1 ? values[0] : nil, high: values.count > 1 ? values[values.count - 1] : nil,
                repeats: values.count > 1 ? values.count : nil, atMost: result.atMost)
        }
    }
}
