import Foundation
import FrameRelay
import Testing

/// The benchmark JSON shape and the regression gate.
@Suite struct BenchmarkGateTests {
    let baseline = [
        BenchmarkResult(name: "ring.handoff.publish_to_host_awake.p99", unit: "us", value: 100),
        BenchmarkResult(name: "encode.synthetic.1280x720.bgra.relay_throughput_ratio", unit: "x", value: 1.0),
    ]

    @Test func anEqualRunPasses() {
        #expect(regressions(baseline, baseline: baseline, thresholdPercent: 10).isEmpty)
    }

    @Test func anInjectedRegressionIsCaughtAndNamed() {
        var slower = baseline
        slower[0].value = 150  // latency up 50 %
        slower[1].value = 0.7  // throughput down 30 %
        let found = regressions(slower, baseline: baseline, thresholdPercent: 10)
        #expect(found.count == 2)
        #expect(found[0].hasPrefix("ring.handoff.publish_to_host_awake.p99: 150.000 us vs baseline 100.000 (50.0% worse"))
        #expect(found[1].hasPrefix("encode.synthetic.1280x720.bgra.relay_throughput_ratio"))
        // Within the threshold, or better, is no regression.
        slower[0].value = 105
        slower[1].value = 1.5
        #expect(regressions(slower, baseline: baseline, thresholdPercent: 10).isEmpty)
    }

    @Test func savingsFrameRatesAndPictureQualityAreBetterHigher() {
        let base = [
            BenchmarkResult(name: "content.typing.720p.cpu_saving_ratio", unit: "x", value: 2),
            BenchmarkResult(name: "content.typing.720p.changed_only.frames_per_cpu_second", unit: "fps", value: 600),
            BenchmarkResult(name: "content.typing.720p.changed_only.viewer_psnr", unit: "dB", value: 48),
            BenchmarkResult(name: "content.still.720p.converged_cpu_share", unit: "%", value: 3),
        ]
        var worse = base
        worse[0].value = 1.5
        worse[1].value = 400
        worse[2].value = 40
        worse[3].value = 4
        #expect(regressions(worse, baseline: base, thresholdPercent: 10).count == 4)
        var better = base
        better[0].value = 3
        better[1].value = 900
        better[2].value = 50
        better[3].value = 2
        #expect(regressions(better, baseline: base, thresholdPercent: 10).isEmpty)
    }

    @Test func jsonHasTheShapeCIActionsRead() throws {
        let data = try JSONEncoder().encode(baseline)
        let array = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        #expect(array.count == 2)
        for entry in array {
            #expect(entry["name"] is String && entry["unit"] is String && entry["value"] is Double)
        }
        #expect(try JSONDecoder().decode([BenchmarkResult].self, from: data) == baseline)
    }

    @Test func theBenchmarkExecutableGatesOnARegression() throws {
        // A baseline claiming a 10x faster ring write than any machine gives: the gate must fail and name it.
        let dir = Paths.temporaryDirectory()
        let baselinePath = dir.appendingPathComponent("baseline.json").path
        let fake = [BenchmarkResult(name: "ring.write.1280x720.nv12.p50", unit: "us", value: 0.5)]
        try JSONEncoder().encode(fake).write(to: URL(fileURLWithPath: baselinePath))
        let result = run(Paths.executable("frame-relay-bench"), [
            "--quick", "--filter", "ring.write", "--output", dir.appendingPathComponent("now.json").path,
            "--compare", baselinePath, "--threshold", "10",
        ], timeout: 120)
        #expect(result.status == 1)
        #expect(result.stderr.contains("regression: ring.write.1280x720.nv12.p50"), "\(result.stderr)")
        let written = try JSONDecoder().decode([BenchmarkResult].self, from: Data(contentsOf: dir.appendingPathComponent("now.json")))
        #expect(written.contains { $0.name == "ring.write.1280x720.nv12.ratio_to_memcpy" && $0.value > 0 })
    }
}
