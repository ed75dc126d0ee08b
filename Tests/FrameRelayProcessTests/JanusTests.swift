@preconcurrency import Glibc
import Foundation
import FrameRelayHost
import FrameRelaySystem
import FrameRelayTools
import FrameRelayTestSupport
import Testing
import FrameRelayJanus

/// Shares through Janus to real WebRTC viewers. Janus gathers no ICE
/// candidates on loopback, so each test runs in a network namespace of its
/// own with a veth pair (`unshare -rn`), Janus on 10.200.0.1.
@Suite(.serialized) struct JanusTests {
    @Test func aWebRTCViewerThroughJanusDecodesTheStreamInOrder() throws {
        let group = uniqueGroup("janus")
        let mountpoint = JanusMountpoint.id(for: group)
        let run = inNamespace("""
            $FR demo --app-group \(group.name) --janus --janus-port 18188 --http 10.200.0.1:18180 --size 640x360 --fps 30 --layers 1 \
              --duration 16 --report $D/host.json --trace $D/trace.jsonl > $D/demo.log 2>&1 &
            \(waitFor("first-frame", in: "$D/demo.log"))
            ss -ltnH 'sport = :18188' | awk '{print "janus listens on", $4}'
            $VIEWER --janus http://10.200.0.1:18188/janus --mountpoint \(mountpoint) --frames 300 --duration 14 --report $D/viewer.json
            echo "viewer exit $?"
            wait
            cat $D/demo.log
            """)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("viewer exit 0"), "\(run.output)")
        // Janus's API listens where the viewer does (--http), not on every interface.
        #expect(run.output.contains("janus listens on 10.200.0.1:18188\n"), "\(run.output)")
        #expect(run.output.contains("viewer over WebRTC through Janus: http://10.200.0.1:18180/?mode=webrtc&share=0   (mountpoint \(mountpoint))"), "\(run.output)")
        let viewer = try #require(try readJSON(run.directory + "/viewer.json") as? [String: Any], "\(run.output)")
        let stamps = (viewer["stamps"] as? [Any] ?? []).compactMap { $0 as? Int }
        let decoded = viewer["decoded"] as? [Int] ?? []
        #expect(stamps.count >= 285, "decoded \(stamps.count) of 300 frames: \(run.output.suffix(1500))")
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 }, "stamps out of order: \(stamps.prefix(40))")
        #expect(viewer["width"] as? Int == 640 && viewer["height"] as? Int == 360)
        // Glass to glass: each stamp's capture time (the host's trace) to its decode at the viewer, one clock.
        let trace = try String(contentsOfFile: run.directory + "/trace.jsonl", encoding: .utf8).split(separator: "\n")
        var captured: [Int: Int] = [:]
        for line in trace {
            guard let record = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let frame = record["frame"] as? Int, let time = record["captured"] as? Int
            else { continue }
            captured[frame] = time
        }
        let latencies = zip(stamps, decoded).compactMap { stamp, time in captured[stamp].map { Double(time - $0) / 1e6 } }.sorted()
        try #require(latencies.count >= 285, "only \(latencies.count) frames matched the trace")
        let p50 = latencies[latencies.count / 2], p99 = latencies[latencies.count * 99 / 100]
        print("janus: \(stamps.count) frames decoded at the WebRTC viewer, glass-to-glass p50 \(p50) ms p99 \(p99) ms, first picture \(viewer["firstFrameMs"] ?? "?") ms after watch")
        #expect(p50 > 0 && p99 < 1000, "glass to glass p50 \(p50) ms p99 \(p99) ms")
        let share = try #require(try readShareStats(run.directory + "/host.json").first)
        #expect(share.janus?.id == mountpoint)
    }

    /// Headless Chromium opens the host's viewer page in WebRTC mode and
    /// watches the share through Janus: the page counts decoded frames and
    /// reads each picture's stamp from its pixels, and both move.
    @Test func headlessChromiumWatchesThroughJanus() throws {
        let group = uniqueGroup("janusweb")
        let run = inNamespace("""
            $FR demo --app-group \(group.name) --janus --janus-port 18188 --http 10.200.0.1:18180 --size 640x360 --fps 30 \
              --duration 60 > $D/demo.log 2>&1 &
            DEMO=$!
            \(waitFor("first-frame", in: "$D/demo.log"))
            timeout 45 /usr/bin/chromium --headless=new --no-sandbox --disable-gpu --enable-logging=stderr --v=0 \
              --user-data-dir=$D/chromium --window-size=1280,900 --autoplay-policy=no-user-gesture-required \
              'http://10.200.0.1:18180/?mode=webrtc&frames=90' > $D/chromium.log 2>&1 &
            CHROMIUM=$!
            # Until the page has decoded its 90 frames, or 40 s: a cold Chromium's start, ICE and DTLS come out of it.
            \(waitFor("webrtc frames=90", in: "$D/chromium.log", seconds: 40))
            kill $CHROMIUM; kill $DEMO; wait
            grep -o '"webrtc frames=[^"]*"\\|"viewer error[^"]*"' $D/chromium.log; grep CONSOLE $D/chromium.log | tail -5
            """, timeout: 90)
        // Lines like "webrtc frames=30 stamp=54 first=341 ms".
        let progress = run.output.split(separator: "\n").filter { $0.hasPrefix("\"webrtc frames=") }.compactMap { line -> (frames: Int, stamp: Int)? in
            let fields = line.split(separator: " ")
            guard fields.count >= 3, let frames = Int(fields[1].dropFirst("frames=".count)), let stamp = Int(fields[2].dropFirst("stamp=".count)) else { return nil }
            return (frames, stamp)
        }
        #expect(progress.last?.frames == 90, "the page decoded \(progress.last?.frames ?? 0) of 90 frames: \(run.output.suffix(1500))")
        #expect(progress.count >= 3 && zip(progress, progress.dropFirst()).allSatisfy { $0.stamp < $1.stamp },
                "the stamps read from the pixels did not move: \(progress)")
    }

    /// Viewers joining a running share get a picture at once: Janus asks
    /// the host for a keyframe (PLI) when a viewer's media starts, and the
    /// host has no periodic keyframes here, so nothing else could bring
    /// one. What is timed is the host's part: from the viewer's connection
    /// (ICE and DTLS done; aiortc's handshake now and then takes a second)
    /// to its first picture; from asking, only loosely. Each join starts
    /// 2.1 s after the one before started (or when it ends): Janus passes on
    /// one PLI a second per mountpoint, and now and then asks again a
    /// second after a join, so a viewer joining within a second of that
    /// waits for it (docs/STREAMING.md: joins 0.3 s apart waited 295–501 ms).
    @Test func viewersJoiningMidStreamSeeAPictureWithinHalfASecond() throws {
        let group = uniqueGroup("janusjoin")
        let mountpoint = JanusMountpoint.id(for: group)
        let run = inNamespace("""
            $FR demo --app-group \(group.name) --janus --janus-port 18188 --http 10.200.0.1:18180 --size 640x360 --fps 30 \
              --keyframe-interval 0 --duration 40 --report $D/host.json > $D/demo.log 2>&1 &
            DEMO=$!
            \(waitFor("first-frame", in: "$D/demo.log"))
            sleep 1
            last=0
            for n in 1 2 3 4 5 6 7 8 9 10; do
              wait_ns=$((last + 2100000000 - $(date +%s%N)))
              [ $last -gt 0 ] && [ $wait_ns -gt 0 ] && sleep $((wait_ns / 1000000000)).$(printf %09d $((wait_ns % 1000000000)))
              last=$(date +%s%N)
              $VIEWER --janus http://10.200.0.1:18188/janus --mountpoint \(mountpoint) --frames 3 --duration 5 --report $D/join$n.json
            done
            kill -INT $DEMO; wait
            """, timeout: 120)
        let reports = (1...10).compactMap { n in try? readJSON(run.directory + "/join\(n).json") as? [String: Any] }
        let asked = reports.compactMap { $0["firstFrameMs"] as? Double }
        let joins = reports.compactMap { report in (report["firstFrameMs"] as? Double).flatMap { first in (report["connectedMs"] as? Double).map { first - $0 } } }.sorted()
        try #require(asked.count == 10 && joins.count == 10, "\(asked.count) of 10 joins saw a picture, \(joins.count) said when they connected: \(run.output.suffix(1500))")
        let median = (joins[4] + joins[5]) / 2
        let sortedAsked = asked.sorted(), askedMedian = (sortedAsked[4] + sortedAsked[5]) / 2
        print("janus joins: first picture \(joins.map { Int($0) }) ms after the connection (median \(Int(median)) ms), \(asked.map { Int($0) }) ms after asking")
        #expect(median < 500, "median join \(median) ms")
        // From asking, handshakes included: loose, for a path that slowed down as a whole.
        #expect(askedMedian < 1500, "median join from asking \(askedMedian) ms")
        let transport = try #require(try readShareStats(run.directory + "/host.json").first?.transport)
        #expect(transport.pli >= 10, "the host saw \(transport.pli) PLIs from Janus for 10 joins")
    }

    /// Janus's configuration goes into a folder `mkdtemp` makes (mode 0700,
    /// a name nobody can guess), never into one that was there before; and
    /// a host killed with -9 takes its Janus and that folder with it (the
    /// watchdog reads end-of-file on its lifeline).
    @Test func janusRunsFromAPrivateFolderAndEndsWithAKilledHost() throws {
        let tmp = Paths.temporaryDirectory()
        // Prepared in advance, as someone else's folder under the old pattern's prefix.
        let planted = tmp.appendingPathComponent("frame-relay-janus-planted")
        try FileManager.default.createDirectory(at: planted, withIntermediateDirectories: false)
        try "planted".write(to: planted.appendingPathComponent("janus.jcfg"), atomically: true, encoding: .utf8)
        func ours() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: tmp.path)) ?? []).filter { $0.hasPrefix("frame-relay-janus-") && $0 != planted.lastPathComponent }
        }

        let janus = Spawned(Paths.executable("frame-relay"), ["janus"], environment: ["TMPDIR": tmp.path])
        try #require(janus.waitForLog("Ctrl-C"), "\(janus.stderr)")
        let janusPid = try #require(janus.stderr.components(separatedBy: "(pid ").dropFirst().first.flatMap { Int32($0.prefix { $0.isNumber }) }, "\(janus.stderr)")
        let folder = try #require(ours().first, "no Janus folder under \(tmp.path)")
        #expect(ours().count == 1)
        let mode = try FileManager.default.attributesOfItem(atPath: tmp.appendingPathComponent(folder).path)[.posixPermissions] as? Int
        #expect(mode == 0o700, "mode \(String(mode ?? 0, radix: 8))")
        #expect(FileManager.default.fileExists(atPath: tmp.appendingPathComponent(folder).appendingPathComponent("janus.jcfg").path))

        janus.signal(SIGKILL)
        _ = janus.wait()
        let deadline = MonotonicClock.now() + 10_000_000_000
        while (kill(janusPid, 0) == 0 || !ours().isEmpty), MonotonicClock.now() < deadline { usleep(50_000) }
        #expect(kill(janusPid, 0) != 0, "Janus (pid \(janusPid)) outlived its host")
        #expect(ours().isEmpty, "left behind: \(ours())")
        #expect(try String(contentsOf: planted.appendingPathComponent("janus.jcfg"), encoding: .utf8) == "planted")
    }

    /// What goes into Janus's configuration is checked or escaped: an
    /// address that is not IPv4 is one line and exit 1 (it cannot smuggle a
    /// setting in), and a `$TMPDIR` with `"` and `\` in its name works.
    @Test func janusConfigurationTakesOnlyWhatItCanWriteSafely() throws {
        let injected = run(Paths.executable("frame-relay"), ["janus", "--address", "127.0.0.1\", interface = \"lo", "--port", "18189"])
        #expect(injected.status == 1 && injected.stderr.contains("is not an IPv4 address"), "\(injected.stderr)")
        let name = run(Paths.executable("frame-relay"), ["janus", "--address", "localhost", "--port", "18189"])
        #expect(name.status == 1 && name.stderr == "frame-relay: error: Janus's address \"localhost\" is not an IPv4 address (127.0.0.1, or 0.0.0.0 for every one)\n",
                "\(name.stderr)")

        let odd = Paths.temporaryDirectory().appendingPathComponent("a \"quoted\" \\ folder")
        try FileManager.default.createDirectory(at: odd, withIntermediateDirectories: false)
        let janus = Spawned(Paths.executable("frame-relay"), ["janus"], environment: ["TMPDIR": odd.path])
        #expect(janus.waitForLog("Ctrl-C"), "\(janus.stderr)")
        janus.signal(SIGINT)
        #expect(janus.wait() == 0, "\(janus.stderr)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: odd.path)) ?? ["?"]).isEmpty)
    }

    /// scripts/with-janus stopped with SIGTERM ends its command, what the
    /// command started, and Janus, and exits at once; a command that ignores
    /// SIGTERM is killed 5 s later.
    @Test func withJanusStoppedEndsItsCommandAndJanus() throws {
        let marker = "62.\(Int.random(in: 100...999))"
        let debug = URL(fileURLWithPath: Paths.executable("frame-relay")).deletingLastPathComponent().path
        let wrapped = Spawned(Paths.root.appendingPathComponent("scripts/with-janus").path, ["sh", "-c", "sleep \(marker); echo never"],
                              environment: ["PATH": "\(debug):/usr/sbin:/usr/bin:/sbin:/bin"])
        try #require(wrapped.waitForLog("with-janus: Janus at"), "\(wrapped.stderr)")
        let janus = run("/usr/bin/pgrep", ["-f", "-P", "\(wrapped.pid)", "frame-relay janus"]).stdout
        #expect(!janus.isEmpty, "no frame-relay janus under with-janus (pid \(wrapped.pid))")
        // Once the command runs (a SIGTERM while it is being started reached it only as the SIGKILL 5 s later, once in a full run).
        for _ in 0..<50 where run("/usr/bin/pgrep", ["-f", "sleep \(marker)"]).stdout.isEmpty { usleep(100_000) }
        wrapped.signal(SIGTERM)
        let started = MonotonicClock.now()
        #expect(wrapped.wait(timeout: 10) != -9, "with-janus did not end within 10 s of SIGTERM")
        #expect(MonotonicClock.now() - started < 5_000_000_000)
        #expect(!wrapped.stdout.contains("never"))
        #expect(run("/usr/bin/pgrep", ["-f", "sleep \(marker)"]).stdout.isEmpty, "the command's child ran on")
        for pid in janus.split(separator: "\n").compactMap({ Int32($0) }) { #expect(kill(pid, 0) != 0, "frame-relay janus (pid \(pid)) ran on") }

        // A command that ignores SIGTERM (and its child, which inherits that) gets SIGKILL 5 s later.
        let stubborn = Spawned(Paths.root.appendingPathComponent("scripts/with-janus").path, ["bash", "-c", "trap '' TERM; sleep \(marker)"],
                               environment: ["PATH": "\(debug):/usr/sbin:/usr/bin:/sbin:/bin"])
        try #require(stubborn.waitForLog("with-janus: Janus at"), "\(stubborn.stderr)")
        // Its trap is set once its sleep runs (a SIGTERM before that ends bash itself, with 143).
        for _ in 0..<50 where run("/usr/bin/pgrep", ["-f", "sleep \(marker)"]).stdout.isEmpty { usleep(100_000) }
        stubborn.signal(SIGTERM)
        #expect(stubborn.wait(timeout: 10) == 137, "\(stubborn.stderr)")
        #expect(run("/usr/bin/pgrep", ["-f", "sleep \(marker)"]).stdout.isEmpty, "the command ran on past SIGKILL")
    }

    /// Janus unreachable, Janus refusing (a mountpoint id taken by another
    /// stream, a wrong secret for the host's own): one line naming the URL
    /// and Janus's words, a non-zero exit, no mountpoint left behind.
    @Test func janusErrorsAreOneLineAndLeaveNoMountpoint() throws {
        let (janus, url) = try startJanus()
        defer { janus.signal(SIGINT); _ = janus.wait() }
        let group = uniqueGroup("janusbad")
        let id = JanusMountpoint.id(for: group)
        let api = url.description
        func curl(_ body: String, _ path: String) -> String {
            run("/usr/bin/curl", ["-s", "-d", body, url.with(path: path).description]).stdout
        }
        func mountpoints() -> String {
            let session = curl(#"{"janus":"create","transaction":"a"}"#, "/janus").split(separator: "\"id\": ").last?.prefix { $0.isNumber } ?? ""
            let handle = curl(#"{"janus":"attach","plugin":"janus.plugin.streaming","transaction":"b"}"#, "/janus/\(session)").split(separator: "\"id\": ").last?.prefix { $0.isNumber } ?? ""
            return curl(#"{"janus":"message","transaction":"c","body":{"request":"list"}}"#, "/janus/\(session)/\(handle)")
        }

        let unreachable = run(Paths.executable("frame-relay"), ["--app-group", group.name, "--janus", "http://127.0.0.1:9/janus", "--duration", "1"])
        #expect(unreachable.status != 0)
        #expect(unreachable.stderr.contains("error: Janus http://127.0.0.1:9/janus: cannot connect: ECONNREFUSED"), "\(unreachable.stderr)")

        // A host with a secret killed with -9 leaves its mountpoint; another host with the wrong secret cannot take it.
        let first = host([group], ["--janus", api, "--janus-secret", "right"])
        #expect(first.waitForLog("Janus mountpoint \(id)"), "\(first.stderr)")
        first.signal(SIGKILL)
        _ = first.wait()
        let wrong = run(Paths.executable("frame-relay"), ["--app-group", group.name, "--janus", api, "--janus-secret", "wrong", "--duration", "1"])
        #expect(wrong.status != 0 && wrong.stderr.contains("Janus \(api)"), "\(wrong.stderr)")
        #expect(wrong.stderr.split(separator: "\n").filter { $0.contains("error") }.count == 1, "\(wrong.stderr)")
        // With the right one it is taken back, and destroyed at a clean exit (no producer came: it streamed nothing, and says so).
        let again = run(Paths.executable("frame-relay"), ["--app-group", group.name, "--janus", api, "--janus-secret", "right", "--duration", "1"])
        #expect(again.status == 1 && again.stderr.contains("taken back from an earlier host") && again.stderr.contains("error: \(group.name): streamed nothing"), "\(again.stderr)")
        #expect(!mountpoints().contains(group.name), "a mountpoint was left behind")

        // The id taken by someone else's stream: refused with Janus's answer, nothing destroyed.
        let session = curl(#"{"janus":"create","transaction":"a"}"#, "/janus").split(separator: "\"id\": ").last?.prefix { $0.isNumber } ?? ""
        let handle = curl(#"{"janus":"attach","plugin":"janus.plugin.streaming","transaction":"b"}"#, "/janus/\(session)").split(separator: "\"id\": ").last?.prefix { $0.isNumber } ?? ""
        _ = curl(#"{"janus":"message","transaction":"c","body":{"request":"create","type":"rtp","id":\#(id),"name":"someone-else","media":[{"type":"video","mid":"v","port":0,"pt":96,"codec":"vp8"}]}}"#, "/janus/\(session)/\(handle)")
        let taken = run(Paths.executable("frame-relay"), ["--app-group", group.name, "--janus", api, "--duration", "1"])
        #expect(taken.status != 0 && taken.stderr.contains("is taken by \"someone-else\""), "\(taken.stderr)")
        #expect(mountpoints().contains("someone-else"))

        // Three layers asked of a picture too small for them: one line at its first frame, a non-zero exit, no ring, no mountpoint.
        let small = uniqueGroup("janussmall")
        let p = producer(small, ["--size", "200x150", "--fps", "30", "--duration", "3", "--quiet"])
        let tooSmall = run(Paths.executable("frame-relay"), ["--app-group", small.name, "--janus", api, "--layers", "3", "--duration", "5", "--quiet"])
        _ = p.wait()
        #expect(tooSmall.status == 1, "\(tooSmall.stderr)")
        #expect(tooSmall.stderr == "frame-relay: error: 3 layers need a picture at least 256x256 (each half the width and height of the one above, none under 64 px): this share's is 200x150; ask for fewer layers\n",
                "\(tooSmall.stderr)")
        #expect(!segmentExists(small) && !mountpoints().contains(small.name))
    }

    /// A Janus that dies mid-stream: the host says so once and keeps its other outputs (here the recording) going.
    @Test func aJanusThatDiesMidStreamLeavesTheHostRunning() throws {
        let (janus, url) = try startJanus()
        let group = uniqueGroup("janusdies")
        let dir = Paths.temporaryDirectory()
        let recording = dir.appendingPathComponent("share.ivf").path, report = dir.appendingPathComponent("host.json").path
        let h = host([group], ["--janus", url.description, "--record", recording, "--report", report, "--exit-when-finished"])
        let p = producer(group, ["--size", "320x240", "--fps", "30", "--duration", "4", "--quiet"])
        #expect(h.waitForLog("first-frame"))
        usleep(500_000)
        janus.signal(SIGINT)
        #expect(janus.wait() == 0)
        #expect(p.wait() == 0)
        #expect(h.wait(timeout: 20) == 0, "\(h.stderr)")
        #expect(h.stderr.contains("Janus \(url): cannot connect: ECONNREFUSED (Connection refused); the share's other outputs go on"), "\(h.stderr)")
        #expect(h.stderr.contains("could not destroy Janus mountpoint"), "\(h.stderr)")
        let share = try #require(try readShareStats(report).first)
        #expect((share.encoded?.frames ?? 0) >= 100, "the recording stopped with Janus")
    }

    /// One host, two shares, two Janus instances: each share's mountpoint
    /// is on its own Janus, and a viewer of each decodes its share.
    @Test func twoSharesIntoTwoJanusInstancesAreEachWatched() throws {
        let first = uniqueGroup("janusa"), second = uniqueGroup("janusb")
        let run = inNamespace("""
            $FR janus --address 10.200.0.1 --port 18188 > $D/janus1.log 2>&1 & J1=$!
            $FR janus --address 10.200.0.1 --port 18189 > $D/janus2.log 2>&1 & J2=$!
            \(waitFor("Ctrl-C", in: "$D/janus1.log")); \(waitFor("Ctrl-C", in: "$D/janus2.log"))
            $FR --app-group \(first.name) --app-group \(second.name) --janus http://10.200.0.1:18188/janus \
              --janus http://10.200.0.1:18189/janus --exit-when-finished --report $D/host.json > $D/host.log 2>&1 & HOST=$!
            $SIM --app-group \(first.name) --size 320x240 --fps 30 --duration 12 --quiet & $SIM --app-group \(second.name) --size 320x240 --fps 30 --duration 12 --quiet &
            \(waitFor("first-frame", in: "$D/host.log"))
            $VIEWER --janus http://10.200.0.1:18188/janus --mountpoint \(JanusMountpoint.id(for: first)) --frames 150 --duration 9 --report $D/a.json &
            $VIEWER --janus http://10.200.0.1:18189/janus --mountpoint \(JanusMountpoint.id(for: second)) --frames 150 --duration 9 --report $D/b.json
            wait $HOST; kill -INT $J1 $J2; wait
            cat $D/host.log
            """, timeout: 90)
        for (name, group, port) in [("a", first, 18188), ("b", second, 18189)] {
            let viewer = try #require(try readJSON(run.directory + "/\(name).json") as? [String: Any], "\(run.output.suffix(1500))")
            let stamps = (viewer["stamps"] as? [Any] ?? []).compactMap { $0 as? Int }
            #expect(stamps.count >= 140 && zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 }, "\(group): \(stamps.count) frames")
            #expect(run.output.contains("\(group.name): Janus mountpoint \(JanusMountpoint.id(for: group)) on http://10.200.0.1:\(port)/janus"))
        }
    }

    /// The host killed with -9 while a viewer watches: a new host takes the
    /// mountpoint back, and the same viewer, never reconnecting, sees
    /// frames again within 2 s of the new host's start.
    @Test func aHostKilledWhileViewersWatchIsReplacedWithoutThemReconnecting() throws {
        let group = uniqueGroup("janusrestart")
        let run = inNamespace("""
            $FR janus --address 10.200.0.1 --port 18188 > $D/janus.log 2>&1 & J=$!
            \(waitFor("Ctrl-C", in: "$D/janus.log"))
            $SIM --app-group \(group.name) --size 320x240 --fps 30 --duration 17 --quiet & SIMPID=$!
            $FR --app-group \(group.name) --janus http://10.200.0.1:18188/janus --keyframe-interval 0 > $D/host1.log 2>&1 & H1=$!
            \(waitFor("first-frame", in: "$D/host1.log"))
            # 6 s before the kill: aiortc's start, ICE and DTLS on a loaded machine, and 60 frames after them.
            $VIEWER --janus http://10.200.0.1:18188/janus --mountpoint \(JanusMountpoint.id(for: group)) --duration 13 --report $D/viewer.json & V=$!
            sleep 6
            kill -9 $H1
            sleep 1
            echo "restart $(python3 -c 'import time; print(time.monotonic_ns())')"
            $FR --app-group \(group.name) --janus http://10.200.0.1:18188/janus --keyframe-interval 0 --exit-when-finished > $D/host2.log 2>&1 &
            wait $V; wait $SIMPID; sleep 1; kill -INT $J; wait
            cat $D/host2.log
            """, timeout: 90)
        let restart = try #require(run.output.split(separator: "\n").first { $0.hasPrefix("restart ") }.flatMap { Int($0.dropFirst(8)) }, "\(run.output)")
        #expect(run.output.contains("taken back from an earlier host"), "\(run.output.suffix(1000))")
        let viewer = try #require(try readJSON(run.directory + "/viewer.json") as? [String: Any], "\(run.output.suffix(1500))")
        let decoded = viewer["decoded"] as? [Int] ?? []
        let before = decoded.filter { $0 < restart }.count
        let firstAfter = try #require(decoded.first { $0 > restart }, "no frame after the new host started (\(before) before)")
        let gap = Double(firstAfter - restart) / 1e9
        print("janus restart: \(before) frames before the kill, the first after \(gap) s of the new host, \(decoded.count - before) after")
        #expect(before >= 60 && gap < 2.0 && decoded.count - before >= 60, "\(before) before, first after \(gap) s, \(decoded.count - before) after")
    }

    /// A load test through Janus: 2 shares × 2 WebRTC viewers, in one host
    /// and in two, native viewers (frames counted) and aiortc's (decoded),
    /// each reporting what its viewers got.
    @Test(arguments: [(1, "native"), (2, "native"), (1, "aiortc")])
    func loadTestThroughJanusReportsWhatViewersGot(hosts: Int, kind: String) throws {
        let run = inNamespace("""
            $FR janus --address 10.200.0.1 --port 18188 > $D/janus.log 2>&1 & J=$!
            \(waitFor("Ctrl-C", in: "$D/janus.log"))
            $FR load-test --sessions 2 --hosts \(hosts) --janus http://10.200.0.1:18188/janus --viewers 2 --viewer-kind \(kind) --size 320x240 --fps 15 --duration 10 \
              --report $D/load.json --html $D/load.html
            echo "load-test exit $?"
            kill -INT $J; wait
            """, timeout: 120)
        #expect(run.output.contains("load-test exit 0"), "\(run.output.suffix(1500))")
        let report = try JSONDecoder().decode(LoadTestReport.self, from: Data(contentsOf: URL(fileURLWithPath: run.directory + "/load.json")))
        let step = try #require(report.steps.first)
        #expect(step.shares.count == 2 && step.viewersPerShare == 2)
        #expect(step.viewersCPUPercent != nil && step.janusCPUPercent != nil && step.bound != nil, "\(step)")
        for share in step.shares {
            let viewers = try #require(share.viewers, "\(share.appGroup) has no viewer figures")
            #expect(viewers.kind == kind && viewers.count == 2 && viewers.framesDecoded.allSatisfy { $0 >= 60 }, "\(share.appGroup): \(viewers)")
            #expect(viewers.glassToGlassP50Milliseconds > 0 && viewers.glassToGlassP99Milliseconds < 1000, "\(viewers)")
            #expect(viewers.groups.count == 1 && viewers.groups[0].watching == 2, "\(viewers.groups)")
            print("janus load test, \(hosts) host(s), \(kind) viewers: \(share.appGroup) got \(viewers.framesDecoded), lost \(viewers.lostPercent) %, first picture \(Int(viewers.firstPictureMilliseconds)) ms, capture→viewer p50 \(Int(viewers.glassToGlassP50Milliseconds)) ms p99 \(Int(viewers.glassToGlassP99Milliseconds)) ms")
        }
        let html = try String(contentsOfFile: run.directory + "/load.html", encoding: .utf8)
        #expect(html.contains("WebRTC viewers through Janus") && html.contains("CPU while the viewers watched"))
    }

    /// `--ramp-viewers` at one share: 1, 2 and 4 viewers on two links, each
    /// step reporting each link group, and the largest number that held
    /// (an objective of 2 s: this is the ramp's bookkeeping, and a stall of
    /// a loaded machine must not fail a step; the load tests in docs/ hold the real one).
    @Test func aViewerRampFindsTheMostViewersThatHold() throws {
        let run = inNamespace("""
            $FR janus --address 10.200.0.1 --port 18188 > $D/janus.log 2>&1 & J=$!
            \(waitFor("Ctrl-C", in: "$D/janus.log"))
            $FR load-test --sessions 1 --ramp-viewers --viewers 4 --janus http://10.200.0.1:18188/janus --viewer-link perfect --viewer-link delay=10ms \
              --size 320x240 --fps 15 --duration 7 --max-p99-ms 2000 --max-viewer-p99-ms 2000 --report $D/load.json --html $D/load.html
            echo "load-test exit $?"
            kill -INT $J; wait
            """, timeout: 150)
        #expect(run.output.contains("load-test exit 0"), "\(run.output.suffix(1500))")
        #expect(run.output.contains("largest number of viewers per share that held the objective at 1 share: 4 (the bound, --viewers: the limit is higher)"), "\(run.output.suffix(1500))")
        let report = try JSONDecoder().decode(LoadTestReport.self, from: Data(contentsOf: URL(fileURLWithPath: run.directory + "/load.json")))
        #expect(report.maxViewersHeld == 4 && report.steps.map(\.viewersPerShare) == [1, 2, 4], "\(report.steps.map(\.viewersPerShare))")
        let last = try #require(report.steps.last?.shares.first?.viewers)
        #expect(last.groups.map(\.link) == ["perfect", "delay=10ms"] && last.groups.map(\.viewers) == [2, 2], "\(last.groups)")
        // Second by second, each group's frames add up to the frames its viewers decoded, less those of
        // each viewer's last second, which it did not watch whole (at most 15 frames each of 4 viewers).
        let eachSecond = last.groups.map { $0.framesEachSecond.reduce(0, +) * Double($0.viewers) }.reduce(0, +)
        let decoded = Double(last.framesDecoded.reduce(0, +))
        #expect(decoded > 0 && eachSecond <= 1.05 * decoded && eachSecond >= 0.95 * decoded - 4 * 15,
                "each second: \(last.groups.map(\.framesEachSecond)); decoded \(last.framesDecoded)")
        let html = try String(contentsOfFile: run.directory + "/load.html", encoding: .utf8)
        #expect(html.contains("against viewers per share") && html.contains("delay=10ms") && html.contains("share 1 delay=10ms"))
    }

    /// Per frame, capture → presented and → shown at headless Chromium (the
    /// stamp read at requestVideoFrameCallback, the page's clock on the
    /// host's through /clock) and capture → decoded at aiortc, each on the
    /// same share in turn: the browser has each frame decoded sooner than
    /// aiortc has. (When headless Chromium says a frame is shown varies from
    /// run to run by two frames of its display; presented does not.)
    @Test func chromiumsGlassToGlassIsMeasuredAndLowerThanAiortcs() throws {
        let group = uniqueGroup("janusg2g")
        let run = inNamespace("""
            $FR demo --app-group \(group.name) --janus --janus-port 18188 --http 10.200.0.1:18180 --size 640x360 --fps 30 \
              --keyframe-interval 0 --duration 60 --trace $D/trace.jsonl > $D/demo.log 2>&1 &
            DEMO=$!
            \(waitFor("first-frame", in: "$D/demo.log"))
            timeout 35 /usr/bin/chromium --headless=new --no-sandbox --disable-gpu --disable-gpu-vsync --disable-frame-rate-limit --enable-logging=stderr --v=0 \
              --user-data-dir=$D/chromium --window-size=1280,900 --autoplay-policy=no-user-gesture-required \
              'http://10.200.0.1:18180/?mode=webrtc&measure=1' > $D/chromium.log 2>&1 &
            CHROMIUM=$!
            # Until 200 frames are shown and getStats() is read once, or 30 s.
            \(waitFor("webrtc shown", count: 200, in: "$D/chromium.log", seconds: 25))
            \(waitFor("webrtc stats", in: "$D/chromium.log", seconds: 5))
            kill $CHROMIUM; wait $CHROMIUM
            grep -E 'viewer error|webrtc clock' $D/chromium.log | tail -3
            $VIEWER --janus http://10.200.0.1:18188/janus --mountpoint \(JanusMountpoint.id(for: group)) --duration 8 --report $D/aiortc.json
            kill -INT $DEMO; wait
            grep -o '"webrtc shown [0-9 ]*"' $D/chromium.log | tr -d '"' > $D/shown.txt
            grep -o '"webrtc stats .*"' $D/chromium.log | tail -1
            """, timeout: 90)
        var captured: [Int: Int] = [:]
        for line in try String(contentsOfFile: run.directory + "/trace.jsonl", encoding: .utf8).split(separator: "\n") {
            guard let record = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], let frame = record["frame"] as? Int, let time = record["captured"] as? Int else { continue }
            captured[frame] = time
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        // "webrtc shown STAMP SHOWN PRESENTED RECEIVED"
        let lines = try String(contentsOfFile: run.directory + "/shown.txt", encoding: .utf8).split(separator: "\n")
        func latencies(_ field: Int) -> [Double] {
            lines.compactMap { line -> Double? in
                let fields = line.split(separator: " ")
                guard fields.count == 6, let stamp = Int(fields[2]), let at = Int(fields[field]), let capture = captured[stamp] else { return nil }
                return Double(at - capture) / 1e6
            }.filter { $0 >= 0 }  // a misread stamp may name a later frame
        }
        let shown = latencies(3), presented = latencies(4)
        let aiortc = try #require(try readJSON(run.directory + "/aiortc.json") as? [String: Any], "\(run.output.suffix(1500))")
        let decoded = zip((aiortc["stamps"] as? [Any] ?? []).compactMap { $0 as? Int }, aiortc["decoded"] as? [Int] ?? []).compactMap { stamp, time in
            captured[stamp].map { Double(time - $0) / 1e6 }
        }
        try #require(shown.count >= 150 && decoded.count >= 150, "Chromium showed \(shown.count) frames, aiortc decoded \(decoded.count): \(run.output.suffix(1500))")
        print("janus glass to glass: Chromium presented p50 \(median(presented)) ms, shown p50 \(median(shown)) ms over \(shown.count) frames; aiortc decoded p50 \(median(decoded)) ms over \(decoded.count)")
        #expect(median(presented) > 0 && median(presented) < median(decoded), "Chromium \(median(presented)) ms, aiortc \(median(decoded)) ms")
        #expect(median(shown) >= median(presented) - 1)
        // The keyframes the page tells its layer rule of (`frame.type` of each frame received whole) are the ones Chromium decodes:
        // the first, and the whole picture's when the rule steps up; at most one more still on its way to the decoder.
        let stats = try lastWebRTCStats(run.output)
        let whole = try #require(stats["keyframesWhole"] as? Int, "\(stats)"), decodedKeyframes = try #require(stats["keyFramesDecoded"] as? Int, "\(stats)")
        #expect(decodedKeyframes >= 1 && (decodedKeyframes...decodedKeyframes + 1).contains(whole), "page saw \(whole) keyframes whole, Chromium decoded \(decodedKeyframes)")
    }

    /// Chromium through `frame-relay link-relay` with 5 % loss and 20 ms
    /// delay: its getStats() sees the loss and asks for the packets again,
    /// and the picture goes on. Chromium runs until it has shown 150 frames
    /// (at most 40 s): in 14 s fixed it showed 88 to 207 here, and once in
    /// CI none at all, so the time is a bound, not the measure.
    @Test func chromiumThroughAnImpairedLinkSeesTheLossAndAsksForRepairs() throws {
        let group = uniqueGroup("janusrelay")
        let run = inNamespace("""
            $FR demo --app-group \(group.name) --janus --janus-port 18188 --http 10.200.0.1:18180 --size 640x360 --fps 30 --duration 60 > $D/demo.log 2>&1 &
            DEMO=$!
            \(waitFor("first-frame", in: "$D/demo.log"))
            $FR link-relay --address 10.200.0.1 --link loss=5%,delay=20ms > $D/relay.log 2>&1 & RELAY=$!
            \(waitFor("page:", in: "$D/relay.log"))
            R=$(sed -n 's/.*?relay=\\([0-9.:]*\\)).*/\\1/p' $D/relay.log)
            timeout 45 /usr/bin/chromium --headless=new --no-sandbox --disable-gpu --enable-logging=stderr --v=0 --user-data-dir=$D/chromium \
              --window-size=1280,900 --autoplay-policy=no-user-gesture-required "http://10.200.0.1:18180/?mode=webrtc&measure=1&relay=$R" > $D/chromium.log 2>&1 &
            CHROMIUM=$!
            # Until 150 frames are shown and getStats() is read after them (5 s apart), or 40 s.
            \(waitFor("webrtc shown", count: 150, in: "$D/chromium.log", seconds: 40))
            STATS=$(grep -c '"webrtc stats' $D/chromium.log)
            for i in $(seq 60); do [ $(grep -c '"webrtc stats' $D/chromium.log) -gt $STATS ] && break; sleep 0.1; done
            kill $CHROMIUM; kill -INT $RELAY $DEMO; wait
            cat $D/relay.log
            echo "shown $(grep -c 'webrtc shown' $D/chromium.log)"
            grep -E 'viewer error|webrtc clock' $D/chromium.log | tail -3
            grep -o '"webrtc stats .*"' $D/chromium.log | tail -1
            """, timeout: 90)
        let stats = try lastWebRTCStats(run.output)
        let lost = stats["packetsLost"] as? Int ?? 0, nacks = stats["nackCount"] as? Int ?? 0
        let shown = Int(run.output.split(separator: "\n").first { $0.hasPrefix("shown ") }?.dropFirst(6) ?? "") ?? 0
        let detail = ["framesReceived", "framesDecoded", "framesDropped", "freezeCount", "freezesByHostGaps", "pliCount", "retransmittedPacketsReceived"].map { "\($0) \(stats[$0] ?? "-")" }.joined(separator: ", ")
        print("janus relay: Chromium at 5 % loss, 20 ms: \(lost) packets lost, \(nacks) NACKs, \(shown) frames shown (\(detail)); \(run.output.split(separator: "\n").first { $0.contains("link-relay: passed") } ?? "")")
        #expect(lost > 0 && nacks > 0, "\(stats)")
        // The page counts freezes by the subscriber's rule from each frame's RTP timestamp (FreezeRuleTests holds the rule).
        #expect(stats["freezesByHostGaps"] is Int, "\(stats)")
        #expect(shown >= 150, "\(shown) frames shown in 40 s")
        #expect(run.output.contains("link-relay: passed"), "\(run.output.suffix(1000))")
    }

    /// The last getStats() the viewer page logged (`"webrtc stats {…}"`, as Chromium's log quotes it) in `output`.
    private func lastWebRTCStats(_ output: String) throws -> [String: Any] {
        let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("\"webrtc stats ") }, "getStats() was not logged: \(output.suffix(2000))")
        let json = String(line.dropFirst("\"webrtc stats ".count).dropLast()).replacingOccurrences(of: "\\\"", with: "\"")
        return try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], "\(json)")
    }
}
