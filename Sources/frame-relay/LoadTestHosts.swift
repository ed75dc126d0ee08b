@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayRing
import FrameRelayHTTP
import FrameRelayHost
import FrameRelayTools

/// Hosts the shares: here (one host) or dealt round robin to `hosts` child
/// hosts, whose statistics are read from their `/stats.json` while they run
/// and from their `--report` at the end. Calls `onReady` once every host is
/// up (then the producers start and `duration` seconds count), `onTick`
/// with every share's statistics, in `groups` order, at least once a
/// second (true ends the step at once); returns the final ones.
func hostShares(
    _ groups: [AppGroup], size: (width: Int, height: Int), encoding: SharePipeline.Options, hosts: Int, duration: Double,
    janus: [String] = [], traces: [URL] = [], work: URL, onReady: () throws -> Void, onTick: ([ShareStats]) -> Bool
) throws -> (finals: [ShareStats], traces: [URL]) {
    // Each host's per-frame trace, where there are traces (one per host).
    func trace(_ host: Int) -> URL? { host < traces.count ? traces[host] : nil }
    if hosts == 1 {
        var finals: [ShareStats] = []
        var settings = Host.Configuration(groups: groups)
        settings.encoding = Array(repeating: encoding, count: groups.count)
        settings.duration = duration
        settings.quiet = true
        settings.janus = janus.compactMap { HTTPClient.URL($0).map { JanusStreaming(url: $0) } }
        settings.tracePath = trace(0)?.path
        let ended = Locked(false)
        _ = try Host(settings, log: log).run(shouldStop: { stopSignals.load(ordering: .relaxed) > 0 || ended.withLock { $0 } }, onReady: onReady, onTick: { snapshots in
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
        let words = (try? String(contentsOf: children[host].log, encoding: .utf8))?.split(separator: "\n").last.map { PeerText.quoted($0) }
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
        if onTick(latest) { break }
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
