@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayHost
import FrameRelayTestSupport
import Testing

/// The subscriber and the link relay against peers that misbehave: a
/// Janus that never starts ICE, one that answers long polls at once, a
/// server that keeps its connections open, a stranger writing to the relay.
@Suite(.serialized) struct SubscriberHardeningTests {
    /// A fake Janus on loopback that answers every request with its
    /// Content-Length and keeps the connection open. `spin`: `watch` gets
    /// only an ack and every long poll `[]` at once; else `watch` gets an
    /// offer whose candidate never sends an ICE check. Prints a line per poll.
    func fakeJanus(spin: Bool) throws -> (Spawned, Int) {
        let port = try SocketAddress.freeTCPPort()
        let server = Spawned("/usr/bin/python3", ["-u", "-c", """
            import json, socket, threading
            SPIN = \(spin ? "True" : "False")
            FP = ":".join(["AB"] * 32)
            SDP = "\\r\\n".join(["v=0", "o=- 1 1 IN IP4 127.0.0.1", "s=-", "t=0 0", "m=video 9 UDP/TLS/RTP/SAVPF 96", "c=IN IP4 127.0.0.1", "a=mid:v",
                "a=sendonly", "a=ice-ufrag:abcd", "a=ice-pwd:abcdefghijklmnopqrstuv", "a=fingerprint:sha-256 " + FP, "a=setup:actpass",
                "a=rtpmap:96 VP8/90000", "a=candidate:1 1 udp 2015363327 127.0.0.1 9 typ host", ""])
            def answer(method, request):
                if method == "GET":
                    print("poll", flush=True)
                    return [] if SPIN else [{"janus": "keepalive"}]
                kind = request.get("janus")
                if kind in ("create", "attach"): return {"janus": "success", "data": {"id": 1234}}
                if kind == "message" and request["body"]["request"] == "watch":
                    if SPIN: return {"janus": "ack"}
                    return {"janus": "event", "plugindata": {"data": {"streaming": "event"}}, "jsep": {"type": "offer", "sdp": SDP}}
                if kind == "message": return {"janus": "event", "plugindata": {"data": {"result": {"status": "starting"}}}}
                return {"janus": "ack"}
            def serve(connection):
                data = b""
                while b"\\r\\n\\r\\n" not in data:
                    more = connection.recv(65536)
                    if not more: return
                    data += more
                head, body = data.split(b"\\r\\n\\r\\n", 1)
                lines = head.decode().split("\\r\\n")
                length = next((int(l.split(":")[1]) for l in lines if l.lower().startswith("content-length:")), 0)
                while len(body) < length: body += connection.recv(65536)
                reply = json.dumps(answer(lines[0].split(" ")[0], json.loads(body) if body else {})).encode()
                connection.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(reply) + reply)
                threading.Event().wait(60)  # the connection stays open: the answer is whole by its length
            listener = socket.create_server(("127.0.0.1", \(port)))
            print("ready", flush=True)
            while True:
                connection, _ = listener.accept()
                threading.Thread(target=serve, args=(connection,), daemon=True).start()
            """])
        for _ in 0..<100 where !server.stdout.contains("ready") { usleep(50_000) }
        return (server, port)
    }

    /// A Janus that takes the answer but never sends an ICE check, for a
    /// watch shorter than the viewers' start limit: one line saying no
    /// viewer connected and how far they got, exit 1, on time. Its answers
    /// come on connections it keeps open, each whole by its Content-Length.
    @Test func viewersThatNeverConnectSayItWithinTheDuration() throws {
        let (janus, port) = try fakeJanus(spin: false)
        defer { janus.signal(SIGTERM) }
        let started = Date()
        let result = run(Paths.executable("frame-relay"), ["subscribe", "--janus", "http://127.0.0.1:\(port)/janus", "--mountpoint", "7", "--duration", "3"], timeout: 30)
        let seconds = Date().timeIntervalSince(started)
        print("a Janus that never starts ICE: exit \(result.status) after \(String(format: "%.1f", seconds)) s: \(result.stderr)")
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("none of 1 viewers connected (ICE and DTLS) in the 3 s watched: no ICE check from Janus"), "\(result.stderr)")
        #expect(seconds < 10, "the watch of 3 s took \(seconds) s")
    }

    /// A Janus answering every long poll at once with nothing is asked at
    /// most ten times a second while the subscriber waits for its offer.
    @Test func aJanusAnsweringPollsAtOnceIsNotSpun() throws {
        let (janus, port) = try fakeJanus(spin: true)
        defer { janus.signal(SIGTERM) }
        let result = run(Paths.executable("frame-relay"), ["subscribe", "--janus", "http://127.0.0.1:\(port)/janus", "--mountpoint", "7", "--duration", "3"], timeout: 30)
        let polls = janus.stdout.components(separatedBy: "poll").count - 1
        print("a Janus answering polls at once: \(polls) polls in the 10 s wait for an offer")
        #expect(result.status == 1 && result.stderr.contains("no SDP offer for mountpoint 7 within 10 s"), "\(result.stderr)")
        #expect(polls > 0 && polls <= 110, "\(polls) polls")
    }

    /// `frame-relay link-relay` on loopback with `arguments`, once it says its ports: the viewer side's and Janus's.
    func linkRelay(_ arguments: [String]) throws -> (Spawned, [Int]) {
        let relay = Spawned(Paths.executable("frame-relay"), ["link-relay", "--address", "127.0.0.1"] + arguments)
        #expect(relay.waitForLog("page: ?relay="))
        let ports = try #require(relay.stderr.components(separatedBy: "?relay=127.0.0.1:").last?.prefix { $0 != ")" }.split(separator: ":").compactMap { Int($0) })
        try #require(ports.count == 2, "\(relay.stderr)")
        return (relay, ports)
    }

    /// Python for the relay's two peers: `sock()`, a UDP socket on
    /// loopback; `got(s)`, every datagram until `timeout` passes quiet;
    /// `janus` and `viewer`, each with the relay side it talks to
    /// (`JANUS_SIDE`, `VIEWER_SIDE`), Janus's side having heard Janus first.
    static func pythonPeers(_ ports: [Int], timeout: Double) -> String {
        """
        import socket, time
        def sock():
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); s.settimeout(\(timeout)); return s
        def got(s):
            out = []
            try:
                while True: out.append(s.recv(65536))
            except socket.timeout: return out
        VIEWER_SIDE, JANUS_SIDE = ("127.0.0.1", \(ports[0])), ("127.0.0.1", \(ports[1]))
        janus, viewer = sock(), sock()
        janus.sendto(b"janus-hello", JANUS_SIDE)
        time.sleep(0.1)

        """
    }

    /// The link relay's sides each take their peer from the first datagram
    /// and nothing from anyone else after: a stranger's datagram to the
    /// viewer side neither reaches Janus nor takes the stream.
    @Test func theLinkRelayFollowsNoStranger() throws {
        let (relay, ports) = try linkRelay(["--duration", "4"])
        let script = Self.pythonPeers(ports, timeout: 0.5) + """
            stranger = sock()
            viewer.sendto(b"viewer-hello", VIEWER_SIDE)
            print("janus heard", got(janus))
            stranger.sendto(b"stranger", VIEWER_SIDE)
            got(stranger)
            for i in range(3): janus.sendto(b"media-%d" % i, JANUS_SIDE)
            print("viewer heard", got(viewer), "stranger heard", got(stranger), "janus heard", got(janus))
            """
        let result = run("/usr/bin/python3", ["-c", script])
        print("link relay and a stranger: \(result.stdout)")
        #expect(result.stdout.contains("janus heard [b'viewer-hello']"), "\(result.stdout)")
        #expect(result.stdout.contains("viewer heard [b'media-0', b'media-1', b'media-2'] stranger heard [] janus heard []"), "\(result.stdout)")
        #expect(relay.wait() == 0)
        #expect(relay.stderr.contains("; 1 from strangers"), "\(relay.stderr)")
    }

    /// Datagrams larger than a media packet (DTLS and ICE ones can be)
    /// pass the relay whole both ways, and its last line counts every drop
    /// by cause in both directions (none here), the rate only where the link has one.
    @Test func theLinkRelayPassesLargeDatagramsWholeAndCountsDropsByCause() throws {
        let (relay, ports) = try linkRelay(["--link", "delay=500ms", "--duration", "5"])
        let script = Self.pythonPeers(ports, timeout: 1.5) + """
            viewer.sendto(b"viewer-hello", VIEWER_SIDE)
            for i in range(15):
                viewer.sendto(bytes([i]) * (2047 + 1000 * i), VIEWER_SIDE)
                janus.sendto(bytes([i]) * (1500 + 4000 * i), JANUS_SIDE)
            up, down = got(janus), got(viewer)
            print("janus got", len(up), "whole", sum(1 for i, d in enumerate(up[1:]) if d == bytes([i]) * (2047 + 1000 * i)))
            print("viewer got", len(down), "whole", sum(1 for i, d in enumerate(down[1:]) if d == bytes([i - 1]) * (1500 + 4000 * (i - 1))) if down and down[0] == bytes([0]) * 1500 else -1)
            """
        let result = run("/usr/bin/python3", ["-c", script])
        print("link relay with large datagrams: \(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains("janus got 16 whole 15"), "\(result.stdout) \(result.stderr)")
        #expect(relay.wait() == 0)
        #expect(relay.stderr.contains("passed 15 datagrams to the viewer and 16 to Janus; dropped toward the viewer 0 at random, 0 with the relay's buffer full, "
            + "toward Janus 0 at random, 0 with the relay's buffer full"), "\(relay.stderr)")
    }

    /// Empty datagrams are relayed like any other, and what a long delay
    /// still held when the relay stopped is said, not counted as passed.
    @Test func theLinkRelayRelaysEmptyDatagramsAndSaysWhatItStillHeld() throws {
        let (relay, ports) = try linkRelay(["--link", "delay=3s", "--duration", "4"])
        let script = Self.pythonPeers(ports, timeout: 0.5) + """
            viewer.sendto(b"", VIEWER_SIDE)
            time.sleep(2.5)
            for i in range(5): janus.sendto(b"late", JANUS_SIDE)
            time.sleep(0.8)
            print("janus got", got(janus))
            """
        let result = run("/usr/bin/python3", ["-c", script])
        #expect(result.stdout.contains("janus got [b'']"), "\(result.stdout) \(result.stderr)")
        #expect(relay.wait() == 0)
        #expect(relay.stderr.contains("passed 0 datagrams to the viewer and 1 to Janus;") && relay.stderr.contains("; 5 toward the viewer and 0 toward Janus still held when it stopped"),
                "\(relay.stderr)")
    }

    /// Datagrams forged to seem to come from the relay's own sides (a raw
    /// socket, in a network namespace of the test's own) are strangers:
    /// taken as a peer, one would loop between the two sides forever at a
    /// whole core (454,699 datagrams in 3 s, before).
    @Test func theLinkRelayTakesNeitherOfItsOwnSidesForAPeer() throws {
        let run = inNamespace("""
            $FR link-relay --address 127.0.0.1 --duration 3 > $D/relay.log 2>&1 & R=$!
            \(waitFor("page:", in: "$D/relay.log"))
            PORTS=$(sed -n 's/.*?relay=127.0.0.1:\\([0-9]*\\):\\([0-9]*\\)).*/\\1 \\2/p' $D/relay.log)
            python3 - $PORTS <<'PY'
            import socket, struct, sys
            viewer, janus = int(sys.argv[1]), int(sys.argv[2])
            def forged(source, destination, payload):
                s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
                s.sendto(struct.pack('>HHHH', source, destination, 8 + len(payload), 0) + payload, ('127.0.0.1', destination))
            forged(janus, viewer, b'x' * 100)
            for _ in range(20): forged(viewer, janus, b'y' * 100)
            PY
            wait $R; echo "relay exit $?"; cat $D/relay.log
            """, timeout: 30)
        #expect(run.output.contains("relay exit 0"), "\(run.output)")
        #expect(run.output.contains("passed 0 datagrams to the viewer and 0 to Janus") && run.output.contains("; 21 from strangers"), "\(run.output)")
    }
}
