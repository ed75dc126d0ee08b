@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing
import FrameRelayRTP
import FrameRelayHTTP
import FrameRelayHost
import FrameRelayTools
import FrameRelayJanus

/// `frame-relay demo`: starts broadcast-sim (synthetic screen, or the X11
/// desktop) and the host with live stats, and ends both on Ctrl-C.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "frame-relay demo", abstract: "run a broadcast-sim producer and the host together, with live stats")

    @Option("source", "KIND", help: "pattern (synthetic screen), x11 (the desktop in $DISPLAY) or screencast (your Wayland desktop: xdg-desktop-portal's chooser once, or GNOME's Mutter with no dialog; see --cast).", default: "pattern", transform: { text in
        guard ["pattern", "x11", "screencast"].contains(text) else { throw UsageError("invalid --source \"\(text)\": one of pattern, x11, screencast") }
        return text
    })
    var source = "pattern"
    @Option("cast", "API", help: "With --source screencast: portal, mutter or auto (mutter on GNOME, else portal), as broadcast-sim takes it.", default: "auto", transform: { text in
        guard ["auto", "portal", "mutter"].contains(text) else { throw UsageError("invalid --cast \"\(text)\": one of auto, portal, mutter") }
        return text
    })
    var cast = "auto"
    @Option("surface", "KIND", help: "With --source screencast: monitor or window.", default: "monitor", transform: { text in
        guard ["monitor", "window"].contains(text) else { throw UsageError("invalid --surface \"\(text)\": one of monitor, window") }
        return text
    })
    var surface = "monitor"
    @Option("content", "MODEL", help: "What the synthetic screen shows: " + contentHelp, default: "pattern", transform: parseContent)
    var content = "pattern"
    @Option("size", "WxH", help: "Picture size of the synthetic screen.", default: "1280x720", transform: { try parseSize($0, option: "size") })
    var size = (width: 1280, height: 720)
    @Option("fps", "N", in: 1...1000, help: "Frames per second.") var fps = 30.0
    @Option("format", "FMT", help: "Pixel format the producer sends.") var format = PixelFormat.nv12
    @Option("app-group", "NAME", help: "App Group both sides use.", default: AppGroup.defaultName, transform: { try AppGroup($0) })
    var group = AppGroup.default
    @Option("duration", "SECONDS", in: 0.001...1e9, help: "Stop after this many seconds (default: until Ctrl-C).") var duration: Double?
    @Option("report", "PATH", help: "Write the host's statistics as JSON here at exit.") var report: String?
    @Option("trace", "PATH", help: "Write one JSON line per frame with its time at every stage (CLOCK_MONOTONIC ns).") var trace: String?
    @Option("keyframe-interval", "SECONDS", in: 0...3600, help: "Periodic keyframes (0: only when a receiver or viewer asks).") var keyframeInterval = 3.0
    @Option("http", "[ADDRESS:]PORT", help: "Where the live viewer listens (loopback unless an address is given).", default: "8080", transform: parseListenAddress)
    var http = ListenAddress(port: 8080)
    @Option("rtp", "HOST:PORT", help: "Also stream RTP here (RTCP to PORT+1), with an SDP in demo.sdp.", transform: { try Destination($0) })
    var rtp: Destination?
    @Flag("quiet", help: "No status line and no host log lines (the viewer's address, errors and the demo's own lines are still said).") var quiet
    @Flag("janus", help: "Start a Janus of our own (Debian's janus) and stream into it, for WebRTC viewers.") var janus
    @Option("janus-port", "PORT", in: 1...65535, help: "Port of that Janus's HTTP API (default: a free one).") var janusPort: Int?
    @Option("layers", "N", in: 1...Simulcast.maxLayers, help: "With --janus, simulcast layers (default: 2 where the picture is at least 640 wide; 1: the whole picture alone).")
    var layers: Int?
    @Option("bitrate", "KBPS", in: 1...100_000, help: "VP8 target bitrate (CBR), kilobits per second: the whole picture's, with layers.") var bitrate = 2500
    @Option("layer-bitrates", "KBPS,...", help: "With --janus, each layer's bitrate, smallest first (default: --bitrate on top, each below max(150, a quarter of the one above)).", transform: parseBitrates)
    var layerBitrates: [Int]?

    /// The layers into Janus (the whole picture alone without it), and the top's bitrate.
    var simulcast: (layers: Simulcast, top: Int) {
        (janus ? Simulcast(layers: layers ?? layerBitrates?.count, bitrates: layerBitrates) : Simulcast(layers: 1), layerBitrates?.last ?? bitrate)
    }

    func validate() throws {
        do { try simulcast.layers.validate(top: simulcast.top) } catch { throw UsageError("\(error)") }
        if source != "screencast", $cast.isGiven || $surface.isGiven {
            throw UsageError("--\($cast.isGiven ? "cast" : "surface") is for --source screencast, not --source \(source)")
        }
        if source != "pattern", $size.isGiven { throw UsageError("--size is the synthetic screen's: --source \(source) has the size of its desktop") }
        if source != "pattern", $content.isGiven { throw UsageError("--content is the synthetic screen's: --source \(source) shows its desktop") }
        try checkOutputs([("report", report.map { [$0] } ?? []), ("trace", trace.map { [$0] } ?? [])])
        if rtp != nil { try OutputFile.check("demo.sdp", option: "rtp") }
    }

    func checkGiven() throws {
        if $janusPort.isGiven, !$janus.isGiven { throw UsageError("--janus-port needs --janus") }
        if !$janus.isGiven, let given = ([$layers, $layerBitrates] as [any OptionPresence]).first(where: \.isGiven) {
            throw UsageError("--\(given.name) needs --janus: layers are Janus's substreams")
        }
        if $layerBitrates.isGiven, $bitrate.isGiven { throw UsageError("--layer-bitrates sets the top layer's bitrate too: drop --bitrate") }
    }

    func run() throws -> Int32 {
        let simulator = try siblingExecutable("broadcast-sim")
        // Janus's API listens where the viewer does: loopback, one address, or every one (0.0.0.0).
        let janusServer = janus ? try JanusServer(address: http.address, port: janusPort) : nil
        defer { janusServer?.stop() }
        let producer = Process()
        producer.executableURL = simulator
        producer.arguments = [
            "--app-group", group.name, "--source", source, "--fps", "\(fps)", "--format", "\(format)", "--exit-with-parent",
        ] + (source == "pattern" ? ["--size", "\(size.width)x\(size.height)"] : [])
          + (content == "pattern" ? [] : ["--content", content])
          + (source == "screencast" ? ["--cast", cast, "--surface", surface] : [])
        var encoding = SharePipeline.Options()
        encoding.settings.keyframeInterval = keyframeInterval
        // The encoder plans for the producer's rate (its rate control, temporal layers and gathering go by it).
        encoding.settings.frameRate = min(240, Int(fps.rounded(.up)))
        // Into Janus, layers for its viewers to pick from (as `frame-relay --janus` sends them).
        (encoding.simulcast, encoding.settings.bitrateKbps) = simulcast
        var share = Host.Configuration.Share(group: group, encoding: encoding)
        if let rtp {
            share.streaming.destinations = [rtp]
            share.sdpPath = "demo.sdp"
        }
        var settings = Host.Configuration(shares: [share])
        settings.duration = duration
        settings.reportPath = report
        settings.http = http
        settings.tracePath = trace
        settings.quiet = quiet
        // Janus alone needs no options here: the host adds each mountpoint to its share's stream.
        if let janusServer {
            log("demo: Janus (pid \(janusServer.pid)) at \(janusServer.place)")
            settings.janus = [JanusStreaming(url: janusServer.url)]
        }
        // Whatever happens to the host, the producer ends with it (and removes its ring).
        defer {
            if producer.isRunning { kill(producer.processIdentifier, SIGTERM) }
            if producer.processIdentifier != 0 { producer.waitUntilExit() }
        }
        var producerEnded = false
        // The producer starts once the viewer's port and the RTP socket are bound, so a taken port fails first.
        let status = try Host(settings, log: log).run(shouldStop: {
            producerEnded = !producer.isRunning
            return Signals.stops.load(ordering: .relaxed) > 0 || producerEnded
        }, onReady: {
            try producer.run()
            log("demo: broadcast-sim (pid \(producer.processIdentifier)) → \(group) → host; Ctrl-C to stop")
            if let rtp { log("demo: RTP to \(rtp); play it with: ffplay -protocol_whitelist file,udp,rtp demo.sdp") }
        })
        guard producerEnded else { return status }
        // The producer stopped on its own: its error line is above; say how it ended.
        producer.waitUntilExit()
        if producer.terminationReason == .uncaughtSignal {
            log("error: broadcast-sim was killed by signal \(producer.terminationStatus)")
            return 1
        }
        if producer.terminationStatus != 0 { log("error: broadcast-sim exited with status \(producer.terminationStatus)") }
        return producer.terminationStatus == 0 ? status : 1
    }
}
