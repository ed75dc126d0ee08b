import Foundation
import FrameRelayTools
import FrameRelaySystem
import FrameRelayTestSupport
import Testing

/// The benchmark JSON shape and the regression gate. Serialized: two runs of
/// frame-relay-bench at once would meet on its fixed ring names.
@Suite(.serialized) struct BenchmarkGateTests {
    let baseline = [
        BenchmarkResult(name: "ring.handoff.publish_to_host_awake.p99", unit: "us", value: 100),
        BenchmarkResult(name: "encode.synthetic.1280x720.bgra.relay_throughput_ratio", unit: "x", value: 1.0),
    ]

    let gate = BenchmarkGate(thresholdPercent: 10)

    @Test func anEqualRunPasses() {
        let outcome = gate.compare(baseline, baseline: baseline)
        #expect(outcome.regressions.isEmpty && outcome.compared == 2)
    }

    @Test func anInjectedRegressionIsCaughtAndNamed() {
        var slower = baseline
        slower[0].value = 150  // latency up 50 %
        slower[1].value = 0.7  // throughput down 30 %
        let found = gate.compare(slower, baseline: baseline).regressions
        #expect(found.count == 2)
        #expect(found[0].hasPrefix("ring.handoff.publish_to_host_awake.p99: 150.000 us vs baseline 100.000 us (median 50.0% worse"))
        #expect(found[1].hasPrefix("encode.synthetic.1280x720.bgra.relay_throughput_ratio"))
        // Within the threshold, or better, is no regression.
        slower[0].value = 105
        slower[1].value = 1.5
        #expect(gate.compare(slower, baseline: baseline).regressions.isEmpty)
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
        #expect(gate.compare(worse, baseline: base).regressions.count == 4)
        var better = base
        better[0].value = 3
        better[1].value = 900
        better[2].value = 50
        better[3].value = 2
        #expect(gate.compare(better, baseline: base).regressions.isEmpty)
    }

    /// Two layers' cost on a moving window is held to 1.3x one layer's, even
    /// when the baseline was as bad: an objective is no comparison.
    @Test func aCaseAboveItsObjectiveFailsWhateverTheBaseline() {
        let over = [BenchmarkResult(name: "layers.pattern.720p.two_to_one_layer_cpu_ratio", unit: "x", value: 1.35, low: 1.31, high: 1.4, repeats: 3, atMost: 1.3)]
        let found = BenchmarkGate(thresholdPercent: 25, ratiosOnly: true).compare(over, baseline: over).regressions
        #expect(found == ["layers.pattern.720p.two_to_one_layer_cpu_ratio: 1.350 x [1.310…1.400 over 3 runs], above its objective of at most 1.300 x"])
        var within = over
        within[0].value = 1.29
        #expect(gate.compare(within, baseline: []).regressions.isEmpty)
        // The objective survives the merge of repeated runs.
        #expect(BenchmarkResult.merge([over, over]).first?.atMost == 1.3)
    }

    /// A baseline written by hand (a median outside its runs' range, a
    /// figure too large to print) is refused in one line, not a crash; a
    /// baseline entry of another unit is not compared.
    @Test func aBaselineWithFiguresNoRunMakesIsRefusedInOneLine() throws {
        #expect(!BenchmarkResult(name: "a", unit: "us", value: 50, low: 60, high: 40, repeats: 3).isConsistent)
        #expect(!BenchmarkResult(name: "a", unit: "x", value: 1, atMost: .nan).isConsistent)
        #expect(BenchmarkResult(name: "a", unit: "us", value: 50, low: 40, high: 60, repeats: 3).isConsistent)
        #expect(fixed(1e300, 1) == "1e+300" && fixed(-2.5, 1) == "-2.5")
        let tiny = [BenchmarkResult(name: "ring.write.p50", unit: "us", value: 1e-300)]
        let found = gate.compare([BenchmarkResult(name: "ring.write.p50", unit: "us", value: 5)], baseline: tiny).regressions
        #expect(found.count == 1 && found[0].contains("e+"), "\(found)")
        #expect(gate.compare([BenchmarkResult(name: "ring.write.p50", unit: "us", value: 5)], baseline: [BenchmarkResult(name: "ring.write.p50", unit: "x", value: 1)]).compared == 0)
        let path = Paths.temporaryDirectory().appendingPathComponent("odd.json").path
        try Data(#"[{"name":"ring.write.1280x720.nv12.p50","unit":"us","value":50,"low":60,"high":40,"repeats":3}]"#.utf8).write(to: URL(fileURLWithPath: path))
        let result = run(Paths.executable("frame-relay-bench"), ["--compare", path, "--filter", "ring.write.1280x720", "--quick", "--output", path + ".out"], timeout: 60)
        #expect(result.status != 0 && result.stderr.contains("has figures no run makes") && result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }

    @Test func repeatsAreMergedIntoTheirMedianAndRange() {
        let runs = [110.0, 100, 130].map { [BenchmarkResult(name: "ring.write.p50", unit: "us", value: $0)] }
        let merged = BenchmarkResult.merge(runs)
        #expect(merged == [BenchmarkResult(name: "ring.write.p50", unit: "us", value: 110, low: 100, high: 130, repeats: 3)])
    }

    @Test func noiseWithinTheRunsSpreadIsNoRegression() {
        // The same binary twice: medians 30 % apart, but the ranges overlap.
        let before = [BenchmarkResult(name: "ring.handoff.p99", unit: "us", value: 100, low: 80, high: 160, repeats: 3)]
        let after = [BenchmarkResult(name: "ring.handoff.p99", unit: "us", value: 130, low: 90, high: 150, repeats: 3)]
        #expect(gate.compare(after, baseline: before).regressions.isEmpty)
        // Every run slower than the baseline's slowest, by more than the threshold: caught.
        let slower = [BenchmarkResult(name: "ring.handoff.p99", unit: "us", value: 200, low: 190, high: 260, repeats: 3)]
        let found = gate.compare(slower, baseline: before).regressions
        #expect(found.count == 1 && found[0].contains("[80.000…160.000 over 3 runs]"), "\(found)")
    }

    @Test func ratiosOnlyLeavesAbsoluteFiguresOut() {
        let before = [
            BenchmarkResult(name: "content.still.720p.every_frame.frames_per_cpu_second", unit: "fps", value: 200),
            BenchmarkResult(name: "content.still.720p.cpu_saving_ratio", unit: "x", value: 2),
        ]
        var after = before
        after[0].value = 130  // a slower session
        after[1].value = 1.5  // a real loss of saving
        let outcome = BenchmarkGate(thresholdPercent: 10, ratiosOnly: true).compare(after, baseline: before)
        #expect(outcome.compared == 1 && outcome.regressions.count == 1 && outcome.regressions[0].hasPrefix("content.still.720p.cpu_saving_ratio"))
    }

    @Test func signedValuesAreNotComparedAsRatios() {
        // A difference that crosses zero (−370 → +370 µs) is not "200 % worse".
        let before = [BenchmarkResult(name: "stream.capture_to_sent_delta", unit: "us", value: -370)]
        let after = [BenchmarkResult(name: "stream.capture_to_sent_delta", unit: "us", value: 370)]
        let outcome = gate.compare(after, baseline: before)
        #expect(outcome.regressions.isEmpty && outcome.signed == ["stream.capture_to_sent_delta"] && outcome.compared == 0)
        // An added latency is a difference even when every run happens to be positive (seen: 5–379 µs, then 447–889 µs).
        let added = [BenchmarkResult(name: "encode.synthetic.1920x1080.i420.added_latency.p50", unit: "us", value: 379, low: 5.5, high: 379, repeats: 3)]
        var later = added
        later[0] = BenchmarkResult(name: added[0].name, unit: "us", value: 644, low: 447, high: 889, repeats: 3)
        #expect(gate.compare(later, baseline: added).regressions.isEmpty && gate.compare(later, baseline: added).signed == [added[0].name])
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

    @Test func twoRunsOfTheSameBinaryPassTheGate() throws {
        let dir = Paths.temporaryDirectory()
        let first = dir.appendingPathComponent("first.json").path
        let options = ["--quick", "--filter", "ring.write", "--repeat", "3"]
        let made = run(Paths.executable("frame-relay-bench"), options + ["--output", first], timeout: 180)
        #expect(made.status == 0, "\(made.stderr)")
        // As .ci/run: ratios only, at 25 %. Between two runs a minute apart, memcpy's own time here moved 36 %.
        let gated = run(Paths.executable("frame-relay-bench"), options + ["--output", dir.appendingPathComponent("second.json").path, "--compare", first, "--ratios-only", "--threshold", "25"], timeout: 180)
        #expect(gated.status == 0, "\(gated.stdout)\(gated.stderr)")
        // The six ring-write ratios (three sizes, two formats) were compared, not none.
        #expect(gated.stdout.contains("no regression in 6 cases"), "\(gated.stdout)")
        // The table comes before the verdict.
        let table = try #require(gated.stdout.range(of: "ring.write.1280x720.nv12.p50"))
        // A verdict found wanting above fails the test here; it must not trap and end the whole suite's run.
        let verdict = try #require(gated.stdout.range(of: "no regression in"))
        #expect(table.lowerBound < verdict.lowerBound)
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
