@preconcurrency import Glibc
import FrameRelay

/// `frame-relay janus`: runs a Janus of our own (Debian's janus, the
/// streaming plugin and HTTP transport only, a generated configuration)
/// until Ctrl-C, for hosts started with `--janus URL`.
func runJanus(_ arguments: [String]) throws -> Int32 {
    var parser = OptionParser(command: "frame-relay janus", summary: "run a Janus (streaming plugin, HTTP API) for hosts' --janus, until Ctrl-C")
    parser.option("address", "IP", default: "127.0.0.1", help: "Address of its HTTP API (0.0.0.0: every address).")
    parser.option("port", "PORT", help: "Port of its HTTP API (default: a free one).")
    try parser.parse(arguments)
    let port = try parser.int("port", in: 1...65535)
    let janus = try JanusServer(address: parser.string("address")!, port: port)
    defer { janus.stop() }
    log("janus: \(janus.url) (pid \(janus.pid)); Ctrl-C to stop")
    while stopSignals.load(ordering: .relaxed) == 0 {
        MonotonicClock.sleep(nanoseconds: 100_000_000)
        guard janus.isRunning else {
            log("error: Janus (pid \(janus.pid)) exited")
            return 1
        }
    }
    return 0
}
