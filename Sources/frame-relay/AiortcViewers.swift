@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayHost
import FrameRelayTools

/// The cross-check audience of a load-test step (`--viewer-kind aiortc`):
/// `count` aiortc viewers (scripts/webrtc-viewer, one Python process each,
/// decoding every frame) on each share's Janus mountpoint, started once the
/// hosts have opened their mountpoints, and what they saw, with glass to
/// glass from the hosts' per-frame traces.
final class AiortcViewers: LoadTestWatchers {
    let count: Int
    let script: String
    let work: URL
    private(set) var started = false
    private var processes: [(share: Int, process: Process, report: URL)] = []

    init(count: Int, script: String, work: URL) {
        self.count = count
        self.script = script
        self.work = work
    }

    /// The viewer script: `--viewer`, or scripts/webrtc-viewer of the checkout frame-relay was built in.
    static func findScript(_ given: String?) throws -> String {
        if let given {
            guard access(given, R_OK) == 0 else { throw UsageError("cannot read --viewer \(given)") }
            return given
        }
        // Next to the executable, or in scripts/ of the checkout it was built in (.build/<triple>/<configuration>/).
        var folder = try siblingExecutable("frame-relay").deletingLastPathComponent()
        if access(folder.appendingPathComponent("webrtc-viewer").path, R_OK) == 0 { return folder.appendingPathComponent("webrtc-viewer").path }
        for _ in 0..<4 {
            folder = folder.deletingLastPathComponent()
            let candidate = folder.appendingPathComponent("scripts/webrtc-viewer")
            if access(candidate.path, R_OK) == 0 { return candidate.path }
        }
        throw UsageError("scripts/webrtc-viewer not found next to frame-relay or in its checkout: give --viewer PATH")
    }

    /// Starts the viewers once every share has its mountpoint; each watches for `seconds`.
    func startIfReady(_ shares: [ShareStats], seconds: Double) throws {
        guard !started, shares.allSatisfy({ $0.janus != nil }) else { return }
        started = true
        for (index, share) in shares.enumerated() {
            guard let mountpoint = share.janus else { continue }
            for viewer in 0..<count {
                let report = work.appendingPathComponent("viewer-\(index)-\(viewer).json")
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
                process.arguments = [script, "--janus", mountpoint.janus, "--mountpoint", "\(mountpoint.id)", "--duration", fixed(max(1, seconds), 1), "--report", report.path]
                let log = work.appendingPathComponent("viewer-\(index)-\(viewer).log")
                _ = FileManager.default.createFile(atPath: log.path, contents: nil)
                process.standardOutput = FileHandle.nullDevice
                process.standardError = try FileHandle(forWritingTo: log)
                try process.run()
                processes.append((index, process, report))
            }
        }
    }

    var pids: [Int32] { processes.map(\.process.processIdentifier).filter { $0 != 0 } }

    /// Ends every viewer still running (a step that failed) and waits for it.
    func terminateAll() {
        for entry in processes where entry.process.isRunning { entry.process.terminate() }
        for entry in processes { entry.process.end() }
    }

    /// Waits for the viewers (at most `grace` seconds past their time) and
    /// returns each share's figures (0 where a viewer saw nothing); `traces`
    /// are the hosts' per-frame JSON lines, `names` the shares' App Groups.
    func results(names: [String], traces: [URL], grace: Double = 10) -> [LoadTestReport.Viewers?] {
        let deadline = MonotonicClock.now() + UInt64(grace * 1e9)
        for entry in processes {
            while entry.process.isRunning, MonotonicClock.now() < deadline { usleep(20_000) }
            entry.process.end()
        }
        // share name → the stamp a picture sent over RTP carries (the frame that last changed it) → its first capture time
        var captured: [String: [Int: Int]] = [:]
        for trace in traces {
            for line in ((try? String(contentsOf: trace, encoding: .utf8)) ?? "").split(separator: "\n") {
                guard let record = try? JSONDecoder().decode(TraceLine.self, from: Data(line.utf8)), record.picture != nil else { continue }
                let stamp = (record.shows ?? record.frame) & 0xFF_FFFF
                captured[record.share, default: [:]][stamp] = min(record.captured, captured[record.share]?[stamp] ?? .max)
            }
        }
        return names.indices.map { share in
            let mine = processes.filter { $0.share == share }
            guard !mine.isEmpty else { return nil }
            var decoded: [Int] = [], lost = 0.0, first = 0.0, latencies: [Double] = []
            for entry in mine {
                guard let data = try? Data(contentsOf: entry.report), let report = try? JSONDecoder().decode(ViewerReport.self, from: data) else {
                    // A viewer that failed: its own last words.
                    let words = (try? String(contentsOf: entry.report.deletingPathExtension().appendingPathExtension("log"), encoding: .utf8))?.split(separator: "\n").last
                    log("load-test: a viewer of \(names[share]) saw nothing: \(words.map { PeerText.quoted($0) } ?? "no report")")
                    decoded.append(0)
                    lost = 100
                    continue
                }
                let stamps = report.stamps.compactMap { $0 }
                let times = report.decoded
                decoded.append(stamps.count)
                first = max(first, report.firstFrameMs ?? 0)
                // Lost: the pictures the host sent between the first and the last the viewer showed that it never showed
                // (a screen that does not change every frame sends only some stamps; without the trace, every number between).
                let sent = captured[names[share]] ?? [:]
                if let low = stamps.min(), let high = stamps.max() {
                    let expected = sent.isEmpty ? Set(low...high) : Set(sent.keys.filter { (low...high).contains($0) })
                    lost = max(lost, Double(expected.subtracting(stamps).count) / Double(max(1, expected.count)) * 100)
                } else {
                    lost = 100
                }
                // Capture → the first decode of each picture.
                var shown = Set<Int>()
                for (stamp, time) in zip(report.stamps, times) {
                    guard let stamp, shown.insert(stamp).inserted, let capture = sent[stamp] else { continue }
                    latencies.append(Double(time - capture) / 1e6)
                }
            }
            latencies.sort()
            func percentile(_ p: Double) -> Double { latencies.nearestRankPercentile(p * 100) }
            let group = LoadTestReport.ViewerGroup(
                link: "perfect", viewers: mine.count, watching: decoded.filter { $0 > 0 }.count, lossPercent: lost,
                p50Ms: latencies.isEmpty ? nil : percentile(0.5), p99Ms: latencies.isEmpty ? nil : percentile(0.99), firstFrameMaxMs: first)
            return LoadTestReport.Viewers(
                kind: "aiortc", count: mine.count, framesDecoded: decoded, lostPercent: lost, firstPictureMilliseconds: first,
                glassToGlassP50Milliseconds: percentile(0.5), glassToGlassP99Milliseconds: percentile(0.99), groups: [group])
        }
    }
}

/// One line of a host's `--trace` file, as far as the viewers' latency needs it.
private struct TraceLine: Decodable {
    let share: String
    let frame: Int
    let shows: Int?
    let captured: Int
    let picture: Int?
}

/// What scripts/webrtc-viewer reports: the stamp read from each decoded
/// picture (null where none could be read) and when it was decoded.
private struct ViewerReport: Decodable {
    let stamps: [Int?]
    let decoded: [Int]
    let firstFrameMs: Double?
}
