@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayRTP
import FrameRelayHTTP
import FrameRelayTestSupport
import Testing

/// What peers send can neither flood nor forge a log line, hold the viewer,
/// nor turn a receiver into an amplifier: Janus's answers, readers that
/// never read, a long share's snapshot, strangers writing to the RTP
/// socket, a stream of gaps after a long stream, pipelined requests.
@Suite(.serialized) struct PeerHardeningTests {
    /// A fake Janus on loopback answering every request with `body`; its port.
    func fakeJanus(_ body: String) throws -> (Spawned, Int) {
        let port = try SocketAddress.freeTCPPort()
        let server = Spawned("/usr/bin/python3", ["-c", """
            import http.server, sys
            body = \(body)
            class J(http.server.BaseHTTPRequestHandler):
                def answer(self):
                    n = int(self.headers.get("Content-Length") or 0)
                    if n: self.rfile.read(n)
                    self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
                do_GET = do_POST = answer
                def log_message(self, *a): pass
            http.server.ThreadingHTTPServer(("127.0.0.1", \(port)), J).serve_forever()
            """])
        for _ in 0..<100 where run("/usr/bin/curl", ["-s", "-o", "/dev/null", "http://127.0.0.1:\(port)/"]).status != 0 { usleep(50_000) }
        return (server, port)
    }

    /// A 20 MB answer without `data.id`, and an error whose reason carries
    /// terminal escapes and a newline with a forged line: each is one line
    /// of at most a few hundred characters, control characters written out.
    @Test(arguments: ["huge", "escapes"])
    func janusWordsReachTheLogQuotedAndCut(_ kind: String) throws {
        let body = kind == "huge"
            ? #"b'{"janus":"success","junk":"' + b'A' * 20_000_000 + b'"}'"#
            : #"b'{"janus":"error","error":{"code":458,"reason":"\\u001b[31mRED\\u001b[2J\\u001b]0;pwned\\u0007\\r\\nframe-relay: fake line"}}'"#
        let (janus, port) = try fakeJanus(body)
        defer { janus.signal(SIGTERM) }
        let group = uniqueGroup("janusword")
        let result = run(Paths.executable("frame-relay"), ["--app-group", group.name, "--janus", "http://127.0.0.1:\(port)/janus", "--duration", "1"])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }
        print("janus \(kind): \(lines.map { String($0.prefix(160)) })")
        #expect(lines.count == 1 && lines[0].utf8.count < 400, "\(lines.count) lines, the longest \(lines.map(\.utf8.count).max() ?? 0) bytes")
        #expect(!result.stderr.utf8.contains(0x1B) && !result.stderr.utf8.contains(0x07) && !result.stderr.utf8.contains(0x0D), "raw control characters reached the log")
        #expect(!result.stderr.contains("\nframe-relay: fake line"))
        if kind == "escapes" { #expect(lines.first?.contains(#"error 458: \u{1b}[31mRED"#) == true, "\(lines)") }
        if kind == "huge" { #expect(lines.first?.contains("unexpected answer: {\"janus\":\"success\",\"junk\":\"AAAA") == true && lines.first?.hasSuffix("…") == true, "\(lines)") }
    }

    /// 128 clients that ask for /stream.ivf and never read hold no slot for
    /// long: once what they do not read fills their buffers and ours, each is
    /// closed within the send stall limit, and a new viewer then gets the
    /// page and the stream.
    @Test func streamReadersThatNeverReadMakeWay() throws {
        let group = uniqueGroup("stall")
        let port = try SocketAddress.freeTCPPort()
        let h = host([group], ["--http", "\(port)", "--quiet"])
        let p = producer(group, ["--size", "640x360", "--fps", "30", "--duration", "60", "--quiet"])
        defer { h.signal(SIGINT); _ = h.wait(); p.signal(SIGTERM); _ = p.wait() }
        for _ in 0..<100 where run("/usr/bin/curl", ["-s", "-o", "/dev/null", "--max-time", "1", "http://127.0.0.1:\(port)/stats.json"]).status != 0 { usleep(100_000) }
        usleep(1_500_000)
        // 128 stream readers that never read, held open 25 s.
        let stalled = Spawned("/usr/bin/python3", ["-c", """
            import socket, time
            held = []
            for i in range(128):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window stays small
                s.connect(("127.0.0.1", \(port)))
                s.sendall(b"GET /stream.ivf HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
                held.append(s)
            print("holding", len(held), flush=True)
            time.sleep(25)
            """])
        defer { stalled.signal(SIGTERM) }
        for _ in 0..<100 where !stalled.stdout.contains("holding") { usleep(100_000) }
        usleep(UInt32(HTTPServer.sendStallLimit * 1e6) + 8_000_000)
        let page = run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", "http://127.0.0.1:\(port)/"])
        let stream = run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", "--max-time", "3", "http://127.0.0.1:\(port)/stream.ivf"])
        print("after 128 stalled stream readers: page \(page.stdout), stream \(stream.stdout)")
        #expect(page.stdout == "200", "the page answered \(page.stdout)")
        let fields = stream.stdout.split(separator: " ")
        #expect(fields.first == "200" && (Int(fields.last ?? "") ?? 0) > 10_000, "the stream answered \(stream.stdout)")
    }

    /// A host that serves only HTTP has no periodic keyframes: its snapshot
    /// still works long after the newest keyframe left the broadcast (here
    /// over 1,500 frames in, at 240 frames a second).
    @Test func aSnapshotIsMadeAtAnyTimeInALongShare() throws {
        let group = uniqueGroup("snaplong")
        let port = try SocketAddress.freeTCPPort()
        let h = host([group], ["--http", "\(port)", "--quiet"])
        let p = producer(group, ["--size", "320x240", "--fps", "240", "--duration", "20", "--quiet"])
        defer { h.signal(SIGINT); _ = h.wait(); p.signal(SIGTERM); _ = p.wait() }
        var answers: [String] = []
        for wait in [2.0, 5.0, 7.0] {
            usleep(UInt32(wait * 1e6))
            let snapshot = run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code} %{content_type}", "--max-time", "5", "http://127.0.0.1:\(port)/snapshot.jpg"])
            answers.append(snapshot.stdout)
        }
        print("snapshots at 2, 7 and 14 s: \(answers)")
        #expect(answers.allSatisfy { $0 == "200 image/jpeg" }, "\(answers)")
    }

    /// The host's RTP socket only sends: connected to its one destination,
    /// it takes nothing a stranger sends it (its receive queue stays empty).
    @Test func theRTPSocketTakesNothingFromStrangers() throws {
        let group = uniqueGroup("rtpsock")
        // A receiver that learns where the RTP comes from, then floods that port from elsewhere.
        let receiverPort = try SocketAddress.freeTCPPort()
        let h = host([group], ["--rtp", "127.0.0.1:\(receiverPort)", "--quiet"])
        let p = producer(group, ["--size", "320x240", "--fps", "30", "--duration", "10", "--quiet"])
        defer { h.signal(SIGINT); _ = h.wait(); p.signal(SIGTERM); _ = p.wait() }
        let probe = run("/usr/bin/python3", ["-c", """
            import socket, time
            r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); r.bind(("127.0.0.1", \(receiverPort))); r.settimeout(10)
            data, source = r.recvfrom(2048)
            stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for i in range(200): stranger.sendto(b"junk" * 100, source)
            time.sleep(0.5)
            queued = 0
            for line in open("/proc/net/udp").read().splitlines()[1:]:
                fields = line.split()
                if int(fields[1].split(":")[1], 16) == source[1]:
                    queued = int(fields[4].split(":")[1], 16)
            print("port", source[1], "queued", queued)
            """], timeout: 30)
        print("RTP socket: \(probe.stdout) \(probe.stderr)")
        #expect(probe.stdout.contains("queued 0"), "\(probe.stdout) \(probe.stderr)")
    }

    /// The receiver's feedback is a tenth of what came in lately, not of the
    /// whole run: after 8 MB of stream, 28 KB of packets full of gaps draw at
    /// most a tenth of themselves and the credit's 2 KB.
    @Test func aLongStreamDoesNotPayForABurstOfFeedback() throws {
        let port = try SocketAddress.freeTCPPort()
        let dir = Paths.temporaryDirectory().path
        let r = Spawned(Paths.executable("frame-relay"), ["receive", "--port", "\(port)", "--duration", "8", "--report", dir + "/received.json", "--quiet"])
        usleep(300_000)
        let sender = run("/usr/bin/python3", ["-c", """
            import socket, struct, time
            rtp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); rtp.bind(("127.0.0.1", 0))
            rtcp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); rtcp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            rtcp.bind(("127.0.0.1", 0)); rtcp.setblocking(False)
            ssrc = 0x0BADCAFE
            def packet(seq, payload):
                return struct.pack(">BBHII", 0x80, 0x80 | 96, seq & 0xFFFF, (seq * 3000) & 0xFFFFFFFF, ssrc) + payload
            sent = 0
            rtp.sendto(packet(0, b"\\x10\\x00"), ("127.0.0.1", \(port)))
            time.sleep(0.05)
            rtcp.sendto(struct.pack(">BBHI", 0x80, 200, 6, ssrc) + bytes(20), ("127.0.0.1", \(port + 1)))
            time.sleep(0.05)
            for seq in range(1, 8001):  # 8 MB, no gap
                rtp.sendto(packet(seq, b"\\x10\\x00" + bytes(1000)), ("127.0.0.1", \(port)))
                if seq % 50 == 0: time.sleep(0.002)
            time.sleep(0.3)
            def drain():
                total = 0
                while True:
                    try: total += len(rtcp.recv(2048))
                    except BlockingIOError: return total
            drain()
            burst, seq, feedback = 0, 8001, 0
            while burst < 28000:  # packets 64 apart: each gap asks for 63
                p = packet(seq, b"\\x10\\x00" + bytes(98)); rtp.sendto(p, ("127.0.0.1", \(port))); burst += len(p); seq += 64
                time.sleep(0.0005)
                feedback += drain()
            time.sleep(0.5)
            print("burst", burst, "feedback", feedback + drain())
            """], timeout: 60)
        _ = r.wait()
        let fields = sender.stdout.split(separator: " ")
        let burst = Int(fields.count > 1 ? fields[1] : "") ?? 0, feedback = Int(fields.last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? .max
        print("feedback budget: \(burst) bytes of gaps after 8 MB drew \(feedback) bytes of feedback")
        #expect(burst >= 28_000 && feedback <= burst / 10 + 2_048 + 100, "\(sender.stdout) \(sender.stderr)")
    }

    /// Two requests pipelined on one connection: the first is answered with
    /// Connection: close, the second is not, and the connection ends with a
    /// clean close after the whole answer (not a reset that could cut it).
    @Test func pipelinedRequestsGetTheFirstAnswerAndAClose() throws {
        let group = uniqueGroup("pipeline")
        let port = try SocketAddress.freeTCPPort()
        let h = host([group], ["--http", "\(port)", "--quiet"])
        defer { h.signal(SIGINT); _ = h.wait() }
        usleep(500_000)
        let client = run("/usr/bin/python3", ["-c", """
            import socket
            s = socket.create_connection(("127.0.0.1", \(port)))
            s.sendall(b"GET /stats.json HTTP/1.1\\r\\nHost: x\\r\\n\\r\\nGET /metrics HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n" + b"X" * 100000)
            data = b""
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk: break
                    data += chunk
                end = "clean close"
            except ConnectionResetError:
                end = "reset"
            head, _, body = data.partition(b"\\r\\n\\r\\n")
            length = int([l.split(b":")[1] for l in head.split(b"\\r\\n") if l.lower().startswith(b"content-length")][0])
            print(data.count(b"HTTP/1.1 "), b"Connection: close" in head, length == len(body), end)
            """], timeout: 30)
        #expect(client.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1 True True clean close", "\(client.stdout) \(client.stderr)")
    }

    /// Janus picks a mountpoint's two ports itself, and two mountpoints
    /// created at once can interleave them (10000 and 10003 in a 2-share
    /// load test): the host sends RTP to the one and its sender reports to
    /// the other, whatever their distance.
    @Test func janusPortsAreTakenAsJanusGivesThem() throws {
        let receiver = Spawned("/usr/bin/python3", ["-c", """
            import socket, select, time
            rtp, rtcp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM), socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            rtp.bind(("127.0.0.1", 0)); rtcp.bind(("127.0.0.1", 0))
            while rtcp.getsockname()[1] == rtp.getsockname()[1] + 1:
                rtcp.close(); rtcp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); rtcp.bind(("127.0.0.1", 0))
            print("ports", rtp.getsockname()[1], rtcp.getsockname()[1], flush=True)
            got = {"rtp": 0, "sr": 0}
            end = time.time() + 20
            while time.time() < end and not (got["rtp"] and got["sr"]):
                for s in select.select([rtp, rtcp], [], [], 0.5)[0]:
                    data = s.recv(2048)
                    if s is rtp and data[1] & 0x7F == 96: got["rtp"] += 1
                    if s is rtcp and data[1] == 200: got["sr"] += 1
            print("got", got["rtp"] > 0, got["sr"] > 0, flush=True)
            """])
        defer { receiver.signal(SIGTERM) }
        for _ in 0..<100 where !receiver.stdout.contains("ports") { usleep(50_000) }
        let ports = receiver.stdout.split(whereSeparator: \.isWhitespace).dropFirst().prefix(2).compactMap { Int($0) }
        try #require(ports.count == 2 && ports[1] != ports[0] + 1, "\(receiver.stdout)")
        let (janus, port) = try fakeJanus(#"b'{"janus":"success","data":{"id":7},"plugindata":{"data":{"stream":{"ports":[{"port":\#(ports[0]),"rtcp_port":\#(ports[1])}]}}}}'"#)
        defer { janus.signal(SIGTERM) }
        let group = uniqueGroup("janusports")
        // One layer: the fake Janus gives the ports of a mountpoint without simulcast.
        let h = host([group], ["--janus", "http://127.0.0.1:\(port)/janus", "--layers", "1", "--duration", "6"])
        let p = producer(group, ["--size", "320x240", "--fps", "30", "--duration", "8", "--quiet"])
        defer { p.signal(SIGTERM); _ = p.wait() }
        #expect(h.waitForLog("RTP to port \(ports[0]), RTCP to \(ports[1])"), "\(h.stderr)")
        for _ in 0..<200 where !receiver.stdout.contains("got") { usleep(100_000) }
        #expect(receiver.stdout.contains("got True True"), "\(receiver.stdout) \(h.stderr)")
        h.signal(SIGINT)
        _ = h.wait()
    }
}
