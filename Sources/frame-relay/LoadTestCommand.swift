@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing
import FrameRelayProducer
import FrameRelayHost
import FrameRelaySubscriber
import FrameRelayTools

/// `frame-relay load-test`: N broadcast-sim producers into one host, each
/// share encoded; reports per share and in total, and in ramp mode finds the
/// largest N that holds the objective.
struct LoadTest: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "frame-relay load-test", abstract: "many shares at once: frames, drops, fps, latency and CPU per share")

    @Option("sessions", "N", in: 1...256, help: "Concurrent shares (producer processes), or the ramp's upper bound with --ramp.") var sessions = 4
    @Option("app-groups", "PREFIX", help: "The shares' App Groups are PREFIX.s0, PREFIX.s1, … (default: group.com.example.loadtest.pPID, this run's own, so that two load tests on one machine do not meet).",
            transform: { prefix in
                guard prefix.utf8.count + 5 <= AppGroup.maxLength else {
                    throw UsageError("invalid --app-groups: \(prefix.utf8.count) characters, at most \(AppGroup.maxLength - 5) (PREFIX.s255 must fit an App Group's \(AppGroup.maxLength))")
                }
                guard (try? AppGroup(prefix + ".s255")) != nil else {
                    throw UsageError("invalid --app-groups \"\(PeerText.quoted(prefix, limit: 64))\": PREFIX.s0 must be an App Group (group. and reverse-DNS labels)")
                }
                return prefix
            }) var appGroupPrefix = "group.com.example.loadtest.p\(Processor.currentPID)"
    @Option("hosts", "K", in: 1...64, help: "Host processes the shares are dealt to (1: this process hosts them all).") var hosts = 1
    @Flag("ramp", help: "Find the largest number of shares that holds the objective (1, 2, 4, … then bisect).") var ramp
    @Option("retries", "N", in: 0...10, help: "With --ramp, run a step that failed up to N more times before it counts as failed (one stall of the machine should not end the search).") var retries = 1
    @Option("size", "WxH", help: "Picture size of every producer.", default: "1280x720", transform: { try parseSize($0, option: "size") })
    var size = (width: 1280, height: 720)
    @Option("fps", "N", in: 1...240, help: "Frames per second of every producer.") var fps = 15
    @Option("format", "FMT", help: "Pixel format the producers send.") var format = PixelFormat.nv12
    @Option("content", "MODEL", help: "What the screens show: " + contentHelp, default: "pattern", transform: parseContent)
    var content = "pattern"
    @Flag("encode-every-frame", help: "Encode every frame whole (default: only what changed).") var encodeEveryFrame
    @Option("layers", "N", in: 1...Simulcast.maxLayers, help: "With --janus, simulcast layers per share (default: 2 where the picture is at least 640 wide; 1: the whole picture alone).")
    var layers: Int?
    @Option("bitrate", "KBPS", in: 1...100_000, help: "VP8 bitrate per share.") var bitrate = 1500
    @Option("duration", "SECONDS", in: 1...3600, help: "Length of each step.") var duration = 10.0
    @Option("max-drop-percent", "PCT", in: 0...100, help: "Objective: drops below this on every share.") var maxDropPercent = 1.0
    @Option("max-p99-ms", "MS", in: 0.1...100_000, help: "Objective: capture→encoded p99 below this on every share.") var maxP99Milliseconds = 100.0
    @Option("warm-up", "SECONDS", in: 0...3600, help: "Leave each share's first seconds (its first keyframe, the picture refining after it) out of the objective (default: 3, or half of what a shorter step leaves after the last share's start).") var warmUpGiven: Double?
    /// The shares start over the step's first second: the last one's warm-up must end within the step.
    var warmUp: Double { warmUpGiven ?? min(3, max(0, (duration - 1) / 2)) }
    @Option("report", "PATH", help: "JSON report.") var report = "load-test.json"
    @Option("html", "PATH", help: "HTML report with SVG charts.") var html = "load-test.html"
    @Option("janus", "URL", help: "Stream every share into this Janus (shares dealt across several) and watch it over WebRTC.") var janus: [String] = []
    @Option("viewers", "M", in: 1...10_000, help: "With --janus, WebRTC viewers on each share, or the bound of --ramp-viewers.") var viewers = 1
    @Flag("ramp-viewers", help: "Find the largest number of viewers per share that holds the objective at --sessions shares (1, 2, 4, … then bisect).") var rampViewers
    @Option("viewer-kind", "KIND", help: "native (frame-relay subscribe: frames counted without decoding, one viewer in --decode-every decoding) or aiortc (a Python process per viewer, decoding every frame).") var viewerKind = ViewerKind.native
    @Option("viewer-link", "SPEC", help: "The viewers' link, loss=2%,delay=40ms,jitter=10ms,rate=3mbit (any part, and queue=300ms: the rate limit's queue; PART@20s changes a part from that time on (counted from the viewer's first packet), as in rate=5mbit,rate=1mbit@20s; repeatable: each share's viewers dealt across the links).",
            default: "perfect", transform: { try LinkConditions(parsing: $0) }) var viewerLinks: [LinkConditions] = [LinkConditions()]
    @Option("decode-every", "K", in: 0...10_000, help: "One native viewer in K (the first of each link group among them) decodes and checks the pictures (0: none, as for subscribe).") var decodeEvery = 50
    @Option("max-viewer-loss-percent", "PCT", in: 0...100, help: "Objective: every viewer group loses less than this, after NACK.") var maxViewerLossPercent = 1.0
    @Option("max-viewer-p99-ms", "MS", in: 0.1...100_000, help: "Objective: capture → viewer p99 below this on every viewer group.") var maxViewerP99Milliseconds = 150.0
    @Option("viewer", "PATH", help: "The aiortc viewer script (default: scripts/webrtc-viewer of this checkout).") var viewer: String?
    @Flag("expect-held", help: "Exit 1 when the objective did not hold (no step held it), as a CI gate; without it a run that completes exits 0 and its verdict is in its last line and the report.") var expectHeld

    func checkGiven() throws {
        if $retries.isGiven, !$ramp.isGiven, !$rampViewers.isGiven { throw UsageError("--retries needs --ramp or --ramp-viewers") }
        let viewing: [any OptionPresence] = [$viewers, $rampViewers, $viewerKind, $viewerLinks, $decodeEvery, $maxViewerLossPercent, $maxViewerP99Milliseconds, $viewer, $layers]
        if !$janus.isGiven, let given = viewing.first(where: \.isGiven) { throw UsageError("--\(given.name) needs --janus URL") }
        if $ramp.isGiven, $rampViewers.isGiven { throw UsageError("--ramp and --ramp-viewers ramp different things: give one") }
    }

    func validate() throws {
        if let warmUpGiven, warmUpGiven > 0, warmUpGiven >= duration - 1 {
            throw UsageError("--warm-up \(fixed(warmUpGiven, 1)) s leaves nothing of a \(fixed(duration, 1)) s step after its last share starts (within its first second): make it shorter than --duration - 1")
        }
        try checkOutputs([("report", [report]), ("html", [html])])
        for url in janus { _ = try janusURL(url) }
        if viewerKind == .aiortc, $viewerLinks.isGiven || $decodeEvery.isGiven {
            throw UsageError("--viewer-link and --decode-every are for native viewers; aiortc viewers decode every frame on a perfect link")
        }
        if viewerKind == .native, viewer != nil { throw UsageError("--viewer is the aiortc script: give --viewer-kind aiortc") }
        // What the hosts would refuse when they start, refused before anything does (a share that sends
        // nothing otherwise made an empty step that held the objective).
        if let layers {
            let simulcast = Simulcast(layers: layers)
            do throws(CodecError) {
                try simulcast.validate(top: bitrate)
                try simulcast.check(width: size.width, height: size.height, top: bitrate)
            } catch {
                throw UsageError("--layers \(layers): \(error)")
            }
        }
        // A change the step ends before would be a group that never meets its link.
        for link in viewerLinks {
            if let late = link.changes.last, Double(late.at) / 1e9 >= duration {
                throw UsageError("--viewer-link \(link): its change at \(fixed(Double(late.at) / 1e9, 1)) s comes after the \(fixed(duration, 1)) s step (times count from the viewer's first packet)")
            }
        }
        if viewerKind == .native, viewers < viewerLinks.count, !rampViewers {
            throw UsageError("--viewers \(viewers) cannot be dealt across \(viewerLinks.count) --viewer-link groups: give each group a viewer")
        }
    }

    func run() throws -> Int32 {
        // The files this run writes, named at the end, saying which replaced an earlier one.
        let written = [report, html].map { OutputFile.named($0, replacing: OutputFile.isFile($0)) }.joined(separator: ", ")
        let simulator = try siblingExecutable("broadcast-sim")
        let viewerScript = janus.isEmpty || viewerKind == .native ? nil : try AiortcViewers.findScript(viewer)
        let objective = LoadTestReport.Objective(maxDropPercent: maxDropPercent, maxP99Milliseconds: maxP99Milliseconds, warmUpSeconds: warmUp,
                                                 maxViewerLossPercent: maxViewerLossPercent, maxViewerP99Milliseconds: maxViewerP99Milliseconds)
        let cores = Processor.onlineCount
        var results = LoadTestReport(size: "\(size.width)x\(size.height)", framesPerSecond: fps, format: "\(format)", cores: cores, hosts: hosts, objective: objective)
        (results.bitrateKbps, results.layers, results.content) = (bitrate, layers, "\(content)")

        /// One step: `count` shares, each watched by `watchers` viewers when there is a Janus.
        func step(_ count: Int, watchers: Int) throws -> LoadTestReport.Step {
            let audience = janus.isEmpty ? nil : LoadTestAudience(janus: janus, viewers: watchers, kind: viewerKind, links: Array(viewerLinks.prefix(watchers)),
                                                                 decodeEvery: decodeEvery, script: viewerScript)
            let what = counted(count, "share") + (audience.map { " × " + counted($0.viewers, "\($0.kind) viewer") } ?? "")
            log("load-test: \(what) for \(fixed(duration, 0)) s…")
            let result = try runStep(count, groups: appGroupPrefix, simulator: simulator, hosts: min(hosts, count), size: size, fps: fps, format: format, content: content, bitrate: bitrate,
                                     encodeEveryFrame: encodeEveryFrame, layers: layers, duration: duration, report: results, watch: audience)
            // The figures judged first: those after the warm-up when the step had one, then the whole step's.
            let verdict = result.interrupted ? "interrupted after \(fixed(result.seconds, 1)) of \(fixed(duration, 1)) s, not judged" : result.passed ? "held" : "did not hold"
            let whole = "drops \(fixed(result.dropPercent, 2)) %, p99 \(fixed(result.p99Milliseconds, 1)) ms"
            let judged = result.steadyP99Milliseconds.map { p99 in
                let after = result.shares.allSatisfy { $0.steady?.framesIn == 0 } ? "no frame came"
                    : "drops \(fixed(result.steadyDropPercent ?? 0, 2)) %, p99 \(fixed(p99, 1)) ms"
                return "\(verdict) after the \(fixed(warmUp, 1)) s warm-up: \(after); the whole step, warm-up included: \(whole)"
            } ?? "\(verdict): \(whole)"
            log("load-test: \(what) \(judged); \(fixed(result.fps, 1)) fps in total, host CPU \(fixed(result.hostCPUPercent, 0)) %, producers' CPU \(fixed(result.producerCPUPercent, 0)) %")
            if let viewers = result.viewersCPUPercent {
                log("load-test:   while the viewers watched: Janus \(result.janusCPUPercent.map { "\(fixed($0, 0)) %" } ?? "not on this machine"), "
                    + "viewers \(fixed(viewers, 0)) % of a core; bounded by \(result.bound ?? "?")")
            }
            for share in result.shares {
                if let sent = share.layersSent {
                    log("load-test:   \(share.appGroup) sent " + sent.map { "\($0.width)x\($0.height) \(fixed($0.sentKbps, 0)) kbit/s (target \($0.targetKbps))" }.joined(separator: ", "))
                }
                for group in share.viewers?.groups ?? [] { log("load-test:   " + Self.viewerLine(share.appGroup, group)) }
            }
            for failure in result.failures { log("load-test:   \(failure)") }
            return result
        }

        /// Whether the step holds: a step that fails is run again, up to
        /// `retries` times, and holds if any run held (every run is in the report).
        func holds(_ count: Int, watchers: Int) throws -> Bool {
            for attempt in 0...retries {
                if attempt > 0 { log("load-test: \(counted(count, "share"))\(janus.isEmpty ? "" : " × " + counted(watchers, "viewer")) again (try \(attempt + 1) of \(retries + 1))…") }
                let result = try step(count, watchers: watchers)
                results.steps.append(result)
                if result.passed || Signals.stops.load(ordering: .relaxed) > 0 { return result.passed }
            }
            return false
        }

        /// The largest n in 1...bound for which `holds(n)`: 1, 2, 4, … then bisection.
        func largest(upTo bound: Int, _ holds: (Int) throws -> Bool) throws -> Int {
            var passed = 0, failed: Int?
            var n = 1
            while n <= bound {
                let held = try holds(n)
                if Signals.stops.load(ordering: .relaxed) > 0 { break }
                if held { passed = n } else { failed = n; break }
                n = n == bound ? bound + 1 : min(n * 2, bound)
            }
            while let fail = failed, fail - passed > 1, Signals.stops.load(ordering: .relaxed) == 0 {
                let middle = (passed + fail) / 2
                if try holds(middle) { passed = middle } else { failed = middle }
            }
            return passed
        }

        if ramp {
            results.maxSessionsHeld = try largest(upTo: sessions) { try holds($0, watchers: viewers) }
        } else if rampViewers {
            results.maxViewersHeld = try largest(upTo: viewers) { try holds(sessions, watchers: $0) }
            results.maxSessionsHeld = results.maxViewersHeld! > 0 ? sessions : 0
        } else {
            let result = try step(sessions, watchers: viewers)
            results.steps.append(result)
            results.maxSessionsHeld = result.passed ? sessions : 0
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try OutputFile.write(String(decoding: try encoder.encode(results), as: UTF8.self), to: report)
        try OutputFile.write(LoadTestHTML.render(results), to: html)
        if let held = results.maxViewersHeld {
            log("load-test: largest number of viewers per share that held the objective at \(counted(sessions, "share")): \(held)\(held == viewers ? " (the bound, --viewers: the limit is higher)" : ""); report \(written)")
        } else if ramp {
            let bound = results.maxSessionsHeld == sessions ? " (reached --sessions without failing: the limit is higher)" : ""
            log("load-test: largest number of shares that held the objective: \(results.maxSessionsHeld)\(bound); report \(written)")
        } else if results.steps.last?.interrupted == true {
            log("load-test: \(counted(sessions, "share")): not judged (interrupted); report \(written)")
        } else {
            log("load-test: \(counted(sessions, "share")) \(results.maxSessionsHeld > 0 ? "held" : "did not hold") the objective; report \(written)")
        }
        // A run cut short says so last, and fails: its verdict is not one.
        if results.steps.contains(where: \.interrupted) {
            log("load-test: interrupted by a signal: the last step was cut short and is not judged")
            return 1
        }
        return expectHeld && results.maxSessionsHeld == 0 ? 1 : 0
    }

    /// One line for a share's group of viewers: how many watched, loss, repairs, waits, freezes, latency.
    static func viewerLine(_ share: String, _ group: LoadTestReport.ViewerGroup) -> String {
        "\(share) [\(group.link)]: \(group.watching) of \(group.viewers) watching, lost \(fixed(group.lossPercent, 2)) %, \(group.recoveredPackets) packets recovered by NACK, "
            + "\(group.plisSent) PLIs, \(group.keyframeWaits) keyframe waits, \(group.framesPerSecond > 0 ? "\(group.freezesText) freezes/min" : group.freezesText)"
            + (group.p99Ms.map { ", capture→viewer p50 \(fixed(group.p50Ms ?? 0, 1)) ms p99 \(fixed($0, 1)) ms" } ?? "")
            + (group.picturesChecked > 0 ? ", \(group.picturesChecked) pictures checked (\(group.picturesWrong) wrong)" : "")
            + (group.picturesTooSmall > 0 ? ", \(group.picturesTooSmall) not checked (on a layer too small to read the stamp)" : "")
            + "; per viewer \(fixed(group.framesPerSecond, 1)) frames/s, \(fixed(group.kbitPerSecond, 0)) kbit/s"
            + (group.layersText.isEmpty ? "" : "; layers \(group.layersText)")
    }
}

