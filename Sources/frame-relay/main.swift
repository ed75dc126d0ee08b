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
    var frames: UInt64?
    var duration: Double?
    var exitWhenFinished: Bool
    var statsPath: String?
    var quiet: Bool
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
    parser.option("stats-json", "PATH", help: "Write per-share statistics as JSON here at exit.")
    parser.flag("quiet", help: "No status line or log lines.")
}

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
    options.maxFrameRate = try parser.int("max-fps", in: 1...1000)
    options.stopAfter = try parser.int("stop-after", in: 1...Int.max).map(UInt64.init)
    return HostSettings(
        groups: groups, options: options, frames: try parser.int("frames", in: 1...Int.max).map(UInt64.init),
        duration: try parser.double("duration", in: 0.001...1e9), exitWhenFinished: parser.flag("exit-when-finished"),
        statsPath: parser.string("stats-json"), quiet: parser.flag("quiet"))
}

/// Runs the host until a stop condition; returns the exit status.
func runHost(_ s: HostSettings, extraStop: @escaping () -> Bool = { false }) throws -> Int32 {
    let stop = Atomic<Bool>(false)
    let failure = Mutex<String?>(nil)
    let quiet = s.quiet
    let receivers = s.groups.map { group in
        ShareReceiver(appGroup: group, options: s.options, log: { message in if !quiet { log(message) } })
    }
    var threads: [Thread] = []
    let done = Atomic<Int>(0)
    for receiver in receivers {
        let thread = Thread {
            do {
                try receiver.run(shouldStop: { stop.load(ordering: .relaxed) })
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
    while true {
        MonotonicClock.sleep(nanoseconds: 100_000_000)
        let snapshots = receivers.map(\.snapshot)
        status.update(snapshots)
        if failure.withLock({ $0 }) != nil { break }
        if stopSignals.load(ordering: .relaxed) > 0 || extraStop() { break }
        if let duration = s.duration, Double(MonotonicClock.now() &- start) / 1e9 >= duration { break }
        if let frames = s.frames, snapshots.allSatisfy({ $0.taken >= frames }) { break }
        if s.exitWhenFinished, receivers.allSatisfy(\.producerFinished) { break }
    }
    stop.store(true, ordering: .relaxed)
    while done.load(ordering: .acquiring) < receivers.count { MonotonicClock.sleep(nanoseconds: 5_000_000) }
    status.clear()
    let finals = receivers.map(\.snapshot)
    if !quiet {
        for share in finals { log("summary: " + StatusLine.format(share)) }
    }
    if let path = s.statsPath {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(finals).write(to: URL(fileURLWithPath: path))
    }
    if let message = failure.withLock({ $0 }) {
        log("error: \(message)")
        return 1
    }
    return 0
}

func runCommand() throws -> Int32 {
    var arguments = Array(CommandLine.arguments.dropFirst())
    let subcommand = arguments.first.flatMap { $0.hasPrefix("-") ? nil : $0 } ?? "run"
    if !arguments.isEmpty, !arguments[0].hasPrefix("-") { arguments.removeFirst() }
    switch subcommand {
    case "run":
        var parser = OptionParser(command: "frame-relay [run]", summary: "attach to App Group rings and take every newest frame, with live per-frame stats")
        declareHostOptions(&parser)
        try parser.parse(arguments)
        return try runHost(try hostSettings(parser))
    case "demo":
        return try runDemo(arguments)
    default:
        throw UsageError("unknown subcommand \"\(subcommand)\": run, demo (see --help)")
    }
}

Signals.resetInherited()
signal(SIGINT) { _ in stopSignals.wrappingAdd(1, ordering: .relaxed) }
signal(SIGTERM) { _ in stopSignals.wrappingAdd(1, ordering: .relaxed) }
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
