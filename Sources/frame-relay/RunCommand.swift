@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayRing
import FrameRelayRTP
import FrameRelayHTTP
import FrameRelayHost
import FrameRelayTools
import FrameRelayJanus

/// `frame-relay run` (the default): attach to App Group rings, take every
/// newest frame, encode, stream, record and serve the viewer.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "frame-relay [run]", abstract: "attach to App Group rings and take every newest frame, with live per-frame stats")

    @Option("app-group", "NAME", help: "App Group to attach to; one ring each.", default: AppGroup.defaultName, transform: { try AppGroup($0) })
    var appGroups: [AppGroup] = [.default]
    @Flag("verify", help: "Verify each frame's payload checksum (producers run with --checksum).") var verify
    @Option("work-ms", "MS", in: 0...10_000, help: "Simulated work per frame, to act as a slow consumer.") var workMilliseconds: Double?
    @Option("max-fps", "N", in: 1...RingLayout.maxRequestedFrameRate, help: "Ask producers to send at most N frames per second.") var maxFrameRate: Int?
    @Option("stop-after", "N", in: 1...UInt64.max, help: "Ask each producer to stop after N frames taken.") var stopAfter: UInt64?
    @Option("frames", "N", in: 1...UInt64.max, help: "Exit after N frames taken on every share.") var frames: UInt64?
    @Option("duration", "SECONDS", in: 0.001...1e9, help: "Exit after this many seconds.") var duration: Double?
    @Flag("exit-when-finished", help: "Exit once every producer has finished its broadcast.") var exitWhenFinished
    @Option("expect-frames", "N", in: 1...UInt64.max, help: "Exit 1 if any share took fewer than N frames (for CI: a run that moved nothing fails).") var expectFrames: UInt64?
    @Option("report", "PATH", help: "Write a JSON summary at exit: per share, counters and percentiles of every stage.") var report: String?
    @Option("trace", "PATH", help: "Write one JSON line per frame with its time at every stage (CLOCK_MONOTONIC ns).") var trace: String?
    @Flag("quiet", help: "No status line or log lines.") var quiet
    @Flag("exit-with-parent", help: "Stop when the process that started this one exits (as load-test --hosts runs it).") var exitWithParent
    @Flag("no-encode", help: "Only take frames (ring statistics), do not encode.") var noEncode
    @Option("bitrate", "KBPS", in: 1...100_000, help: "VP8 target bitrate (CBR), kilobits per second.") var bitrate = 2500
    @Option("frame-rate", "N", in: 1...240, help: "Frame rate the encoder's rate control plans for.") var frameRate = 30
    @Option("keyframe-interval", "SECONDS", in: 0...3600, help: "Periodic keyframes (0: only on request and size change).") var keyframeInterval = 3.0
    @Option("speed", "N", in: -16...16, help: "libvpx cpu-used: -6 is WebRTC's screen-share speed, -16 the fastest.") var speed = -6
    @Option("threads", "N", in: 1...16, help: "Encoder threads (default: by picture size, cores and number of shares).") var threads: Int?
    @Option("screen-content-mode", "N", in: 0...2, help: "libvpx screen-content mode: 2 as WebRTC shares screens, 0 as ffmpeg and GStreamer encode.") var screenContentMode = 2
    @Flag("encode-every-frame", help: "Encode every frame whole, as camera pipelines do (default: only what changed; a still screen sends nothing).") var encodeEveryFrame
    @Option("max-size", "WxH", help: "Scale larger frames down to fit, keeping the aspect ratio.", transform: { try parseSize($0, option: "max-size") })
    var maxSize: (width: Int, height: Int)?
    @Option("record", "FILE.ivf", help: "Record each share's VP8 stream as IVF (one per --app-group, in order).") var records: [String] = []
    @Option("rtp", "HOST:PORT", help: "Stream RTP (VP8, RFC 7741) here, RTCP to PORT+1; share N uses PORT+2N.", transform: { try Destination($0) })
    var destinations: [Destination] = []
    @Option("sdp", "FILE", help: "Write the SDP that receivers open (one per --app-group, for the first --rtp).") var sdpPaths: [String] = []
    @Option("packet-size", "BYTES", in: 64...9000, help: "Largest RTP packet.") var packetSize = 1200
    @Option("janus", "URL", help: "Stream each share into a mountpoint of this Janus (its HTTP API, http://HOST:8088/janus); shares are dealt across several in order.", transform: janusURL)
    var janus: [HTTPClient.URL] = []
    @Option("layers", "N", in: 1...Simulcast.maxLayers, help: "Simulcast layers into Janus, each half the width and height of the one above; with 2 or 3, each has two temporal layers (default: 2 where the picture is at least 640 wide; 1: the whole picture alone, no temporal layers).")
    var layers: Int?
    @Option("layer-bitrates", "KBPS,...", help: "Each layer's bitrate, smallest first (default: --bitrate on top, each below max(150, a quarter of the one above)).", transform: parseBitrates)
    var layerBitrates: [Int]?
    @Option("janus-admin-key", "KEY", help: "The streaming plugin's admin_key, where Janus has one.") var janusAdminKey: String?
    @Option("janus-secret", "SECRET", help: "Secret of the mountpoints this host creates (needed again to take them back or destroy them).") var janusSecret: String?
    @Option("http", "[ADDRESS:]PORT", help: "Serve the live viewer, /stream.ivf, /metrics, /stats.json, /snapshot.jpg (loopback unless an address is given).", transform: parseListenAddress)
    var http: ListenAddress?

    /// What the options say, for the host.
    private(set) var host = Host.Configuration(groups: [])

    func checkGiven() throws {
        if $noEncode.isGiven {
            let encodingOptions: [any OptionPresence] = [$bitrate, $frameRate, $keyframeInterval, $speed, $threads, $screenContentMode, $encodeEveryFrame, $maxSize, $records, $destinations, $sdpPaths, $packetSize, $http, $janus, $layers, $layerBitrates]
            if let given = encodingOptions.first(where: \.isGiven) { throw UsageError("--\(given.name) needs encoding: drop --no-encode") }
        }
        let streams = $destinations.isGiven || $janus.isGiven
        if !$janus.isGiven, let given = ([$janusAdminKey, $janusSecret] as [any OptionPresence]).first(where: \.isGiven) { throw UsageError("--\(given.name) needs --janus URL") }
        if !streams, $packetSize.isGiven { throw UsageError("--packet-size needs --rtp HOST:PORT or --janus URL") }
        if !streams, $sdpPaths.isGiven { throw UsageError("--sdp needs a destination: add --rtp HOST:PORT") }
        if !$janus.isGiven, let given = ([$layers, $layerBitrates] as [any OptionPresence]).first(where: \.isGiven) {
            throw UsageError("--\(given.name) needs --janus URL: layers are Janus's substreams (--rtp and recordings take the whole picture)")
        }
        if $layerBitrates.isGiven, $bitrate.isGiven { throw UsageError("--layer-bitrates sets the top layer's bitrate too: drop --bitrate") }
    }

    mutating func validate() throws {
        var seen = Set<AppGroup>()
        for group in appGroups where !seen.insert(group).inserted { throw UsageError("App Group \(group.name) given twice") }
        let count = appGroups.count
        var configuration = Host.Configuration(shares: appGroups.map { Host.Configuration.Share(group: $0, encoding: nil) })
        configuration.options.verifyChecksums = verify
        configuration.options.workNanoseconds = UInt64((workMilliseconds ?? 0) * 1e6)
        configuration.options.maxFrameRate = maxFrameRate
        configuration.options.stopAfter = stopAfter
        if !noEncode {
            var pipeline = SharePipeline.Options()
            pipeline.settings.bitrateKbps = bitrate
            pipeline.settings.frameRate = frameRate
            pipeline.settings.keyframeInterval = keyframeInterval
            pipeline.settings.speed = speed
            pipeline.settings.threads = threads
            pipeline.settings.screenContentMode = screenContentMode
            pipeline.settings.concurrentEncoders = count
            pipeline.encodeEveryFrame = encodeEveryFrame
            pipeline.maxSize = maxSize
            // Layers are for Janus's viewers; without Janus the whole picture alone.
            pipeline.simulcast = janus.isEmpty ? Simulcast(layers: 1) : Simulcast(layers: layers ?? layerBitrates?.count, bitrates: layerBitrates)
            if let top = layerBitrates?.last { pipeline.settings.bitrateKbps = top }
            do { try pipeline.simulcast.validate(top: pipeline.settings.bitrateKbps) } catch { throw UsageError("\(error)") }
            guard records.isEmpty || records.count == count else {
                throw UsageError("--record given \(records.count) times for \(count) App Groups: give one file per --app-group")
            }
            for index in appGroups.indices {
                configuration.shares[index].encoding = pipeline
                configuration.shares[index].encoding?.recordPath = records.isEmpty ? nil : records[index]
            }
        }
        // Every share's RTP and RTCP ports (PORT+2N, PORT+2N+1) must exist.
        for destination in destinations where destination.port + 2 * (count - 1) + 1 > 65535 {
            throw UsageError("--rtp \(destination): \(count) shares need ports \(destination.port)...\(destination.port + 2 * count - 1), past 65535")
        }
        configuration.janus = janus.map { JanusStreaming(url: $0, adminKey: janusAdminKey) }
        guard sdpPaths.isEmpty || sdpPaths.count == count else {
            throw UsageError("--sdp given \(sdpPaths.count) times for \(count) App Groups: give one file per --app-group")
        }
        // Share N's stream goes to each --rtp at PORT+2N, its SDP to the Nth --sdp.
        for index in appGroups.indices {
            configuration.shares[index].streaming.destinations = destinations.map { $0.withPortOffset(2 * index) }
            configuration.shares[index].streaming.maxPacketSize = packetSize
            configuration.shares[index].sdpPath = sdpPaths.isEmpty ? nil : sdpPaths[index]
        }
        configuration.janusSecret = janusSecret
        configuration.tracePath = trace
        configuration.http = http
        configuration.frames = frames
        configuration.duration = duration
        configuration.exitWhenFinished = exitWhenFinished
        configuration.reportPath = report
        configuration.quiet = quiet
        configuration.expectFrames = expectFrames
        try checkOutputs([("report", report.map { [$0] } ?? []), ("trace", trace.map { [$0] } ?? []), ("record", records), ("sdp", sdpPaths)])
        host = configuration
    }

    func run() throws -> Int32 {
        if exitWithParent, try !Signals.stopWithParent() { return 1 }
        return try Host(host, log: log).run(shouldStop: { Signals.stops.load(ordering: .relaxed) > 0 })
    }
}

/// `--layer-bitrates KBPS,...`: kilobits per second, smallest layer first.
func parseBitrates(_ text: String) throws -> [Int] {
    let rates = text.split(separator: ",", omittingEmptySubsequences: false).map { Int($0.trimmingCharacters(in: .whitespaces)) }
    guard (1...Simulcast.maxLayers).contains(rates.count), let all = rates as? [Int], all.allSatisfy({ (1...100_000).contains($0) }) else {
        throw UsageError("invalid --layer-bitrates \"\(text)\": expected 1 to \(Simulcast.maxLayers) bitrates in kbit/s, smallest layer first, such as 600,2500")
    }
    return all
}

/// `--janus URL`: Janus's HTTP API.
func janusURL(_ text: String) throws -> HTTPClient.URL {
    guard let url = HTTPClient.URL(text) else { throw UsageError("invalid --janus \"\(text)\": expected Janus's HTTP API, such as http://127.0.0.1:8088/janus") }
    return url
}
