@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayTools

/// broadcast-sim: a producer process that behaves like a ReplayKit broadcast
/// upload extension and writes frames into the App Group's ring.

func log(_ message: String) {
    writeStandardError("broadcast-sim: \(message)\n")
}

runAndExit("broadcast-sim") {
    return try BroadcastSim.parse(Array(CommandLine.arguments.dropFirst())).run()
}
