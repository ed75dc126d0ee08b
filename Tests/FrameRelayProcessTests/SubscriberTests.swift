@preconcurrency import Glibc
import Foundation
import FrameRelayRing
import FrameRelayHost
import FrameRelaySubscriber
import FrameRelayTools
import FrameRelayTestSupport
import Testing
import FrameRelayJanus

/// The native WebRTC subscriber (`frame-relay subscribe`) against a real
/// Janus, a real host and producer, in a network namespace of their own.
@Suite(.serialized) struct SubscriberTests {
    static let janus = "http://10.200.0.1:18188/janus"

    /// Janus on 10.200.0.1:18188, a host streaming `group` into it with its
    /// trace in $D/trace.jsonl, and a producer for `seconds`; then `script`.
    func withShare(_ group: AppGroup, size: String = "640x360", fps: Int = 30, seconds: Int = 12, hostArguments: String = "", _ script: String, timeout: Double = 90)
        -> (status: Int32, output: String, directory: String)
    {
        inNamespace("""
            $FR janus --address 10.200.0.1 --port 18188 > $D/janus.log 2>&1 & J=$!
            \(waitFor("Ctrl-C", in: "$D/janus.log"))
            $FR --app-group \(group.name) --janus \(Self.janus) --trace $D/trace.jsonl --exit-when-finished \(hostArguments) > $D/host.log 2>&1 & H=$!
            $SIM --app-group \(group.name) --size \(size) --fps \(fps) --duration \(seconds) --quiet & P=$!
            \(waitFor("first-frame", in: "$D/host.log"))
            \(script)
            wait $P; wait $H; kill -INT $J 2>/dev/null; wait
            """, timeout: timeout)
    }

    func report(_ directory: String, _ name: String = "sub.json") throws -> AudienceReport {
        try JSONDecoder().decode(AudienceReport.self, from: Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
    }

    /// What a subscriber counts without decoding is what libvpx decodes: for
    /// every decoding viewer the frames it called decodable are the frames
    /// decoded, each picture's stamp is the frame the host sent with that
    /// PictureID, and the viewers that do not decode count as many frames.
    @Test func subscribersCountExactlyTheFramesTheSampledDecodersDecode() throws {
        let group = uniqueGroup("subcount")
        let run = withShare(group, """
            $FR subscribe --janus \(Self.janus) --app-group \(group.name) --viewers 4 --decode-every 2 --duration 6 \
              --captures $D/trace.jsonl --report $D/sub.json 2> $D/sub.log
            echo "subscribe exit $?"; cat $D/sub.log
            """)
        #expect(run.output.contains("subscribe exit 0"), "\(run.output.suffix(2000))")
        let result = try #require(try report(run.directory).groups.first, "\(run.output.suffix(2000))")
        #expect(result.watching == 4 && result.decoders == 2 && result.error == nil, "\(result)")
        for viewer in result.subscribers where viewer.decodes {
            #expect(viewer.framesDecodable >= 120, "\(viewer)")
            #expect(viewer.framesDecoded == viewer.framesDecodable && viewer.decodeErrors == 0, "decoded \(viewer.framesDecoded) of \(viewer.framesDecodable) counted")
            #expect(viewer.stampsRead == viewer.framesDecoded)
        }
        let decoded = result.subscribers.filter(\.decodes).map(\.framesDecodable), counted = result.subscribers.filter { !$0.decodes }.map(\.framesDecodable)
        // Joined a few tens of milliseconds apart, each waits for its first keyframe, and Janus asks
        // the host for one at most once a second: within a second and a half of frames of each other.
        #expect(counted.allSatisfy { count in decoded.allSatisfy { abs(Int($0) - Int(count)) <= 45 } }, "decoders \(decoded), counters \(counted)")
        #expect(result.picturesMatched >= 200 && result.picturesMismatched == 0, "\(result.picturesMatched) stamps matched, \(result.picturesMismatched) wrong")
        #expect(result.totals.packetsLost == 0 && result.totals.framesSkipped == 0, "\(result.totals)")
        // Janus's packets all come under the offer's SSRCs, its Sender Reports too.
        #expect(result.totals.strangeSSRCs == 0 && result.totals.senderReports >= 4 && result.totals.srtpFailures == 0, "\(result.totals)")
        let latency = try #require(result.latency)
        print("subscribe: \(result.totals.framesDecodable) frames counted, \(result.picturesMatched) pictures checked; capture → decodable p50 \(latency.p50Ms) ms p99 \(latency.p99Ms) ms")
        #expect(latency.count >= 400 && latency.p50Ms > 0 && latency.p99Ms < 200, "\(latency)")
    }

    /// A 720p share into Janus in two simulcast layers, watched on a free
    /// link and through 1 Mbit/s with a 300 ms queue: the free viewer
    /// starts small and steps up to the whole picture at its full rate; the
    /// narrow one stays on the small layer (its keyframes show the link has
    /// no room for the large one) at nearly the full rate; every picture the
    /// decoders check is the frame the host sent on the layer they watched.
    @Test func simulcastViewersPickTheLayerTheirLinkCarries() throws {
        let group = uniqueGroup("sublayers")
        let run = withShare(group, size: "1280x720", seconds: 26, """
            $FR subscribe --janus \(Self.janus) --app-group \(group.name) --viewers 2 --decode-every 1 --duration 20 \
              --link perfect --link rate=1mbit,queue=300ms --captures $D/trace.jsonl --report $D/sub.json 2> $D/sub.log
            echo "subscribe exit $?"; cat $D/sub.log
            """, timeout: 120)
        #expect(run.output.contains("subscribe exit 0"), "\(run.output.suffix(2000))")
        let groups = try report(run.directory).groups
        try #require(groups.count == 2, "\(run.output.suffix(2000))")
        let free = try #require(groups[0].subscribers.first), narrow = try #require(groups[1].subscribers.first)
        print("simulcast viewers: checked \(groups.map { "\($0.picturesMatched) (\($0.picturesMismatched) wrong) of \($0.totals.framesDecoded) decoded" }); free \(free.layerSteps.map { "\(Int($0.ms)) ms \($0.layer)" }), \(free.framesEachSecond); narrow \(narrow.layerSteps.map { "\(Int($0.ms)) ms \($0.layer)" }), \(narrow.framesEachSecond)")
        // Straight to the whole picture when its frames showed the link's room (LayerRuleTests), else through its base layer.
        #expect([["1/1"], ["1/0", "1/1"]].contains(free.layerSteps.map(\.layer)) && free.layer == "1/1", "\(free.layerSteps)")
        #expect(free.framesEachSecond.suffix(5).allSatisfy { $0 >= 25 }, "\(free.framesEachSecond)")
        #expect(!narrow.layerMs.keys.contains { $0.hasPrefix("1/") }, "\(narrow.layerMs)")
        let settled = narrow.framesEachSecond.dropFirst(5)
        #expect(Double(settled.reduce(0) { $0 + Int($1) }) / Double(max(1, settled.count)) >= 20, "\(narrow.framesEachSecond)")
        for group in groups { #expect(group.picturesMatched >= 200 && group.picturesMismatched == 0, "\(group.link): \(group.picturesMatched) checked, \(group.picturesMismatched) wrong") }
        let latency = try #require(groups[0].latency)
        #expect(latency.p50Ms > 0 && latency.p50Ms < 100, "\(latency)")
    }

    /// Three layers at 720p: the smallest (320x180) is too small for a
    /// picture's stamp to be read, so its pictures are counted apart as not
    /// checked (they were left out silently: 206 pictures checked of 628
    /// decoded read as if every one had been); a viewer that steps up has
    /// its pictures on the larger layers checked.
    @Test func picturesOnALayerTooSmallForTheirStampAreCountedApart() throws {
        let group = uniqueGroup("subsmall")
        let run = withShare(group, size: "1280x720", fps: 15, seconds: 16, hostArguments: "--layers 3", """
            $FR subscribe --janus \(Self.janus) --app-group \(group.name) --viewers 1 --decode-every 1 --duration 10 \
              --captures $D/trace.jsonl --report $D/sub.json 2> $D/sub.log
            echo "subscribe exit $?"; cat $D/sub.log
            """, timeout: 120)
        #expect(run.output.contains("subscribe exit 0"), "\(run.output.suffix(2000))")
        let viewers = try #require(try report(run.directory).groups.first)
        let steps = viewers.subscribers.first?.layerSteps.map(\.layer) ?? []
        #expect(viewers.picturesTooSmall > 0 && viewers.picturesMismatched == 0, "\(viewers.picturesTooSmall) too small, \(viewers.picturesMismatched) wrong; steps \(steps)")
        #expect(steps.isEmpty || viewers.picturesMatched > 0, "stepped to \(steps) and checked \(viewers.picturesMatched)")
        #expect(run.output.contains("on a layer too small to read the stamp"), "\(run.output.suffix(1500))")
    }

    /// 5 % loss each way with a 20 ms delay (Janus keeps packets to resend
    /// only once it has measured a round trip of a millisecond or more): NACK
    /// brings most lost packets back, the rest make the viewers wait for a
    /// keyframe, and the gaps that freeze the picture are counted, while a
    /// perfect group in the same run loses nothing and never freezes.
    @Test func fivePercentLossIsMostlyRepairedByNACKAndFreezesAreCounted() throws {
        let group = uniqueGroup("subloss")
        let run = withShare(group, seconds: 16, """
            $FR subscribe --janus \(Self.janus) --app-group \(group.name) --viewers 2 --decode-every 2 --duration 10 \
              --link perfect --link loss=5%,delay=20ms --captures $D/trace.jsonl --report $D/sub.json 2> $D/sub.log
            echo "subscribe exit $?"; cat $D/sub.log
            """)
        #expect(run.output.contains("subscribe exit 0"), "\(run.output.suffix(2000))")
        let groups = try report(run.directory).groups
        try #require(groups.count == 2, "\(run.output.suffix(2000))")
        let perfect = groups[0].totals, lossy = groups[1].totals
        #expect(groups[1].link == "loss=5%,delay=20ms")
        #expect(perfect.packetsLost == 0 && perfect.freezes == 0 && perfect.recoveredPackets == 0 && perfect.linkLostIn == 0, "\(perfect)")
        let dropped = Double(lossy.linkLostIn) / Double(lossy.packetsExpected) * 100
        print("subscribe at 5 % loss: the link dropped \(lossy.linkLostIn) packets (\(dropped) %), NACK recovered \(lossy.recoveredPackets), \(lossy.packetsLost) lost for good (\(groups[1].lossPercent) %); \(lossy.keyframeWaits) keyframe waits (\(lossy.keyframeWaitMs) ms), \(lossy.freezes) freezes (\(lossy.freezeMs) ms, \(groups[1].freezesPerMinute)/min), \(lossy.plisSent) PLIs")
        // 5 % of about 400 packets (the viewer starts on the small layer), the link's draws unseeded: within
        // 4 standard deviations of the media packets (the link also drops STUN, DTLS and RTCP datagrams, so
        // the share centres a little above 5 %: about 1 run in 2,500 outside; at the old 2.5–8 %, 1 in 90:
        // 8.04 % once, 32 of 398). SubscriberPartsTests holds the loss model itself to 5 % over 20,000 draws.
        let sigma = (0.05 * 0.95 / Double(lossy.packetsExpected)).squareRoot() * 100
        #expect(abs(dropped - 5) < 4 * sigma, "the link dropped \(dropped) % of \(lossy.packetsExpected), 4 standard deviations \(4 * sigma) %")
        #expect(lossy.recoveredPackets * 2 >= lossy.linkLostIn, "NACK recovered \(lossy.recoveredPackets) of \(lossy.linkLostIn)")
        #expect(groups[1].lossPercent < dropped / 2, "residual loss \(groups[1].lossPercent) % of \(dropped) %")
        // A freeze is a gap over 150 ms; every one counted has its time.
        #expect(lossy.freezeMs >= Double(lossy.freezes) * 150)
        // Frames still come through: at least a fifth of the 300 sent. Not more: in a run whose losses fell
        // on keyframes, the viewer waited for 6 (Janus forwards one PLI a second) and 92 were decodable.
        #expect(lossy.framesDecodable >= 60, "\(lossy)")
        #expect(groups[1].picturesMismatched == 0 && groups[1].picturesMatched > 50)
        for viewer in groups[1].subscribers where viewer.decodes { #expect(viewer.framesDecoded == viewer.framesDecodable, "\(viewer)") }
    }

    /// A content screen (typing, then still) through Janus, encoded as it
    /// changes and encoded every frame: over a perfect link the viewers see
    /// no freeze in the host's own silences and every picture is the one
    /// the host sent (its stamp the frame that last changed it); over 2 %
    /// loss the pictures are still right, and the waits for a keyframe the
    /// link caused are freezes. One layer: what layers do to the figures is
    /// simulcastViewersPickTheLayerTheirLinkCarries's.
    @Test(arguments: [false, true])
    func aContentScreenFreezesOnlyWhereTheViewerMissedSomething(encodeEveryFrame: Bool) throws {
        let run = inNamespace("""
            $FR janus --address 10.200.0.1 --port 18188 > $D/janus.log 2>&1 & J=$!
            \(waitFor("Ctrl-C", in: "$D/janus.log"))
            $FR load-test --sessions 1 --janus \(Self.janus) --viewers 4 --viewer-link perfect --viewer-link loss=2%,delay=40ms --decode-every 1 \
              --content mixed --size 640x360 --fps 15 --duration 16 --layers 1 \(encodeEveryFrame ? "--encode-every-frame" : "") --report $D/load.json --html $D/load.html
            echo "load-test exit $?"
            kill -INT $J; wait
            """, timeout: 120)
        #expect(run.output.contains("load-test exit 0"), "\(run.output.suffix(1500))")
        let report = try JSONDecoder().decode(LoadTestReport.self, from: Data(contentsOf: URL(fileURLWithPath: run.directory + "/load.json")))
        let groups = try #require(report.steps.first?.shares.first?.viewers?.groups, "\(run.output.suffix(1500))")
        try #require(groups.count == 2, "\(groups)")
        // With one layer too, what the host sent is there to check the viewers' figures against.
        let sent = try #require(report.steps.first?.shares.first?.layersSent, "\(run.output.suffix(1500))")
        #expect(sent.count == 1 && sent[0].width == 640 && sent[0].sentKbps > 0 && run.output.contains("sent 640x360 "), "\(sent)")
        let (perfect, lossy) = (groups[0], groups[1])
        for group in groups {
            print("content screen\(encodeEveryFrame ? ", every frame encoded" : ""), \(group.link): \(group.freezes) freezes, \(group.keyframeWaits) keyframe waits (\(Int(group.keyframeWaitMs)) ms), "
                + "\(group.picturesChecked) pictures checked (\(group.picturesWrong) wrong), lost \(group.lossPercent) %")
        }
        #expect(perfect.watching == 2 && perfect.freezes == 0 && perfect.picturesWrong == 0 && perfect.picturesChecked >= 150, "\(perfect)")
        #expect(lossy.watching == 2 && lossy.picturesWrong == 0 && lossy.picturesChecked >= 50, "\(lossy)")
        // A wait for a keyframe (a frame lost for good, then a PLI's round trip) keeps the picture for longer than 150 ms more than the host's gap.
        #expect(lossy.keyframeWaits == 0 || lossy.freezes > 0, "\(lossy)")
    }

    /// Janus's API behind a proxy that changes the DTLS fingerprint in its
    /// offer (a man in the middle): the viewer refuses the connection, says
    /// why in one line, exits 1, and leaves no viewer on the mountpoint.
    @Test func aWrongFingerprintIsRefused() throws {
        let group = uniqueGroup("subfp")
        let proxy = """
            import http.server, urllib.request, re, sys
            class P(http.server.BaseHTTPRequestHandler):
                def go(self, body=None):
                    request = urllib.request.Request("http://10.200.0.1:18188" + self.path, data=body, method=self.command, headers={"Content-Type": "application/json"})
                    data = urllib.request.urlopen(request, timeout=40).read()
                    data = re.sub(rb"(a=fingerprint:sha-256 )([0-9A-F]{2})", lambda m: m.group(1) + (b"00" if m.group(2) != b"00" else b"11"), data)
                    self.send_response(200); self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
                def do_GET(self): self.go()
                def do_POST(self): self.go(self.rfile.read(int(self.headers["Content-Length"])))
                def log_message(self, *a): pass
            http.server.ThreadingHTTPServer(("10.200.0.1", 18190), P).serve_forever()
            """
        let run = withShare(group, seconds: 10, """
            cat > $D/proxy.py <<'PY'
            \(proxy.split(separator: "\n").joined(separator: "\n"))
            PY
            python3 $D/proxy.py & X=$!
            for i in $(seq 100); do curl -s -o /dev/null http://10.200.0.1:18190/janus/info && break; sleep 0.1; done
            $FR subscribe --janus http://10.200.0.1:18190/janus --app-group \(group.name) --duration 4 --report $D/sub.json 2> $D/sub.log
            echo "subscribe exit $?"; cat $D/sub.log
            curl -s -d '{"janus":"create","transaction":"a"}' \(Self.janus) > $D/s.json
            S=$(sed -n 's/.*"id": *\\([0-9]*\\).*/\\1/p' $D/s.json | head -1)
            curl -s -d '{"janus":"attach","plugin":"janus.plugin.streaming","transaction":"b"}' \(Self.janus)/$S > $D/h.json
            A=$(sed -n 's/.*"id": *\\([0-9]*\\).*/\\1/p' $D/h.json | head -1)
            echo "viewers left: $(curl -s -d '{"janus":"message","transaction":"c","body":{"request":"info","id":\(JanusMountpoint.id(for: group))}}' \(Self.janus)/$S/$A | tr -d ' \\n' | sed -n 's/.*"viewers":\\([0-9]*\\).*/\\1/p')"
            kill $X
            """)
        #expect(run.output.contains("subscribe exit 1"), "\(run.output.suffix(2000))")
        let lines = run.output.split(separator: "\n").filter { $0.contains("does not match the fingerprint in its offer") }
        #expect(lines.count == 1, "\(run.output.suffix(2000))")
        #expect(run.output.contains("viewers left: 0"), "\(run.output.suffix(1000))")
        let result = try #require(try report(run.directory).groups.first)
        #expect(result.joined == 0 && result.totals.packetsReceived == 0, "\(result)")
    }

    /// A hundred viewers in one process finish in bounded time, every one of
    /// them watching to the end, and leave nothing behind on Janus.
    @Test func aHundredSubscribersFinishInBoundedTimeAndLeaveNothing() throws {
        let group = uniqueGroup("sub100")
        let run = withShare(group, size: "320x240", fps: 15, seconds: 20, """
            start=$(date +%s%N)
            $FR subscribe --janus \(Self.janus) --app-group \(group.name) --viewers 100 --duration 8 --fps 15 --report $D/sub.json 2> $D/sub.log
            echo "subscribe exit $? after $(( ($(date +%s%N) - start) / 1000000 )) ms"; cat $D/sub.log
            curl -s -d '{"janus":"create","transaction":"a"}' \(Self.janus) > $D/s.json
            S=$(sed -n 's/.*"id": *\\([0-9]*\\).*/\\1/p' $D/s.json | head -1)
            curl -s -d '{"janus":"attach","plugin":"janus.plugin.streaming","transaction":"b"}' \(Self.janus)/$S > $D/h.json
            A=$(sed -n 's/.*"id": *\\([0-9]*\\).*/\\1/p' $D/h.json | head -1)
            echo "viewers left: $(curl -s -d '{"janus":"message","transaction":"c","body":{"request":"info","id":\(JanusMountpoint.id(for: group))}}' \(Self.janus)/$S/$A | tr -d ' \\n' | sed -n 's/.*"viewers":\\([0-9]*\\).*/\\1/p')"
            """, timeout: 120)
        let line = try #require(run.output.split(separator: "\n").first { $0.hasPrefix("subscribe exit") }, "\(run.output.suffix(2000))")
        #expect(line.hasPrefix("subscribe exit 0"), "\(run.output.suffix(2000))")
        let milliseconds = Int(line.split(separator: " ")[4]) ?? .max
        #expect(milliseconds < 30_000, "100 viewers took \(milliseconds) ms for an 8 s watch")
        #expect(run.output.contains("viewers left: 0"), "\(run.output.suffix(1000))")
        let result = try #require(try report(run.directory).groups.first)
        print("subscribe: 100 viewers watched 8 s in \(milliseconds) ms, \(result.watching) to the end, loss \(result.lossPercent) %, first frame p50 \(result.firstFrameP50Ms ?? -1) ms, max \(result.firstFrameMaxMs ?? -1) ms")
        #expect(result.watching == 100 && result.subscribers.allSatisfy { $0.framesDecodable > 30 }, "\(result.subscribers.map(\.framesDecodable))")
    }

    /// What goes wrong on Janus's side is one line per group and a non-zero
    /// exit, and nothing hangs: Janus unreachable, no such mountpoint, an
    /// offer without VP8, Janus killed while viewers watch, and the
    /// mountpoint destroyed while they watch.
    @Test func janusFailuresAreOneLinePerGroupAndNothingHangs() throws {
        let group = uniqueGroup("subbad"), second = uniqueGroup("subgone")
        let run = withShare(group, seconds: 40, """
            api() { curl -s -d "$1" \(Self.janus)${2:-}; }
            S=$(api '{"janus":"create","transaction":"a"}' | sed -n 's/.*"id": *\\([0-9]*\\).*/\\1/p' | head -1)
            A=$(api '{"janus":"attach","plugin":"janus.plugin.streaming","transaction":"b"}' /$S | sed -n 's/.*"id": *\\([0-9]*\\).*/\\1/p' | head -1)
            api '{"janus":"message","transaction":"c","body":{"request":"create","type":"rtp","id":4242,"name":"h264","media":[{"type":"video","mid":"v","port":0,"pt":100,"codec":"h264"}]}}' /$S/$A > /dev/null
            echo "== unreachable"; $FR subscribe --janus http://10.200.0.1:9/janus --mountpoint 1 --duration 2 2>&1; echo "exit $?"
            echo "== no such mountpoint"; $FR subscribe --janus \(Self.janus) --mountpoint 777 --duration 2 2>&1; echo "exit $?"
            echo "== no VP8"; $FR subscribe --janus \(Self.janus) --mountpoint 4242 --duration 2 2>&1; echo "exit $?"
            echo "== mountpoint destroyed"
            $FR --app-group \(second.name) --janus \(Self.janus) > $D/host2.log 2>&1 & H2=$!
            $SIM --app-group \(second.name) --size 320x240 --fps 30 --duration 15 --quiet &
            \(waitFor("first-frame", in: "$D/host2.log"))
            ( sleep 2; api '{"janus":"message","transaction":"d","body":{"request":"destroy","id":\(JanusMountpoint.id(for: second))}}' /$S/$A > /dev/null ) &
            $FR subscribe --janus \(Self.janus) --app-group \(second.name) --viewers 2 --duration 20 2>&1; echo "exit $?"
            kill $H2
            echo "== janus killed"
            ( sleep 3; pkill -9 -x janus ) &
            start=$(date +%s)
            $FR subscribe --janus \(Self.janus) --app-group \(group.name) --viewers 2 --duration 30 --link perfect --link delay=5ms 2>&1; echo "exit $? after $(( $(date +%s) - start )) s"
            """, timeout: 150)
        func section(_ name: String) -> [Substring] {
            let parts = run.output.components(separatedBy: "== \(name)\n")
            guard parts.count > 1 else { return [] }
            return parts[1].components(separatedBy: "\n== ")[0].split(separator: "\n")
        }
        for line in run.output.split(separator: "\n") where line.contains("audience:") { print(line) }
        let unreachable = section("unreachable")
        #expect(unreachable.contains("exit 1") && unreachable.filter { $0.contains("cannot connect") }.count == 1, "\(unreachable)")
        let missing = section("no such mountpoint")
        #expect(missing.contains("exit 1") && missing.filter { $0.contains("error 455") }.count == 1, "\(missing)")
        let noVP8 = section("no VP8")
        #expect(noVP8.contains("exit 1") && noVP8.filter { $0.contains("no VP8 in its video section") }.count == 1, "\(noVP8)")
        let destroyed = section("mountpoint destroyed")
        #expect(destroyed.contains("exit 1") && destroyed.filter { $0.contains("disappeared from Janus") }.count == 1, "\(destroyed)")
        let killed = section("janus killed")
        let last = killed.last { $0.hasPrefix("exit ") } ?? ""
        #expect(last.hasPrefix("exit 1"), "\(killed)")
        #expect(killed.filter { $0.contains("Janus stopped answering") }.count == 2, "one line for each of the two groups: \(killed)")
        let fields = last.split(separator: " ")
        let seconds = fields.count > 3 ? Int(fields[3]) ?? 99 : 99
        #expect(seconds < 15, "a dead Janus was noticed after \(seconds) s: \(last)")
    }

    /// Ctrl-C in a load test with viewers: the viewers stop first and say
    /// what they saw while there was something to watch, then the hosts;
    /// the run ends within 5 s (it took 15 s, and the viewers, stopped last,
    /// read the mountpoint gone: "0 of 2 watching", a third of the frame
    /// rate), and the step is not judged, in its last lines too. The report
    /// says what the host sent on each layer, and a viewer's kbit/s lies
    /// between the small layer's and the whole picture's.
    @Test func ctrlCInALoadTestWithViewersEndsOnTimeWithTheirFigures() throws {
        let run = inNamespace("""
            $FR janus --address 10.200.0.1 --port 18188 > $D/janus.log 2>&1 & J=$!
            \(waitFor("Ctrl-C", in: "$D/janus.log"))
            $FR load-test --sessions 1 --janus \(Self.janus) --viewers 2 --size 640x360 --layers 2 --bitrate 1000 --fps 15 --duration 30 --report $D/load.json --html $D/load.html 2> $D/load.log & L=$!
            for i in $(seq 300); do pgrep -P $L -f subscribe > /dev/null && break; sleep 0.1; done
            sleep 6; kill -INT $L; start=$(date +%s%N)
            wait $L; echo "load-test exit $? after $(( ($(date +%s%N) - start) / 1000000 )) ms"
            cat $D/load.log
            kill -INT $J; wait
            """, timeout: 120)
        let milliseconds = run.output.components(separatedBy: "load-test exit 1 after ").last.flatMap { Int($0.prefix { $0.isNumber }) } ?? 99_999
        #expect(milliseconds < 5000, "the load test ended \(milliseconds) ms after Ctrl-C: \(run.output.suffix(1500))")
        #expect(run.output.contains("1 share: not judged (interrupted)") && !run.output.contains("did not hold"), "\(run.output.suffix(1500))")
        let report = try JSONDecoder().decode(LoadTestReport.self, from: Data(contentsOf: URL(fileURLWithPath: run.directory + "/load.json")))
        let step = try #require(report.steps.first)
        let group = try #require(step.shares.first?.viewers?.groups.first)
        #expect(step.interrupted && group.watching == 2 && group.error == nil, "\(group)")
        #expect(group.framesPerSecond > 12, "\(group.framesPerSecond) frames/s a viewer of a 15 frames/s share")
        let sent = try #require(step.shares.first?.layersSent)
        #expect(sent.map(\.width) == [320, 640] && sent.map(\.targetKbps) == [250, 1000] && report.layers == 2 && report.bitrateKbps == 1000, "\(sent)")
        #expect(group.kbitPerSecond >= sent[0].sentKbps * 0.7 && group.kbitPerSecond <= sent[1].sentKbps * 1.3, "a viewer's \(group.kbitPerSecond) kbit/s against \(sent)")
        #expect(run.output.contains("sent 320x180 ") && run.output.contains(" kbit/s (target 250), 640x360 "), "\(run.output.suffix(1500))")
    }

    /// A load test whose subscriber hangs (SIGSTOP) ends on time all the
    /// same: the subscriber is killed after the grace, the step fails
    /// naming how the viewers ended, and no process is left.
    @Test func aLoadTestWhoseViewersHangFailsTheStepOnTime() throws {
        let run = inNamespace("""
            $FR janus --address 10.200.0.1 --port 18188 > $D/janus.log 2>&1 & J=$!
            \(waitFor("Ctrl-C", in: "$D/janus.log"))
            start=$(date +%s)
            $FR load-test --sessions 1 --janus \(Self.janus) --viewers 2 --size 320x240 --fps 15 --duration 6 --report $D/load.json --html $D/load.html & L=$!
            for i in $(seq 300); do S=$(pgrep -P $L -f subscribe); [ -n "$S" ] && break; sleep 0.1; done
            sleep 1; kill -STOP $S; echo "stopped the subscriber $S"
            wait $L; echo "load-test exit $? after $(( $(date +%s) - start )) s"
            kill -0 $S 2>/dev/null && echo "the subscriber is still there"
            kill -INT $J; wait
            """, timeout: 120)
        print(run.output.split(separator: "\n").filter { $0.contains("viewers") || $0.contains("exit") }.joined(separator: "\n"))
        #expect(run.output.contains("stopped the subscriber") && !run.output.contains("still there"), "\(run.output.suffix(1500))")
        let seconds = run.output.components(separatedBy: "load-test exit 0 after ").last.flatMap { Int($0.prefix { $0.isNumber }) } ?? 999
        #expect(seconds < 6 + 15 + 3 + 15, "the load test took \(seconds) s")
        let report = try JSONDecoder().decode(LoadTestReport.self, from: Data(contentsOf: URL(fileURLWithPath: run.directory + "/load.json")))
        let step = try #require(report.steps.first)
        #expect(!step.passed)
        #expect(step.failures.contains { $0.contains("frame-relay subscribe reported nothing (killed by signal 9), stopped (SIGSTOP) when its time was up") }, "\(step.failures)")
    }
}
