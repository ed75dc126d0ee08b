@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayTools
import Synchronization

/// broadcast-sim: a producer process that behaves like a ReplayKit broadcast
/// upload extension and writes frames into the App Group's ring.

let pauseToggles = Atomic<Int>(0)
let stopSignals = Atomic<Int>(0)

func log(_ message: String) {
    writeStandardError("broadcast-sim: \(message)\n")
}

do {
    if CommandLine.arguments.dropFirst().first == "--version" { throw HelpRequested(text: "broadcast-sim \(FrameRelayVersion.string)") }
    exit(try BroadcastSim.parse(Array(CommandLine.arguments.dropFirst())).run())
} catch let help as HelpRequested {
    print(help.text)
    exit(0)
} catch {
    // What was given (an option's value, a file's name) may hold control characters: written out, never sent to the terminal.
    log("error: \(PeerText.quoted("\(error)", limit: 2000))")
    exit(1)
}
