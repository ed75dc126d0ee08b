@preconcurrency import Glibc
import FoundationEssentials
import FrameRelay
import Synchronization

/// broadcast-sim: a producer process that behaves like a ReplayKit broadcast
/// upload extension and writes frames into the App Group's ring.

let pauseToggles = Atomic<Int>(0)
let stopSignals = Atomic<Int>(0)

struct Switch {
    var frame: UInt64
    var width: Int
    var height: Int
    var format: PixelFormat?
    var orientation: Orientation?
}

struct Settings {
    var appGroup: String
    var source: String
    var content: ContentScreen.Content?
    var file: String?
    var display: String?
    var width: Int
    var height: Int
    var fps: Double
    var format: PixelFormat
    var orientation: Orientation
    var frames: UInt64?
    var duration: Double?
    var pauses: [(at: Double, length: Double)]
    var switches: [Switch]
    var checksum: Bool
    var statsPath: String?
    var exitWithParent: Bool
    var quiet: Bool
}

func parseSettings() throws -> Settings {
    var parser = OptionParser(command: "broadcast-sim", summary: "a ReplayKit-like broadcast extension that writes frames into an App Group's shared-memory ring")
    parser.option("app-group", "NAME", default: "group.com.example.app.ScreenSharingExtension", help: "App Group shared with the host.")
    parser.option("source", "KIND", default: "pattern", help: "pattern (synthetic screen), file (Y4M), or x11 (desktop capture).")
    parser.option("content", "MODEL", help: "Screen content like real use instead of the pattern: " + ContentScreen.Content.allCases.map(\.rawValue).joined(separator: ", ") + ".")
    parser.option("file", "PATH", help: "Y4M file for --source file (loops at its end).")
    parser.option("display", "DISPLAY", help: "X display for --source x11 (default $DISPLAY).")
    parser.option("size", "WxH", default: "1280x720", help: "Picture size for the synthetic screen.")
    parser.option("preset", "DEVICE", help: "Device screen size: " + DevicePreset.allCases.map(\.rawValue).joined(separator: ", ") + ".")
    parser.option("fps", "N", default: "30", help: "Frames per second, 1...1000.")
    parser.option("format", "FMT", default: "nv12", help: "Pixel format: bgra, nv12, i420, jpeg.")
    parser.option("orientation", "O", default: "up", help: "Orientation the frames are marked with: " + Orientation.allCases.map(\.description).joined(separator: ", ") + ".")
    parser.option("frames", "N", help: "Stop after N frames.")
    parser.option("duration", "SECONDS", help: "Stop after this many seconds.")
    parser.option("pause", "AT:FOR", repeatable: true, help: "Pause at AT seconds for FOR seconds. SIGUSR1 toggles pause live.")
    parser.option("switch", "FRAME:WxH[:FMT[:O]]", repeatable: true, help: "From FRAME on, send this size (and format, orientation).")
    parser.flag("checksum", help: "Store a payload checksum with each frame (the host can verify it).")
    parser.option("report", "PATH", help: "Write counters as JSON here at exit.")
    parser.flag("exit-with-parent", help: "Finish when the process that started this one exits (as frame-relay demo and load-test run it).")
    parser.flag("quiet", help: "No log lines.")
    parser.epilog = "  --version                   Print the version."
    if CommandLine.arguments.dropFirst().first == "--version" { throw HelpRequested(text: "broadcast-sim \(FrameRelayVersion.string)") }
    try parser.parse(Array(CommandLine.arguments.dropFirst()))

    let group = parser.string("app-group")!
    _ = try AppGroup(group)
    var size = try parseSize(parser.string("size")!, option: "size")
    if let preset = parser.string("preset") {
        guard !parser.given("size") else { throw UsageError("--size and --preset both set the picture size: give one") }
        guard let device = DevicePreset(rawValue: preset) else {
            throw UsageError("unknown --preset \"\(preset)\": one of " + DevicePreset.allCases.map(\.rawValue).joined(separator: ", "))
        }
        size = device.size
    }
    guard let format = PixelFormat(name: parser.string("format")!) else {
        throw UsageError("invalid --format \"\(parser.string("format")!)\": one of bgra, nv12, i420, jpeg")
    }
    guard let orientation = Orientation(name: parser.string("orientation")!) else {
        throw UsageError("invalid --orientation \"\(parser.string("orientation")!)\": one of " + Orientation.allCases.map(\.description).joined(separator: ", "))
    }
    // --file alone means --source file.
    let source = parser.given("source") || !parser.given("file") ? parser.string("source")! : "file"
    guard ["pattern", "file", "x11"].contains(source) else { throw UsageError("invalid --source \"\(source)\": one of pattern, file, x11") }
    if source == "file", parser.string("file") == nil { throw UsageError("--source file needs --file PATH") }
    if source != "file", parser.given("file") { throw UsageError("--file is for --source file, not --source \(source)") }
    if source != "x11", parser.given("display") { throw UsageError("--display is for --source x11, not --source \(source)") }
    var content: ContentScreen.Content?
    if let name = parser.string("content") {
        guard source == "pattern" else { throw UsageError("--content draws the screen itself: not with --source \(source)") }
        guard let model = ContentScreen.Content(rawValue: name) else {
            throw UsageError("invalid --content \"\(name)\": one of " + ContentScreen.Content.allCases.map(\.rawValue).joined(separator: ", "))
        }
        content = model
    }
    if let path = parser.string("report") { try OutputFile.check(path, option: "report") }
    var pauses: [(Double, Double)] = []
    for text in parser.strings("pause") {
        let parts = text.split(separator: ":").map { Double($0) }
        guard parts.count == 2, let at = parts[0], let length = parts[1], (0...1e9).contains(at), length > 0, length <= 1e9 else {
            throw UsageError("invalid --pause \"\(text)\": expected AT:FOR in seconds (0...1e9), for example 2:1.5")
        }
        pauses.append((at, length))
    }
    var switches: [Switch] = []
    for text in parser.strings("switch") {
        let parts = text.split(separator: ":").map(String.init)
        guard (2...4).contains(parts.count), let frame = UInt64(parts[0]) else {
            throw UsageError("invalid --switch \"\(text)\": expected FRAME:WxH[:FORMAT[:ORIENTATION]]")
        }
        let size = try parseSize(parts[1], option: "switch")
        var change = Switch(frame: frame, width: size.width, height: size.height)
        if parts.count > 2 {
            guard let f = PixelFormat(name: parts[2]) else { throw UsageError("invalid format in --switch \"\(text)\"") }
            change.format = f
        }
        if parts.count > 3 {
            guard let o = Orientation(name: parts[3]) else { throw UsageError("invalid orientation in --switch \"\(text)\"") }
            change.orientation = o
        }
        switches.append(change)
    }
    return Settings(
        appGroup: group, source: source, content: content, file: parser.string("file"), display: parser.string("display"),
        width: size.width, height: size.height,
        fps: try parser.double("fps", in: 1...1000)!, format: format, orientation: orientation,
        frames: try parser.int("frames", in: 1...Int.max).map(UInt64.init),
        duration: try parser.double("duration", in: 0.001...1e9),
        pauses: pauses, switches: switches.sorted { $0.frame < $1.frame },
        checksum: parser.flag("checksum"), statsPath: parser.string("report"), exitWithParent: parser.flag("exit-with-parent"), quiet: parser.flag("quiet"))
}

/// The sample handler of this extension: its App Group comes from the command line.
final class SimulatedExtension: BroadcastSampleHandler {
    let group: String
    init(group: String, slotCapacity: Int) {
        self.group = group
        super.init(slotCapacity: slotCapacity)
    }
    override func appGroupName() -> String { group }
}

func log(_ message: String) {
    writeStandardError("broadcast-sim: \(message)\n")
}

func makeSource(_ s: Settings, width: Int, height: Int, format: PixelFormat, orientation: Orientation) throws -> FrameSource {
    switch s.source {
    case "file": return try Y4MFileSource(path: s.file!)
    case "x11": return try X11Capture(display: s.display)
    default:
        // Drawn straight in the format sent when nothing else is to be done; rotation works on I420 or BGRA.
        let drawn: PixelFormat = format == .bgra ? .bgra : (format == .nv12 && orientation == .up ? .nv12 : .i420)
        if let content = s.content { return try ContentScreen(content, width: width, height: height, format: drawn) }
        return try SyntheticScreen(width: width, height: height, format: drawn)
    }
}

/// Counters written by --report.
struct ProducerStats: Codable {
    var frames: UInt64
    var written: UInt64
    var dropped: UInt64
    var takenByHost: UInt64
    var throttled: UInt64
    var maxSampleMicros: Double
    var peakRSSBytes: Int
    var stopReason: String
    var slotCapacity: Int
    /// Rings made anew after another process damaged, shrank or unlinked the ring.
    var ringsRecreated: Int
}

/// VmHWM: the most resident memory this process has had, ring mapping included.
func peakRSSBytes() -> Int {
    guard let data = FileManager.default.contents(atPath: "/proc/self/status") else { return 0 }
    let status = String(decoding: data, as: UTF8.self)
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        let kb = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
        return kb * 1024
    }
    return 0
}

func run() throws -> Int32 {
    let s = try parseSettings()
    Signals.resetInherited()
    signal(SIGUSR1) { _ in pauseToggles.wrappingAdd(1, ordering: .relaxed) }
    // A closed terminal (SIGHUP) ends the broadcast as Ctrl-C does; a closed stderr pipe is no reason to die.
    for stop in [SIGINT, SIGTERM, SIGHUP] { signal(stop) { _ in stopSignals.wrappingAdd(1, ordering: .relaxed) } }
    signal(SIGPIPE, SIG_IGN)
    if s.exitWithParent, try !Signals.stopWithParent() { return 1 }

    var width = s.width, height = s.height, format = s.format, orientation = s.orientation
    var source = try makeSource(s, width: width, height: height, format: format, orientation: orientation)
    width = source.width
    height = source.height
    // Room for the largest frame this run will send, in any format it switches to.
    var largest = 0
    var geometries = [(width, height, format)] + s.switches.map { ($0.width, $0.height, $0.format ?? format) }
    if s.source != "pattern" { geometries = [(width, height, format)] }
    for (w, h, f) in geometries {
        // Either way round: a turned picture is stored with width and height swapped.
        for (a, b) in [(w, h), (h, w)] {
            largest = max(largest, try PixelBuffer.capacity(width: a, height: b, format: f))
        }
    }
    let handler = SimulatedExtension(group: s.appGroup, slotCapacity: largest)
    handler.checksums = s.checksum
    try handler.broadcastStarted(setupInfo: ["source": s.source, "size": "\(width)x\(height)", "format": "\(format)", "fps": "\(s.fps)"])
    if !s.quiet { log("started \(s.appGroup) → /dev/shm\(try AppGroup(s.appGroup).sharedMemoryName) \(width)x\(height) \(format) \(orientation) at \(s.fps) fps from \(s.source)") }

    var formatter = FrameFormatter(format: format, orientation: orientation)
    var pendingSwitches = s.switches[...]
    let interval = UInt64(1e9 / s.fps)
    let start = MonotonicClock.now()
    var deadline = start
    var number: UInt64 = 0
    var published: UInt64 = 0
    var warnedNoHost = false
    let startedAt = MonotonicClock.now()
    var paused = false
    var seenToggles = 0
    var pausedUntil: Double?
    var pauses = s.pauses.sorted { $0.at < $1.at }[...]
    var stopReason = "done"
    var lastRingFailure: String?
    var recreationsLogged = 0

    loop: while true {
        if stopSignals.load(ordering: .relaxed) > 0 { stopReason = "signal"; break }
        let elapsed = Double(MonotonicClock.now() &- start) / 1e9
        if let duration = s.duration, elapsed >= duration { break }
        if let frames = s.frames, number >= frames { break }
        // Pause and resume: the schedule and SIGUSR1.
        let toggles = pauseToggles.load(ordering: .relaxed)
        var wantPaused = paused
        if toggles != seenToggles { seenToggles = toggles; wantPaused.toggle(); pausedUntil = nil }
        if let next = pauses.first, elapsed >= next.at { pauses.removeFirst(); wantPaused = true; pausedUntil = next.at + next.length }
        if let until = pausedUntil, elapsed >= until { wantPaused = false; pausedUntil = nil }
        if wantPaused != paused {
            paused = wantPaused
            if paused { handler.broadcastPaused() } else { handler.broadcastResumed() }
            if !s.quiet { log(paused ? "paused" : "resumed") }
        }
        if paused {
            MonotonicClock.sleep(nanoseconds: 10_000_000)
            deadline = MonotonicClock.now()
            continue
        }
        if let change = pendingSwitches.first, number >= change.frame {
            pendingSwitches.removeFirst()
            format = change.format ?? format
            orientation = change.orientation ?? orientation
            source = try makeSource(s, width: change.width, height: change.height, format: format, orientation: orientation)
            formatter = FrameFormatter(format: format, orientation: orientation)
            if !s.quiet { log("switched to \(change.width)x\(change.height) \(format) \(orientation) at frame \(number)") }
        }
        MonotonicClock.sleep(until: deadline)
        let captureTime = MonotonicClock.now()
        guard let upright = try source.nextFrame(number: number) else { break }
        let buffer = try formatter.format(upright)
        switch handler.processSample(buffer, frameNumber: number, captureTime: captureTime, orientation: orientation) {
        case .published: published += 1
        case .stopRequested: stopReason = "host asked to stop"; break loop
        case .tooLarge: throw UsageError("frame \(number) (\(buffer.byteCount) bytes) does not fit the ring")
        case .ringFailed(let reason):
            if reason != lastRingFailure, !s.quiet { log("frame \(number) not sent: the ring was damaged and could not be made anew: \(reason)") }
            lastRingFailure = reason
        case .throttled, .ignored: break
        }
        if let ring = handler.ring, ring.recreations != recreationsLogged {
            recreationsLogged = ring.recreations
            lastRingFailure = nil
            if !s.quiet, recreationsLogged <= 10 || recreationsLogged.isMultiple(of: 100) {
                log("ring damaged by another process (\(ring.lastRecreation ?? "")); made a fresh one (\(recreationsLogged) so far)")
            }
        }
        if !warnedNoHost, !s.quiet, published > 0, MonotonicClock.now() &- startedAt >= 3_000_000_000, (handler.ring?.framesTaken ?? 0) == 0 {
            warnedNoHost = true
            log("no host has taken a frame from \(s.appGroup) in 3 s: is frame-relay running with --app-group \(s.appGroup)? (frames are dropped until one attaches)")
        }
        number += 1
        deadline &+= interval
        let now = MonotonicClock.now()
        if now > deadline &+ interval { deadline = now }  // fell behind: never queue up
    }
    let counters = handler.ring?.counters ?? (written: 0, dropped: 0)
    let taken = handler.ring?.framesTaken ?? 0
    handler.broadcastFinished()
    if !s.quiet { log("finished (\(stopReason)): \(number) frames, \(counters.written) written, \(counters.dropped) dropped, \(handler.throttled) throttled") }
    if let path = s.statsPath {
        let stats = ProducerStats(
            frames: number, written: counters.written, dropped: counters.dropped, takenByHost: taken,
            throttled: handler.throttled, maxSampleMicros: Double(handler.maxSampleNanoseconds) / 1000,
            peakRSSBytes: peakRSSBytes(), stopReason: stopReason, slotCapacity: largest,
            ringsRecreated: handler.ring?.recreations ?? 0)
        try OutputFile.write(String(decoding: try JSONEncoder().encode(stats), as: UTF8.self), to: path)
    }
    return 0
}

do {
    exit(try run())
} catch let help as HelpRequested {
    print(help.text)
    exit(0)
} catch {
    log("error: \(error)")
    exit(1)
}
