import Foundation
import FrameRelay
import FrameRelaySubscriber
import FrameRelaySystem

/// `frame-relay subscribe`: WebRTC viewers of a Janus mountpoint, many in
/// one process, that count frames without decoding them (one in K decodes
/// to check the pixels): loss, NACK recoveries, PLIs, freezes, keyframe
/// waits and, with the host's trace, latency, per group of viewers on a link.
struct Subscribe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "frame-relay subscribe", abstract: "WebRTC viewers of a Janus mountpoint that count frames without decoding them")

    @Option("janus", "URL", help: "Janus's HTTP API, such as http://10.200.0.1:8088/janus.") var janus: String?
    @Option("app-group", "NAME", help: "Watch this App Group's mountpoint (a host streaming into Janus names it so).",
            transform: { try AppGroup($0) }) var appGroup: AppGroup?
    @Option("mountpoint", "ID", in: 1...UInt64.max, help: "Watch this mountpoint id instead.") var mountpoint: UInt64?
    @Option("viewers", "N", in: 1...10_000, help: "Viewers in each group (one group per --link).") var viewers = 1
    @Option("link", "SPEC", help: "A group's link: loss=2%,delay=40ms,jitter=10ms,rate=3mbit (any part; repeatable: one group each).",
            default: "perfect", transform: { try LinkConditions(parsing: $0) }) var links: [LinkConditions] = [LinkConditions()]
    @Option("decode-every", "K", in: 0...10_000, help: "One viewer in K of each group decodes with libvpx and checks each picture's stamp (0: none).") var decodeEvery = 0
    @Option("duration", "SECONDS", in: 1...86_400, help: "Watch for this long.") var duration = 10.0
    @Option("fps", "N", in: 1...240, help: "The stream's frame rate (sizes the per-frame records).") var fps = 30
    @Option("captures", "PATH", help: "The host's --trace (repeatable): adds latency (capture → decodable) and checks decoded stamps.") var captures: [String] = []
    @Option("report", "PATH", help: "Write the JSON report here.") var report: String?

    func checkGiven() throws {
        if !$janus.isGiven { throw UsageError("--janus URL is needed: the Janus whose mountpoint to watch") }
        if $appGroup.isGiven == $mountpoint.isGiven { throw UsageError("give --app-group NAME or --mountpoint ID (one of them)") }
    }

    func validate() throws {
        try checkOutputs([("report", report.map { [$0] } ?? [])])
        _ = try janusURL(janus!)
        for path in captures where !FileManager.default.isReadableFile(atPath: path) { throw UsageError("cannot read --captures \(path)") }
    }

    func run() throws -> Int32 {
        let url = try janusURL(janus!)
        let id = appGroup.map(JanusMountpoint.id(for:)) ?? mountpoint!
        let share = appGroup?.name ?? "mountpoint \(id)"
        let groups = links.map { AudienceGroup(janus: url, mountpoint: id, share: share, viewers: viewers, link: $0, decodeEvery: decodeEvery) }
        let audience = try Audience(groups: groups, log: log)
        let result = try audience.run(seconds: duration, expectedFrameRate: fps, captures: captures) { stopSignals.load(ordering: .relaxed) > 0 }
        // A group that failed has said so in its one line.
        for group in result.groups where group.joined > 0 { log(Self.summary(group)) }
        if result.groups.contains(where: { $0.joined > 0 }) {
            log("subscribe: \(fixed(result.cpuMsPerViewerSecond, 2)) ms of CPU per viewer-second (\(fixed(result.cpuSeconds, 2)) s over \(fixed(result.seconds, 1)) s)")
        }
        if let path = report {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try OutputFile.write(String(decoding: try encoder.encode(result), as: UTF8.self), to: path)
        }
        // A group that failed (no viewer joined, Janus or the mountpoint gone) fails the run.
        return result.groups.contains { $0.joined == 0 || $0.error != nil } ? 1 : 0
    }

    /// One line per group: who watched, what they got.
    static func summary(_ group: AudienceReport.Group) -> String {
        let totals = group.totals
        var line = "subscribe: \(group.share) (\(group.link)): \(group.watching) of \(group.viewers) watching, "
            + "\(totals.framesDecodable) frames decodable, loss \(fixed(group.lossPercent, 2)) % (\(totals.recoveredPackets) packets recovered by NACK), "
            + "\(totals.freezes) freezes (\(fixed(group.freezesPerMinute, 1))/min), \(totals.keyframeWaits) keyframe waits, \(totals.plisSent) PLIs"
        if let first = group.firstFrameP50Ms { line += ", first frame p50 \(fixed(first, 0)) ms" }
        if let latency = group.latency { line += ", latency p50 \(fixed(latency.p50Ms, 1)) ms p99 \(fixed(latency.p99Ms, 1)) ms" }
        if group.decoders > 0 { line += ", \(totals.framesDecoded) decoded by \(group.decoders) (\(group.picturesMatched) stamps checked, \(group.picturesMismatched) wrong)" }
        return line
    }
}
