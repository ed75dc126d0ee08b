@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayRing
import FrameRelayHTTP
import FrameRelayHost
import FrameRelayTools
import FrameRelayJanus

/// Hosts the shares: here (one host) or dealt round robin to `hosts` child
/// hosts, whose statistics are read from their `/stats.json` while they run
/// and from their `--report` at the end. Calls `onReady` once every host is
/// up (then the producers start and `duration` seconds count), `onTick`
/// with every share's statistics, in `groups` order, at least once a
/// second (true ends the step at once), and `onInterrupt` once when Ctrl-C
/// (or SIGTERM) ends the step, before any host ends (viewers stopped then
/// report what they saw while there was something to watch); returns the final ones.
func hostShares(
    _ groups: [AppGroup], size: (width: Int, height: Int), encoding: SharePipeline.Options, hosts: Int, duration: Double,
    janus: [String] = [], traces: [URL] = [], work: URL, onReady: () throws -> Void, onTick: ([ShareStats]) -> Bool, onInterrupt: () -> Void = {}
) throws -> (finals: [ShareStats], traces: [URL]) {
    var interrupted = false
    /// Whether Ctrl-C came; the first time it is seen, `onInterrupt`.
    func stopping() -> Bool {
        guard Signals.stops.load(ordering: .relaxed) > 0 else { return false }
        if !interrupted {
            interrupted = true
            onInterrupt()
        }
        return true
    }
    // Each host's per-frame trace, where there are traces (one per host).
    func trace(_ host: Int) -> URL? { host < traces.count ? traces[host] : nil }
    if hosts == 1 {
        var finals: [ShareStats] = []
        var settings = Host.Configuration(shares: groups.map { Host.Configuration.Share(group: $0, encoding: encoding) })
        settings.duration = duration
        settings.quiet = true
        settings.janus = janus.compactMap { HTTPClient.URL($0).map { JanusStreaming(url: $0) } }
        settings.tracePath = trace(0)?.path
        let ended = Locked(false)
        // The host calls onTick before it asks whether to stop: the viewers stop first.
        _ = try Host(settings, log: log).run(shouldStop: { Signals.stops.load(ordering: .relaxed) > 0 || ended.withLock { $0 } }, onReady: onReady, onTick: { snapshots in
            _ = stopping()
            finals = snapshots
            if onTick(snapshots) { ended.withLock { $0 = true } }
        })
        return (finals, [trace(0)].compactMap { $0 })
    }
    let relay = try siblingExecutable("frame-relay")
    let cores = Processor.onlineCount
    // The machine's cores are shared by every share, whichever host it is in.
    let threads = encoding.settings.threads ?? VP8Settings.threadCount(width: size.width, height: size.height, cores: cores, concurrentEncoders: groups.count)
    let shares = (0..<hosts).map { host in Array(stride(from: host, to: groups.count, by: hosts)) }
    var children: [(process: Process, port: Int, report: URL, log: URL)] = []
    // However the step ends: SIGTERM, and SIGKILL 3 s later for a host that is stopped or does not end.
    defer { Process.end(children.map(\.process)) }
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
        if !janus.isEmpty, let layers = encoding.simulcast.layers { arguments += ["--layers", "\(layers)"] }
        if let trace = trace(host) { arguments += ["--trace", trace.path] }
        process.arguments = arguments
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        children.append((process, port, report, log))
    }
    /// A host that did not do its part, in true words: `what` it did, or how
    /// it ended (a signal; an exit status, with its own last line).
    func failure(_ host: Int, _ what: String? = nil) -> UsageError {
        let process = children[host].process
        let name = "load-test host \(host + 1) of \(hosts) (pid \(process.processIdentifier))"
        if let what { return UsageError("\(name) \(what)") }
        let words = process.terminationReason == .exit && process.terminationStatus != 0
            ? (try? String(contentsOf: children[host].log, encoding: .utf8))?.split(separator: "\n").last.map { ": " + PeerText.quoted($0) } : nil
        return UsageError("\(name) ended (\(process.endedAs))" + (words ?? ""))
    }
    /// What stops a running host from answering, if it can be seen.
    func stopped(_ host: Int) -> UsageError? {
        Processor.isStopped(children[host].process.processIdentifier) ? failure(host, "was stopped (SIGSTOP): it ends the step") : nil
    }
    // Up when each one answers on its viewer port.
    let deadline = MonotonicClock.now() + 10_000_000_000
    for (host, child) in children.enumerated() {
        while httpGet(port: child.port, path: "/stats.json", timeout: 1) == nil {
            guard child.process.isRunning else { throw failure(host) }
            if let stopped = stopped(host) { throw stopped }
            guard MonotonicClock.now() < deadline else { throw failure(host, "did not answer on its viewer port within 10 s") }
            guard Signals.stops.load(ordering: .relaxed) == 0 else { throw UsageError("load-test: stopped before every host was up") }
            MonotonicClock.sleep(nanoseconds: 20_000_000)
        }
    }
    try onReady()
    let end = MonotonicClock.now() + UInt64(duration * 1e9)
    var latest = groups.map { ShareStats(appGroup: $0.name) }
    // A host that ends, is stopped, or does not answer for 5 s ends the step with a line saying which.
    var answered = children.map { _ in MonotonicClock.now() }
    while MonotonicClock.now() < end, !stopping() {
        MonotonicClock.sleep(nanoseconds: min(1_000_000_000, end &- MonotonicClock.now()))
        for (host, child) in children.enumerated() {
            guard child.process.isRunning else { throw failure(host) }
            if let stopped = stopped(host) { throw stopped }
            guard let body = httpGet(port: child.port, path: "/stats.json", timeout: 1), let stats = try? JSONDecoder().decode([ShareStats].self, from: body) else {
                if MonotonicClock.now() &- answered[host] > 5_000_000_000 { throw failure(host, "did not answer for 5 s") }
                continue
            }
            answered[host] = MonotonicClock.now()
            for (member, share) in zip(shares[host], stats) { latest[member] = share }
        }
        if onTick(latest) { break }
    }
    // Stopped as by Ctrl-C, each host writes its report (SIGKILL 3 s later for one that does not end).
    let endings = Process.end(children.map(\.process))
    for (host, child) in children.enumerated() {
        if case .killed(let stopped) = endings[host] {
            throw failure(host, "did not end within 3 s of SIGTERM to write its report" + (stopped ? " (it was stopped: SIGSTOP)" : "") + ", and was killed")
        }
        guard child.process.terminationReason == .exit, child.process.terminationStatus == 0, let data = FileManager.default.contents(atPath: child.report.path),
            let stats = try? JSONDecoder().decode([ShareStats].self, from: data)
        else { throw failure(host) }
        for (member, share) in zip(shares[host], stats) { latest[member] = share }
    }
    return (latest, (0..<hosts).compactMap(trace))
}

/// The body of `GET path` from a host's viewer on the loopback, or nil.
func httpGet(port: Int, path: String, timeout: Double = 2) -> Data? {
    guard let response = try? HTTPClient.request("GET", HTTPClient.URL("http://127.0.0.1:\(port)\(path)")!, timeout: timeout), response.status == 200 else { return nil }
    return Data(response.body)
}
