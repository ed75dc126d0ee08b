import FrameRelay
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

    @Test func emptyHistogramReportsZero() {
        #expect(LatencyHistogram().percentile(99) == 0)
    }
}
