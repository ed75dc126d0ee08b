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
    parser.option("stats-json", "PATH", help: "Write the receiver's counters as JSON here.")
    parser.flag("quiet", help: "No summary line.")
    try parser.parse(arguments)
    let port = try parser.int("port", in: 1...65534)!
    let duration = try parser.double("duration", in: 0.001...1e6)!
    let limit = try parser.int("frames", in: 1...Int.max).map(UInt64.init)
    let receiver: RTPReceiver
    do {
        receiver = try RTPReceiver(port: port, address: parser.string("address")!)
    } catch let error as SystemError where error.code == EADDRINUSE {
        throw UsageError("port \(port) (or \(port + 1) for RTCP) is already in use")
    }
    let deadline = MonotonicClock.now() + UInt64(duration * 1e9)
    receiver.run(until: deadline) {
        stopSignals.load(ordering: .relaxed) > 0 || (limit.map { receiver.stats.framesDecoded >= $0 } ?? false)
    }
    let stats = receiver.stats
    if !parser.flag("quiet") {
        log("received \(stats.packets) packets, \(stats.framesDecoded) frames decoded (\(stats.width)x\(stats.height)), \(stats.framesLost) lost, "
            + "\(stats.keyframes) keyframes, \(stats.nacksSent) NACKs and \(stats.plisSent) PLIs sent, \(stats.decodeErrors) decode errors, "
            + "stamps \(stats.firstStamp.map(String.init) ?? "-")…\(stats.lastStamp.map(String.init) ?? "-") (\(stats.stampsOutOfOrder) out of order)")
    }
    if let path = parser.string("stats-json") {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(stats).write(to: URL(fileURLWithPath: path))
    }
    return 0
}
