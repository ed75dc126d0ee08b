import Foundation
import FrameRelaySystem
import FrameRelayRTP
import FrameRelayHost
import FrameRelayTools

/// `frame-relay receive`: a VP8 RTP receiver that decodes with libvpx,
/// recovers with NACK and PLI, and reads the frame numbers stamped into
/// the pictures: the viewer's side of the measurement.
struct Receive: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "frame-relay receive", abstract: "receive, decode and check a VP8 RTP stream")

    @Option("port", "PORT", in: 1...65534, help: "RTP port to listen on (RTCP on the next one).") var port = 5004
    @Option("address", "IP", help: "Local IPv4 address to bind.") var address = "127.0.0.1"
    @Option("duration", "SECONDS", in: 0.001...1e6, help: "Receive for this long.") var duration = 10.0
    @Option("frames", "N", in: 1...UInt64.max, help: "Stop after N decoded frames.") var frames: UInt64?
    @Option("idle", "SECONDS", in: 0.05...1e6, help: "Stop once the stream, after its first packet, has been silent this long.") var idle: Double?
    @Option("report", "PATH", help: "Write the receiver's counters as JSON here.") var report: String?
    @Option("captures", "PATH", help: "JSON lines with each frame's capture time (a host --trace): adds glass-to-glass latency and loss.") var captures: String?
    @Option("arrivals", "PATH", help: "Write one line per decoded frame: frame number and decode time (CLOCK_MONOTONIC ns).") var arrivalsPath: String?
    @Flag("quiet", help: "No summary line.") var quiet

    func validate() throws {
        try checkOutputs([("report", report.map { [$0] } ?? []), ("arrivals", arrivalsPath.map { [$0] } ?? [])])
        var ipv4 = in_addr()
        guard inet_pton(AF_INET, address, &ipv4) == 1 else {
            throw UsageError("invalid --address \"\(address)\": expected a local IPv4 address such as 127.0.0.1 or 0.0.0.0")
        }
    }

    func run() throws -> Int32 {
        let idle = idle.map { UInt64($0 * 1e9) }
        let receiver: RTPReceiver
        do {
            receiver = try RTPReceiver(port: port, address: address)
        } catch let error as SystemError where error.code == .addressInUse {
            // Which of the pair: the RTP port is free when a socket of our own can bind it now.
            var rtpFree = false
            if let probe = try? Socket(family: AF_INET, type: SOCK_DGRAM), let local = SocketAddress(ipv4: address, port: port) {
                rtpFree = (try? probe.bind(to: local)) != nil
            }
            let taken = rtpFree ? "port \(port + 1) (RTCP, the port after --port)" : "port \(port)"
            throw UsageError("\(taken) is already in use: choose another pair, such as --port \(port + 2 <= 65534 ? port + 2 : 5004) (and send there)")
        }
        var arrivals: [(frame: UInt64, time: UInt64)] = []
        arrivals.reserveCapacity(1 << 16)
        let started = MonotonicClock.now()
        var firstPicture: UInt64?
        receiver.onPicture = { number, _ in
            let now = MonotonicClock.now()
            if firstPicture == nil { firstPicture = now }
            if let number { arrivals.append((number, now)) }
        }
        let deadline = started + UInt64(duration * 1e9)
        receiver.run(until: deadline) {
            if Signals.stops.load(ordering: .relaxed) > 0 { return true }
            if let frames, receiver.stats.framesDecoded >= frames { return true }
            if let idle, let last = receiver.lastPacketTime, MonotonicClock.now() &- last >= idle { return true }
            return false
        }
        let stats = receiver.stats
        var summary = ReceiveReport(stats: stats)
        summary.firstPictureAfter = firstPicture.map { Double($0 - started) / 1e9 }
        if let path = captures {
            summary.match(arrivals: arrivals, captures: try ReceiveReport.captureTimes(jsonLines: path))
            if let g2g = summary.glassToGlass, !quiet {
                log("glass-to-glass p50 \(fixed(g2g.p50 / 1000, 2)) ms p99 \(fixed(g2g.p99 / 1000, 2)) ms over \(summary.matched) frames, \(summary.missing) missing")
            }
        }
        if let path = arrivalsPath {
            try OutputFile.write(arrivals.map { "{\"frame\":\($0.frame),\"decoded\":\($0.time)}\n" }.joined(), to: path)
        }
        if !quiet {
            log("received \(stats.packets) packets, \(stats.framesDecoded) frames decoded (\(stats.width)x\(stats.height)), \(stats.framesLost) lost, "
                + "\(stats.keyframes) keyframes, \(stats.nacksSent) NACKs and \(stats.plisSent) PLIs sent, \(stats.decodeErrors) decode errors, "
                + (stats.firstStamp.map { "stamps \($0)…\(stats.lastStamp ?? $0) (\(stats.stampsOutOfOrder) out of order)" } ?? "no stamp read")
                + (summary.firstPictureAfter.map { ", first picture after \(fixed($0 * 1000, 0)) ms" } ?? ""))
        }
        if let path = report {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try OutputFile.write(String(decoding: try encoder.encode(summary), as: UTF8.self), to: path)
        }
        // A receiver that heard nothing measured nothing: a CI job must not pass on it.
        if stats.packets == 0 {
            log("error: received nothing on \(address):\(port) in \(fixed(Double(MonotonicClock.now() - started) / 1e9, 1)) s (is a host streaming here, --rtp HOST:\(port)?)")
            return 1
        }
        return 0
    }
}
