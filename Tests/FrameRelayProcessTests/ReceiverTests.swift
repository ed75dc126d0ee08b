@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRTP
import FrameRelayHost
import FrameRelayTestSupport
import Testing

/// Our own RTP receiver (`frame-relay receive`): the smallest packets RTP
/// allows, GStreamer's RTP, strangers and oversized keyframes, a receiver
/// that leaves and comes back, and a port in use.
@Suite(.serialized) struct ReceiverTests {
    /// RTP allows a VP8 packet of 14 bytes (header, a one-byte descriptor,
    /// one byte of frame), and GStreamer's packetizer sends such tails; our
    /// receiver once dropped anything under 16 bytes, losing the frame and every
    /// frame after it up to the next keyframe.
    @Test func receiverTakesTheSmallestPacketsRTPAllows() throws {
        let (ivf, _) = try recordRun(["--size", "320x240", "--fps", "30", "--frames", "30"])
        let frames = try ivfFrames(ivf)
        try #require(frames.count >= 25 && frames.allSatisfy { $0.count > 4 })
        let port = freePortPair()
        let received = Paths.temporaryDirectory().appendingPathComponent("received.json").path
        let r = Spawned(Paths.executable("frame-relay"), ["receive", "--port", "\(port)", "--duration", "10", "--frames", "\(frames.count)", "--report", received, "--quiet"])
        #expect(waitUntilUDPPortIsBound(port))
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var sequence: UInt16 = 0
        var packetLengths: [Int] = []
        for (n, frame) in frames.enumerated() {
            // Every frame ends in a packet of 14 or 15 bytes: its last one or two bytes.
            let tail = 1 + n % 2
            var chunks = stride(from: 0, to: frame.count - tail, by: 500).map { frame[$0..<min($0 + 500, frame.count - tail)] }
            chunks.append(frame[(frame.count - tail)...])
            for (index, chunk) in chunks.enumerated() {
                // A one-byte descriptor: start of frame on the first packet, continuation after.
                let packet = rtpPacket(ssrc: 0x1234_5678, sequence: sequence, timestamp: UInt32(n * 3000), marker: index == chunks.count - 1,
                                       payload: [index == 0 ? 0x10 : 0x00] + chunk)
                packetLengths.append(packet.count)
                _ = withLoopback(port) { sendto(fd, packet, packet.count, 0, $0, $1) }
                sequence &+= 1
            }
            usleep(2_000)
        }
        #expect(packetLengths.contains(14) && packetLengths.contains(15))
        #expect(r.wait() == 0)
        let stats = try JSONDecoder().decode(ReceiveReport.self, from: Data(contentsOf: URL(fileURLWithPath: received))).stats
        #expect(stats.framesDecoded == UInt64(frames.count) && stats.framesLost == 0, "\(stats)")
        #expect(stats.packets == UInt64(packetLengths.count) && stats.stampsOutOfOrder == 0 && stats.lastStamp == UInt64(frames.count - 1), "\(stats)")
    }

    /// GStreamer's packetizer (partitions, no picture ID, the tails it makes) into our receiver, every frame decoded.
    @Test func ourReceiverDecodesGStreamersRTP() throws {
        let port = freePortPair()
        let received = Paths.temporaryDirectory().appendingPathComponent("received.json").path
        let r = Spawned(Paths.executable("frame-relay"), ["receive", "--port", "\(port)", "--duration", "20", "--idle", "1", "--report", received, "--quiet"])
        #expect(waitUntilUDPPortIsBound(port))
        let gst = run("/usr/bin/gst-launch-1.0", [
            "-q", "videotestsrc", "num-buffers=150", "pattern=ball", "!", "video/x-raw,width=320,height=240,framerate=30/1", "!",
            "vp8enc", "deadline=1", "target-bitrate=600000", "!", "rtpvp8pay", "mtu=300", "!", "udpsink", "host=127.0.0.1", "port=\(port)", "sync=true",
        ], timeout: 30)
        #expect(gst.status == 0, "\(gst.stderr)")
        #expect(r.wait() == 0)
        let stats = try JSONDecoder().decode(ReceiveReport.self, from: Data(contentsOf: URL(fileURLWithPath: received))).stats
        #expect(stats.framesDecoded == 150 && stats.framesLost == 0 && stats.decodeErrors == 0, "\(stats)")
        #expect(stats.width == 320 && stats.height == 240)
    }

    /// Our receiver follows one stream: a stranger's packet with a far-off
    /// timestamp does not stop it, and a forged keyframe header declaring
    /// 16383x16383 is not handed to the decoder (it would allocate ~0.9 GB).
    @Test func receiverIgnoresStrangersAndOversizedKeyframes() throws {
        let group = uniqueGroup("spoof")
        let port = freePortPair(), watch = freePortPair()
        let peer = TestRTPPeer(port: watch)
        let received = Paths.temporaryDirectory().appendingPathComponent("received.json").path
        // To the stream's end however long the start takes: a second of silence ends it.
        let r = Spawned(Paths.executable("frame-relay"), ["receive", "--port", "\(port)", "--duration", "30", "--idle", "1", "--report", received, "--quiet"])
        #expect(waitUntilUDPPortIsBound(port))
        let h = host([group], ["--rtp", "127.0.0.1:\(port)", "--rtp", "127.0.0.1:\(watch)", "--exit-when-finished", "--quiet"])
        let p = producer(group, ["--size", "320x240", "--fps", "30", "--duration", "3", "--quiet"])
        peer.pump(until: { peer.frames.count >= 10 }, timeout: 10)
        let last = try #require(peer.frames.last)
        func packet(ssrc: UInt32, sequence: UInt16, timestamp: UInt32) -> [UInt8] {
            // A start-of-partition VP8 descriptor, then a keyframe header for 16383x16383.
            rtpPacket(ssrc: ssrc, sequence: sequence, timestamp: timestamp, marker: true,
                      payload: [0x10, 0x00, 0x00, 0x00, 0x9d, 0x01, 0x2a, 0xff, 0x3f, 0xff, 0x3f] + [UInt8](repeating: 0, count: 32))
        }
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        for forged in [packet(ssrc: peer.mediaSSRC &+ 1, sequence: 1, timestamp: last.timestamp &+ (1 << 30)),
                       packet(ssrc: peer.mediaSSRC, sequence: peer.lastSequence &+ 500, timestamp: last.timestamp &+ 1)] {
            _ = withLoopback(port) { sendto(fd, forged, forged.count, 0, $0, $1) }
        }
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        #expect(r.wait() == 0)
        let stats = try JSONDecoder().decode(ReceiveReport.self, from: Data(contentsOf: URL(fileURLWithPath: received))).stats
        #expect(stats.foreignPackets == 1 && stats.framesTooLarge == 1, "\(stats)")
        // The stream went on being decoded to its end (90 frames in 3 s).
        #expect(stats.framesDecoded >= 80 && (stats.lastStamp ?? 0) >= 85, "\(stats)")
    }

    @Test func receiverThatGoesAwayAndComesBackGetsThePictureBack() throws {
        let group = uniqueGroup("away")
        let port = freePortPair()
        let dir = Paths.temporaryDirectory()
        let receiverStats = dir.appendingPathComponent("receiver.json").path
        let h = host([group], ["--rtp", "127.0.0.1:\(port)", "--keyframe-interval", "0", "--quiet"])
        let p = producer(group, ["--size", "320x240", "--fps", "30", "--duration", "60", "--quiet"])
        let first = Spawned(Paths.executable("frame-relay"), ["receive", "--port", "\(port)", "--duration", "1.5", "--quiet"])
        #expect(first.wait() == 0)
        usleep(1_000_000)  // nobody listens: the host's packets go to a closed port
        #expect(h.process.isRunning)
        let second = Spawned(Paths.executable("frame-relay"), ["receive", "--port", "\(port)", "--duration", "3", "--report", receiverStats, "--quiet"])
        #expect(second.wait() == 0)
        #expect(h.process.isRunning, "the host must survive its receiver leaving")
        let received = try JSONDecoder().decode(ReceiveReport.self, from: Data(contentsOf: URL(fileURLWithPath: receiverStats))).stats
        // A receiver joining mid-stream asks for a keyframe (PLI) and decodes from it on.
        #expect(received.plisSent >= 1 && received.keyframes >= 1)
        #expect(received.framesDecoded >= 40 && received.decodeErrors == 0)
        p.signal(SIGTERM)
        #expect(p.wait() == 0)
        h.signal(SIGINT)
        #expect(h.wait() == 0)
        #expect(!segmentExists(group))
    }

    /// The port taken is named, RTP's or the RTCP one after it, with a pair to try instead.
    @Test func receiverPortInUseIsOneLine() throws {
        let port = freePortPair()
        let holder = TestRTPPeer(port: port)
        let result = run(Paths.executable("frame-relay"), ["receive", "--port", "\(port)", "--duration", "1"])
        #expect(result.status != 0 && result.stderr.contains("port \(port) is already in use: choose another pair, such as --port \(port + 2)"), "\(result.stderr)")
        _ = holder
        let rtcpHolder = TestRTPPeer.bind(port + 3)
        defer { close(rtcpHolder) }
        let rtcp = run(Paths.executable("frame-relay"), ["receive", "--port", "\(port + 2)", "--duration", "1"])
        #expect(rtcp.status != 0 && rtcp.stderr.contains("port \(port + 3) (RTCP, the port after --port) is already in use"), "\(rtcp.stderr)")
    }

    /// A receiver that heard nothing exits 1 saying so: a CI job must not pass on it.
    @Test func aReceiverThatHeardNothingFails() {
        let port = freePortPair()
        let result = run(Paths.executable("frame-relay"), ["receive", "--port", "\(port)", "--duration", "1"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("no stamp read") && result.stderr.contains("error: received nothing on 127.0.0.1:\(port) in "), "\(result.stderr)")
    }
}
