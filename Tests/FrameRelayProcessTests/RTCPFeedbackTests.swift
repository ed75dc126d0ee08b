@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRTP
import FrameRelayHost
import FrameRelayTestSupport
import Testing

/// RTCP from a receiver back to the host: PLI and FIR bring keyframes,
/// NACKs bring packets again (never amplified), feedback for other
/// streams is ignored, and packet loss is repaired.
@Suite(.serialized) struct RTCPFeedbackTests {
    @Test func pliAndFirEachBringAKeyframeWithinAFrameAndSenderReportsParse() throws {
        let group = uniqueGroup("pli")
        let port = freePortPair()
        let peer = TestRTPPeer(port: port)
        let dir = Paths.temporaryDirectory()
        let hostStats = dir.appendingPathComponent("host.json").path
        let h = host([group], ["--rtp", "127.0.0.1:\(port)", "--keyframe-interval", "0", "--exit-when-finished", "--report", hostStats, "--quiet"])
        let p = producer(group, ["--size", "320x240", "--fps", "30", "--duration", "6", "--quiet"])
        // Half a second of frames (past the least gap between two asked-for keyframes) and a Sender Report, however long the start took.
        peer.pump(until: { peer.frames.count >= 15 && !peer.reports.isEmpty }, timeout: 4)
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
                // The frame after the request at the latest; in time, under the least gap between two asked-for keyframes (300 ms).
                #expect(Double(peer.frames[key].arrival - sentAt) / 1e6 < 250, "\(kind): keyframe after \(Double(peer.frames[key].arrival - sentAt) / 1e6) ms")
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
    /// a flood, and only to the receiver that asked: another destination of
    /// the stream gets each packet once.
    @Test func aNACKStormIsNotAmplified() throws {
        let group = uniqueGroup("nack")
        let port = freePortPair(), other = port + 2
        let peer = TestRTPPeer(port: port), bystander = TestRTPPeer(port: other)
        let hostStats = Paths.temporaryDirectory().appendingPathComponent("host.json").path
        let h = host([group], ["--rtp", "127.0.0.1:\(port)", "--rtp", "127.0.0.1:\(other)", "--exit-when-finished", "--report", hostStats, "--quiet"])
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
        #expect(transport.retransmitted >= 17, "the storm's packets were not sent again: \(transport.retransmitted)")
        bystander.pump(0.2)
        #expect(bystander.packetCount == Int(transport.packets), "\(bystander.packetCount) packets at the destination that asked nothing, of \(transport.packets) sent")
    }

    @Test func packetLossIsRecoveredByNACKAndKeyframes() throws {
        // A network namespace of our own with every 20th packet to the RTP port dropped on input (5 %,
        // the same packets run to run: a random 5 % lost a retransmission, a PLI and its frames, so
        // often that 1 run in 5 decoded under 70 %), the host on its defaults (only what changed, keyframes on request).
        let port = freePortPair()
        let dir = Paths.temporaryDirectory()
        let hostStats = dir.appendingPathComponent("host.json").path
        let receiverStats = dir.appendingPathComponent("receiver.json").path
        let group = uniqueGroup("loss")
        let script = """
            set -e
            ip link set lo up
            nft "add table inet t; add chain inet t in { type filter hook input priority 0; policy accept; }; add rule inet t in udp dport \(port) numgen inc mod 20 == 0 drop"
            '\(Paths.executable("frame-relay"))' --app-group \(group.name) --exit-when-finished --rtp 127.0.0.1:\(port) --report '\(hostStats)' --quiet &
            sleep 0.3
            '\(Paths.executable("frame-relay"))' receive --port \(port) --duration 30 --idle 1 --report '\(receiverStats)' --quiet &
            for i in $(seq 100); do ss -Hlun "sport = :\(port)" | grep -q . && break; sleep 0.1; done
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
}
