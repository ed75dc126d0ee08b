@preconcurrency import Glibc
import FoundationEssentials
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing
import FrameRelayProducer
import FrameRelayTools

/// broadcast-sim's one command: its options, what they say together, and
/// the broadcast (started, one sample per frame on a schedule that never
/// blocks, paused and resumed, finished).
struct BroadcastSim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broadcast-sim", abstract: "a ReplayKit-like broadcast extension that writes frames into an App Group's shared-memory ring",
        takesVersion: true)

    /// From frame `frame` on, this size (and format, orientation).
    struct Switch {
        var frame: UInt64
        var width: Int
        var height: Int
        var format: PixelFormat?
        var orientation: Orientation?
    }

    @Option("app-group", "NAME", help: "App Group shared with the host.", default: AppGroup.defaultName, transform: { text in
        _ = try AppGroup(text)
        return text
    })
    var appGroup = AppGroup.defaultName
    @Option("source", "KIND", help: "pattern (synthetic screen), file (Y4M), x11 (X desktop capture), or screencast (a Wayland desktop cast through PipeWire: see --cast, --pipewire-node).", default: "pattern", transform: { text in
        guard ["pattern", "file", "x11", "screencast"].contains(text) else { throw UsageError("invalid --source \"\(text)\": one of pattern, file, x11, screencast") }
        return text
    })
    var requestedSource = "pattern"
    @Option("content", "MODEL", help: "Screen content like real use instead of the pattern: " + ContentScreen.Content.allCases.map(\.rawValue).joined(separator: ", ") + ".", transform: { text in
        guard let model = ContentScreen.Content(rawValue: text) else {
            throw UsageError("invalid --content \"\(text)\": one of " + ContentScreen.Content.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return model
    })
    var content: ContentScreen.Content?
    @Option("content-start", "SECONDS", in: 0...3600, help: "Start the --content model's script this far in (mixed: a minute of phases).") var contentStart = 0.0
    @Option("file", "PATH", help: "Y4M file for --source file (loops at its end).") var file: String?
    @Option("display", "DISPLAY", help: "X display for --source x11 (default $DISPLAY).") var display: String?
    @Option("pipewire-node", "ID", in: 0...UInt64(UInt32.max - 1), help: "For --source screencast: read this PipeWire node, one another tool opened (pw-dump or pw-cli ls Node list them), instead of starting a cast.")
    var pipewireNode: UInt64?
    @Option("cast", "API", help: "For --source screencast: who starts the cast: portal (xdg-desktop-portal: any desktop; its chooser asks once, then a restore token under $XDG_STATE_HOME/frame-relay is used), mutter (GNOME's own API, no dialog), auto (mutter on GNOME, else portal).", default: "auto", transform: { text in
        guard let api = ScreenCastAPI(rawValue: text) else {
            throw UsageError("invalid --cast \"\(text)\": one of " + ScreenCastAPI.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return api
    })
    var cast = ScreenCastAPI.auto
    @Option("surface", "KIND", help: "For --source screencast: what to cast: monitor or window (the portal's chooser offers them; Mutter casts the focused window).", default: "monitor", transform: { text in
        guard let surface = ScreenCastSurface(rawValue: text) else {
            throw UsageError("invalid --surface \"\(text)\": one of " + ScreenCastSurface.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return surface
    })
    var surface = ScreenCastSurface.monitor
    @Option("cursor", "MODE", help: "For a cast this producer starts (--source screencast): the pointer hidden, embedded (drawn by the compositor) or metadata (sent beside the picture and drawn here: a moving pointer changes only its own rectangles). A --pipewire-node's pointer is as its tool chose; one sent as metadata is drawn.", default: "embedded", transform: { text in
        guard let mode = ScreenCastCursor(rawValue: text) else {
            throw UsageError("invalid --cursor \"\(text)\": one of " + ScreenCastCursor.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return mode
    })
    var cursor = ScreenCastCursor.embedded
    @Option("size", "WxH", help: "Picture size for the synthetic screen.", default: "1280x720", transform: { try parseSize($0, option: "size") })
    var size = (width: 1280, height: 720)
    @Option("preset", "DEVICE", help: "Device screen size: " + DevicePreset.allCases.map(\.rawValue).joined(separator: ", ") + ".", transform: { text in
        guard let device = DevicePreset(rawValue: text) else {
            throw UsageError("unknown --preset \"\(text)\": one of " + DevicePreset.allCases.map(\.rawValue).joined(separator: ", "))
        }
        return device
    })
    var preset: DevicePreset?
    @Option("fps", "N", in: 1...1000, help: "Frames per second, 1...1000.") var fps = 30.0
    @Option("format", "FMT", help: "Pixel format: bgra, nv12, i420, jpeg.") var format = PixelFormat.nv12
    @Option("orientation", "O", help: "Orientation the frames are marked with: " + Orientation.allCases.map(\.description).joined(separator: ", ") + ".")
    var orientation = Orientation.up
    @Option("frames", "N", in: 1...UInt64.max, help: "Stop after N frames.") var frames: UInt64?
    @Option("duration", "SECONDS", in: 0.001...1e9, help: "Stop after this many seconds.") var duration: Double?
    @Option("pause", "AT:FOR", help: "Pause at AT seconds for FOR seconds. SIGUSR1 toggles pause live.", transform: parsePause)
    var pauses: [(at: Double, length: Double)] = []
    @Option("switch", "FRAME:WxH[:FMT[:O]]", help: "From FRAME on, send this size (and format, orientation).", transform: parseSwitch)
    var switches: [Switch] = []
    @Flag("checksum", help: "Store a payload checksum with each frame (the host can verify it).") var checksum
    @Option("report", "PATH", help: "Write counters as JSON here at exit.") var statsPath: String?
    @Flag("exit-with-parent", help: "Finish when the process that started this one exits (as frame-relay demo and load-test run it).") var exitWithParent
    @Flag("quiet", help: "No log lines.") var quiet

    /// Where frames come from: --source, or file when only --file is given.
    private(set) var source = "pattern"
    /// The picture size to start with (--size or --preset).
    private(set) var width = 1280
    private(set) var height = 720

    mutating func validate() throws {
        (width, height) = size
        if let preset {
            guard !$size.isGiven else { throw UsageError("--size and --preset both set the picture size: give one") }
            (width, height) = preset.size
        }
        // --file alone means --source file.
        source = !$requestedSource.isGiven && $file.isGiven ? "file" : requestedSource
        if source == "file", file == nil { throw UsageError("--source file needs --file PATH") }
        if source != "file", $file.isGiven { throw UsageError("--file is for --source file, not --source \(source)") }
        if source != "x11", $display.isGiven { throw UsageError("--display is for --source x11, not --source \(source)") }
        let castOptions = [("pipewire-node", $pipewireNode.isGiven), ("cursor", $cursor.isGiven), ("cast", $cast.isGiven), ("surface", $surface.isGiven)]
        if source != "screencast", let (name, _) = castOptions.first(where: { $0.1 }) {
            throw UsageError("--\(name) is for --source screencast, not --source \(source)")
        }
        if $pipewireNode.isGiven, let (name, _) = castOptions.dropFirst().first(where: { $0.1 }) {
            throw UsageError("--\(name) is for a cast this producer starts, not for --pipewire-node (the node's own tool chose)")
        }
        if content != nil, source != "pattern" { throw UsageError("--content draws the screen itself: not with --source \(source)") }
        if ["x11", "screencast"].contains(source), $size.isGiven || $preset.isGiven {
            throw UsageError("--\($size.isGiven ? "size" : "preset") sets the synthetic screen's size: --source \(source) has the size of its desktop")
        }
        if content == nil, $contentStart.isGiven { throw UsageError("--content-start needs --content MODEL") }
        if let statsPath { try OutputFile.check(statsPath, option: "report") }
    }

    func makeSource(width: Int, height: Int, format: PixelFormat, orientation: Orientation) throws -> FrameSource {
        // Drawn (or converted) straight into the format sent when nothing else is to be done; rotation works on I420 or BGRA.
        let drawn: PixelFormat = format == .bgra ? .bgra : (format == .nv12 && orientation == .up ? .nv12 : .i420)
        switch source {
        case "file": return try Y4MFileSource(path: file!)
        case "x11": return try X11Capture(display: display)
        case "screencast":
            // Drawn straight into the ring's slots when the format sent is the one converted to, upright.
            return try PipeWireCapture(node: pipewireNode.map { UInt32($0) }, api: cast, surface: surface, cursor: cursor,
                                       token: RestoreToken.standard(for: surface), format: drawn, inPlace: drawn == format && orientation == .up)
        default:
            if let content = content {
                // The models' scripts run at 30 frames/s.
                return try ContentScreen(content, width: width, height: height, format: drawn, start: Int((contentStart * 30).rounded()))
            }
            return try SyntheticScreen(width: width, height: height, format: drawn)
        }
    }

    func run() throws -> Int32 {
        let s = self
        Signals.resetInherited()
        Signals.installHandlers(pause: true)
        if s.exitWithParent, try !Signals.stopWithParent() { return 1 }

        var width = s.width, height = s.height, format = s.format, orientation = s.orientation
        var source = try makeSource(width: width, height: height, format: format, orientation: orientation)
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
        let origin = (source as? PipeWireCapture)?.api.map { " (a \(s.surface) cast through \($0 == "portal" ? "xdg-desktop-portal" : "Mutter"))" } ?? ""
        if !s.quiet { log("started \(s.appGroup) → /dev/shm\(try AppGroup(s.appGroup).sharedMemoryName) \(width)x\(height) \(format) \(orientation) at \(s.fps) fps from \(s.source)\(origin)") }

        var formatter = FrameFormatter(format: format, orientation: orientation)
        var pendingSwitches = s.switches.sorted { $0.frame < $1.frame }[...]
        let interval = UInt64(1e9 / s.fps)
        let start = MonotonicClock.now()
        var deadline = start
        var number: UInt64 = 0
        var published: UInt64 = 0
        var warnedNoHost = false
        let startedAt = MonotonicClock.now()
        var paused = false
        var userPaused = false
        var seenToggles = 0
        var pausedUntil: Double?
        var pauses = s.pauses.sorted { $0.at < $1.at }[...]
        var stopReason = "done"
        var lastRingFailure: String?
        var lastHost: Int32?
        var lastCapture: UInt64 = 0
        /// CPU used when the first frame was done, and frames since.
        var cpuAtFirstFrame: Double?
        var framesSinceFirst: UInt64 = 0
        var deliveredToPublished = LatencyHistogram()

        loop: while true {
            if Signals.stops.load(ordering: .relaxed) > 0 { stopReason = "signal"; break }
            let elapsed = Double(MonotonicClock.now() &- start) / 1e9
            if let duration = s.duration, elapsed >= duration { break }
            if let frames = s.frames, number >= frames { break }
            // Pause and resume: the schedule and SIGUSR1.
            let toggles = Signals.pauseToggles.load(ordering: .relaxed)
            var wantPaused = userPaused
            if toggles != seenToggles { seenToggles = toggles; wantPaused.toggle(); pausedUntil = nil }
            if let next = pauses.first, elapsed >= next.at { pauses.removeFirst(); wantPaused = true; pausedUntil = next.at + next.length }
            if let until = pausedUntil, elapsed >= until { wantPaused = false; pausedUntil = nil }
            userPaused = wantPaused
            // A screen cast the compositor paused pauses the broadcast too.
            let castPaused = (source as? PipeWireCapture)?.isPaused ?? false
            if (userPaused || castPaused) != paused {
                paused = userPaused || castPaused
                if paused { handler.broadcastPaused() } else { handler.broadcastResumed() }
                if !s.quiet { log(paused ? (castPaused && !userPaused ? "paused (the compositor paused the screen cast)" : "paused") : "resumed") }
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
                source = try makeSource(width: change.width, height: change.height, format: format, orientation: orientation)
                formatter = FrameFormatter(format: format, orientation: orientation)
                if !s.quiet { log("switched to \(change.width)x\(change.height) \(format) \(orientation) at frame \(number)") }
            }
            // A frame slot: from a frame's interval before `deadline` to it (a screen cast's picture is taken when it comes).
            source.waitForPicture(from: deadline &- interval, until: deadline)
            let sampled = MonotonicClock.now()
            // The frame: drawn straight into the ring's slot by a source that can (a screen cast), else a picture to send.
            var drawing: SourceDrawing?
            var buffer: PixelBuffer?
            var damage = Damage.unknown
            var capturedAt: UInt64?
            if let drawer = source as? DrawingFrameSource, drawer.drawsInPlace {
                drawing = try drawer.nextDrawing(number: number)
                damage = drawing?.damage ?? .unknown
                capturedAt = drawing?.capturedAt
            } else if let upright = try source.nextFrame(number: number) {
                buffer = try formatter.format(upright.picture)
                // Where the picture changed, in upright raw pixels (a turned picture, or a JPEG's blocks, would need it mapped).
                damage = upright.damage
                if case .region = damage, orientation != .up || format == .jpeg { damage = .unknown }
                capturedAt = upright.capturedAt
            }
            guard let geometry = drawing.map({ ($0.width, $0.height, $0.format) }) ?? buffer.map({ ($0.width, $0.height, $0.format) }) else {
                if let cast = source as? PipeWireCapture, let why = cast.ended { stopReason = why }
                break
            }
            // The source's time for the picture where it has one (a compositor's), never before the last frame's:
            // capture times, and the RTP timestamps made from them, only go forward.
            let captureTime = max(capturedAt ?? sampled, lastCapture &+ 1)
            lastCapture = captureTime
            func send() -> BroadcastSampleHandler.SampleResult {
                if let drawing {
                    return handler.processSample(drawing: drawing.width, height: drawing.height, format: drawing.format, frameNumber: number,
                                                 captureTime: captureTime, orientation: orientation, damage: damage, draw: drawing.draw)
                }
                return handler.processSample(buffer!, frameNumber: number, captureTime: captureTime, orientation: orientation, damage: damage)
            }
            var result = send()
            if case .tooLarge = result, s.source == "screencast" {
                // A screen cast's picture grew (a window resized, a monitor's new mode): larger slots, then the frame.
                let capacity = try max(PixelBuffer.capacity(width: geometry.0, height: geometry.1, format: geometry.2),
                                       PixelBuffer.capacity(width: geometry.1, height: geometry.0, format: geometry.2))
                try handler.growSlots(to: capacity)
                if !s.quiet { log("the picture grew to \(geometry.0)x\(geometry.1): the ring's slots now hold \(capacity) bytes") }
                result = send()
            }
            // A screen cast's new picture: from PipeWire handing it over to its publishing.
            if case .published = result, let delivered = (source as? PipeWireCapture)?.delivered {
                deliveredToPublished.record(MonotonicClock.now() &- delivered)
            }
            switch result {
            case .published: published += 1
            case .publishedToNewRing(let reason):
                published += 1
                lastRingFailure = nil
                let recreations = handler.ring?.recreations ?? 0
                if !s.quiet, recreations <= 10 || recreations.isMultiple(of: 100) {
                    log("ring damaged by another process (\(reason)); made a fresh one (\(recreations) so far)")
                }
            case .stopRequested: stopReason = "host asked to stop"; break loop
            case .tooLarge: throw UsageError("frame \(number) (\(geometry.0)x\(geometry.1) \(geometry.2)) does not fit the ring")
            case .ringFailed(let reason):
                if reason != lastRingFailure, !s.quiet { log("frame \(number) not sent: the ring was damaged and could not be made anew: \(reason)") }
                lastRingFailure = reason
            case .throttled, .ignored: break
            }
            // The host that took frames went away (Ctrl-C, a crash, kill -9): said once per host.
            if !s.quiet, number % 16 == 0 {
                let host = handler.ring?.hostPid
                if let gone = lastHost, host != gone {
                    log("the host (pid \(gone)) went away from \(s.appGroup): frames are dropped until a host attaches again")
                }
                lastHost = host
            }
            if !warnedNoHost, !s.quiet, published > 0, MonotonicClock.now() &- startedAt >= 3_000_000_000, (handler.ring?.framesTaken ?? 0) == 0 {
                warnedNoHost = true
                log("no host has taken a frame from \(s.appGroup) in 3 s: is frame-relay running with --app-group \(s.appGroup)? (frames are dropped until one attaches)")
            }
            if cpuAtFirstFrame == nil { cpuAtFirstFrame = Processor.processCPUSeconds() * 1e6 } else { framesSinceFirst += 1 }
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
                peakRSSBytes: peakRSSBytes(), stopReason: stopReason, slotCapacity: handler.slotCapacity,
                ringsRecreated: handler.ring?.recreations ?? 0,
                cpuPerFrameMicros: framesSinceFirst > 0 ? (Processor.processCPUSeconds() * 1e6 - cpuAtFirstFrame!) / Double(framesSinceFirst) : 0,
                deliveredToPublished: deliveredToPublished.count > 0 ? deliveredToPublished.summary : nil)
            try OutputFile.write(String(decoding: try JSONEncoder().encode(stats), as: UTF8.self), to: path)
        }
        return 0
    }
}

/// `--pause AT:FOR`, in seconds.
private func parsePause(_ text: String) throws -> (at: Double, length: Double) {
    let parts = text.split(separator: ":").map { Double($0) }
    guard parts.count == 2, let at = parts[0], let length = parts[1], (0...1e9).contains(at), length > 0, length <= 1e9 else {
        throw UsageError("invalid --pause \"\(text)\": expected AT:FOR in seconds (0...1e9), for example 2:1.5")
    }
    return (at, length)
}

/// `--switch FRAME:WxH[:FORMAT[:ORIENTATION]]`.
private func parseSwitch(_ text: String) throws -> BroadcastSim.Switch {
    let parts = text.split(separator: ":").map(String.init)
    guard (2...4).contains(parts.count), let frame = UInt64(parts[0]) else {
        throw UsageError("invalid --switch \"\(text)\": expected FRAME:WxH[:FORMAT[:ORIENTATION]]")
    }
    let size = try parseSize(parts[1], option: "switch")
    var change = BroadcastSim.Switch(frame: frame, width: size.width, height: size.height)
    if parts.count > 2 {
        guard let format = PixelFormat(name: parts[2]) else { throw UsageError("invalid format in --switch \"\(text)\"") }
        change.format = format
    }
    if parts.count > 3 {
        guard let orientation = Orientation(name: parts[3]) else { throw UsageError("invalid orientation in --switch \"\(text)\"") }
        change.orientation = orientation
    }
    return change
}
