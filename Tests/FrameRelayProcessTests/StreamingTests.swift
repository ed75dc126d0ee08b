@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRTP
import FrameRelayHost
import FrameRelayTestSupport
import Testing

/// RTP to real receivers: ffmpeg through the SDP we write, GStreamer,
/// every destination at once, keyframes paced out, and bad destinations.
@Suite(.serialized) struct StreamingTests {
    @Test func ffmpegDecodesOurRTPThroughTheSDPWeWrote() throws {
        let group = uniqueGroup("ffrtp")
        let port = freePortPair()
        let dir = Paths.temporaryDirectory()
        let sdp = dir.appendingPathComponent("stream.sdp").path
        let raw = dir.appendingPathComponent("ffmpeg.gray").path
        let hostStats = dir.appendingPathComponent("host.json").path
        let h = host([group], ["--rtp", "127.0.0.1:\(port)", "--sdp", sdp, "--exit-when-finished", "--report", hostStats, "--quiet"])
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: sdp) { usleep(20_000) }
        // -fps_mode passthrough: one picture per decoded frame. At a constant rate, ffmpeg fills any jump it
        // sees in the stream's timestamps with copies (once 16,000 of the first frame, gigabytes written while
        // the socket overflowed), and the count of frames decoded no longer says what arrived.
        let ffmpeg = Spawned("/usr/bin/ffmpeg", ["-v", "error", "-protocol_whitelist", "file,udp,rtp", "-i", sdp,
                                                 "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", "-y", raw])
        // Under load ffmpeg can take over a second to open the SDP; a receiver that misses
        // the first keyframe decodes nothing until the next one.
        #expect(waitUntilUDPPortIsBound(port), "ffmpeg never bound port \(port): \(ffmpeg.stderr)")
        usleep(200_000)
        let p = producer(group, ["--size", "640x360", "--fps", "30", "--frames", "120", "--quiet"])
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        usleep(500_000)
        ffmpeg.signal(SIGINT)
        _ = ffmpeg.wait(timeout: 10)
        let sent = try #require(try readShareStats(hostStats).first?.transport)
        let numbers = try stampedNumbers(rawGray: raw, width: 640, height: 360).numbers
        #expect(Double(Set(numbers).count) >= 0.95 * Double(sent.frames),
                "ffmpeg decoded \(Set(numbers).count) of \(sent.frames) (\(numbers.count) pictures, first stamps \(numbers.prefix(5))); sent \(sent); ffmpeg: \(ffmpeg.stderr.suffix(400))")
        #expect(numbers == numbers.sorted(), "stamps out of order")
        #expect(!ffmpeg.stderr.lowercased().contains("error while decoding"), "\(ffmpeg.stderr)")
        // 4 s of stream with the default 3 s interval: a periodic keyframe for receivers that never ask.
        #expect(sent.keyframes >= 2)
    }

    @Test func everyDestinationGetsTheStream() throws {
        let group = uniqueGroup("dests")
        let (a, b) = (freePortPair(), freePortPair())
        let first = TestRTPPeer(port: a), second = TestRTPPeer(port: b)
        let h = host([group], ["--rtp", "127.0.0.1:\(a)", "--rtp", "127.0.0.1:\(b)", "--exit-when-finished", "--quiet"])
        let p = producer(group, ["--size", "320x240", "--fps", "30", "--frames", "45", "--quiet"])
        // Both ends first: the sockets' 8 MB buffers hold all the stream, so neither peer misses a frame the other gets.
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        first.pump(0.2)
        second.pump(0.2)
        #expect(first.frames.count >= 40 && second.frames.count == first.frames.count)
        #expect(first.reports.count >= 1 && second.reports.count >= 1, "both get Sender Reports")
    }

    /// A receiver started a second after the host (as the README's examples
    /// start ffplay): the refusals before it are said once, and so is, once
    /// it listens, that the packets go out.
    @Test func aReceiverStartedLateIsSaidOnceWhenPacketsFlow() throws {
        let group = uniqueGroup("late")
        let port = freePortPair()
        let h = host([group], ["--rtp", "127.0.0.1:\(port)", "--duration", "6"])
        let p = producer(group, ["--size", "160x120", "--fps", "30", "--duration", "7", "--quiet"])
        #expect(h.waitForLog("RTP packets are not going out: sendto failed with ECONNREFUSED"), "\(h.stderr)")
        let peer = TestRTPPeer(port: port)
        peer.pump(3)
        // The receiver stays bound until the host ends: nothing is refused after it started.
        #expect(withExtendedLifetime(peer) { h.wait(timeout: 20) } == 0, "\(h.stderr)")
        _ = p.wait()
        #expect(peer.frames.count >= 60, "\(peer.frames.count) frames")
        let lines = h.stderr.split(separator: "\n")
        #expect(lines.filter { $0.contains("RTP packets are not going out") }.count == 1, "\(h.stderr)")
        #expect(lines.filter { $0.contains("RTP packets go out now (") && $0.contains(" refused before)") }.count == 1, "\(h.stderr)")
    }

    @Test func gstreamerDecodesOurRTP() throws {
        let group = uniqueGroup("gst")
        let port = freePortPair()
        let dir = Paths.temporaryDirectory()
        let raw = dir.appendingPathComponent("gst.gray").path
        let hostStats = dir.appendingPathComponent("host.json").path
        let gst = Spawned("/usr/bin/gst-launch-1.0", [
            // A second of jitter buffer and 8 MB of socket buffer: a stall of a loaded machine does not make a packet late.
            "-e", "-q", "udpsrc", "port=\(port)", "buffer-size=8388608",
            "caps=application/x-rtp,media=video,clock-rate=90000,encoding-name=VP8,payload=96",
            "!", "rtpjitterbuffer", "latency=1000", "!", "rtpvp8depay", "!", "vp8dec", "!", "videoconvert",
            "!", "video/x-raw,format=GRAY8", "!", "filesink", "location=\(raw)",
        ])
        #expect(waitUntilUDPPortIsBound(port), "GStreamer never bound port \(port): \(gst.stderr)")
        usleep(200_000)
        let h = host([group], ["--rtp", "127.0.0.1:\(port)", "--exit-when-finished", "--report", hostStats, "--quiet"])
        let p = producer(group, ["--size", "640x360", "--fps", "30", "--frames", "120", "--quiet"])
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        usleep(500_000)
        gst.signal(SIGINT)
        _ = gst.wait(timeout: 10)
        let sent = try #require(try readShareStats(hostStats).first?.transport)
        let numbers = try stampedNumbers(rawGray: raw, width: 640, height: 360).numbers
        #expect(Double(numbers.count) >= 0.95 * Double(sent.frames), "GStreamer decoded \(numbers.count) of \(sent.frames): \(gst.stderr)")
        #expect(numbers == numbers.sorted())
    }

    /// A large keyframe leaves the pacer's thread at a multiple of the
    /// target rate (or drains in half a second, when that is faster), and
    /// queuing it does not hold the share's thread: `deliver` returns before
    /// its last packet leaves, however loaded the machine (sleeping bounds
    /// the pacing from below), and every packet arrives.
    @Test func keyframesArePacedOffTheSharesThread() throws {
        let port = freePortPair()
        let peer = TestRTPPeer(port: port)
        var options = RTPSession.Options()
        options.destinations = [try Destination("127.0.0.1:\(port)")]
        options.bitratesKbps = [400]  // paced at 1 Mbit/s: 125,000 bytes/s, 5,000 of them at once
        let session = try RTPSession(options: options)
        var settings = VP8Settings()
        settings.bitrateKbps = 20_000  // a keyframe of many packets
        let encoder = try VP8Encoder(settings: settings)
        let noise = try PixelBuffer(width: 1280, height: 720, format: .i420)
        noise.withUnsafeMutablePlane(0) { bytes, _ in
            var x: UInt32 = 2_463_534_242
            for i in 0..<bytes.count {
                x ^= x << 13; x ^= x >> 17; x ^= x << 5
                bytes[i] = UInt8(truncatingIfNeeded: x)
            }
        }
        var timing = FrameTiming()
        var (returned, size) = (UInt64(0), 0)
        try encoder.encode(EncoderInput(noise), captureTime: MonotonicClock.now()) { frame in
            #expect(frame.isKeyframe)
            size = frame.bytes.count
            session.deliver(frame, captureTime: MonotonicClock.now(), timing: &timing)
            returned = MonotonicClock.now()
        }
        #expect(size > 60_000, "a keyframe of \(size) bytes is too small to show pacing")
        while !session.complete(&timing) { MonotonicClock.sleep(nanoseconds: 5_000_000) }
        // At 125,000 bytes/s, or within 500 ms when that is faster: the last packet (it leaves as its
        // time begins) no sooner than either allows after the first 5,000 bytes.
        let floor = UInt64(Double(size - 5_000 - 1_200) / max(125_000, Double(size) / 0.5) * 1e9)
        #expect(timing.queued != 0 && timing.sent >= timing.queued + floor, "\(size) bytes left in \(timing.sent - timing.queued) ns")
        #expect(returned < timing.sent, "deliver returned before the frame left the pacer")
        session.finish()
        let sent = session.summary.packets
        peer.pump(1.0)
        #expect(UInt64(peer.packetCount) == sent)
    }

    /// Janus names substream 0's SSRC in every PLI it passes on, whichever
    /// substream its viewer watches: a PLI from the mountpoint's RTCP port
    /// (which Janus sends from) asks for every stream, and periodic
    /// keyframes stop on each (kept on the top, whose SSRC Janus never
    /// names, they keyed every layer every 3 s). From another port on
    /// Janus's host it still asks for keyframes but speaks for no
    /// mountpoint; an `--rtp` player beside Janus that never asks keeps its
    /// periodic keyframes; a PLI for a stream we do not send asks for nothing.
    @Test func janusAskingOnSubstreamZeroEndsPeriodicKeyframesOnEveryStream() throws {
        let (low, top, player) = (freePortPair(), freePortPair(), freePortPair())
        func session(withPlayer: Bool) throws -> RTPSession {
            var options = RTPSession.Options()
            // As the host makes a mountpoint's: one RTCP port for its substreams.
            options.simulcast = [try Destination("127.0.0.1:\(low)"), try Destination("127.0.0.1:\(top)").withRTCPPort(low + 1)]
            if withPlayer { options.destinations = [try Destination("127.0.0.1:\(player)")] }
            options.bitratesKbps = [625, 2500]
            return try RTPSession(options: options)
        }
        let janus = TestRTPPeer.bind(low + 1), stranger = TestRTPPeer.bind(freePortPair() + 1)
        defer {
            close(janus)
            close(stranger)
        }
        func pli(_ session: RTPSession, from socket: Int32, media: UInt32, waiting: UInt64 = 2_000_000_000) -> KeyframeRequests.Streams {
            let packet: [UInt8] = [0x81, 206, 0, 2] + bigEndianBytes(0x1234_5678) + bigEndianBytes(media)
            _ = withLoopback(session.rtcpPort) { sendto(socket, packet, packet.count, 0, $0, $1) }
            var asked: KeyframeRequests.Streams = []
            let deadline = MonotonicClock.now() + waiting
            while asked.isEmpty, MonotonicClock.now() < deadline {
                MonotonicClock.sleep(nanoseconds: 5_000_000)
                asked = session.poll(now: MonotonicClock.now())
            }
            return asked
        }
        let alone = try session(withPlayer: false)
        defer { alone.finish() }
        func periodic(_ session: RTPSession) -> Bool { session.needsPeriodicKeyframes(now: MonotonicClock.now()) }
        #expect(periodic(alone), "no destination has asked yet")
        #expect(pli(alone, from: janus, media: 0xDEAD_BEEF, waiting: 300_000_000).isEmpty, "a PLI for a stream we do not send")
        #expect(pli(alone, from: stranger, media: alone.ssrcs[0]) == .all)
        #expect(periodic(alone), "another port on Janus's host speaks for no mountpoint")
        // SSRC 0: as Janus names it while substream 0 sends nothing.
        #expect(pli(alone, from: janus, media: 0) == .all)
        #expect(!periodic(alone), "Janus asked for every substream")
        let beside = try session(withPlayer: true)
        defer { beside.finish() }
        #expect(pli(beside, from: janus, media: beside.ssrcs[0]) == .all)
        #expect(periodic(beside), "the --rtp player beside Janus never asked")
    }

    static let badDestinations: [([String], String)] = [
        (["--rtp", "no-such-host.invalid:5004"], "cannot resolve host \"no-such-host.invalid\""),
        (["--rtp", "127.0.0.1:70000"], "port must be 1...65534"),
        (["--rtp", "127.0.0.1:0"], "port must be 1...65534"),
        (["--rtp", "127.0.0.1"], "expected HOST:PORT"),
        (["--sdp", "/tmp/x.sdp"], "--sdp needs a destination"),
        (["--rtp", "127.0.0.1:5004", "--sdp", "/nonexistent-dir/x.sdp"], "cannot write --sdp /nonexistent-dir/x.sdp: no directory /nonexistent-dir"),
    ]

    @Test(arguments: badDestinations)
    func badDestinationsGetOneLineAndFail(_ arguments: [String], _ message: String) {
        let result = run(Paths.executable("frame-relay"), ["--app-group", uniqueGroup().name] + arguments)
        #expect(result.status != 0)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
}
