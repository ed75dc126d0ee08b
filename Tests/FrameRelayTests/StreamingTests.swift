@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRTP
import FrameRelayHost
import Testing

/// RTP/RTCP to real receivers: ffmpeg through our SDP, GStreamer, a test
/// peer that sends PLI and FIR, and our own receiver under packet loss.
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
        first.pump(2.5)
        second.pump(0.2)
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        #expect(first.frames.count >= 40 && second.frames.count == first.frames.count)
        #expect(first.reports.count >= 1 && second.reports.count >= 1, "both get Sender Reports")
    }

    @Test func gstreamerDecodesOurRTP() throws {
        let group = uniqueGroup("gst")
        let port = freePortPair()
        let dir = Paths.temporaryDirectory()
        let raw = dir.appendingPathComponent("gst.gray").path
        let hostStats = dir.appendingPathComponent("host.json").path
        let gst = Spawned("/usr/bin/gst-launch-1.0", [
            "-e", "-q", "udpsrc", "port=\(port)",
            "caps=application/x-rtp,media=video,clock-rate=90000,encoding-name=VP8,payload=96",
            "!", "rtpjitterbuffer", "latency=100", "!", "rtpvp8depay", "!", "vp8dec", "!", "videoconvert",
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

    @Test func pliAndFirEachBringAKeyframeWithinAFrameAndSenderReportsParse() throws {
        let group = uniqueGroup("pli")
        let port = freePortPair()
        let peer = TestRTPPeer(port: port)
        let dir = Paths.temporaryDirectory()
        let hostStats = dir.appendingPathComponent("host.json").path
        let h = host([group], ["--rtp", "127.0.0.1:\(port)", "--keyframe-interval", "0", "--exit-when-finished", "--report", hostStats, "--quiet"])
        let p = producer(group, ["--size", "320x240", "--fps", "30", "--duration", "6", "--quiet"])
        peer.pump(1.5)
        // Sender Reports: our SSRC, wall-clock NTP time, an RTP time near the packets'.
        let report = try #require(peer.reports.last, "no Sender Report")
        #expect(report.ssrc == peer.mediaSSRC && report.packets > 0)
        let unixNow = UInt64(Date().timeIntervalSince1970)
        #expect(abs(Int64(report.ntpSeconds) - Int64(unixNow + 2_208_988_800)) <= 2)
        let lastFrame = try #require(peer.frames.last)
        #expect(abs(Int64(Int32(bitPattern: report.rtpTimestamp &- lastFrame.timestamp))) < 90_000)

        for (kind, request) in [("PLI", { peer.sendPLI() }), ("FIR", peer.sendFIR)] as [(String, () -> Void)] {
            let before = peer.frames.count
            let sentAt = MonotonicClock.now()
            request()
            peer.pump(0.6)
            let after = peer.frames[before...]
            let key = after.firstIndex { $0.keyframe }
            #expect(key != nil, "\(kind): no keyframe")
            if let key {
                #expect(key - before <= 1, "\(kind): keyframe was frame \(key - before + 1) after the request")
                #expect(Double(peer.frames[key].arrival - sentAt) / 1e6 < 70, "\(kind): keyframe after \(Double(peer.frames[key].arrival - sentAt) / 1e6) ms")
            }
        }
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        let transport = try #require(try readShareStats(hostStats).first?.transport)
        #expect(transport.pli == 1 && transport.fir == 1)
        #expect(peer.frames.filter(\.keyframe).count == 3)  // the first frame, the PLI's, the FIR's
    }

    /// Feedback is for our stream only: a PLI for SSRC 0 or another
    /// stream's is not obeyed. The RTCP socket listens where the stream
    /// goes (loopback here), not on every address.
    @Test func feedbackForOtherStreamsIsIgnoredAndRTCPListensWhereTheStreamGoes() throws {
        let group = uniqueGroup("pli0")
        let port = freePortPair()
        let peer = TestRTPPeer(port: port)
        let hostStats = Paths.temporaryDirectory().appendingPathComponent("host.json").path
        let h = host([group], ["--rtp", "127.0.0.1:\(port)", "--keyframe-interval", "0", "--exit-when-finished", "--report", hostStats])
        let p = producer(group, ["--size", "320x240", "--fps", "30", "--duration", "3", "--quiet"])
        peer.pump(1.0)
        #expect(!peer.reports.isEmpty, "no Sender Report")
        // "RTCP on port N" in the log; /proc/net/udp must show that port bound to 127.0.0.1 only.
        let rtcpPort = try #require(Int(h.stderr.components(separatedBy: "RTCP on port ").dropFirst().first?.prefix { $0.isNumber } ?? ""), "\(h.stderr)")
        #expect(udpLocalAddresses(port: rtcpPort) == ["0100007F"], "\(udpLocalAddresses(port: rtcpPort))")
        peer.sendPLI(media: 0)
        peer.sendPLI(media: peer.mediaSSRC &+ 1)
        peer.pump(0.5)
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        let transport = try #require(try readShareStats(hostStats).first?.transport)
        #expect(transport.pli == 0, "a PLI for another SSRC was obeyed")
        #expect(peer.frames.filter(\.keyframe).count == 1, "only the first frame is a keyframe")
    }

    /// The receiver's feedback cannot be aimed at a third party or made
    /// larger than what it receives: a Sender Report with the stream's SSRC
    /// from another host (127.0.0.2) is refused, and a stream of 14-byte
    /// packets 64 sequence numbers apart (63 lost packets each) gets NACKs
    /// worth at most a tenth of its bytes.
    @Test func receiverFeedbackGoesOnlyToTheStreamsHostAndStaysSmall() throws {
        let port = freePortPair()
        let received = Paths.temporaryDirectory().appendingPathComponent("received.json").path
        let r = Spawned(Paths.executable("frame-relay"), ["receive", "--port", "\(port)", "--duration", "20", "--idle", "1", "--report", received, "--quiet"])
        #expect(waitUntilUDPPortIsBound(port))
        func udp(_ address: String) -> Int32 {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(address)
            _ = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            return fd
        }
        let stream = udp("127.0.0.1"), streamRTCP = udp("127.0.0.1"), elsewhere = udp("127.0.0.2")
        defer { for fd in [stream, streamRTCP, elsewhere] { close(fd) } }
        let ssrc: UInt32 = 0x0BAD_CAFE
        var rtpBytes = 0
        func sendRTP(_ sequence: UInt16) {
            let packet = rtpPacket(ssrc: ssrc, sequence: sequence, timestamp: UInt32(sequence) * 3000, marker: true, payload: [0x10, 0x00])
            rtpBytes += packet.count
            _ = withLoopback(port) { sendto(stream, packet, packet.count, 0, $0, $1) }
        }
        let report = [0x80, 200, 0, 6] + bigEndianBytes(ssrc) + [UInt8](repeating: 0, count: 20)
        sendRTP(0)
        usleep(50_000)
        // The stream's own report, then the forged one: the last word must not move the feedback.
        _ = withLoopback(port + 1) { sendto(streamRTCP, report, report.count, 0, $0, $1) }
        usleep(20_000)
        _ = withLoopback(port + 1) { sendto(elsewhere, report, report.count, 0, $0, $1) }
        usleep(50_000)
        for n in 1...300 {
            sendRTP(UInt16(n * 64 % 65_536))
            if n % 20 == 0 { usleep(2_000) }
        }
        #expect(r.wait() == 0)
        func drain(_ fd: Int32) -> Int {
            var total = 0
            var buffer = [UInt8](repeating: 0, count: 2048)
            while case let n = recv(fd, &buffer, buffer.count, 0), n > 0 { total += n }
            return total
        }
        let reflected = drain(elsewhere), answered = drain(streamRTCP)
        #expect(reflected == 0, "\(reflected) bytes of feedback went to a host that is not the stream's")
        #expect(answered > 0 && answered * 10 <= rtpBytes, "\(answered) bytes of feedback for \(rtpBytes) bytes of RTP")
        let stats = try JSONDecoder().decode(ReceiveReport.self, from: Data(contentsOf: URL(fileURLWithPath: received))).stats
        #expect(stats.senderReportsRefused == 1 && stats.senderReports == 1, "\(stats)")
        #expect(stats.feedbackWithheld > 0 && stats.feedbackBytes * 10 <= stats.bytesReceived, "\(stats)")
    }

    /// NACKs can come from anyone who knows the SSRC: asking for the same
    /// packets thousands of times gets each sent again once per 100 ms, never
    /// a flood.
    @Test func aNACKStormIsNotAmplified() throws {
        let group = uniqueGroup("nack")
        let port = freePortPair()
        let peer = TestRTPPeer(port: port)
        let hostStats = Paths.temporaryDirectory().appendingPathComponent("host.json").path
        let h = host([group], ["--rtp", "127.0.0.1:\(port)", "--exit-when-finished", "--report", hostStats, "--quiet"])
        let p = producer(group, ["--size", "320x240", "--fps", "30", "--duration", "3", "--quiet"])
        peer.pump(1.5)
        #expect(!peer.reports.isEmpty, "no Sender Report to answer")
        // 20 packets, each asking 371 times for the last 17 packets sent: 126,140 requests.
        for _ in 0..<20 { peer.sendNACK(first: peer.lastSequence &- 16) }
        peer.pump(0.3)
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        let transport = try #require(try readShareStats(hostStats).first?.transport)
        #expect(transport.nacked >= 371 * 17, "the storm was not read: \(transport.nacked) requests")
        #expect(transport.retransmitted <= 3 * 17, "\(transport.retransmitted) packets sent again for \(transport.nacked) requests")
    }

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
        let r = Spawned(Paths.executable("frame-relay"), ["receive", "--port", "\(port)", "--duration", "5", "--report", received, "--quiet"])
        #expect(waitUntilUDPPortIsBound(port))
        let h = host([group], ["--rtp", "127.0.0.1:\(port)", "--rtp", "127.0.0.1:\(watch)", "--exit-when-finished", "--quiet"])
        let p = producer(group, ["--size", "320x240", "--fps", "30", "--duration", "3", "--quiet"])
        peer.pump(1.0)
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

    @Test func packetLossIsRecoveredByNACKAndKeyframes() throws {
        // A network namespace of our own with 5 % of packets to the RTP port dropped on input,
        // the host on its defaults (only what changed, keyframes on request).
        let port = freePortPair()
        let dir = Paths.temporaryDirectory()
        let hostStats = dir.appendingPathComponent("host.json").path
        let receiverStats = dir.appendingPathComponent("receiver.json").path
        let group = uniqueGroup("loss")
        let script = """
            set -e
            ip link set lo up
            nft "add table inet t; add chain inet t in { type filter hook input priority 0; policy accept; }; add rule inet t in udp dport \(port) numgen random mod 100 < 5 drop"
            '\(Paths.executable("frame-relay"))' --app-group \(group.name) --exit-when-finished --rtp 127.0.0.1:\(port) --report '\(hostStats)' --quiet &
            sleep 0.3
            '\(Paths.executable("frame-relay"))' receive --port \(port) --duration 7 --report '\(receiverStats)' --quiet &
            sleep 0.3
            '\(Paths.executable("broadcast-sim"))' --app-group \(group.name) --frames 150 --fps 30 --size 640x360 --quiet
            wait
            """
        let result = run("/usr/bin/unshare", ["-rn", "sh", "-c", script], timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        let share = try #require(try readShareStats(hostStats).first)
        let transport = try #require(share.transport)
        let received = try JSONDecoder().decode(ReceiveReport.self, from: Data(contentsOf: URL(fileURLWithPath: receiverStats))).stats
        #expect(received.nacksSent > 0 && transport.retransmitted > 0, "NACKs \(received.nacksSent), resent \(transport.retransmitted)")
        // On the default path a receiver that asks gets keyframes only when it asks: the first, and one per PLI.
        #expect((share.encoded?.keyframes ?? 0) <= 1 + transport.pli, "\(share.encoded?.keyframes ?? 0) keyframes for \(transport.pli) PLIs")
        #expect(received.decodeErrors == 0)
        #expect(received.stampsOutOfOrder == 0)
        #expect(Double(received.framesDecoded) >= 0.7 * Double(transport.frames), "decoded \(received.framesDecoded) of \(transport.frames)")
        #expect((received.lastStamp ?? 0) >= 140, "the picture must come back: last frame \(received.lastStamp ?? 0)")
        #expect(!segmentExists(group))
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

    @Test func receiverPortInUseIsOneLine() throws {
        let port = freePortPair()
        let holder = TestRTPPeer(port: port)
        let result = run(Paths.executable("frame-relay"), ["receive", "--port", "\(port)", "--duration", "1"])
        #expect(result.status != 0 && result.stderr.contains("port \(port) (or \(port + 1) for RTCP) is already in use"), "\(result.stderr)")
        _ = holder
    }

    /// A large keyframe leaves in paced bursts: the k-th burst of 16 packets
    /// never before k × 0.3 ms after the first (a lower bound, which sleeping
    /// guarantees however loaded the machine), and every packet arrives.
    @Test func keyframesLeaveInPacedBursts() throws {
        let port = freePortPair()
        let peer = TestRTPPeer(port: port)
        var options = RTPSession.Options()
        options.destinations = [try Destination("127.0.0.1:\(port)")]
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
        var elapsed: UInt64 = 0
        try encoder.encode(EncoderInput(noise), captureTime: MonotonicClock.now()) { frame in
            #expect(frame.isKeyframe)
            let start = MonotonicClock.now()
            session.send(frame, captureTime: start)
            elapsed = MonotonicClock.now() - start
        }
        let sent = session.summary.packets
        let bursts = (sent + 15) / 16
        #expect(bursts >= 4, "a keyframe of \(sent) packets is too small to show pacing")
        #expect(elapsed >= (bursts - 1) * options.burstGap, "\(sent) packets in \(elapsed) ns")
        peer.pump(1.0)
        #expect(UInt64(peer.packetCount) == sent)
    }
}
