import Foundation
import FrameRelaySystem
import FrameRelayRing
import FrameRelayHost
import FrameRelaySubscriber
import FrameRelayTools
import FrameRelayJanus

/// `frame-relay subscribe`: WebRTC viewers of a Janus mountpoint, many in
/// one process, that count frames without decoding them (one in K decodes
/// to check the pixels): loss, NACK recoveries, PLIs, freezes, keyframe
/// waits and, with the host's trace, latency, per group of viewers on a link.
struct Subscribe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "frame-relay subscribe", abstract: "WebRTC viewers of a Janus mountpoint that count frames without decoding them")

    @Option("janus", "URL", help: "Janus's HTTP API, such as http://10.200.0.1:8088/janus (repeatable: mountpoints dealt across them in order).") var janus: [String] = []
    @Option("app-group", "NAME", help: "Watch this App Group's mountpoint, as a host streaming into Janus names it (repeatable).",
            transform: { try AppGroup($0) }) var appGroups: [AppGroup] = []
    @Option("mountpoint", "ID", help: "Watch this mountpoint id (repeatable).") var mountpoints: [UInt64] = []
    @Option("viewers", "N", in: 1...10_000, help: "Viewers of each mountpoint, dealt across the --link groups.") var viewers = 1
    @Option("link", "SPEC", help: "A group's link: loss=2%,delay=40ms,jitter=10ms,rate=3mbit (any part, and queue=300ms: the rate limit's queue; PART@20s changes a part from that time on, as in rate=5mbit,rate=1mbit@20s; repeatable: a group each).",
            default: "perfect", transform: { try LinkConditions(parsing: $0) }) var links: [LinkConditions] = [LinkConditions()]
    @Option("decode-every", "K", in: 0...10_000, help: "One viewer in K of each group decodes with libvpx and checks each picture's stamp (0: none).") var decodeEvery = 0
    @Option("duration", "SECONDS", in: 1...86_400, help: "Watch for this long.") var duration = 10.0
    @Option("fps", "N", in: 1...240, help: "The stream's frame rate (sizes the per-frame records).") var fps = 30
    @Option("captures", "PATH", help: "The host's --trace (repeatable): adds latency (capture → decodable) and checks decoded stamps.") var captures: [String] = []
    @Option("report", "PATH", help: "Write the JSON report here.") var report: String?

    func checkGiven() throws {
        if !$janus.isGiven { throw UsageError("--janus URL is needed: the Janus whose mountpoint to watch") }
        if !$appGroups.isGiven && !$mountpoints.isGiven { throw UsageError("give --app-group NAME or --mountpoint ID: what to watch") }
    }

    func validate() throws {
        try checkOutputs([("report", report.map { [$0] } ?? [])])
        for url in janus { _ = try janusURL(url) }
        for id in mountpoints where Int64(exactly: id) == nil { throw UsageError("--mountpoint \(id): Janus's ids go up to \(Int64.max)") }
        if viewers < links.count { throw UsageError("--viewers \(viewers) cannot be dealt across \(links.count) --link groups: give at least one viewer a group") }
        // Read now as well as at the end: a wrong file is said before the watch, not after it.
        for path in captures {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { throw UsageError("--captures \(path) is a directory: give the host's --trace file") }
            if !FileManager.default.isReadableFile(atPath: path) { throw UsageError("cannot read --captures \(path)") }
        }
        do { _ = try HostTrace(paths: captures) } catch { throw UsageError("\(error)") }
    }

    /// Every mountpoint, on its Janus (dealt in order), as many groups as links, the viewers dealt across them.
    func groups() throws -> [AudienceGroup] {
        let urls = try janus.map(janusURL)
        let targets = appGroups.map { (JanusMountpoint.id(for: $0), $0.name) } + mountpoints.map { ($0, "mountpoint \($0)") }
        return targets.enumerated().flatMap { index, target in
            links.enumerated().map { number, link in
                let count = viewers / links.count + (number < viewers % links.count ? 1 : 0)
                return AudienceGroup(janus: urls[index % urls.count], mountpoint: target.0, share: target.1, viewers: count, link: link, decodeEvery: decodeEvery)
            }
        }
    }

    func run() throws -> Int32 {
        let groups = try groups()
        let audience = try Audience(groups: groups, log: log)
        let result = try audience.run(seconds: duration, expectedFrameRate: fps, captures: captures) { Signals.stops.load(ordering: .relaxed) > 0 }
        // A group that failed has said so in its one line.
        for group in result.groups where group.joined > 0 { log(Self.summary(group)) }
        if result.groups.contains(where: { $0.joined > 0 }) {
            // Joining (ICE, DTLS) and the sampled decoders are in it: scripts/viewer-cost measures watching alone.
            let decoders = result.groups.map(\.decoders).reduce(0, +)
            log("subscribe: \(fixed(result.cpuMsPerViewerSecond, 2)) ms of CPU per viewer-second (\(fixed(result.cpuSeconds, 2)) s over \(fixed(result.seconds, 1)) s), "
                + "joining and \(counted(decoders, "decoding viewer")) included")
        }
        if let error = result.capturesError { log("subscribe: no latency: \(error)") }
        if let path = report {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try OutputFile.write(String(decoding: try encoder.encode(result), as: UTF8.self), to: path)
        }
        // A group that failed (no viewer joined, Janus or the mountpoint gone) fails the run.
        return result.groups.contains { $0.joined == 0 || $0.error != nil } || result.capturesError != nil ? 1 : 0
    }

    /// One line per group: who watched, what they got.
    static func summary(_ group: AudienceReport.Group) -> String {
        let totals = group.totals
        var line = "subscribe: \(group.share) (\(group.link)): \(group.watching) of \(group.viewers) watching, "
            + "\(totals.framesDecodable) frames decodable, loss \(fixed(group.lossPercent, 2)) % (\(totals.recoveredPackets) packets recovered by NACK), "
            + "\(totals.freezes) freezes (\(fixed(group.freezesPerMinute, 1))/min), \(totals.keyframeWaits) keyframe waits, \(totals.plisSent) PLIs"
        if let first = group.firstFrameP50Ms { line += ", first frame p50 \(fixed(first, 0)) ms" }
        if let latency = group.latency { line += ", latency p50 \(fixed(latency.p50Ms, 1)) ms p99 \(fixed(latency.p99Ms, 1)) ms" }
        if group.decoders > 0 { line += ", \(totals.framesDecoded) decoded by \(group.decoders) (\(group.picturesMatched) stamps checked, \(group.picturesMismatched) wrong"
            + (group.picturesTooSmall > 0 ? ", \(group.picturesTooSmall) on a layer too small to read the stamp" : "") + ")" }
        line += "; per viewer \(fixed(group.framesPerSecond, 1)) frames/s, \(fixed(group.kbitPerSecond, 0)) kbit/s"
        // A simulcast mountpoint: the share of the time at each layer ("substream/temporal"), and the switches asked of Janus.
        let layerTotal = totals.layerMs.values.reduce(0, +)
        if layerTotal > 0 {
            line += "; layers " + totals.layerMs.keys.sorted().map { "\($0) \(fixed(totals.layerMs[$0]! / layerTotal * 100, 0)) %" }.joined(separator: ", ")
                + ", \(totals.layerSwitches) switches"
        }
        return line
    }
}
