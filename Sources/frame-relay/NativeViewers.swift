@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayHost
import FrameRelaySubscriber
import FrameRelayTools

/// The audience of a load-test step: one `frame-relay subscribe` process
/// with `count` WebRTC viewers on every share's mountpoint, dealt across
/// the link groups, frames counted without decoding (one viewer in
/// `decodeEvery` decodes to check the pictures), and latency from the
/// hosts' traces. One process, one event loop: its CPU is the audience's.
final class NativeViewers: LoadTestWatchers {
    let count: Int
    let links: [LinkConditions]
    let decodeEvery: Int
    let fps: Int
    let work: URL
    private var process: Process?
    /// Whether it had to be killed while stopped (SIGSTOP), said with the figures it did not report.
    private var killedStopped = false
    private let report: URL
    private let logFile: URL
    private var traces: [URL] = []

    init(count: Int, links: [LinkConditions], decodeEvery: Int, fps: Int, traces: [URL], work: URL) {
        self.count = count
        self.links = links
        self.decodeEvery = decodeEvery
        self.fps = fps
        self.traces = traces
        self.work = work
        report = work.appendingPathComponent("audience.json")
        logFile = work.appendingPathComponent("audience.log")
    }

    func startIfReady(_ shares: [ShareStats], seconds: Double) throws {
        guard process == nil, shares.allSatisfy({ $0.janus != nil }) else { return }
        var arguments = ["subscribe"]
        // Each share on its own Janus: the i-th App Group with the i-th --janus.
        for share in shares { arguments += ["--app-group", share.appGroup, "--janus", share.janus!.janus] }
        arguments += ["--viewers", "\(count)", "--decode-every", "\(decodeEvery)", "--duration", fixed(max(1, seconds), 1), "--fps", "\(fps)", "--report", report.path]
        arguments += links.flatMap { ["--link", $0.description] }
        arguments += traces.flatMap { ["--captures", $0.path] }
        // The hosts write their traces as they go (opened before any mountpoint was); subscribe reads them once it has watched.
        let process = Process()
        process.executableURL = try siblingExecutable("frame-relay")
        process.arguments = arguments
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: logFile)
        try process.run()
        self.process = process
    }

    var pids: [Int32] { process.map { [$0.processIdentifier] } ?? [] }

    func terminateAll() {
        guard let process else { return }
        if Process.end([process]).first == .killed(stopped: true) { killedStopped = true }
    }

    func results(names: [String], traces: [URL], grace: Double = 15) -> [LoadTestReport.Viewers?] {
        guard let process else { return names.map { _ in nil } }
        let deadline = MonotonicClock.now() + UInt64(grace * 1e9)
        while process.isRunning, MonotonicClock.now() < deadline { usleep(20_000) }
        terminateAll()
        guard let data = FileManager.default.contents(atPath: report.path), let audience = try? JSONDecoder().decode(AudienceReport.self, from: data) else {
            // No report: every share's viewers failed, with the process's last words (or how it ended).
            let words = (try? String(contentsOf: logFile, encoding: .utf8))?.split(separator: "\n").last.map { ": " + PeerText.quoted($0) }
            let reason = "frame-relay subscribe reported nothing (\(process.endedAs))\(killedStopped ? ", stopped (SIGSTOP) when its time was up" : "")\(words ?? "")"
            log("load-test: the viewers: \(reason)")
            return names.map { _ in
                LoadTestReport.Viewers(
                    kind: "native", count: count, framesDecoded: [], lostPercent: 100, firstPictureMilliseconds: 0, glassToGlassP50Milliseconds: 0,
                    glassToGlassP99Milliseconds: 0,
                    groups: [LoadTestReport.ViewerGroup(link: links.map(\.description).joined(separator: " + "), viewers: count, watching: 0, lossPercent: 100,
                                                        p50Ms: nil, p99Ms: nil, firstFrameMaxMs: nil, error: reason)])
            }
        }
        return names.map { name in
            let groups = audience.groups.filter { $0.share == name }
            guard !groups.isEmpty else { return nil }
            let viewers = groups.flatMap(\.subscribers)
            return LoadTestReport.Viewers(
                kind: "native", count: viewers.count, framesDecoded: viewers.map { Int($0.framesDecodable) },
                lostPercent: groups.map(\.lossPercent).max() ?? 0, firstPictureMilliseconds: groups.compactMap(\.firstFrameMaxMs).max() ?? 0,
                glassToGlassP50Milliseconds: groups.compactMap(\.latency?.p50Ms).max() ?? 0, glassToGlassP99Milliseconds: groups.compactMap(\.latency?.p99Ms).max() ?? 0,
                groups: groups.map { group in
                    var result = LoadTestReport.ViewerGroup(
                        link: group.link, viewers: group.viewers, watching: group.watching, lossPercent: group.lossPercent,
                        recoveredPackets: group.totals.recoveredPackets, plisSent: group.totals.plisSent, keyframeWaits: group.totals.keyframeWaits,
                        keyframeWaitMs: group.totals.keyframeWaitMs, freezes: group.totals.freezes, freezesPerMinute: group.freezesPerMinute,
                        p50Ms: group.latency?.p50Ms, p99Ms: group.latency?.p99Ms, firstFrameMaxMs: group.firstFrameMaxMs,
                        picturesChecked: group.picturesMatched + group.picturesMismatched, picturesWrong: group.picturesMismatched, error: group.error)
                    result.framesPerSecond = group.framesPerSecond
                    result.picturesTooSmall = group.picturesTooSmall
                    result.kbitPerSecond = group.kbitPerSecond
                    let layerTotal = group.totals.layerMs.values.reduce(0, +)
                    if layerTotal > 0 { result.layerPercent = group.totals.layerMs.mapValues { $0 / layerTotal * 100 } }
                    result.layerSwitches = group.totals.layerSwitches
                    (result.framesEachSecond, result.lostEachSecond, result.layerEachSecond) = SubscriberStats.overTime(group.subscribers)
                    return result
                })
        }
    }
}
