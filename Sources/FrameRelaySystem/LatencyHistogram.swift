/// A fixed-memory log-linear histogram of nanosecond durations: 16 linear
/// buckets per power of two (error ≤ 6.25 %), recorded without allocation.
public struct LatencyHistogram: Sendable {
    package static let subBuckets = 16
    package static let groups = 48  // up to 2^48 ns (~3 days)
    private var buckets: [UInt64]
    public private(set) var count: UInt64 = 0
    public private(set) var max: UInt64 = 0
    public private(set) var min: UInt64 = .max
    public private(set) var sum: UInt64 = 0

    public init() {
        buckets = Array(repeating: 0, count: Self.subBuckets * Self.groups)
    }

    package static func index(of value: UInt64) -> Int {
        if value < UInt64(subBuckets) { return Int(value) }
        let magnitude = 63 - value.leadingZeroBitCount  // ≥ 4
        let group = magnitude - 3
        let sub = Int((value >> UInt64(magnitude - 4)) & UInt64(subBuckets - 1))
        return Swift.min(group * subBuckets + sub, subBuckets * groups - 1)
    }

    /// The smallest value that falls in bucket `index`.
    package static func lowerBound(of index: Int) -> UInt64 {
        if index < subBuckets { return UInt64(index) }
        let group = index / subBuckets, sub = index % subBuckets
        let magnitude = group + 3
        return (UInt64(1) << UInt64(magnitude)) | (UInt64(sub) << UInt64(magnitude - 4))
    }

    /// Adds one duration.
    @inline(__always)
    public mutating func record(_ nanoseconds: UInt64) {
        buckets.withUnsafeMutableBufferPointer { $0[Self.index(of: nanoseconds)] &+= 1 }
        count &+= 1
        sum &+= nanoseconds
        if nanoseconds > max { max = nanoseconds }
        if nanoseconds < min { min = nanoseconds }
    }

    /// Adds every value of `other`.
    public mutating func merge(_ other: LatencyHistogram) {
        for i in buckets.indices { buckets[i] &+= other.buckets[i] }
        count &+= other.count
        sum &+= other.sum
        max = Swift.max(max, other.max)
        min = Swift.min(min, other.min)
    }

    /// The value at percentile `p` (0–100): the midpoint of its bucket, clamped
    /// to the recorded min and max; 0 when empty.
    public func percentile(_ p: Double) -> UInt64 {
        guard count > 0 else { return 0 }
        let rank = Swift.max(1, UInt64((p / 100 * Double(count)).rounded(.up)))
        var seen: UInt64 = 0
        for (index, n) in buckets.enumerated() where n > 0 {
            seen += n
            if seen >= rank {
                let low = Self.lowerBound(of: index)
                let high = index + 1 < buckets.count ? Self.lowerBound(of: index + 1) : low
                let mid = low + (high - low) / 2
                return Swift.min(Swift.max(mid, min), max)
            }
        }
        return max
    }

    /// The distribution for charts and reports: the non-empty ranges, in
    /// microseconds, at `perOctave` ranges per power of two (a divisor of 16;
    /// durations under 16 ns share one range).
    public func bins(perOctave: Int = 4) -> [LatencyBin] {
        precondition(perOctave > 0 && Self.subBuckets % perOctave == 0, "perOctave must divide \(Self.subBuckets)")
        var result: [LatencyBin] = []
        var index = 0
        while index < buckets.count {
            let end = index < Self.subBuckets ? Self.subBuckets : Swift.min(index + Self.subBuckets / perOctave, buckets.count)
            let n = buckets[index..<end].reduce(0, &+)
            if n > 0 {
                result.append(LatencyBin(low: Double(Self.lowerBound(of: index)) / 1000, high: Double(Self.lowerBound(of: end)) / 1000, count: n))
            }
            index = end
        }
        return result
    }

    /// How many durations are at most each of `bounds` (ns, ascending), as
    /// Prometheus's cumulative `le` buckets count them. A bucket of this
    /// histogram that straddles a bound counts above it (it is at most
    /// 6.25 % of the bound wide).
    public func cumulativeCounts(atMost bounds: [UInt64]) -> [UInt64] {
        var counts: [UInt64] = []
        var index = 0
        var seen: UInt64 = 0
        for bound in bounds {
            while index < buckets.count, index + 1 < buckets.count, Self.lowerBound(of: index + 1) - 1 <= bound {
                seen &+= buckets[index]
                index += 1
            }
            counts.append(seen)
        }
        return counts
    }

    /// p50, p90, p99, max and count, in microseconds, for reports.
    public var summary: LatencySummary {
        LatencySummary(
            count: count, p50: micros(percentile(50)), p90: micros(percentile(90)), p99: micros(percentile(99)),
            max: micros(count == 0 ? 0 : max), mean: count == 0 ? 0 : micros(sum / count))
    }

    private func micros(_ ns: UInt64) -> Double { (Double(ns) / 1000).rounded() }
}

/// Percentiles of a ``LatencyHistogram`` in microseconds; in JSON each key
/// names its unit (`p50_us`).
public struct LatencySummary: Sendable, Codable, Equatable {
    public var count: UInt64
    public var p50: Double
    public var p90: Double
    public var p99: Double
    public var max: Double
    public var mean: Double

    public init(count: UInt64, p50: Double, p90: Double, p99: Double, max: Double, mean: Double) {
        self.count = count
        self.p50 = p50
        self.p90 = p90
        self.p99 = p99
        self.max = max
        self.mean = mean
    }

    private enum CodingKeys: String, CodingKey {
        case count, p50 = "p50_us", p90 = "p90_us", p99 = "p99_us", max = "max_us", mean = "mean_us"
    }
}

/// A range of a latency distribution: `count` durations from `low` up to
/// (not including) `high` microseconds.
public struct LatencyBin: Sendable, Codable, Equatable {
    public var low: Double
    public var high: Double
    public var count: UInt64

    private enum CodingKeys: String, CodingKey {
        case low = "low_us", high = "high_us", count
    }

    public init(low: Double, high: Double, count: UInt64) {
        self.low = low
        self.high = high
        self.count = count
    }

    /// What `later` holds beyond `earlier`: two readings of one growing
    /// distribution (the same ranges), the second minus the first.
    public static func subtracting(_ earlier: [LatencyBin], from later: [LatencyBin]) -> [LatencyBin] {
        var before: [Double: UInt64] = [:]
        for bin in earlier { before[bin.low] = bin.count }
        return later.compactMap { bin in
            let count = bin.count - Swift.min(bin.count, before[bin.low] ?? 0)
            return count == 0 ? nil : LatencyBin(low: bin.low, high: bin.high, count: count)
        }
    }

    /// The value at percentile `p` (0–100) of a distribution, placed within
    /// its range by rank (so within that range's width: a sixteenth of its
    /// value at sixteen ranges an octave, a fifth at four); nil when empty.
    public static func percentile(_ p: Double, of bins: [LatencyBin]) -> Double? {
        let total = bins.map(\.count).reduce(0, +)
        guard total > 0 else { return nil }
        let rank = Swift.max(1, (p / 100 * Double(total)).rounded(.up))
        var seen = 0.0
        for bin in bins.sorted(by: { $0.low < $1.low }) {
            let next = seen + Double(bin.count)
            if next >= rank { return bin.low + (bin.high - bin.low) * (rank - seen) / Double(bin.count) }
            seen = next
        }
        return bins.map(\.high).max()
    }

    /// Several distributions of the same ranges (from ``LatencyHistogram/bins(perOctave:)``
    /// with the same `perOctave`) added together.
    public static func merged(_ distributions: [[LatencyBin]]) -> [LatencyBin] {
        var byLow: [Double: LatencyBin] = [:]
        for bin in distributions.joined() { byLow[bin.low, default: LatencyBin(low: bin.low, high: bin.high, count: 0)].count += bin.count }
        return byLow.values.sorted { $0.low < $1.low }
    }
}

extension Array where Element == Double {
    /// The `p`th percentile (0–100) of these values, sorted ascending, by the
    /// nearest-rank method: the smallest value with at least `p` % of the
    /// values at or below it; 0 when there are none.
    public func nearestRankPercentile(_ p: Double) -> Double {
        guard !isEmpty else { return 0 }
        return self[Swift.min(count - 1, Swift.max(0, Int((p / 100 * Double(count)).rounded(.up)) - 1))]
    }
}
