import Foundation
import FrameRelay

/// `frame-relay receive`: a VP8 RTP receiver that decodes with libvpx,
/// recovers with NACK and PLI, and reads the frame numbers stamped into
/// the pictures: the viewer's side of the measurement.
func runReceive(_ arguments: [String]) throws -> Int32 {
    var parser = OptionParser(command: "frame-relay receive", summary: "receive, decode and check a VP8 RTP stream")
    parser.option("port", "PORT", default: "5004", help: "RTP port to listen on (RTCP on the next one).")
    parser.option("address", "IP", default: "127.0.0.1", help: "Local IPv4 address to bind.")
    parser.option("duration", "SECONDS", default: "10", help: "Receive for this long.")
    parser.option("frames", "N", help: "Stop after N decoded frames.")
    parser.option("idle", "SECONDS", help: "Stop once the stream, after its first packet, has been silent this long.")
    parser.option("report", "PATH", help: "Write the receiver's counters as JSON here.")
    parser.option("captures", "PATH", help: "JSON lines with each frame's capture time (a host --trace): adds glass-to-glass latency and loss.")
    parser.option("arrivals", "PATH", help: "Write one line per decoded frame: frame number and decode time (CLOCK_MONOTONIC ns).")
    parser.flag("quiet", help: "No summary line.")
    try parser.parse(arguments)
    let port = try parser.int("port", in: 1...65534)!
    try checkOutputs(parser, ["report", "arrivals"])
    var ipv4 = in_addr()
    guard inet_pton(AF_INET, parser.string("address")!, &ipv4) == 1 else {
        throw UsageError("invalid --address \"\(parser.string("address")!)\": expected a local IPv4 address such as 127.0.0.1 or 0.0.0.0")
    }
    let duration = try parser.double("duration", in: 0.001...1e6)!
    let limit = try parser.int("frames", in: 1...Int.max).map(UInt64.init)
    let idle = try parser.double("idle", in: 0.05...1e6).map { UInt64($0 * 1e9) }
    let receiver: RTPReceiver
    do {
        receiver = try RTPReceiver(port: port, address: parser.string("address")!)
    } catch let error as SystemError where error.code == .addressInUse {
        throw UsageError("port \(port) (or \(port + 1) for RTCP) is already in use")
    }
    var arrivals: [(frame: UInt64, time: UInt64)] = []
    arrivals.reserveCapacity(1 << 16)
    receiver.onPicture = { number, _ in
        if let number { arrivals.append((number, MonotonicClock.now())) }
    }
    let deadline = MonotonicClock.now() + UInt64(duration * 1e9)
    receiver.run(until: deadline) {
        if stopSignals.load(ordering: .relaxed) > 0 { return true }
        if let limit, receiver.stats.framesDecoded >= limit { return true }
        if let idle, let last = receiver.lastPacketTime, MonotonicClock.now() &- last >= idle { return true }
        return false
    }
    let stats = receiver.stats
    var report = ReceiveReport(stats: stats)
    if let path = parser.string("captures") {
        report.match(arrivals: arrivals, captures: try ReceiveReport.captureTimes(jsonLines: path))
        if let g2g = report.glassToGlass, !parser.flag("quiet") {
            log("glass-to-glass p50 \(fixed(g2g.p50 / 1000, 2)) ms p99 \(fixed(g2g.p99 / 1000, 2)) ms over \(report.matched) frames, \(report.missing) missing")
        }
    }
    if let path = parser.string("arrivals") {
        try OutputFile.write(arrivals.map { "{\"frame\":\($0.frame),\"decoded\":\($0.time)}\n" }.joined(), to: path)
    }
    if !parser.flag("quiet") {
        log("received \(stats.packets) packets, \(stats.framesDecoded) frames decoded (\(stats.width)x\(stats.height)), \(stats.framesLost) lost, "
            + "\(stats.keyframes) keyframes, \(stats.nacksSent) NACKs and \(stats.plisSent) PLIs sent, \(stats.decodeErrors) decode errors, "
            + "stamps \(stats.firstStamp.map(String.init) ?? "-")…\(stats.lastStamp.map(String.init) ?? "-") (\(stats.stampsOutOfOrder) out of order)")
    }
    if let path = parser.string("report") {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try OutputFile.write(String(decoding: try encoder.encode(report), as: UTF8.self), to: path)
    }
    return 0
}
