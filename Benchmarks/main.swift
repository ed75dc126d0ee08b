@preconcurrency import Glibc
import Foundation
import FrameRelay

/// frame-relay-bench: named benchmark cases with warm-up and percentiles,
/// JSON output in the `[{"name", "unit", "value"}]` shape, and a compare
/// gate that fails on regression.
func main() throws -> Int32 {
    var parser = OptionParser(command: "frame-relay-bench", summary: "FrameRelay benchmarks (JSON for benchmark CI)")
    parser.flag("quick", help: "Fewer iterations: a smoke test for CI.")
    parser.option("filter", "TEXT", help: "Run only cases whose name contains TEXT.")
    parser.option("output", "PATH", default: "benchmarks.json", help: "Where to write the JSON results.")
    parser.option("compare", "BASELINE", help: "A previous results JSON to compare against.")
    parser.option("threshold", "PCT", default: "10", help: "Allowed growth in percent before a case counts as a regression.")
    parser.option("clip", "PATH", help: "The shared desktop clip (Y4M, after xz -dk) for the encode cases.")
    parser.flag("side-by-side", help: "Also run plain libvpx, ffmpeg, GStreamer and FrameRelay on the same frames into one receiver.")
    parser.option("side-fps", "N", default: "30", help: "Feed rate for --side-by-side (0: as fast as they go).")
    parser.option("side-frames", "N", default: "300", help: "Frames per pipeline for --side-by-side.")
    parser.option("side-rounds", "N", default: "3", help: "Rounds of the pipelines for --side-by-side; figures are medians over rounds.")
    parser.option("side-pipelines", "LIST", default: "plain,ffmpeg,gstreamer,ours", help: "Which pipelines --side-by-side runs, comma-separated (fewer: more rounds in the time).")
    parser.option("side-threads", "N", help: "Encoder threads for all the pipelines (default: FrameRelay's policy for 720p on this machine).")
    parser.option("side-keep", "DIR", help: "Keep each pipeline's capture and decode logs (JSON lines) and receiver report in DIR.")
    try parser.parse(Array(CommandLine.arguments.dropFirst()))
    let threshold = try parser.double("threshold", in: 0...10_000)!
    var baseline: [BenchmarkResult]?
    if let path = parser.string("compare") {
        guard let data = FileManager.default.contents(atPath: path) else { throw UsageError("cannot read baseline \(path)") }
        do { baseline = try JSONDecoder().decode([BenchmarkResult].self, from: data) } catch {
            throw UsageError("baseline \(path) is not benchmark JSON ([{\"name\",\"unit\",\"value\"}])")
        }
    }
    try OutputFile.check(parser.string("output")!, option: "output")
    let runner = BenchmarkRunner(quick: parser.flag("quick"), filter: parser.string("filter"))
    try runner.run("ring.write") { try producerWriteCost(quick: runner.quick) }
    try runner.run("ring.handoff") { try handoffBetweenProcesses(quick: runner.quick) }
    try runner.run("producer.peak_rss") { try producerPeakRSS(quick: runner.quick) }
    try runner.run("encode") { try encodeBenchmarks(quick: runner.quick, clip: parser.string("clip")) }
    try runner.run("stream") { try streamingBenchmarks(quick: runner.quick, clip: parser.string("clip")) }
    try runner.run("content") { try contentBenchmarks(quick: runner.quick, clip: parser.string("clip")) }
    if parser.flag("side-by-side") {
        guard let clip = parser.string("clip") else { throw UsageError("--side-by-side needs --clip PATH") }
        let fps = try parser.double("side-fps", in: 0...240)!
        let frames = try parser.int("side-frames", in: 10...100_000)!
        let pipelines = try parser.string("side-pipelines")!.split(separator: ",").map { name in
            guard let pipeline = SideBySide.Pipeline(rawValue: String(name)) else {
                throw UsageError("unknown pipeline '\(name)' in --side-pipelines: choose from plain, ffmpeg, gstreamer, ours")
            }
            return pipeline
        }
        guard !pipelines.isEmpty, Set(pipelines).count == pipelines.count else { throw UsageError("--side-pipelines needs one or more different pipelines") }
        for input in [PixelFormat.i420, .nv12, .bgra] {
            try runner.run("side_by_side.\(input)") { try sideBySide(clip: clip, input: input, fps: fps, count: frames, rounds: try parser.int("side-rounds", in: 1...100)!, pipelines: pipelines, threads: try parser.int("side-threads", in: 1...16), keep: parser.string("side-keep")) }
        }
    }

    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try OutputFile.write(String(decoding: try encoder.encode(runner.results), as: UTF8.self), to: parser.string("output")!)
    print(runner.table)
    if let baseline {
        let found = regressions(runner.results, baseline: baseline, thresholdPercent: threshold)
        if !found.isEmpty {
            for line in found { FileHandle.standardError.write(Data("regression: \(line)\n".utf8)) }
            return 1
        }
        print("no regression beyond \(threshold)% against \(parser.string("compare")!)")
    }
    return 0
}

Signals.resetInherited()
do {
    exit(try main())
} catch let help as HelpRequested {
    print(help.text)
    exit(0)
} catch {
    FileHandle.standardError.write(Data("frame-relay-bench: error: \(error)\n".utf8))
    exit(1)
}
