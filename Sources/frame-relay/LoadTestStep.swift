@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing
import FrameRelayHost
import FrameRelaySubscriber
import FrameRelayTools

// One step of a load test: its producers, its hosts, and what it measured.


/// Who watches a step through Janus, and how.
struct LoadTestAudience {
    var janus: [String]
    /// Viewers per share.
    var viewers: Int
    var kind: ViewerKind
    /// Native viewers: the link groups they are dealt across, and one in how many decodes.
    var links: [LinkConditions]
    var decodeEvery: Int
    /// aiortc viewers: the script.
    var script: String?
}

/// The processes named `janus` on this machine (a Janus on another machine has none here).
func janusProcesses() -> [Int32] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap(Int32.init).filter { pid in
        (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) == "janus"
    }
}

/// The App Groups of a step's shares: `PREFIX.s0`, `PREFIX.s1`, …
func loadTestGroups(_ prefix: String, count: Int) throws -> [AppGroup] {
    try (0..<count).map { try AppGroup("\(prefix).s\($0)") }
}

func runStep(
    _ count: Int, groups groupPrefix: String, simulator: URL, hosts: Int, size: (width: Int, height: Int), fps: Int, format: PixelFormat, content: String = "pattern",
    bitrate: Int, encodeEveryFrame: Bool = false, layers: Int? = nil, duration: Double, report: LoadTestReport, watch: LoadTestAudience? = nil
) throws -> LoadTestReport.Step {
    let temporary = URL(fileURLWithPath: NSTemporaryDirectory())
    // A load test killed with -9 could not remove its step's folder: the next one does, once that process is gone.
    for name in (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? [] where name.hasPrefix("frame-relay-step-") {
        if let pid = Int32(name.dropFirst("frame-relay-step-".count).prefix { $0 != "-" }), pid != Processor.currentPID, !Processor.isAlive(pid) {
            try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))
        }
    }
    let work = temporary.appendingPathComponent("frame-relay-step-\(Processor.currentPID)-\(count)-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: work) }
    // With Janus, each host traces every frame, for latency at the viewers.
    let hostTraces = watch == nil ? [] : (0..<hosts).map { work.appendingPathComponent("trace-\($0).jsonl") }
    let viewers: (any LoadTestWatchers)? = watch.map { watch in
        switch watch.kind {
        case .native: NativeViewers(count: watch.viewers, links: watch.links, decodeEvery: watch.decodeEvery, fps: fps, traces: hostTraces, work: work)
        case .aiortc: AiortcViewers(count: watch.viewers, script: watch.script!, work: work)
        }
    }
    defer { viewers?.terminateAll() }  // before the folder they write into goes
    // Janus's and the viewers' CPU from when the viewers start to the step's end.
    let janus = watch == nil ? [] : janusProcesses()
    var watchingFrom: (time: UInt64, janus: Double, viewers: Double)?
    var watchingLast: (time: UInt64, janus: Double, viewers: Double)?
    let groups = try loadTestGroups(groupPrefix, count: count)
    var encoding = SharePipeline.Options()
    encoding.settings.bitrateKbps = bitrate
    encoding.settings.frameRate = fps
    encoding.settings.concurrentEncoders = count
    encoding.encodeEveryFrame = encodeEveryFrame
    // Layers for Janus's viewers (as `frame-relay --janus` sends them); without viewers, the whole picture alone.
    encoding.simulcast = watch == nil ? Simulcast(layers: 1) : Simulcast(layers: layers)
    // The producers start once the hosts are up; the step's time counts from
    // the first. They start one after the other, spread over a second, as
    // users do: started at once, every share's first keyframe would be
    // encoded in the same instant, and that instant would be every share's
    // p99. A content model's script starts at another point of its minute
    // for each share, so the shares do not type, scroll and play video in step.
    let producerLogs = groups.indices.map { work.appendingPathComponent("producer-\($0).log") }
    let producers = try groups.enumerated().map { index, group in
        let process = Process()
        process.executableURL = simulator
        process.arguments = [
            "--app-group", group.name, "--size", "\(size.width)x\(size.height)", "--fps", "\(fps)", "--format", "\(format)", "--exit-with-parent", "--quiet",
        ] + (content == "pattern" ? [] : ["--content", content, "--content-start", "\(60 * index / count)"])
        _ = FileManager.default.createFile(atPath: producerLogs[index].path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: producerLogs[index])
        return process
    }
    var start = MonotonicClock.now()
    let launcher = StaggeredLaunch(producers)
    func startProducers() {
        start = MonotonicClock.now()
        launcher.start(at: start)
    }
    defer {
        launcher.stop()
        // A producer killed (stopped, then SIGKILL) could not remove its ring: its segment goes with the step.
        for group in groups { RingProducer.removeStale(group) }
    }
    var timeline: [LoadTestReport.Sample] = []
    var finals: [ShareStats] = []
    var nextSample = 1.0
    var producerCPU: [Double] = Array(repeating: 0, count: count)
    // Each share as it stood at the end of its warm-up: what came after is what the objective judges.
    let warmUp = UInt64(report.objective.warmUpSeconds * 1e9)
    var baselines: [ShareStats?] = Array(repeating: nil, count: count)
    // Why a producer sent too few frames, where it can be seen: its process was stopped.
    var producersStopped = Set<Int>()
    var viewerError: Error?
    // A producer that ends during the step (it cannot open its App Group's
    // ring, it crashed, it was killed) ends the step at once: the step measures nothing.
    var producerEnded: (index: Int, process: Process)?
    let traces: [URL]
    (finals, traces) = try hostShares(groups, size: size, encoding: encoding, hosts: hosts, duration: duration, janus: watch?.janus ?? [], traces: hostTraces, work: work, onReady: startProducers, onTick: { snapshots in
        let now = MonotonicClock.now()
        let elapsed = Double(now - start) / 1e9
        let starts = launcher.startTimes
        if warmUp > 0 {
            for (index, share) in snapshots.enumerated() where baselines[index] == nil && starts[index] != 0 && share.publishedAt >= starts[index] + warmUp {
                baselines[index] = share
            }
        }
        // Viewers join a second after the last producer started, once every mountpoint is open, and watch to the step's end.
        if let viewers, !starts.contains(0), now >= starts.max()! + 1_000_000_000, viewerError == nil {
            do { try viewers.startIfReady(snapshots, seconds: duration - elapsed - 0.5) } catch { viewerError = error }
            // Read while they run: a child that has exited and been reaped has no /proc entry.
            if !viewers.pids.isEmpty {
                let reading = (now, janus.map(Processor.cpuSeconds(ofProcess:)).reduce(0, +), viewers.pids.map(Processor.cpuSeconds(ofProcess:)).reduce(0, +))
                if watchingFrom == nil { watchingFrom = reading } else if reading.2 > 0 { watchingLast = reading }
            }
        }
        if elapsed >= nextSample {
            nextSample += 1
            timeline.append(LoadTestReport.Sample(
                seconds: elapsed, fps: snapshots.map(\.fps),
                p99Milliseconds: snapshots.map { share in share.recentCaptureToEncoded.flatMap { $0.count > 0 ? $0.p99 / 1000 : nil } }))
            producerCPU = launcher.pids.map { $0 == 0 ? 0 : Processor.cpuSeconds(ofProcess: $0) }
        }
        for (index, pid) in launcher.pids.enumerated() where pid != 0 && Processor.isStopped(pid) { producersStopped.insert(index) }
        producerEnded = launcher.ended()
        return producerEnded != nil
    }, onInterrupt: { viewers?.terminateAll() })
    if let (index, process) = producerEnded {
        // Its own last words when it exited with an error, else how it ended (a signal).
        let words = process.terminationReason == .exit && process.terminationStatus != 0
            ? (try? String(contentsOf: producerLogs[index], encoding: .utf8))?.split(separator: "\n").last.map { PeerText.quoted($0) } : nil
        throw UsageError("load-test: the producer of share \(index + 1) (\(groups[index].name)) ended during the step: " + (words ?? process.endedAs))
    }
    let end = MonotonicClock.now()
    let seconds = Double(end - start) / 1e9
    let started = try launcher.waitUntilLaunched()
    if let viewerError { throw UsageError("load-test: cannot start the WebRTC viewers: \(viewerError)") }
    // CPU while the viewers watched, from their first reading to their last.
    let watchingCPU = watchingFrom.flatMap { from in watchingLast.map { last -> (janus: Double?, viewers: Double) in
        let seconds = max(1e-3, Double(last.time - from.time) / 1e9)
        return (janus.isEmpty ? nil : (last.janus - from.janus) / seconds * 100, (last.viewers - from.viewers) / seconds * 100)
    } }
    let watched = viewers?.results(names: groups.map(\.name), traces: traces, grace: 15) ?? groups.map { _ in nil }
    let shares = finals.indices.map { index -> LoadTestReport.Share in
        let share = finals[index], cpu = producerCPU[index], startedAt = started[index]
        let seconds = max(1e6, Double(end) - Double(startedAt)) / 1e9  // this share's own time
        let written = share.totalWritten
        let dropped = share.totalDropped
        var result = LoadTestReport.Share(
            appGroup: share.appGroup, framesIn: written, framesOut: share.encoded?.frames ?? 0, framesSkipped: share.encoded?.skipped ?? 0,
            dropPercent: written == 0 ? 100 : Double(dropped) / Double(written) * 100,
            fps: Double((share.encoded?.frames ?? 0) + (share.encoded?.skipped ?? 0)) / seconds,
            p50Milliseconds: (share.encoded?.captureToEncoded.p50 ?? 0) / 1000, p99Milliseconds: (share.encoded?.captureToEncoded.p99 ?? 0) / 1000,
            hostCPUPercent: share.cpuSeconds / seconds * 100, producerCPUPercent: cpu / seconds * 100, latency: share.encoded?.captureToEncodedBins ?? [],
            viewers: watched[index], startedAfter: Double(startedAt - started[0]) / 1e9, steady: baselines[index].flatMap { steady(share, since: $0) })
        if let layers = share.encoded?.layers, !layers.isEmpty {
            result.layersSent = layers.map { .init(stream: $0.stream, width: $0.width, height: $0.height, targetKbps: $0.bitrateKbps, sentKbps: Double($0.bytes) * 8 / 1000 / seconds) }
        }
        // The producer's own rate, from its first frame to the host's last figures.
        if share.firstCaptured != 0 {
            result.producerFramesPerSecond = Double(written) / max(1e-3, (Double(share.publishedAt) - Double(share.firstCaptured)) / 1e9)
        } else if written == 0 {
            result.producerFramesPerSecond = 0
        }
        if producersStopped.contains(index) { result.producerNote = "its process was stopped (SIGSTOP) during the step" }
        return result
    }
    let framesIn = shares.map(\.framesIn).reduce(0, +), framesOut = shares.map(\.framesOut).reduce(0, +)
    let totalWritten = Double(framesIn)
    let dropped = finals.map { Double($0.totalDropped) }.reduce(0, +)
    var step = LoadTestReport.Step(
        sessions: count, seconds: seconds, passed: report.holds(shares), shares: shares, framesIn: framesIn, framesOut: framesOut,
        dropPercent: totalWritten == 0 ? 100 : dropped / totalWritten * 100, fps: shares.map(\.fps).reduce(0, +),
        p50Milliseconds: shares.map(\.p50Milliseconds).max() ?? 0, p99Milliseconds: shares.map(\.p99Milliseconds).max() ?? 0,
        hostCPUPercent: shares.map(\.hostCPUPercent).reduce(0, +), timeline: timeline)
    step.failures = report.failures(shares)
    // Cut short by a signal (Ctrl-C): what it measured is said, but nothing is judged held.
    if Signals.stops.load(ordering: .relaxed) > 0 {
        step.interrupted = true
        step.passed = false
        step.failures.insert("interrupted by a signal after \(fixed(seconds, 1)) of \(fixed(duration, 1)) s: not judged", at: 0)
    }
    if let watch {
        step.viewersPerShare = watch.viewers
        step.janusCPUPercent = watchingCPU?.janus
        step.viewersCPUPercent = watchingCPU?.viewers
        step.bound = bound(step, cores: report.cores, kind: watch.kind)
    }
    return step
}

/// Which process bounded a step: the native viewers' one event-loop thread
/// when it is near a whole core, else the machine's cores when they are
/// 85 % used or more (on two cores, latency suffers well before 100 %),
/// naming the largest user either way.
private func bound(_ step: LoadTestReport.Step, cores: Int, kind: ViewerKind) -> String {
    let janus = step.janusCPUPercent ?? 0, viewers = step.viewersCPUPercent ?? 0
    let users = [("the host", step.hostCPUPercent), ("Janus", janus), ("the viewers", viewers), ("the producers", step.producerCPUPercent)]
    let total = users.map(\.1).reduce(0, +)
    let largest = users.max { $0.1 < $1.1 }!
    if kind == .native, viewers >= 90 { return "the viewers: their one event-loop thread at \(fixed(viewers, 0)) % of a core" }
    if total >= 0.85 * Double(cores * 100) {
        return "the machine's \(cores) cores (\(fixed(total, 0)) % in use), most by \(largest.0) (\(fixed(largest.1, 0)) %)"
    }
    return "nothing saturated: \(fixed(total, 0)) % of \(cores * 100) % in use, most by \(largest.0) (\(fixed(largest.1, 0)) %)"
}

/// What a share did after `baseline`, the statistics it had at the end of
/// its warm-up; nil when less than a second came after it (a reading taken
/// near the step's last moment), and the share is judged on all its frames.
private func steady(_ share: ShareStats, since baseline: ShareStats) -> LoadTestReport.Steady? {
    let written = share.totalWritten - min(share.totalWritten, baseline.totalWritten)
    let seconds = Double(share.publishedAt &- min(share.publishedAt, baseline.publishedAt)) / 1e9
    // A producer that sent nothing for a second or more after the warm-up (stopped) is judged on that.
    guard written > 0 || seconds >= 1 else { return nil }
    let dropped = share.totalDropped - min(share.totalDropped, baseline.totalDropped)
    let bins = LatencyBin.subtracting(baseline.encoded?.captureToEncodedBins ?? [], from: share.encoded?.captureToEncodedBins ?? [])
    // Nothing encoded after the warm-up (a still screen): no frame waited.
    let p50 = LatencyBin.percentile(50, of: bins) ?? 0, p99 = LatencyBin.percentile(99, of: bins) ?? 0
    return LoadTestReport.Steady(framesIn: written, dropPercent: written == 0 ? 0 : Double(dropped) / Double(written) * 100, p50Milliseconds: p50 / 1000,
                                 p99Milliseconds: p99 / 1000, seconds: seconds)
}

/// Starts a step's producers one after the other, spread over a second, on
/// a thread of its own (the hosts take frames while later shares wait their
/// turn) that lives until ``stop()``: `--exit-with-parent`
/// (`PR_SET_PDEATHSIG`) fires when the *thread* that started a process
/// ends, and a Dispatch worker thread that goes idle is reaped, which killed
/// every producer about 5 s into a step.
private final class StaggeredLaunch: @unchecked Sendable {
    private let processes: [Process]
    /// When each producer started (0: not yet) and its pid, and the first failure to start one.
    private let state: Locked<(started: [UInt64], pids: [Int32], failure: Error?)>
    private let launched = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)
    private var running = false
    private var waited = false

    init(_ processes: [Process]) {
        self.processes = processes
        state = Locked((Array(repeating: 0, count: processes.count), Array(repeating: 0, count: processes.count), nil))
    }

    func start(at start: UInt64) {
        running = true
        let (processes, state, launched, released) = (processes, state, launched, released)
        Thread {
            defer {
                launched.signal()
                released.wait()
            }
            // Spread from when this thread runs (a thread started late does not bunch the first starts), each stamped as it is launched.
            let base = max(start, MonotonicClock.now())
            for (index, process) in processes.enumerated() {
                MonotonicClock.sleep(until: base + UInt64(index) * 1_000_000_000 / UInt64(processes.count))
                do {
                    let launchedAt = MonotonicClock.now()
                    try process.run()
                    let pid = process.processIdentifier
                    state.withLock {
                        $0.started[index] = launchedAt
                        $0.pids[index] = pid
                    }
                } catch {
                    state.withLock { $0.failure = error }
                    return
                }
            }
        }.start()
    }

    /// When each producer started so far (CLOCK_MONOTONIC ns; 0: not yet).
    var startTimes: [UInt64] { state.withLock { $0.started } }

    /// The pids of the producers started so far (0: not yet).
    var pids: [Int32] { state.withLock { $0.pids } }

    /// The first producer started that is no longer running.
    func ended() -> (index: Int, process: Process)? {
        for (index, pid) in pids.enumerated() where pid != 0 && !processes[index].isRunning {
            return (index, processes[index])
        }
        return nil
    }

    /// When each producer started (CLOCK_MONOTONIC ns), once all have.
    func waitUntilLaunched() throws -> [UInt64] {
        if running, !waited {
            launched.wait()
            waited = true
        }
        let (started, _, failure) = state.withLock { $0 }
        if let failure { throw UsageError("load-test: cannot start broadcast-sim: \(failure)") }
        return started
    }

    /// Stops every producer started (SIGKILL 3 s after SIGTERM for one that
    /// is stopped or does not end), then lets the thread end.
    func stop() {
        _ = try? waitUntilLaunched()
        Process.end(processes)
        if running { released.signal() }
    }
}
