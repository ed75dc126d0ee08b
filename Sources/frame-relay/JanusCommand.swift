@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayTools

/// `frame-relay janus`: runs a Janus of our own (Debian's janus, the
/// streaming plugin and HTTP transport only, a generated configuration)
/// until Ctrl-C, for hosts started with `--janus URL`.
struct JanusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "frame-relay janus", abstract: "run a Janus (streaming plugin, HTTP API) for hosts' --janus, until Ctrl-C")

    @Option("address", "IP", help: "Address of its HTTP API (0.0.0.0: every address).") var address = "127.0.0.1"
    @Option("port", "PORT", in: 1...65535, help: "Port of its HTTP API (default: a free one).") var port: Int?

    func run() throws -> Int32 {
        let janus = try JanusServer(address: address, port: port)
        defer { janus.stop() }
        log("janus: \(janus.place) (pid \(janus.pid)); Ctrl-C to stop")
        while Signals.stops.load(ordering: .relaxed) == 0 {
            MonotonicClock.sleep(nanoseconds: 100_000_000)
            guard janus.isRunning else {
                log("error: Janus (pid \(janus.pid)) exited")
                return 1
            }
        }
        return 0
    }
}
