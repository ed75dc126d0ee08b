@preconcurrency import Glibc
import Foundation
import FrameRelay
import Testing

/// The live viewer against real clients: headless Chromium, ffmpeg over
/// HTTP, and plain HTTP for metrics, stats and snapshots.
@Suite(.serialized) struct ViewerTests {
    /// A host with the viewer on a free port, fed by a producer for `seconds`.
    func withViewer(groups: [AppGroup], seconds: Int = 30, extra: [String] = [], _ body: (Int, Spawned) throws -> Void) throws {
        let port = freePortPair()
        let h = host(groups, ["--http", "\(port)"] + extra)
        let producers = groups.map { producer($0, ["--size", "640x360", "--fps", "30", "--duration", "\(seconds)", "--quiet"]) }
        #expect(h.waitForLog("first-frame", count: groups.count))
        try body(port, h)
        for p in producers { p.signal(SIGTERM); #expect(p.wait() == 0) }
        h.signal(SIGINT)
        #expect(h.wait() == 0)
        for group in groups { #expect(!segmentExists(group)) }
    }

    func fetch(_ url: String) -> (status: Int32, body: Data) {
        let out = Paths.temporaryDirectory().appendingPathComponent("body").path
        let result = run("/usr/bin/curl", ["-s", "-f", "-m", "10", "-o", out, url])
        return (result.status, (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data())
    }

    /// Sends `GET path` and hangs up at once, without reading the answer.
    func knock(_ port: Int, _ path: String) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        guard withLoopback(port, { connect(fd, $0, $1) }) == 0 else { return }
        let request = Array("GET \(path) HTTP/1.1\r\n\r\n".utf8)
        _ = send(fd, request, request.count, Int32(MSG_NOSIGNAL))
    }

    /// Viewers cannot crash the host (an empty query key once did) or make
    /// every frame a keyframe by joining and leaving: viewer keyframe asks are
    /// honoured at most once per 200 ms, as PLI is, and snapshots ask for none.
    @Test func viewerClientsCannotCrashTheHostOrFloodTheEncoder() throws {
        try withViewer(groups: [uniqueGroup("abuse")], extra: ["--keyframe-interval", "0"]) { port, h in
            #expect(fetch("http://127.0.0.1:\(port)/stats.json?share=0&=").status == 0)
            #expect(fetch("http://127.0.0.1:\(port)/?=").status == 0)
            func keyframes() throws -> UInt64 {
                let stats = try JSONDecoder().decode([ShareStats].self, from: fetch("http://127.0.0.1:\(port)/stats.json").body)
                return try #require(stats.first?.encoded).keyframes
            }
            _ = fetch("http://127.0.0.1:\(port)/snapshot.jpg")  // the first one may wait for a keyframe
            usleep(500_000)
            let before = try keyframes()
            let started = MonotonicClock.now()
            for n in 0..<60 {
                knock(port, n % 3 == 0 ? "/snapshot.jpg" : "/stream.ivf")
                usleep(15_000)
            }
            usleep(300_000)
            let seconds = Double(MonotonicClock.now() - started) / 1e9
            let asked = try keyframes() - before
            #expect(asked <= UInt64(seconds / 0.2) + 2, "\(asked) keyframes in \(seconds) s of viewers coming and going")
            #expect(h.process.isRunning)
        }
    }

    /// Past 128 connections at once a client is told 503 at once; the
    /// viewer serves again as soon as they go.
    @Test func connectionsPastTheLimitGet503() throws {
        try withViewer(groups: [uniqueGroup("many")]) { port, _ in
            let idle = (0..<HTTPServer.maxConnections).map { _ in socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) }
            for fd in idle { #expect(withLoopback(port, { connect(fd, $0, $1) }) == 0) }
            usleep(300_000)  // each has its thread, waiting for a request
            let refused = run("/usr/bin/curl", ["-s", "-m", "5", "-w", "%{http_code}", "-o", "/dev/null", "http://127.0.0.1:\(port)/stats.json"])
            #expect(refused.stdout == "503", "\(refused.stdout)")
            for fd in idle { close(fd) }
            usleep(300_000)
            #expect(fetch("http://127.0.0.1:\(port)/stats.json").status == 0)
        }
    }

    @Test func headlessChromiumPlaysTheStream() throws {
        let chromium = ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000", "--virtual-time-budget=15000"]
        try withViewer(groups: [uniqueGroup("web")]) { port, _ in
            let url = "http://127.0.0.1:\(port)/?frames=30"
            let dom = run(chromium[0], Array(chromium.dropFirst()) + ["--dump-dom", url], timeout: 60)
            let decoded = dom.stdout.components(separatedBy: "<b id=\"decoded\">").dropFirst().first?.prefix { $0.isNumber }
            #expect((Int(decoded ?? "") ?? 0) >= 1, "the page decoded nothing: \(dom.stdout.suffix(300)) \(dom.stderr.suffix(300))")
            #expect(dom.stdout.contains("<div id=\"error\"></div>"), "the page reported an error")
            let shot = Paths.temporaryDirectory().appendingPathComponent("page.png").path
            _ = run(chromium[0], Array(chromium.dropFirst()) + ["--screenshot=\(shot)", url], timeout: 60)
            // The synthetic desktop's blue fills much of the video canvas when the picture is shown.
            let raw = Paths.temporaryDirectory().appendingPathComponent("page.rgb").path
            #expect(run("/usr/bin/ffmpeg", ["-v", "error", "-i", shot, "-f", "rawvideo", "-pix_fmt", "rgb24", "-y", raw]).status == 0)
            let pixels = try Data(contentsOf: URL(fileURLWithPath: raw))
            var blue = 0
            for i in stride(from: 0, to: pixels.count - 2, by: 3) where abs(Int(pixels[i]) - 28) < 24 && abs(Int(pixels[i + 1]) - 48) < 24 && abs(Int(pixels[i + 2]) - 84) < 24 {
                blue += 1
            }
            #expect(Double(blue) / Double(pixels.count / 3) > 0.05, "no picture in the screenshot (\(blue) desktop pixels)")
        }
    }

    @Test func liveIVFMetricsStatsAndSnapshot() throws {
        let group = uniqueGroup("http")
        try withViewer(groups: [group]) { port, _ in
            let base = "http://127.0.0.1:\(port)"
            // ffmpeg reads the live IVF over HTTP, from a keyframe, without errors.
            let live = run("/usr/bin/ffmpeg", ["-v", "error", "-t", "2", "-i", "\(base)/stream.ivf", "-f", "null", "-"], timeout: 30)
            #expect(live.status == 0 && live.stderr.isEmpty, "\(live.stderr)")
            let clip = Paths.temporaryDirectory().appendingPathComponent("live.ivf").path
            _ = run("/usr/bin/curl", ["-s", "-m", "2", "-o", clip, "\(base)/stream.ivf"])
            #expect((FFmpeg.frameCount(clip) ?? 0) >= 20)
            #expect(FFmpeg.frames(clip).first?.key == true, "a new viewer must start on a keyframe")

            let metrics = String(decoding: fetch("\(base)/metrics").body, as: UTF8.self)
            #expect(metrics.contains("framerelay_frames_taken_total{app_group=\"\(group.name)\"}"))
            #expect(metrics.contains("# TYPE framerelay_capture_latency_seconds summary"))

            let stats = try JSONDecoder().decode([ShareStats].self, from: fetch("\(base)/stats.json").body)
            #expect(stats.first?.appGroup == group.name && (stats.first?.encoded?.frames ?? 0) > 0)

            let snapshot = fetch("\(base)/snapshot.jpg")
            #expect(snapshot.status == 0 && snapshot.body.starts(with: [0xFF, 0xD8]))
            let jpeg = Paths.temporaryDirectory().appendingPathComponent("snap.jpg").path
            try snapshot.body.write(to: URL(fileURLWithPath: jpeg))
            let frames = try FFmpeg.grayFrames(jpeg, width: 640, height: 360)
            #expect(frames.count == 1 && stamp(frames[0], width: 640, height: 360) != nil, "the snapshot shows the stamped picture")
            #expect(fetch("\(base)/nothing").status != 0)
        }
    }

    @Test func severalSharesEachGetTheirOwnStream() throws {
        let groups = [uniqueGroup("two"), uniqueGroup("two")]
        let rtp = freePortPair()
        let dir = Paths.temporaryDirectory()
        let sdp = [dir.appendingPathComponent("a.sdp").path, dir.appendingPathComponent("b.sdp").path]
        try withViewer(groups: groups, extra: ["--rtp", "127.0.0.1:\(rtp)", "--sdp", sdp[0], "--sdp", sdp[1]]) { port, _ in
            let stats = try JSONDecoder().decode([ShareStats].self, from: fetch("http://127.0.0.1:\(port)/stats.json").body)
            #expect(stats.map(\.appGroup) == groups.map(\.name))
            let ssrcs = stats.compactMap { $0.transport?.ssrc }
            #expect(ssrcs.count == 2 && ssrcs[0] != ssrcs[1])
            let texts = try sdp.map { try String(contentsOfFile: $0, encoding: .utf8) }
            #expect(texts[0].contains("m=video \(rtp) RTP/AVP 96") && texts[1].contains("m=video \(rtp + 2) RTP/AVP 96"))
            for index in 0..<2 {
                let clip = Paths.temporaryDirectory().appendingPathComponent("s\(index).ivf").path
                _ = run("/usr/bin/curl", ["-s", "-m", "2", "-o", clip, "http://127.0.0.1:\(port)/stream.ivf?share=\(index)"])
                #expect((FFmpeg.frameCount(clip) ?? 0) > 10)
            }
        }
    }

    @Test func httpPortInUseIsOneLine() throws {
        let port = freePortPair()
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        _ = withLoopback(port) { bind(listener, $0, $1) }
        listen(listener, 1)
        let result = run(Paths.executable("frame-relay"), ["--app-group", uniqueGroup().name, "--http", "\(port)"])
        #expect(result.status != 0)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("HTTP address 127.0.0.1:\(port) is already in use"))
        let demo = run(Paths.executable("frame-relay"), ["demo", "--app-group", uniqueGroup().name, "--http", "\(port)"])
        // The port is bound before the producer starts: nothing else is said.
        #expect(demo.status != 0 && demo.stderr.contains("is already in use") && demo.stderr.split(separator: "\n").count == 1, "\(demo.stderr)")
    }

    @Test func demoRunsEverythingAndLeavesNothingBehind() throws {
        let group = uniqueGroup("demo")
        let port = freePortPair()
        let demo = Spawned(Paths.executable("frame-relay"), ["demo", "--app-group", group.name, "--http", "\(port)", "--size", "640x360"])
        #expect(demo.waitForLog("first-frame"))
        #expect(demo.stderr.contains("viewer: http://127.0.0.1:\(port)/") && demo.stderr.contains("ffplay http://127.0.0.1:\(port)/stream.ivf"))
        #expect(fetch("http://127.0.0.1:\(port)/stats.json").status == 0)
        demo.signal(SIGINT)  // Ctrl-C
        #expect(demo.wait(timeout: 20) == 0)
        #expect(!segmentExists(group))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: "/dev/shm").filter { "/" + $0 == group.sharedMemoryName }
        #expect(leftovers.isEmpty)
    }

    /// Started through PATH from another directory, the demo still finds broadcast-sim beside itself.
    @Test func demoRunThroughPATHFindsItsProducer() throws {
        let group = uniqueGroup("path")
        let bin = URL(fileURLWithPath: Paths.executable("frame-relay")).deletingLastPathComponent().path
        let demo = Spawned("/usr/bin/env", ["frame-relay", "demo", "--app-group", group.name, "--http", "\(freePortPair())", "--size", "320x240"],
                           environment: ["PATH": bin + ":/usr/bin:/bin"], directory: "/tmp")
        #expect(demo.waitForLog("first-frame"), "\(demo.stderr)")
        demo.signal(SIGINT)
        #expect(demo.wait(timeout: 20) == 0)
        #expect(!segmentExists(group))
    }

    /// A demo killed outright takes its producer with it (and so its ring);
    /// a demo whose producer dies says so and fails.
    @Test func demoAndItsProducerEndTogether() throws {
        func start() throws -> (Spawned, pid: Int32, AppGroup) {
            let group = uniqueGroup("demo")
            let demo = Spawned(Paths.executable("frame-relay"), ["demo", "--app-group", group.name, "--http", "\(freePortPair())", "--size", "320x240"])
            #expect(demo.waitForLog("first-frame"), "\(demo.stderr)")
            let line = try #require(demo.stderr.split(separator: "\n").first { $0.contains("broadcast-sim (pid ") }, "\(demo.stderr)")
            let pid = try #require(Int32(line.split(separator: "(pid ")[1].prefix { $0.isNumber }))
            return (demo, pid, group)
        }
        func gone(_ pid: Int32) -> Bool {
            for _ in 0..<300 where kill(pid, 0) == 0 || errno != ESRCH { usleep(10_000) }
            return kill(pid, 0) != 0
        }
        let (killed, producer, group) = try start()
        killed.signal(SIGKILL)
        #expect(gone(producer))
        #expect(!segmentExists(group))

        let (orphaned, lost, _) = try start()
        kill(lost, SIGKILL)
        #expect(orphaned.wait(timeout: 20) == 1, "\(orphaned.stderr)")
        #expect(orphaned.stderr.contains("error: broadcast-sim was killed by signal 9"), "\(orphaned.stderr)")
    }
}
