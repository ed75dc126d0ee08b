@preconcurrency import Glibc
import Foundation
import FrameRelay

/// `frame-relay demo`: starts broadcast-sim (synthetic screen, or the X11
/// desktop) and the host with live stats, and ends both on Ctrl-C.
func runDemo(_ arguments: [String]) throws -> Int32 {
    var parser = OptionParser(command: "frame-relay demo", summary: "run a broadcast-sim producer and the host together, with live stats")
    parser.option("source", "KIND", default: "pattern", help: "pattern (synthetic screen) or x11 (the desktop in $DISPLAY).")
    parser.option("size", "WxH", default: "1280x720", help: "Picture size of the synthetic screen.")
    parser.option("fps", "N", default: "30", help: "Frames per second.")
    parser.option("format", "FMT", default: "nv12", help: "Pixel format the producer sends.")
    parser.option("app-group", "NAME", default: "group.com.example.app.ScreenSharingExtension", help: "App Group both sides use.")
    parser.option("duration", "SECONDS", help: "Stop after this many seconds (default: until Ctrl-C).")
    parser.option("report", "PATH", help: "Write the host's statistics as JSON here at exit.")
    parser.option("trace", "PATH", help: "Write one JSON line per frame with its time at every stage (CLOCK_MONOTONIC ns).")
    parser.option("keyframe-interval", "SECONDS", default: "3", help: "Periodic keyframes (0: only when a receiver or viewer asks).")
    parser.option("http", "[ADDRESS:]PORT", default: "8080", help: "Where the live viewer listens (loopback unless an address is given).")
    parser.option("rtp", "HOST:PORT", help: "Also stream RTP here (RTCP to PORT+1), with an SDP in demo.sdp.")
    parser.flag("janus", help: "Start a Janus of our own (Debian's janus) and stream into it, for WebRTC viewers.")
    parser.option("janus-port", "PORT", help: "Port of that Janus's HTTP API (default: a free one).")
    try parser.parse(arguments)
    let group = try AppGroup(parser.string("app-group")!)
    // The producer's options are checked here, so that a bad one fails before anything starts.
    let source = parser.string("source")!
    guard ["pattern", "x11"].contains(source) else { throw UsageError("invalid --source \"\(source)\": one of pattern, x11") }
    _ = try parseSize(parser.string("size")!, option: "size")
    _ = try parser.double("fps", in: 1...1000)
    guard PixelFormat(name: parser.string("format")!) != nil else {
        throw UsageError("invalid --format \"\(parser.string("format")!)\": one of bgra, nv12, i420, jpeg")
    }
    let duration = try parser.double("duration", in: 0.001...1e9)
    let http = try parseListenAddress(parser.string("http")!)
    let rtp = try parser.string("rtp").map { try Destination($0) }
    try checkOutputs(parser, ["report", "trace"])
    if rtp != nil { try OutputFile.check("demo.sdp", option: "rtp") }
    let simulator = try siblingExecutable("broadcast-sim")
    let janusPort = try parser.int("janus-port", in: 1...65535)
    if janusPort != nil, !parser.flag("janus") { throw UsageError("--janus-port needs --janus") }
    // Janus listens where the viewer does: on loopback, or everywhere for viewers on other machines.
    let janus = parser.flag("janus") ? try JanusServer(address: http.address == "127.0.0.1" ? "127.0.0.1" : "0.0.0.0", port: janusPort) : nil
    defer { janus?.stop() }

    let producer = Process()
    producer.executableURL = simulator
    producer.arguments = [
        "--app-group", group.name, "--source", source, "--size", parser.string("size")!,
        "--fps", parser.string("fps")!, "--format", parser.string("format")!, "--exit-with-parent",
    ]
    var encoding = SharePipeline.Options()
    encoding.settings.keyframeInterval = try parser.double("keyframe-interval", in: 0...3600)!
    var settings = HostSettings(
        groups: [group], options: ShareReceiver.Options(), encoding: [encoding], frames: nil, duration: duration,
        exitWhenFinished: false, statsPath: parser.string("report"), quiet: false)
    settings.http = http
    settings.tracePath = parser.string("trace")
    // Janus alone needs no options here: the host makes a session for each mountpoint.
    if let rtp {
        var options = RTPSession.Options()
        options.destinations = [rtp]
        settings.streaming = [options]
        settings.sdpPaths = ["demo.sdp"]
    }
    if let janus {
        log("demo: Janus (pid \(janus.pid)) at \(janus.url)")
        settings.janus = [JanusStreaming(url: janus.url)]
    }
    // Whatever happens to the host, the producer ends with it (and removes its ring).
    defer {
        if producer.isRunning { kill(producer.processIdentifier, SIGTERM) }
        if producer.processIdentifier != 0 { producer.waitUntilExit() }
    }
    var producerEnded = false
    // The producer starts once the viewer's port and the RTP socket are bound, so a taken port fails first.
    let status = try runHost(settings, onReady: {
        try producer.run()
        log("demo: broadcast-sim (pid \(producer.processIdentifier)) → \(group) → host; Ctrl-C to stop")
        if let rtp { log("demo: RTP to \(rtp); play it with: ffplay -protocol_whitelist file,udp,rtp demo.sdp") }
    }, extraStop: {
        producerEnded = !producer.isRunning
        return producerEnded
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
