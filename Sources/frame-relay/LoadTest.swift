@preconcurrency import Glibc
import Foundation
import FrameRelay

/// `frame-relay load-test`: N broadcast-sim producers into one host, each
/// share encoded; reports per share and in total, and in ramp mode finds the
/// largest N that holds the objective.
func runLoadTest(_ arguments: [String]) throws -> Int32 {
    var parser = OptionParser(command: "frame-relay load-test", summary: "many shares at once: frames, drops, fps, latency and CPU per share")
    parser.option("sessions", "N", default: "4", help: "Concurrent shares (producer processes), or the ramp's upper bound with --ramp.")
    parser.option("hosts", "K", default: "1", help: "Host processes the shares are dealt to (1: this process hosts them all).")
    parser.flag("ramp", help: "Find the largest number of shares that holds the objective (1, 2, 4, … then bisect).")
    parser.option("retries", "N", default: "1", help: "With --ramp, run a step that failed up to N more times before it counts as failed (one stall of the machine should not end the search).")
    parser.option("size", "WxH", default: "1280x720", help: "Picture size of every producer.")
    parser.option("fps", "N", default: "15", help: "Frames per second of every producer.")
    parser.option("format", "FMT", default: "nv12", help: "Pixel format the producers send.")
    parser.option("content", "MODEL", default: "pattern", help: "What the screens show: pattern (a window moving every frame: the worst case) or a content model, "
        + ContentScreen.Content.allCases.map(\.rawValue).joined(separator: ", ") + " (mixed: a scripted minute of real use).")
    parser.flag("encode-every-frame", help: "Encode every frame whole (default: only what changed).")
    parser.option("bitrate", "KBPS", default: "1500", help: "VP8 bitrate per share.")
    parser.option("duration", "SECONDS", default: "10", help: "Length of each step.")
    parser.option("max-drop-percent", "PCT", default: "1", help: "Objective: drops below this on every share.")
    parser.option("max-p99-ms", "MS", default: "100", help: "Objective: capture→encoded p99 below this on every share.")
    parser.option("report", "PATH", default: "load-test.json", help: "JSON report.")
    parser.option("html", "PATH", default: "load-test.html", help: "HTML report with SVG charts.")
    parser.option("janus", "URL", repeatable: true, help: "Stream every share into this Janus (shares dealt across several) and watch it over WebRTC.")
    parser.option("viewers", "M", default: "1", help: "With --janus, WebRTC viewers (scripts/webrtc-viewer) on each share.")
    parser.option("viewer", "PATH", help: "The WebRTC viewer script (default: scripts/webrtc-viewer of this checkout).")
    try parser.parse(arguments)
    try checkOutputs(parser, ["report", "html"])
    let simulator = try siblingExecutable("broadcast-sim")
    let sessions = try parser.int("sessions", in: 1...256)!
    let hosts = try parser.int("hosts", in: 1...64)!
    let size = try parseSize(parser.string("size")!, option: "size")
    let fps = try parser.int("fps", in: 1...240)!
    guard let format = PixelFormat(name: parser.string("format")!) else { throw UsageError("invalid --format \"\(parser.string("format")!)\"") }
    let bitrate = try parser.int("bitrate", in: 1...100_000)!
    let content = parser.string("content")!
    guard content == "pattern" || ContentScreen.Content(rawValue: content) != nil else {
        throw UsageError("invalid --content \"\(content)\": pattern or one of " + ContentScreen.Content.allCases.map(\.rawValue).joined(separator: ", "))
    }
    let encodeEveryFrame = parser.flag("encode-every-frame")
    let duration = try parser.double("duration", in: 1...3600)!
    let retries = try parser.int("retries", in: 0...10)!
    if parser.given("retries"), !parser.flag("ramp") { throw UsageError("--retries needs --ramp") }
    let janus = parser.strings("janus")
    for url in janus where HTTPClient.URL(url) == nil { throw UsageError("invalid --janus \"\(url)\": expected Janus's HTTP API, such as http://127.0.0.1:8088/janus") }
    if janus.isEmpty, let option = ["viewers", "viewer"].first(where: parser.given) { throw UsageError("--\(option) needs --janus URL") }
    let viewers = try parser.int("viewers", in: 1...64)!
    let viewerScript = janus.isEmpty ? nil : try LoadTestViewers.findScript(parser.string("viewer"))
    let objective = LoadTestReport.Objective(
        maxDropPercent: try parser.double("max-drop-percent", in: 0...100)!, maxP99Milliseconds: try parser.double("max-p99-ms", in: 0.1...100_000)!)
    let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    var report = LoadTestReport(size: "\(size.width)x\(size.height)", framesPerSecond: fps, format: "\(format)", cores: cores, hosts: hosts, objective: objective)

    func step(_ count: Int) throws -> LoadTestReport.Step {
        log("load-test: \(count) shares for \(fixed(duration, 0)) s…")
        let watch = viewerScript.map { (janus: janus, viewers: viewers, script: $0) }
        let result = try runStep(count, simulator: simulator, hosts: min(hosts, count), size: size, fps: fps, format: format, content: content, bitrate: bitrate,
                                 encodeEveryFrame: encodeEveryFrame, duration: duration, report: report, watch: watch)
        log("load-test: \(count) shares \(result.passed ? "held" : "did not hold"): drops \(fixed(result.dropPercent, 2)) %, p99 \(fixed(result.p99Milliseconds, 1)) ms, \(fixed(result.fps, 1)) fps in total")
        return result
    }

    /// Whether `count` shares hold: a step that fails is run again, up to
    /// `retries` times, and holds if any run held (every run is in the report).
    func holds(_ count: Int) throws -> Bool {
        for attempt in 0...retries {
            if attempt > 0 { log("load-test: \(count) shares again (try \(attempt + 1) of \(retries + 1))…") }
            let result = try step(count)
            report.steps.append(result)
            if result.passed || stopSignals.load(ordering: .relaxed) > 0 { return result.passed }
        }
        return false
    }

    if parser.flag("ramp") {
        var passed = 0, failed: Int?
        var n = 1
        while n <= sessions {
            let held = try holds(n)
            if stopSignals.load(ordering: .relaxed) > 0 { break }
            if held { passed = n } else { failed = n; break }
            n = n == sessions ? sessions + 1 : min(n * 2, sessions)
        }
        while let fail = failed, fail - passed > 1, stopSignals.load(ordering: .relaxed) == 0 {
            let middle = (passed + fail) / 2
            if try holds(middle) { passed = middle } else { failed = middle }
        }
        report.maxSessionsHeld = passed
    } else {
        let result = try step(sessions)
        report.steps.append(result)
        report.maxSessionsHeld = result.passed ? sessions : 0
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try OutputFile.write(String(decoding: try encoder.encode(report), as: UTF8.self), to: parser.string("report")!)
    try OutputFile.write(LoadTestHTML.render(report), to: parser.string("html")!)
    log("load-test: largest number of shares that held the objective: \(report.maxSessionsHeld); report \(parser.string("report")!), \(parser.string("html")!)")
    return 0
}

/// CPU seconds (user + system) a process has used, from /proc.
func processCPUSeconds(_ pid: Int32) -> Double {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = text.lastIndex(of: ")")
    else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

func runStep(
    _ count: Int, simulator: URL, hosts: Int, size: (width: Int, height: Int), fps: Int, format: PixelFormat, content: String = "pattern", bitrate: Int,
    encodeEveryFrame: Bool = false, duration: Double, report: LoadTestReport,
    watch: (janus: [String], viewers: Int, script: String)? = nil
) throws -> LoadTestReport.Step {
    let work = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("frame-relay-step-\(getpid())-\(count)-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: work) }
    let viewers = watch.map { LoadTestViewers(count: $0.viewers, script: $0.script, work: work) }
    defer { viewers?.terminateAll() }  // before the folder they write into goes
    let groups = try (0..<count).map { try AppGroup("group.com.example.loadtest.s\($0)") }
    var encoding = SharePipeline.Options()
    encoding.settings.bitrateKbps = bitrate
    encoding.settings.frameRate = fps
    encoding.settings.concurrentEncoders = count
    encoding.encodeEveryFrame = encodeEveryFrame
    // The producers start once the hosts are up; the step's time counts from then.
    var producers: [Process] = []
    var start = MonotonicClock.now()
    func startProducers() throws {
        producers = try groups.map { group in
            let process = Process()
            process.executableURL = simulator
            process.arguments = [
                "--app-group", group.name, "--size", "\(size.width)x\(size.height)", "--fps", "\(fps)", "--format", "\(format)", "--exit-with-parent", "--quiet",
            ] + (content == "pattern" ? [] : ["--content", content])
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        start = MonotonicClock.now()
    }
    defer {
        for process in producers where process.isRunning { kill(process.processIdentifier, SIGTERM) }
        for process in producers { process.waitUntilExit() }
    }
    var timeline: [LoadTestReport.Sample] = []
    var finals: [ShareStats] = []
    var nextSample = 1.0
    var producerCPU: [Double] = Array(repeating: 0, count: count)
    var viewerError: Error?
    let traces: [URL]
    (finals, traces) = try hostShares(groups, size: size, encoding: encoding, hosts: hosts, duration: duration, janus: watch?.janus ?? [], work: work, onReady: startProducers, onTick: { snapshots in
        let elapsed = Double(MonotonicClock.now() - start) / 1e9
        // Viewers join once the producers run and every mountpoint is open, and watch to the step's end.
        if let viewers, elapsed >= 1, viewerError == nil {
            do { try viewers.startIfReady(snapshots, seconds: duration - elapsed - 0.5) } catch { viewerError = error }
        }
        if elapsed >= nextSample {
            nextSample += 1
            timeline.append(LoadTestReport.Sample(
                seconds: elapsed, fps: snapshots.map(\.fps), p99Milliseconds: snapshots.map { ($0.recentCaptureToEncoded?.p99 ?? 0) / 1000 }))
            producerCPU = producers.map { processCPUSeconds($0.processIdentifier) }
        }
    })
    let seconds = Double(MonotonicClock.now() - start) / 1e9
    if let viewerError { throw UsageError("load-test: cannot start the WebRTC viewers: \(viewerError)") }
    let watched = viewers?.results(names: groups.map(\.name), traces: traces) ?? groups.map { _ in nil }
    let shares = zip(zip(finals, producerCPU), watched).map { pair, viewed in
        let (share, cpu) = pair
        let written = share.totalWritten
        let dropped = share.totalDropped
        return LoadTestReport.Share(
            appGroup: share.appGroup, framesIn: written, framesOut: share.encoded?.frames ?? 0, framesSkipped: share.encoded?.skipped ?? 0,
            dropPercent: written == 0 ? 100 : Double(dropped) / Double(written) * 100,
            fps: Double((share.encoded?.frames ?? 0) + (share.encoded?.skipped ?? 0)) / seconds,
            p50Milliseconds: (share.encoded?.captureToEncoded.p50 ?? 0) / 1000, p99Milliseconds: (share.encoded?.captureToEncoded.p99 ?? 0) / 1000,
            hostCPUPercent: share.cpuSeconds / seconds * 100, producerCPUPercent: cpu / seconds * 100, latency: share.encoded?.captureToEncodedBins ?? [],
            viewers: viewed)
    }
    let framesIn = shares.map(\.framesIn).reduce(0, +), framesOut = shares.map(\.framesOut).reduce(0, +)
    let totalWritten = Double(framesIn)
    let dropped = finals.map { Double($0.totalDropped) }.reduce(0, +)
    return LoadTestReport.Step(
        sessions: count, seconds: seconds, passed: report.holds(shares), shares: shares, framesIn: framesIn, framesOut: framesOut,
        dropPercent: totalWritten == 0 ? 100 : dropped / totalWritten * 100, fps: shares.map(\.fps).reduce(0, +),
        p50Milliseconds: shares.map(\.p50Milliseconds).max() ?? 0, p99Milliseconds: shares.map(\.p99Milliseconds).max() ?? 0,
        hostCPUPercent: shares.map(\.hostCPUPercent).reduce(0, +), timeline: timeline)
}

/// Hosts the shares: here (one host) or dealt round robin to `hosts` child
/// hosts, whose statistics are read from their `/stats.json` while they run
/// and from their `--report` at the end. Calls `onReady` once every host is
/// up (then the producers start and `duration` seconds count), `onTick`
/// with every share's statistics, in `groups` order, at least once a
/// second; returns the final ones.
func hostShares(
    _ groups: [AppGroup], size: (width: Int, height: Int), encoding: SharePipeline.Options, hosts: Int, duration: Double,
    janus: [String] = [], work: URL, onReady: () throws -> Void, onTick: ([ShareStats]) -> Void
) throws -> (finals: [ShareStats], traces: [URL]) {
    // With Janus, each host traces every frame, for glass to glass at the viewers.
    func trace(_ host: Int) -> URL? { janus.isEmpty ? nil : work.appendingPathComponent("trace-\(host).jsonl") }
    if hosts == 1 {
        var finals: [ShareStats] = []
        var settings = HostSettings(
            groups: groups, options: ShareReceiver.Options(), encoding: Array(repeating: encoding, count: groups.count), frames: nil,
            duration: duration, exitWhenFinished: false, statsPath: nil, quiet: true)
        settings.janus = janus.compactMap { HTTPClient.URL($0).map { JanusStreaming(url: $0) } }
        settings.tracePath = trace(0)?.path
        _ = try runHost(settings, onReady: onReady, onTick: { snapshots in
            finals = snapshots
            onTick(snapshots)
        })
        return (finals, [trace(0)].compactMap { $0 })
    }
    let relay = try siblingExecutable("frame-relay")
    let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    // The machine's cores are shared by every share, whichever host it is in.
    let threads = encoding.settings.threads ?? VP8Settings.threadCount(width: size.width, height: size.height, cores: cores, concurrentEncoders: groups.count)
    let shares = (0..<hosts).map { host in Array(stride(from: host, to: groups.count, by: hosts)) }
    var children: [(process: Process, port: Int, report: URL, log: URL)] = []
    defer {
        for child in children where child.process.isRunning { kill(child.process.processIdentifier, SIGTERM) }
        for child in children { child.process.waitUntilExit() }
    }
    for (host, members) in shares.enumerated() {
        let port: Int
        do {
            port = try SocketAddress.freeTCPPort()
        } catch {
            throw UsageError("no free loopback port for a load-test host: \(error)")
        }
        let report = work.appendingPathComponent("host-\(host).json"), log = work.appendingPathComponent("host-\(host).log")
        let process = Process()
        process.executableURL = relay
        var arguments: [String] = members.flatMap { ["--app-group", groups[$0].name] }
        arguments += [
            "--bitrate", "\(encoding.settings.bitrateKbps)", "--frame-rate", "\(encoding.settings.frameRate)", "--threads", "\(threads)",
            "--http", "127.0.0.1:\(port)", "--report", report.path, "--exit-with-parent", "--quiet",
        ]
        if encoding.encodeEveryFrame { arguments.append("--encode-every-frame") }
        arguments += janus.flatMap { ["--janus", $0] }
        if let trace = trace(host) { arguments += ["--trace", trace.path] }
        process.arguments = arguments
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        children.append((process, port, report, log))
    }
    /// A host that stopped before its time: its own words.
    func failure(_ host: Int) -> UsageError {
        let words = (try? String(contentsOf: children[host].log, encoding: .utf8))?.split(separator: "\n").last.map(String.init)
        return UsageError("load-test host \(host + 1) of \(hosts) stopped: " + (words ?? "exit status \(children[host].process.terminationStatus)"))
    }
    // Up when each one answers on its viewer port.
    let deadline = MonotonicClock.now() + 10_000_000_000
    for (host, child) in children.enumerated() {
        while httpGet(port: child.port, path: "/stats.json") == nil {
            guard child.process.isRunning, MonotonicClock.now() < deadline else {
                if child.process.isRunning { kill(child.process.processIdentifier, SIGTERM); child.process.waitUntilExit() }
                throw failure(host)
            }
            MonotonicClock.sleep(nanoseconds: 20_000_000)
        }
    }
    try onReady()
    let end = MonotonicClock.now() + UInt64(duration * 1e9)
    var latest = groups.map { ShareStats(appGroup: $0.name) }
    while MonotonicClock.now() < end, stopSignals.load(ordering: .relaxed) == 0 {
        MonotonicClock.sleep(nanoseconds: min(1_000_000_000, end &- MonotonicClock.now()))
        for (host, child) in children.enumerated() {
            guard let body = httpGet(port: child.port, path: "/stats.json"), let stats = try? JSONDecoder().decode([ShareStats].self, from: body) else {
                if !child.process.isRunning, child.process.terminationStatus != 0 { throw failure(host) }
                continue
            }
            for (member, share) in zip(shares[host], stats) { latest[member] = share }
        }
        onTick(latest)
    }
    // Stopped as by Ctrl-C, each host writes its report.
    for child in children { kill(child.process.processIdentifier, SIGTERM) }
    for (host, child) in children.enumerated() {
        child.process.waitUntilExit()
        guard child.process.terminationStatus == 0, let data = FileManager.default.contents(atPath: child.report.path),
            let stats = try? JSONDecoder().decode([ShareStats].self, from: data)
        else { throw failure(host) }
        for (member, share) in zip(shares[host], stats) { latest[member] = share }
    }
    return (latest, (0..<hosts).compactMap(trace))
}

/// The body of `GET path` from a host's viewer on the loopback, or nil.
func httpGet(port: Int, path: String) -> Data? {
    guard let response = try? HTTPClient.request("GET", HTTPClient.URL("http://127.0.0.1:\(port)\(path)")!, timeout: 2), response.status == 200 else { return nil }
    return Data(response.body)
}
