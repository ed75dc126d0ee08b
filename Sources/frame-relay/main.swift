@preconcurrency import Glibc
import Foundation
import FrameRelay
import Synchronization

/// frame-relay: the host. It attaches to one or more App Groups' rings and
/// takes every newest frame; `frame-relay demo` runs a producer with it.

let stopSignals = Atomic<Int>(0)

func log(_ message: String) {
    FileHandle.standardError.write(Data("frame-relay: \(message)\n".utf8))
}

struct HostSettings {
    var groups: [AppGroup]
    var options: ShareReceiver.Options
    /// One pipeline's options per group; nil when not encoding.
    var encoding: [SharePipeline.Options]?
    /// One stream's options per group; nil when not streaming.
    var streaming: [RTPSession.Options]? = nil
    var sdpPaths: [String] = []
    /// Janus servers to stream into (shares dealt across them in order), and the mountpoints' secret.
    var janus: [JanusStreaming] = []
    var janusSecret: String? = nil
    var tracePath: String? = nil
    /// Where the viewer listens, if anywhere.
    var http: (address: String, port: Int)? = nil
    var frames: UInt64?
    var duration: Double?
    var exitWhenFinished: Bool
    var statsPath: String?
    var quiet: Bool
    /// Exit 1 when a share took fewer frames than this (a CI job that moved nothing fails).
    var expectFrames: UInt64? = nil
}

func declareHostOptions(_ parser: inout OptionParser) {
    parser.option("app-group", "NAME", default: "group.com.example.app.ScreenSharingExtension", repeatable: true, help: "App Group to attach to; one ring each.")
    parser.flag("verify", help: "Verify each frame's payload checksum (producers run with --checksum).")
    parser.option("work-ms", "MS", help: "Simulated work per frame, to act as a slow consumer.")
    parser.option("max-fps", "N", help: "Ask producers to send at most N frames per second.")
    parser.option("stop-after", "N", help: "Ask each producer to stop after N frames taken.")
    parser.option("frames", "N", help: "Exit after N frames taken on every share.")
    parser.option("duration", "SECONDS", help: "Exit after this many seconds.")
    parser.flag("exit-when-finished", help: "Exit once every producer has finished its broadcast.")
    parser.option("expect-frames", "N", help: "Exit 1 if any share took fewer than N frames (for CI: a run that moved nothing fails).")
    parser.option("report", "PATH", help: "Write a JSON summary at exit: per share, counters and percentiles of every stage.")
    parser.option("trace", "PATH", help: "Write one JSON line per frame with its time at every stage (CLOCK_MONOTONIC ns).")
    parser.flag("quiet", help: "No status line or log lines.")
    parser.flag("exit-with-parent", help: "Stop when the process that started this one exits (as load-test --hosts runs it).")
    parser.flag("no-encode", help: "Only take frames (ring statistics), do not encode.")
    parser.option("bitrate", "KBPS", default: "2500", help: "VP8 target bitrate (CBR), kilobits per second.")
    parser.option("frame-rate", "N", default: "30", help: "Frame rate the encoder's rate control plans for.")
    parser.option("keyframe-interval", "SECONDS", default: "3", help: "Periodic keyframes (0: only on request and size change).")
    parser.option("speed", "N", default: "-6", help: "libvpx cpu-used: -6 is WebRTC's screen-share speed, -16 the fastest.")
    parser.option("threads", "N", help: "Encoder threads (default: by picture size, cores and number of shares).")
    parser.option("screen-content-mode", "N", default: "2", help: "libvpx screen-content mode: 2 as WebRTC shares screens, 0 as ffmpeg and GStreamer encode.")
    parser.flag("encode-every-frame", help: "Encode every frame whole, as camera pipelines do (default: only what changed; a still screen sends nothing).")
    parser.option("max-size", "WxH", help: "Scale larger frames down to fit, keeping the aspect ratio.")
    parser.option("record", "FILE.ivf", repeatable: true, help: "Record each share's VP8 stream as IVF (one per --app-group, in order).")
    parser.option("rtp", "HOST:PORT", repeatable: true, help: "Stream RTP (VP8, RFC 7741) here, RTCP to PORT+1; share N uses PORT+2N.")
    parser.option("sdp", "FILE", repeatable: true, help: "Write the SDP that receivers open (one per --app-group, for the first --rtp).")
    parser.option("packet-size", "BYTES", default: "1200", help: "Largest RTP packet.")
    parser.option("janus", "URL", repeatable: true, help: "Stream each share into a mountpoint of this Janus (its HTTP API, http://HOST:8088/janus); shares are dealt across several in order.")
    parser.option("janus-admin-key", "KEY", help: "The streaming plugin's admin_key, where Janus has one.")
    parser.option("janus-secret", "SECRET", help: "Secret of the mountpoints this host creates (needed again to take them back or destroy them).")
    parser.option("http", "[ADDRESS:]PORT", help: "Serve the live viewer, /stream.ivf, /metrics, /stats.json, /snapshot.jpg (loopback unless an address is given).")
}

/// The host options that only mean something when encoding.
let encodingOptions = ["bitrate", "frame-rate", "keyframe-interval", "speed", "threads", "screen-content-mode", "encode-every-frame", "max-size", "record", "rtp", "sdp", "packet-size", "http", "janus"]

func hostSettings(_ parser: OptionParser) throws -> HostSettings {
    var groups: [AppGroup] = []
    for name in parser.strings("app-group") {
        let group = try AppGroup(name)
        guard !groups.contains(group) else { throw UsageError("App Group \(name) given twice") }
        groups.append(group)
    }
    var options = ShareReceiver.Options()
    options.verifyChecksums = parser.flag("verify")
    options.workNanoseconds = UInt64((try parser.double("work-ms", in: 0...10_000) ?? 0) * 1e6)
    options.maxFrameRate = try parser.int("max-fps", in: 1...RingLayout.maxRequestedFrameRate)
    options.stopAfter = try parser.int("stop-after", in: 1...Int.max).map(UInt64.init)
    var encoding: [SharePipeline.Options]?
    if !parser.flag("no-encode") {
        var pipeline = SharePipeline.Options()
        pipeline.settings.bitrateKbps = try parser.int("bitrate", in: 1...100_000)!
        pipeline.settings.frameRate = try parser.int("frame-rate", in: 1...240)!
        pipeline.settings.keyframeInterval = try parser.double("keyframe-interval", in: 0...3600)!
        pipeline.settings.speed = try parser.int("speed", in: -16...16)!
        pipeline.settings.threads = try parser.int("threads", in: 1...16)
        pipeline.settings.screenContentMode = try parser.int("screen-content-mode", in: 0...2)!
        pipeline.encodeEveryFrame = parser.flag("encode-every-frame")
        pipeline.settings.concurrentEncoders = groups.count
        if let text = parser.string("max-size") { pipeline.maxSize = try parseSize(text, option: "max-size") }
        let records = parser.strings("record")
        guard records.isEmpty || records.count == groups.count else {
            throw UsageError("--record given \(records.count) times for \(groups.count) App Groups: give one file per --app-group")
        }
        encoding = groups.indices.map { index in
            var options = pipeline
            options.recordPath = records.isEmpty ? nil : records[index]
            return options
        }
    } else if let option = encodingOptions.first(where: parser.given) {
        throw UsageError("--\(option) needs encoding: drop --no-encode")
    }
    var streaming: [RTPSession.Options]?
    let destinations = try parser.strings("rtp").map { try Destination($0) }
    let sdpPaths = parser.strings("sdp")
    // Every share's RTP and RTCP ports (PORT+2N, PORT+2N+1) must exist.
    for destination in destinations where destination.port + 2 * (groups.count - 1) + 1 > 65535 {
        throw UsageError("--rtp \(destination): \(groups.count) shares need ports \(destination.port)...\(destination.port + 2 * groups.count - 1), past 65535")
    }
    let janus = try parser.strings("janus").map { text in
        guard let url = HTTPClient.URL(text) else { throw UsageError("invalid --janus \"\(text)\": expected Janus's HTTP API, such as http://127.0.0.1:8088/janus") }
        return JanusStreaming(url: url, adminKey: parser.string("janus-admin-key"))
    }
    if janus.isEmpty, let option = ["janus-admin-key", "janus-secret"].first(where: parser.given) { throw UsageError("--\(option) needs --janus URL") }
    if destinations.isEmpty, janus.isEmpty, parser.given("packet-size") { throw UsageError("--packet-size needs --rtp HOST:PORT or --janus URL") }
    if !destinations.isEmpty || !janus.isEmpty {
        let packetSize = try parser.int("packet-size", in: 64...9000)!
        streaming = groups.indices.map { index in
            var options = RTPSession.Options()
            options.destinations = destinations.map { $0.withPortOffset(2 * index) }
            options.maxPacketSize = packetSize
            return options
        }
        guard sdpPaths.isEmpty || sdpPaths.count == groups.count else {
            throw UsageError("--sdp given \(sdpPaths.count) times for \(groups.count) App Groups: give one file per --app-group")
        }
    } else if !sdpPaths.isEmpty {
        throw UsageError("--sdp needs a destination: add --rtp HOST:PORT")
    }
    var settings = HostSettings(
        groups: groups, options: options, encoding: encoding, frames: try parser.int("frames", in: 1...Int.max).map(UInt64.init),
        duration: try parser.double("duration", in: 0.001...1e9), exitWhenFinished: parser.flag("exit-when-finished"),
        statsPath: parser.string("report"), quiet: parser.flag("quiet"), expectFrames: try parser.int("expect-frames", in: 1...Int.max).map(UInt64.init))
    settings.streaming = streaming
    settings.sdpPaths = sdpPaths
    settings.janus = janus
    settings.janusSecret = parser.string("janus-secret")
    settings.tracePath = parser.string("trace")
    settings.http = try parser.string("http").map(parseListenAddress)
    try checkOutputs(parser, ["report", "trace", "record", "sdp"])
    return settings
}

/// Runs the host until a stop condition; returns the exit status.
/// `onReady` runs once everything is set up (files open, ports bound), before the first frame is taken.
func runHost(
    _ s: HostSettings, onReady: () throws -> Void = {}, extraStop: @escaping () -> Bool = { false }, onTick: ([ShareStats]) -> Void = { _ in }
) throws -> Int32 {
    let stop = Atomic<Bool>(false)
    let failure = Locked<String?>(nil)
    let quiet = s.quiet
    // Janus first: each share's mountpoint says where its RTP goes.
    let mountpoints = try openMountpoints(s)
    // Janus alone is a stream too: a session per share for it.
    var streaming = s.streaming ?? (mountpoints.isEmpty ? nil : s.groups.map { _ in RTPSession.Options() })
    for (index, mountpoint) in mountpoints.enumerated() {
        streaming?[index].destinations.append(try Destination("\(mountpoint.host.contains(":") ? "[\(mountpoint.host)]" : mountpoint.host):\(mountpoint.rtpPort)"))
        if !quiet {
            log("\(s.groups[index]): Janus mountpoint \(mountpoint.id) on \(mountpoint.janus)" + (mountpoint.reclaimed ? " (taken back from an earlier host)" : "") + ", RTP to port \(mountpoint.rtpPort)")
        }
    }
    defer { closeMountpoints(mountpoints, s) }
    let janusWatch = mountpoints.isEmpty ? nil : watchMountpoints(mountpoints, s)
    defer { janusWatch?.running.store(false, ordering: .relaxed) }
    let receivers = s.groups.indices.map { index in
        var options = s.options
        options.janus = mountpoints.indices.contains(index) ? mountpoints[index] : nil
        return ShareReceiver(appGroup: s.groups[index], options: options, trace: s.tracePath != nil, log: { message in if !quiet { log(message) } })
    }
    let traceFile = try s.tracePath.map { FileHandle(fileDescriptor: try OutputFile.open($0).release(), closeOnDealloc: true) }
    /// Appends every pending per-frame record as a JSON line (off the frame path).
    func drainTraces() {
        guard let traceFile else { return }
        var text = ""
        for receiver in receivers {
            receiver.trace?.drain { text += $0.jsonLine(share: receiver.appGroup.name) }
        }
        if !text.isEmpty { traceFile.write(Data(text.utf8)) }
    }
    let transports = try streaming.map { try $0.map { try RTPSession(options: $0) } }
    for (index, path) in s.sdpPaths.enumerated() {
        guard let session = transports?[index] else { break }
        try OutputFile.write(SDP.vp8(ssrc: session.ssrc, destination: session.options.destinations[0]), to: path)
    }
    if let transports, !quiet {
        for (group, session) in zip(s.groups, transports) {
            log("\(group): RTP to " + session.options.destinations.map(\.description).joined(separator: ", ") + ", SSRC \(session.ssrc), RTCP on port \(session.rtcpPort)")
        }
    }
    let broadcasts = s.http == nil ? nil : receivers.map { _ in FrameBroadcast() }
    // Pipelines before the viewer: bad settings and unwritable recordings fail before any frame.
    let pipelines = try s.encoding.map {
        try $0.enumerated().map { index, options in try SharePipeline(options: options, rtp: transports?[index], viewers: broadcasts?[index]) }
    }
    if let http = s.http, let broadcasts {
        let viewer = try ViewerServer(address: http.address, port: http.port, shares: zip(receivers, broadcasts).map { receiver, broadcast in
            ViewerServer.Share(appGroup: receiver.appGroup.name, broadcast: broadcast, keyframes: receiver.keyframes, stats: { receiver.snapshot })
        })
        viewer.start()
        log("viewer: \(viewer.url)   (ffplay \(viewer.url)stream.ivf)")
        for (index, mountpoint) in mountpoints.enumerated() {
            log("viewer over WebRTC through Janus: \(viewer.url)?mode=webrtc&share=\(index)   (mountpoint \(mountpoint.id))")
        }
    }
    try onReady()
    var threads: [Thread] = []
    let done = Atomic<Int>(0)
    for (index, receiver) in receivers.enumerated() {
        let pipeline = UncheckedBox(pipelines?[index])
        let thread = Thread {
            do {
                try receiver.run(shouldStop: { stop.load(ordering: .relaxed) }, pipeline: pipeline.value)
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
            done.wrappingAdd(1, ordering: .releasing)
        }
        thread.name = "share \(receiver.appGroup)"
        threads.append(thread)
        thread.start()
    }
    if !quiet { log("waiting for frames on " + s.groups.map(\.name).joined(separator: ", ")) }
    let status = StatusLine(enabled: !quiet)
    let start = MonotonicClock.now()
    var sendsFailing = Set<String>()
    var hinted = false
    var bottlenecksNamed = Set<String>()
    while true {
        MonotonicClock.sleep(nanoseconds: 100_000_000)
        let snapshots = receivers.map(\.snapshot)
        // After 3 s without a producer, name the rings that are here: the usual cause is an App Group spelt differently on one side.
        if !hinted, !quiet, MonotonicClock.now() &- start >= 3_000_000_000 {
            hinted = true
            for share in snapshots where share.producerAttaches == 0 {
                if let group = try? AppGroup(share.appGroup) { log(RingDirectory.hint(for: group)) }
            }
        }
        // A full socket buffer (EAGAIN, ENOBUFS) drops a burst; anything else means the destination is wrong.
        for share in snapshots {
            guard let code = share.transport?.lastSendError, code != EAGAIN, code != ENOBUFS, sendsFailing.insert(share.appGroup).inserted else { continue }
            log("\(share.appGroup): RTP packets are not going out: sendto failed with \(Errno(code)); check --rtp")
        }
        // A share dropping more than 5 % once the producer has sent 3 s: say where the host's time goes.
        for share in snapshots where !quiet && !share.producerFinished && share.totalWritten >= 90 && share.totalDropped * 20 > share.totalWritten {
            guard bottlenecksNamed.insert(share.appGroup).inserted else { continue }
            let seconds = Double(MonotonicClock.now() &- start) / 1e9
            var work = ""
            if let encoded = share.encoded {
                work = "; per frame: convert p50 \(fixed(encoded.convert.p50 / 1000, 2)) ms, encode p50 \(fixed(encoded.encode.p50 / 1000, 2)) ms (\(encoded.threads) thread\(encoded.threads == 1 ? "" : "s")) at \(encoded.width)x\(encoded.height)"
            }
            log("\(share.appGroup): \(fixed(Double(share.totalDropped) * 100 / Double(share.totalWritten), 0)) % of frames dropped (the newest wins): "
                + "the host takes \(fixed(Double(share.taken) / seconds, 1)) frames/s of the producer's \(fixed(Double(share.totalWritten) / seconds, 1))\(work); "
                + "lower the producer's --fps or size, use --max-size, or give the host more CPU")
        }
        status.update(snapshots)
        drainTraces()
        onTick(snapshots)
        if failure.withLock({ $0 }) != nil { break }
        if stopSignals.load(ordering: .relaxed) > 0 || extraStop() { break }
        if let duration = s.duration, Double(MonotonicClock.now() &- start) / 1e9 >= duration { break }
        if let frames = s.frames, snapshots.allSatisfy({ $0.taken >= frames }) { break }
        if s.exitWhenFinished, receivers.allSatisfy(\.producerFinished) { break }
    }
    stop.store(true, ordering: .relaxed)
    while done.load(ordering: .acquiring) < receivers.count { MonotonicClock.sleep(nanoseconds: 5_000_000) }
    status.clear()
    drainTraces()
    try? traceFile?.close()
    let finals = receivers.map(\.snapshot)
    if !quiet {
        for share in finals { log("summary: " + StatusLine.format(share)) }
    }
    if let path = s.statsPath {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try OutputFile.write(String(decoding: try encoder.encode(finals), as: UTF8.self), to: path)
    }
    if let message = failure.withLock({ $0 }) {
        log("error: \(message)")
        return 1
    }
    if let expected = s.expectFrames, let short = finals.first(where: { $0.taken < expected }) {
        log("error: \(short.appGroup) took \(short.taken) frames, fewer than --expect-frames \(expected)"
            + (short.producerAttaches == 0 ? " (no producer attached: is broadcast-sim running with this --app-group?)" : ""))
        return 1
    }
    return 0
}

/// Each share's Janus mountpoint (none without --janus); on an error from
/// any Janus, the ones already opened are destroyed before it is thrown.
func openMountpoints(_ s: HostSettings) throws -> [JanusMountpoint] {
    guard !s.janus.isEmpty else { return [] }
    var opened: [JanusMountpoint] = []
    do {
        for (index, group) in s.groups.enumerated() {
            opened.append(try s.janus[index % s.janus.count].openMountpoint(for: group, secret: s.janusSecret))
        }
    } catch {
        closeMountpoints(opened, s)
        throw error
    }
    return opened
}

/// Asks every 2 s, off the frame path, whether each Janus still has its
/// mountpoint, and says once when one stops answering (the share's other
/// outputs go on) and once when it answers again.
func watchMountpoints(_ mountpoints: [JanusMountpoint], _ s: HostSettings) -> JanusWatch {
    let watch = JanusWatch()
    let janus = s.janus, secret = s.janusSecret, quiet = s.quiet
    Thread {
        var failing = Set<Int>()
        while watch.running.load(ordering: .relaxed) {
            for (index, mountpoint) in mountpoints.enumerated() {
                do {
                    try janus[index % janus.count].check(mountpoint, secret: secret)
                    if failing.remove(index) != nil, !quiet { log("\(mountpoint.name): Janus \(mountpoint.janus) answers again") }
                } catch {
                    if failing.insert(index).inserted, !quiet { log("\(mountpoint.name): \(error); the share's other outputs go on") }
                }
            }
            for _ in 0..<20 where watch.running.load(ordering: .relaxed) { usleep(100_000) }
        }
    }.start()
    return watch
}

/// Tells ``watchMountpoints(_:_:)`` to stop.
final class JanusWatch: Sendable {
    let running = Atomic<Bool>(true)
}

/// Destroys the mountpoints this host opened; a Janus that is gone is said once each.
func closeMountpoints(_ mountpoints: [JanusMountpoint], _ s: HostSettings) {
    for (index, mountpoint) in mountpoints.enumerated() {
        do {
            try s.janus[index % s.janus.count].destroy(mountpoint, secret: s.janusSecret)
        } catch {
            log("\(mountpoint.name): could not destroy Janus mountpoint \(mountpoint.id): \(error)")
        }
    }
}

/// Checks every output file the options name (see ``OutputFile/check(_:option:)``),
/// and that no file is named twice.
func checkOutputs(_ parser: OptionParser, _ options: [String]) throws {
    var seen: [String: String] = [:]
    for option in options where parser.given(option) {
        for path in parser.strings(option) {
            try OutputFile.check(path, option: option)
            var info = stat()
            if stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFCHR { continue }  // /dev/null takes any number
            let key = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
            if let earlier = seen[key] { throw UsageError("\(path) is named by --\(earlier) and --\(option): give each output its own file") }
            seen[key] = option
        }
    }
}

/// Parses `PORT` or `ADDRESS:PORT` for a listening socket (loopback by default).
func parseListenAddress(_ text: String) throws -> (address: String, port: Int) {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    let address = parts.count == 2 ? String(parts[0]) : "127.0.0.1"
    guard parts.count <= 2, let port = Int(parts.last ?? ""), (1...65535).contains(port) else {
        throw UsageError("invalid --http \"\(text)\": expected PORT or ADDRESS:PORT with a port in 1...65535")
    }
    return (address.isEmpty ? "127.0.0.1" : address, port)
}

/// Another of this package's executables, from the directory this one was started from.
func siblingExecutable(_ name: String) throws -> URL {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    let me = length > 0 ? String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    let url = URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent(name)
    guard access(url.path, X_OK) == 0 else { throw UsageError("\(name) not found next to frame-relay (\(url.path)); build the package first") }
    return url
}

/// Hands a value to one thread that alone uses it from then on.
struct UncheckedBox<T>: @unchecked Sendable {
    // @unchecked Sendable: each box is moved to exactly one share thread.
    let value: T
    init(_ value: T) { self.value = value }
}

/// The subcommands, as `frame-relay --help` and `frame-relay help` list them.
let subcommands = """
    Subcommands (frame-relay SUBCOMMAND --help for each):
      run (default)   attach to App Group rings; encode, stream, record, view
      demo            a producer and this host on built-in defaults
      receive         receive our RTP, decode it, measure glass-to-glass
      load-test       many shares at once: drops, fps, latency, CPU
      janus           run a Janus of our own for --janus (tests, demos)
      help            this help
    """

func runParser() -> OptionParser {
    var parser = OptionParser(command: "frame-relay [run]", summary: "attach to App Group rings and take every newest frame, with live per-frame stats")
    parser.epilog = subcommands + "\n  --version                   Print the version."
    declareHostOptions(&parser)
    return parser
}

func runCommand() throws -> Int32 {
    var arguments = Array(CommandLine.arguments.dropFirst())
    if arguments.first == "--version" || arguments.first == "version" {
        print("frame-relay \(FrameRelayVersion.string)")
        return 0
    }
    let subcommand = arguments.first.flatMap { $0.hasPrefix("-") ? nil : $0 } ?? "run"
    if !arguments.isEmpty, !arguments[0].hasPrefix("-") { arguments.removeFirst() }
    switch subcommand {
    case "help":
        print(runParser().usage)
        return 0
    case "run":
        var parser = runParser()
        try parser.parse(arguments)
        let settings = try hostSettings(parser)
        if parser.flag("exit-with-parent"), try !Signals.stopWithParent() { return 1 }
        return try runHost(settings)
    case "demo":
        return try runDemo(arguments)
    case "receive":
        return try runReceive(arguments)
    case "load-test":
        return try runLoadTest(arguments)
    case "janus":
        return try runJanus(arguments)
    default:
        throw UsageError("unknown subcommand \"\(subcommand)\": run, demo, receive, load-test, janus, help (see --help)")
    }
}

Signals.resetInherited()
for stop in [SIGINT, SIGTERM, SIGHUP] { signal(stop) { _ in stopSignals.wrappingAdd(1, ordering: .relaxed) } }
signal(SIGPIPE, SIG_IGN)
do {
    exit(try runCommand())
} catch let help as HelpRequested {
    print(help.text)
    exit(0)
} catch {
    log("error: \(error)")
    exit(1)
}
