import Foundation
import FrameRelaySystem
import Testing

@Suite struct LatencyHistogramTests {
    @Test func percentilesMatchASortedReferenceWithinBucketError() {
        var histogram = LatencyHistogram()
        var generator = SystemRandomNumberGenerator()
        var values: [UInt64] = []
        for _ in 0..<20_000 {
            let value = UInt64.random(in: 1_000...50_000_000, using: &generator)
            values.append(value)
            histogram.record(value)
        }
        values.sort()
        for p in [50.0, 90.0, 99.0, 99.9] {
            let exact = Double(values[Int((p / 100 * Double(values.count)).rounded(.up)) - 1])
            let estimate = Double(histogram.percentile(p))
            #expect(abs(estimate - exact) / exact < 0.07, "p\(p): \(estimate) vs \(exact)")
        }
        #expect(histogram.count == 20_000)
        #expect(histogram.max == values.last)
    }

    @Test func binsHoldEveryValueInItsRangeAndMergeAsTheHistogramsDo() {
        var a = LatencyHistogram(), b = LatencyHistogram()
        var generator = SystemRandomNumberGenerator()
        var values: [UInt64] = []
        for i in 0..<5_000 {
            let value = UInt64.random(in: 20_000...200_000_000, using: &generator)
            values.append(value)
            if i % 2 == 0 { a.record(value) } else { b.record(value) }
        }
        var both = a
        both.merge(b)
        let bins = both.bins(perOctave: 4)
        #expect(bins.map(\.count).reduce(0, +) == 5_000)
        for (lower, upper) in zip(bins, bins.dropFirst()) { #expect(lower.low < lower.high && lower.high <= upper.low) }
        // Each bin counts exactly the values in its range (µs, low inclusive, high exclusive).
        for bin in bins {
            let inside = values.filter { Double($0) / 1000 >= bin.low && Double($0) / 1000 < bin.high }.count
            #expect(UInt64(inside) == bin.count, "\(bin)")
        }
        // Four ranges per power of two: each spans a quarter of an octave.
        #expect(bins.allSatisfy { abs(($0.high - $0.low) / $0.low - 0.25) < 0.2 })
        #expect(LatencyBin.merged([a.bins(), b.bins()]) == bins)
        #expect(LatencyHistogram().bins().isEmpty)
    }

    /// The load test's warm-up: a distribution read twice, the second minus
    /// the first, is the distribution of what came between; its p99 lies
    /// within the range that holds it.
    @Test func whatCameAfterAReadingIsTheDifferenceOfTwoReadings() throws {
        var histogram = LatencyHistogram()
        for _ in 0..<500 { histogram.record(90_000_000) }  // a warm-up of 90 ms frames
        let warm = histogram.bins()
        var after = LatencyHistogram()
        for i in 0..<1_000 {
            let value = UInt64(2_000_000 + i * 10_000)  // 2 … 12 ms
            histogram.record(value)
            after.record(value)
        }
        let steady = LatencyBin.subtracting(warm, from: histogram.bins())
        #expect(steady == after.bins())
        let p99 = try #require(LatencyBin.percentile(99, of: steady))
        #expect(abs(p99 - 11_900) / 11_900 < 0.2, "\(p99) µs")
        // Without the warm-up left out, the 90 ms frames are the p99.
        #expect(try #require(LatencyBin.percentile(99, of: histogram.bins())) > 80_000)
        #expect(LatencyBin.percentile(99, of: []) == nil)
    }

    @Test func emptyHistogramReportsZero() {
        #expect(LatencyHistogram().percentile(99) == 0)
    }

    @Test func exactSamplesTakeTheNearestRank() {
        let hundred = (1...100).map(Double.init)
        #expect(hundred.nearestRankPercentile(50) == 50)
        #expect(hundred.nearestRankPercentile(99) == 99)
        #expect(hundred.nearestRankPercentile(99.5) == 100)
        #expect(hundred.nearestRankPercentile(0) == 1)
        #expect([4.0, 9.0].nearestRankPercentile(50) == 4)
        #expect([Double]().nearestRankPercentile(99) == 0)
    }

    @Test func jsonKeysNameTheirUnit() throws {
        var histogram = LatencyHistogram()
        histogram.record(1_500_000)
        let summary = String(decoding: try JSONEncoder().encode(histogram.summary), as: UTF8.self)
        for key in ["\"count\"", "\"p50_us\"", "\"p90_us\"", "\"p99_us\"", "\"max_us\"", "\"mean_us\""] {
            #expect(summary.contains(key), "\(summary)")
        }
        #expect(!summary.contains("\"p50\""))
        let bin = String(decoding: try JSONEncoder().encode(LatencyBin(low: 1, high: 2, count: 3)), as: UTF8.self)
        #expect(bin.contains("\"low_us\"") && bin.contains("\"high_us\""), "\(bin)")
        #expect(try JSONDecoder().decode(LatencySummary.self, from: Data(summary.utf8)) == histogram.summary)
    }
}
