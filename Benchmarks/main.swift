@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayTools

/// frame-relay-bench: named benchmark cases with warm-up and percentiles,
/// JSON output in the `[{"name", "unit", "value"}]` shape, and a compare
/// gate that fails on regression.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "frame-relay-bench", abstract: "FrameRelay benchmarks (JSON for benchmark CI)")

    @Flag("quick", help: "Fewer iterations: a smoke test for CI.") var quick
    @Option("filter", "TEXT", help: "Run only cases whose name contains TEXT.") var filter: String?
    @Option("output", "PATH", help: "Where to write the JSON results.") var output = "benchmarks.json"
    @Option("compare", "BASELINE", help: "A previous results JSON to compare against.") var compare: String?
    @Option("threshold", "PCT", in: 0...10_000, help: "How much worse than the baseline's worst run the best run may be, in percent, before a case counts as a regression.") var threshold = 10.0
    @Flag("ratios-only", help: "With --compare, gate only the ratios measured side by side in one run (a baseline from another session: absolute times drift).") var ratiosOnly
    @Option("repeat", "N", in: 1...20, help: "Run every case N times; each figure is the median, with the range of the runs (the gate uses it as the noise).") var repeats = 1
    @Option("clip", "PATH", help: "The shared desktop clip (Y4M, after xz -dk) for the encode cases.") var clip: String?
    @Flag("side-by-side", help: "Also run plain libvpx, ffmpeg, GStreamer and FrameRelay on the same frames into one receiver.") var runSideBySide
    @Option("side-fps", "N", in: 0...240, help: "Feed rate for --side-by-side (0: as fast as they go).") var sideFPS = 30.0
    @Option("side-frames", "N", in: 10...100_000, help: "Frames per pipeline for --side-by-side.") var sideFrames = 300
    @Option("side-rounds", "N", in: 1...100, help: "Rounds of the pipelines for --side-by-side; figures are medians over rounds.") var sideRounds = 3
    @Option("side-pipelines", "LIST", help: "Which pipelines --side-by-side runs, comma-separated (fewer: more rounds in the time).", default: "plain,ffmpeg,gstreamer,ours", transform: parsePipelines)
    var sidePipelines: [SideBySide.Pipeline] = [.plain, .ffmpeg, .gstreamer, .ours]
    @Option("side-threads", "N", in: 1...16, help: "Encoder threads for all the pipelines (default: FrameRelay's policy for 720p on this machine).") var sideThreads: Int?
    @Option("side-keep", "DIR", help: "Keep each pipeline's capture and decode logs (JSON lines) and receiver report in DIR.") var sideKeep: String?

    /// The results compared against, read before anything runs.
    private(set) var baseline: [BenchmarkResult]?

    mutating func validate() throws {
        if let path = compare {
            guard let data = FileManager.default.contents(atPath: path) else { throw UsageError("cannot read baseline \(path)") }
            do { baseline = try JSONDecoder().decode([BenchmarkResult].self, from: data) } catch {
                throw UsageError("baseline \(path) is not benchmark JSON ([{\"name\",\"unit\",\"value\"}])")
            }
            if let odd = baseline?.first(where: { !$0.isConsistent }) {
                throw UsageError("baseline \(path): case \(odd.name) has figures no run makes (each finite, low <= value <= high)")
            }
        }
        try OutputFile.check(output, option: "output")
        if runSideBySide, clip == nil { throw UsageError("--side-by-side needs --clip PATH") }
    }

    func run() throws -> Int32 {
        var runs: [[BenchmarkResult]] = []
        for round in 1...repeats {
            if repeats > 1 { FileHandle.standardError.write(Data("round \(round) of \(repeats)\n".utf8)) }
            runs.append(try runOnce())
        }
        let results = BenchmarkResult.merge(runs)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let replacing = OutputFile.isFile(output)
        try OutputFile.write(String(decoding: try encoder.encode(results), as: UTF8.self), to: output)
        FileHandle.standardError.write(Data("frame-relay-bench: results in \(OutputFile.named(output, replacing: replacing))\n".utf8))
        // The table, then the gate's verdict: stdout is flushed first, so the two never interleave.
        print(BenchmarkRunner.table(results))
        fflush(stdout)
        guard let baseline, let compare else { return 0 }
        let outcome = BenchmarkGate(thresholdPercent: threshold, ratiosOnly: ratiosOnly).compare(results, baseline: baseline)
        if !outcome.signed.isEmpty {
            print("not compared (differences, zero or signed values: no ratio): " + outcome.signed.joined(separator: ", "))
        }
        if !outcome.regressions.isEmpty {
            fflush(stdout)
            for line in outcome.regressions { FileHandle.standardError.write(Data("regression: \(line)\n".utf8)) }
            return 1
        }
        print("no regression in \(outcome.compared) cases beyond their runs' spread and \(fixed(threshold, 1))% against \(compare)")
        return 0
    }

    /// Every case the filter lets through, once.
    private func runOnce() throws -> [BenchmarkResult] {
        let runner = BenchmarkRunner(quick: quick, filter: filter)
        try runner.run("ring.write") { try producerWriteCost(quick: runner.quick) }
        try runner.run("ring.handoff") { try handoffBetweenProcesses(quick: runner.quick) }
        try runner.run("producer.peak_rss") { try producerPeakRSS(quick: runner.quick) }
        try runner.run("capture") { try captureBenchmarks(quick: runner.quick) }
        try runner.run("encode") { try encodeBenchmarks(quick: runner.quick, clip: clip) }
        try runner.run("stream") { try streamingBenchmarks(quick: runner.quick, clip: clip) }
        try runner.run("content") { try contentBenchmarks(quick: runner.quick, clip: clip, wants: runner.wants) }
        try runner.run("layers") { try layersBenchmarks(quick: runner.quick) }
        try runner.run("subscriber") { try subscriberBenchmarks(quick: runner.quick) }
        if runSideBySide, let clip {
            for input in [PixelFormat.i420, .nv12, .bgra] {
                try runner.run("side_by_side.\(input)") {
                    try sideBySide(clip: clip, input: input, fps: sideFPS, count: sideFrames, rounds: sideRounds, pipelines: sidePipelines, threads: sideThreads, keep: sideKeep)
                }
            }
        }
        return runner.results
    }
}

/// `--side-pipelines plain,ffmpeg,…`: one or more different pipelines.
private func parsePipelines(_ text: String) throws -> [SideBySide.Pipeline] {
    let pipelines = try text.split(separator: ",").map { name in
        guard let pipeline = SideBySide.Pipeline(rawValue: String(name)) else {
            throw UsageError("unknown pipeline '\(name)' in --side-pipelines: choose from plain, ffmpeg, gstreamer, ours, ours-default")
        }
        return pipeline
    }
    guard !pipelines.isEmpty, Set(pipelines).count == pipelines.count else { throw UsageError("--side-pipelines needs one or more different pipelines") }
    return pipelines
}

Signals.resetInherited()
do {
    exit(try Bench.parse(Array(CommandLine.arguments.dropFirst())).run())
} catch let help as HelpRequested {
    print(help.text)
    exit(0)
} catch {
    FileHandle.standardError.write(Data("frame-relay-bench: error: \(error)\n".utf8))
    exit(1)
}
