@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing
import FrameRelayHost
import FrameRelayTools
import FrameRelayTestSupport
import Testing

/// Per-frame stage timing, glass-to-glass at the receiver, and the load test.
@Suite(.serialized) struct TimingTests {
    @Test func traceRecordsEveryStageOfEveryFrameInOrder() throws {
        let group = uniqueGroup("trace")
        let dir = Paths.temporaryDirectory()
        let trace = dir.appendingPathComponent("trace.jsonl").path
        let report = dir.appendingPathComponent("report.json").path
        let h = host([group], ["--rtp", "127.0.0.1:\(freePortPair())", "--trace", trace, "--report", report, "--exit-when-finished", "--quiet"])
        let p = producer(group, ["--size", "320x240", "--fps", "30", "--frames", "60", "--quiet"])
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        let share = try #require(try readShareStats(report).first)
        let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == Int(share.taken))
        struct Line: Decodable { var share: String; var frame: UInt64; var captured, published, taken, converted, encoded, sent: UInt64 }
        var last: UInt64?
        for line in lines {
            let t = try JSONDecoder().decode(Line.self, from: Data(line.utf8))
            #expect(t.share == group.name)
            #expect(t.captured > 0 && t.captured <= t.published && t.published <= t.taken && t.taken <= t.converted
                    && t.converted <= t.encoded && t.encoded <= t.sent, "\(line)")
            if let last { #expect(t.frame > last) }
            last = t.frame
        }
        // The summary has every stage's percentiles over the same frames.
        #expect(share.captureToTaken.count == share.taken && share.encoded?.captureToEncoded.count == share.taken)
        #expect(share.transport?.captureToSent.count == share.taken)
        #expect((share.encoded?.captureToEncoded.p50 ?? 0) >= share.captureToTaken.p50)
    }

    @Test func receiverMeasuresGlassToGlassByTheStampedFrameNumbers() throws {
        let group = uniqueGroup("g2g")
        let port = freePortPair()
        let dir = Paths.temporaryDirectory()
        let trace = dir.appendingPathComponent("trace.jsonl").path
        let received = dir.appendingPathComponent("received.json").path
        let h = host([group], ["--rtp", "127.0.0.1:\(port)", "--trace", trace, "--exit-when-finished", "--quiet"])
        // It stops a second after the stream goes silent, long before its 60 s window.
        let started = MonotonicClock.now()
        let r = Spawned(Paths.executable("frame-relay"), ["receive", "--port", "\(port)", "--duration", "60", "--idle", "1", "--captures", trace, "--report", received])
        #expect(waitUntilUDPPortIsBound(port))
        let p = producer(group, ["--size", "640x360", "--fps", "30", "--frames", "90", "--quiet"])
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        #expect(r.wait() == 0)
        #expect(MonotonicClock.now() - started < 30_000_000_000, "the receiver ran its whole window")
        let result = try JSONDecoder().decode(ReceiveReport.self, from: Data(contentsOf: URL(fileURLWithPath: received)))
        let g2g = try #require(result.glassToGlass)
        #expect(result.matched >= 80 && result.missing <= 5, "matched \(result.matched), missing \(result.missing)")
        #expect(g2g.count == UInt64(result.matched) && g2g.p50 > 0 && g2g.p99 >= g2g.p50)
        #expect(r.stderr.contains("glass-to-glass p50"))
    }

    /// In this process, and dealt to two host processes.
    @Test func loadTestEndsAtOnceWhenAProducerStops() throws {
        // Another producer holds the first share's App Group, so that share's
        // broadcast-sim refuses to start: the 60 s step must end at once, with
        // the producer's own words, well inside this run's 30 s.
        let prefix = uniqueGroup("lt").name
        let holder = try RingProducer(appGroup: try AppGroup(prefix + ".s0"), slotCapacity: try PixelBuffer.capacity(width: 320, height: 240, format: .nv12))
        defer { holder.finish() }
        let result = run(Paths.executable("frame-relay"), ["load-test", "--sessions", "2", "--app-groups", prefix, "--size", "320x240", "--fps", "15", "--duration", "60"], timeout: 30)
        #expect(result.status == 1, "\(result.status): \(result.stderr)")
        let errors = result.stderr.split(separator: "\n").filter { $0.contains("error") }
        #expect(errors.count == 1, "\(result.stderr)")
        #expect(errors.first?.contains("the producer of share 1 (\(prefix).s0) ended during the step") == true, "\(result.stderr)")
        #expect(errors.first?.contains("in use by another producer") == true, "\(result.stderr)")
    }

    @Test(arguments: [1, 2])
    func loadTestOfTwoSharesCompletesWithAReport(hosts: Int) throws {
        let dir = Paths.temporaryDirectory()
        let json = dir.appendingPathComponent("load.json").path
        let html = dir.appendingPathComponent("load.html").path
        let prefix = uniqueGroup("lt").name
        let result = run(Paths.executable("frame-relay"), [
            "load-test", "--sessions", "2", "--app-groups", prefix, "--hosts", "\(hosts)", "--size", "320x240", "--fps", "15", "--duration", "3", "--report", json, "--html", html,
        ], timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONDecoder().decode(LoadTestReport.self, from: Data(contentsOf: URL(fileURLWithPath: json)))
        let step = try #require(report.steps.first)
        #expect(report.hosts == hosts && step.sessions == 2 && step.shares.count == 2)
        // Past the default warm-up (half of what this 3 s step leaves after its last start), the objective judges what came after it.
        #expect(report.objective.warmUpSeconds == 1)
        for share in step.shares {
            let steady = try #require(share.steady, "\(share)")
            #expect(steady.framesIn >= 10 && steady.framesIn < share.framesIn && steady.p99Milliseconds > 0, "\(steady)")
        }
        #expect(result.stderr.contains("after the 1.0 s warm-up: drops"), "\(result.stderr)")
        // The second share starts half a second after the first (spread over a second), not with it.
        #expect(step.shares[0].startedAfter == 0 && (0.45...0.9).contains(step.shares[1].startedAfter), "\(step.shares.map(\.startedAfter))")
        for share in step.shares {
            #expect(share.framesIn >= 30 && share.framesOut > 0 && share.fps > 5, "\(share)")
            #expect(share.p99Milliseconds > 0 && share.hostCPUPercent > 0 && share.producerCPUPercent > 0)
            // The distribution covers every encoded frame, and its p99 range holds the reported p99.
            #expect(share.latency.map(\.count).reduce(0, +) >= share.framesOut, "\(share.latency)")
            let p99 = share.p99Milliseconds * 1000  // µs, rounded: within a microsecond of its range
            #expect(share.latency.contains { $0.low - 1 <= p99 && p99 <= $0.high + 1 }, "\(share.latency)")
        }
        #expect(step.timeline.count >= 2 && step.timeline.contains { $0.fps.count == 2 && $0.fps.allSatisfy { $0 > 5 } }, "\(step.timeline)")
        // No false 0 ms: a share with nothing encoded in a second has no p99 point then.
        #expect(step.timeline.allSatisfy { $0.p99Milliseconds.allSatisfy { $0 == nil || $0! > 0 } }, "\(step.timeline)")
        let page = try String(contentsOfFile: html, encoding: .utf8)
        #expect(page.contains(">producers' CPU %</th>"))
        #expect(result.stderr.contains("producers' CPU"), "\(result.stderr)")
        #expect(page.contains("<svg") && page.contains("Largest number of shares that held it: \(report.maxSessionsHeld)"))
        // The histogram chart draws one bar per range of the step's merged distribution.
        let histogram = try #require(page.components(separatedBy: "latency, all shares").dropFirst().first?.components(separatedBy: "</svg>").first)
        #expect(histogram.components(separatedBy: "<rect").count - 1 == step.latency.count)
        #expect(step.shares.map(\.appGroup) == ["\(prefix).s0", "\(prefix).s1"])
        for share in step.shares {
            // The producer's own rate, from its first frame: its 15 frames/s.
            let rate = try #require(share.steady?.framesPerSecond)
            #expect(rate > 13.5 && rate < 16.5 && (share.producerFramesPerSecond ?? 0) > 13.5, "\(share.appGroup): \(rate), \(share.producerFramesPerSecond as Any)")
            #expect(!FileManager.default.fileExists(atPath: "/dev/shm" + (try AppGroup(share.appGroup)).sharedMemoryName))
        }
    }

    /// A ramp step that fails is run again before it counts (one stall of a
    /// shared machine should not end the search): an objective no run can
    /// meet (p99 under 0.1 ms) gives 1 + retries runs of one share, all in
    /// the report; with --expect-held, a run in which nothing held exits 1.
    @Test(arguments: [0, 2])
    func aFailedRampStepIsTriedAgain(retries: Int) throws {
        let dir = Paths.temporaryDirectory()
        let json = dir.appendingPathComponent("ramp.json").path
        let prefix = uniqueGroup("lt").name
        let result = run(Paths.executable("frame-relay"), [
            "load-test", "--ramp", "--app-groups", prefix, "--sessions", "2", "--retries", "\(retries)", "--max-p99-ms", "0.1", "--size", "160x120", "--fps", "15", "--duration", "1",
            "--report", json, "--html", dir.appendingPathComponent("ramp.html").path, "--expect-held",
        ], timeout: 60)
        #expect(result.status == 1, "\(result.stderr)")
        let report = try JSONDecoder().decode(LoadTestReport.self, from: Data(contentsOf: URL(fileURLWithPath: json)))
        #expect(report.steps.map(\.sessions) == Array(repeating: 1, count: 1 + retries) && report.steps.allSatisfy { !$0.passed })
        #expect(report.maxSessionsHeld == 0)
        #expect(result.stderr.components(separatedBy: "1 share again (try").count - 1 == retries, "\(result.stderr)")
        // Which share failed, and which limit, on the console and in the report.
        let failure = "share 1 (\(prefix).s0): capture→encoded p99"
        #expect(report.steps.allSatisfy { $0.failures.contains { $0.hasPrefix(failure) && $0.hasSuffix("limit < 0.1 ms") } }, "\(report.steps.map(\.failures))")
        #expect(result.stderr.contains(failure), "\(result.stderr)")
    }

    /// A step is said to hold on the figures it is judged by (after the
    /// warm-up), and a ramp that reached --sessions says the limit is higher.
    @Test func aRampThatReachesItsBoundSaysTheLimitIsHigher() throws {
        let dir = Paths.temporaryDirectory()
        let result = run(Paths.executable("frame-relay"), [
            "load-test", "--ramp", "--sessions", "1", "--max-p99-ms", "5000", "--max-drop-percent", "100", "--warm-up", "1", "--size", "160x120", "--fps", "15",
            "--duration", "3", "--report", dir.appendingPathComponent("ramp.json").path, "--html", dir.appendingPathComponent("ramp.html").path,
        ], timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("1 share held after the 1.0 s warm-up: drops ") && result.stderr.contains("; the whole step, warm-up included: drops "), "\(result.stderr)")
        #expect(result.stderr.contains("largest number of shares that held the objective: 1 (reached --sessions without failing: the limit is higher)"), "\(result.stderr)")
        #expect(result.stderr.contains("load-test: 1 share for 3 s…"), "\(result.stderr)")
        // In the HTML the warm-up is drawn apart, and the p99 judged is the one after it.
        let report = try JSONDecoder().decode(LoadTestReport.self, from: Data(contentsOf: dir.appendingPathComponent("ramp.json")))
        let steady = try #require(report.steps.first?.steadyP99Milliseconds)
        let page = try String(contentsOf: dir.appendingPathComponent("ramp.html"), encoding: .utf8)
        #expect(page.contains("<rect class=\"warm-up\"") && page.contains("warm-up: not judged"), "no warm-up band in the p99 chart")
        #expect(page.contains("<td class=\"judged\">\(fixed(steady, 1))</td>") && page.contains("whole step, warm-up included"), "the judged p99 is not the one after the warm-up")
    }

    /// A share whose host encoded nothing (it refused the share, or died)
    /// has 0 % dropped and no p99: the step does not hold for it.
    @Test func aShareWhoseHostEncodedNothingDoesNotHold() {
        let report = LoadTestReport(size: "320x240", framesPerSecond: 15, format: "nv12", cores: 2, objective: .init(maxDropPercent: 1, maxP99Milliseconds: 30))
        func share(_ out: UInt64) -> LoadTestReport.Share {
            LoadTestReport.Share(appGroup: "s0", framesIn: 1, framesOut: out, dropPercent: 0, fps: 0, p50Milliseconds: 0, p99Milliseconds: 0, hostCPUPercent: 0,
                                 producerCPUPercent: 0, latency: [])
        }
        #expect(report.failures([share(0)]) == ["share 1 (s0): its host encoded no frame (1 taken)"])
        #expect(!report.holds([share(0)]) && report.holds([share(1)]))
    }

    /// The ramp and the per-share charts plot the p99 the objective judges
    /// (after the warm-up), and the whole step's apart in grey, marked not judged.
    @Test func theChartsPlotTheJudgedP99AndTheWholeStepsApart() {
        var report = LoadTestReport(size: "320x240", framesPerSecond: 15, format: "nv12", cores: 2, objective: .init(maxDropPercent: 1, maxP99Milliseconds: 30, warmUpSeconds: 3))
        report.steps = [1, 2].map { count in
            let shares = (0..<count).map { index in LoadTestReport.Share(
                appGroup: "s\(index)", framesIn: 150, framesOut: 150, dropPercent: 0, fps: 15, p50Milliseconds: 6, p99Milliseconds: 41.5 + Double(count), hostCPUPercent: 5,
                producerCPUPercent: 1, latency: [LatencyBin(low: 4000, high: 50000, count: 150)],
                steady: .init(framesIn: 100, dropPercent: 0, p50Milliseconds: 5.5, p99Milliseconds: 10.5 + Double(count), seconds: 6.5)) }
            return LoadTestReport.Step(sessions: count, seconds: 10, passed: true, shares: shares, framesIn: 150, framesOut: 150, dropPercent: 0, fps: 15,
                                       p50Milliseconds: 6, p99Milliseconds: 41.5 + Double(count), hostCPUPercent: 5, timeline: [])
        }
        let page = LoadTestHTML.render(report)
        let ramp = page.components(separatedBy: "<h2>Ramp</h2>").dropFirst().first?.components(separatedBy: "</svg>").first ?? ""
        for count in [1, 2] {
            #expect(ramp.contains("<title>shares \(count): p99 judged (after the warm-up) \(fixed(10.5 + Double(count), 1)) ms</title>"), "\(ramp)")
            #expect(ramp.contains("<title>shares \(count): p99 of the whole step, warm-up included (not judged) \(fixed(41.5 + Double(count), 1)) ms</title>"), "\(ramp)")
        }
        #expect(page.contains("<title>share 2: p99 judged 12.5 ms</title>") && page.contains("<title>share 2: p50 judged 5.5 ms</title>"), "\(page)")
        #expect(page.contains("<title>share 2: p99 of the whole step (not judged) 43.5 ms</title>"), "\(page)")
    }

    /// Each viewer group's frames/s, loss after repair and layer, second by
    /// second, are drawn one line a group with the values the report holds
    /// (the loss only where some group lost a packet).
    @Test func eachViewerGroupsFramesAndLayerAreDrawnOverTime() {
        var report = LoadTestReport(size: "1280x720", framesPerSecond: 30, format: "nv12", cores: 2, objective: .init(maxDropPercent: 1, maxP99Milliseconds: 30))
        var free = LoadTestReport.ViewerGroup(link: "perfect", viewers: 2, watching: 2, lossPercent: 0, p50Ms: 40, p99Ms: 60, firstFrameMaxMs: 300)
        free.framesEachSecond = [20, 30, 29.5]
        free.layerEachSecond = [0, 1, 1.5]
        var narrow = LoadTestReport.ViewerGroup(link: "rate=1mbit", viewers: 2, watching: 2, lossPercent: 0, p50Ms: 80, p99Ms: 200, firstFrameMaxMs: 900)
        narrow.framesEachSecond = [7, 12.5]
        narrow.layerEachSecond = [0, 0.5]
        narrow.lostEachSecond = [0, 3.5, 2]  // past its last decodable frame
        free.lostEachSecond = [0, 0, 0]
        let viewers = LoadTestReport.Viewers(kind: "native", count: 4, framesDecoded: [79, 79, 19, 19], lostPercent: 0, firstPictureMilliseconds: 900,
                                             glassToGlassP50Milliseconds: 50, glassToGlassP99Milliseconds: 200, groups: [free, narrow])
        let share = LoadTestReport.Share(appGroup: "s", framesIn: 90, framesOut: 90, dropPercent: 0, fps: 30, p50Milliseconds: 5, p99Milliseconds: 9, hostCPUPercent: 50,
                                         producerCPUPercent: 5, latency: [], viewers: viewers)
        report.steps = [LoadTestReport.Step(sessions: 1, seconds: 3, passed: true, shares: [share], framesIn: 90, framesOut: 90, dropPercent: 0, fps: 30,
                                            p50Milliseconds: 5, p99Milliseconds: 9, hostCPUPercent: 50, timeline: [])]
        let page = LoadTestHTML.render(report)
        let frames = page.components(separatedBy: "decodable frames a second per viewer, over time").dropFirst().first?.components(separatedBy: "</svg>").first ?? ""
        let layers = page.components(separatedBy: "the layer watched").dropFirst().first?.components(separatedBy: "</svg>").first ?? ""
        for (second, value) in [(1, 20.0), (2, 30), (3, 29.5)] { #expect(frames.contains("<title>s \(second): share 1 perfect \(fixed(value, 1)) frames/s</title>"), "\(frames)") }
        for (second, value) in [(1, 7.0), (2, 12.5)] { #expect(frames.contains("<title>s \(second): share 1 rate=1mbit \(fixed(value, 1)) frames/s</title>"), "\(frames)") }
        #expect(!frames.contains("s 3: share 1 rate=1mbit"), "a group's line ends where its seconds do")
        for (second, value) in [(1, 0.0), (2, 1), (3, 1.5)] { #expect(layers.contains("<title>s \(second): share 1 perfect \(fixed(value, 1)) layer</title>"), "\(layers)") }
        #expect(layers.contains("<title>s 2: share 1 rate=1mbit 0.5 layer</title>"), "\(layers)")
        let lost = page.components(separatedBy: "packets lost after repair a second per viewer").dropFirst().first?.components(separatedBy: "</svg>").first ?? ""
        #expect(lost.contains("<title>s 2: share 1 rate=1mbit 3.5 packets/s</title>") && lost.contains("<title>s 3: share 1 rate=1mbit 2.0 packets/s</title>") && lost.contains("<title>s 3: share 1 perfect 0.0 packets/s</title>"), "\(lost)")
        narrow.lostEachSecond = [0, 0]
        report.steps[0].shares[0].viewers?.groups = [free, narrow]
        #expect(!LoadTestHTML.render(report).contains("packets lost after repair"), "no loss, no chart")

        // A group shown no picture is not a group that never froze.
        free.framesPerSecond = 29.5
        free.freezesPerMinute = 2.1
        narrow.framesPerSecond = 0
        report.steps[0].shares[0].viewers?.groups = [free, narrow]
        report.steps[0].viewersPerShare = 4
        let table = LoadTestHTML.render(report)
        #expect(free.freezesText == "2.1" && narrow.freezesText == "no picture shown")
        #expect(table.contains("<td>2.1</td>") && table.contains("<td>no picture shown</td>") && !table.contains("<td>0.0</td><td>900</td>"), "\(table)")
    }

    /// Run twice where its reports are, a load test says it replaced them.
    @Test func aLoadTestSaysWhenItReplacedItsReports() throws {
        let dir = Paths.temporaryDirectory().path
        var lines: [String] = []
        for _ in 0..<2 {
            let load = Spawned(Paths.executable("frame-relay"), ["load-test", "--sessions", "1", "--app-groups", uniqueGroup("lt").name, "--size", "160x120", "--fps", "15", "--duration", "1"],
                               directory: dir)
            #expect(load.wait(timeout: 30) == 0, "\(load.stderr)")
            lines.append(load.stderr.split(separator: "\n").last.map(String.init) ?? "")
        }
        #expect(lines[0].hasSuffix("; report load-test.json, load-test.html"), "\(lines[0])")
        #expect(lines[1].hasSuffix("; report load-test.json (replacing the one there), load-test.html (replacing the one there)"), "\(lines[1])")
    }

    /// Twelve shares get twelve colours in the charts and the legend.
    @Test func moreThanTenSharesKeepTheirOwnColours() {
        var report = LoadTestReport(size: "320x240", framesPerSecond: 15, format: "nv12", cores: 2, objective: .init(maxDropPercent: 1, maxP99Milliseconds: 100))
        let shares = (0..<12).map { LoadTestReport.Share(
            appGroup: "s\($0)", framesIn: 30, framesOut: 30, dropPercent: 0, fps: 15, p50Milliseconds: 5, p99Milliseconds: 9, hostCPUPercent: 5, producerCPUPercent: 2,
            latency: [LatencyBin(low: 4000, high: 8000, count: 30)]) }
        let timeline = (1...3).map { LoadTestReport.Sample(seconds: Double($0), fps: Array(repeating: 15, count: 12), p99Milliseconds: Array(repeating: 9, count: 12)) }
        report.steps = [LoadTestReport.Step(
            sessions: 12, seconds: 3, passed: true, shares: shares, framesIn: 360, framesOut: 360, dropPercent: 0, fps: 180, p50Milliseconds: 5,
            p99Milliseconds: 9, hostCPUPercent: 60, timeline: timeline)]
        let page = LoadTestHTML.render(report)
        let chart = page.components(separatedBy: "Frames per second over time").dropFirst().first?.components(separatedBy: "</svg>").first ?? ""
        let strokes = chart.components(separatedBy: "<polyline fill=\"none\" stroke=\"").dropFirst().map { $0.prefix { $0 != "\"" } }
        #expect(strokes.count == 12 && Set(strokes).count == 12, "\(strokes)")
        #expect(!page.contains("colours repeat"))
        #expect(page.contains("<td>24</td>"), "the producers' CPU (12 × 2 %) in the table")
    }
}
