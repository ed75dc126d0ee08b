@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayRing
import FrameRelayHTTP
import FrameRelayHost
import FrameRelayTools
import FrameRelayTestSupport
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

    /// Sends `request` as it is and reads the answer until the server closes (at most `timeout` seconds).
    func exchange(_ port: Int, _ request: [UInt8], timeout: Int = 10) -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var limit = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard withLoopback(port, { connect(fd, $0, $1) }) == 0 else { return "connect failed" }
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { break }
            sent += n
        }
        var answer = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n < 0 { answer += Array("<\(errno == ECONNRESET ? "reset" : "errno \(errno)")>".utf8) }
            guard n > 0 else { break }
            answer += buffer[..<n]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    /// Slow or idle clients cannot hold the viewer: every slot full of
    /// connections that never finish their request, and a new client still
    /// gets the page, the stats and the metrics (the longest-waiting idle
    /// connection makes way); a request trickled a byte a second is cut off
    /// at its deadline.
    @Test func slowClientsCannotLockOutTheViewer() throws {
        try withViewer(groups: [uniqueGroup("slow")]) { port, h in
            let idle = (0..<(HTTPServer.maxConnections + 12)).map { _ in socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) }
            for fd in idle {
                #expect(withLoopback(port, { connect(fd, $0, $1) }) == 0)
                _ = send(fd, "G", 1, Int32(MSG_NOSIGNAL))
            }
            usleep(300_000)
            for path in ["/stats.json", "/metrics", "/"] {
                let answer = run("/usr/bin/curl", ["-s", "-m", "5", "-w", "%{http_code}", "-o", "/dev/null", "http://127.0.0.1:\(port)\(path)"])
                #expect(answer.stdout == "200", "\(path) behind \(idle.count) idle clients: \(answer.stdout)")
            }
            for fd in idle { close(fd) }
            // One byte a second: the head never completes, and the connection is closed at the deadline.
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            #expect(withLoopback(port, { connect(fd, $0, $1) }) == 0)
            let start = MonotonicClock.now()
            var closedAfter: Double?
            for byte in "GET /stats.json HTTP/1.1\r\nX: " + String(repeating: "y", count: 20) {
                var one = UInt8(ascii: byte.unicodeScalars.first!)
                _ = send(fd, &one, 1, Int32(MSG_NOSIGNAL))
                var probe = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&probe, 1, 1000) > 0 {
                    closedAfter = Double(MonotonicClock.now() - start) / 1e9
                    break
                }
            }
            let deadline = Double(HTTPServer.requestDeadline) / 1e9
            #expect(closedAfter.map { $0 >= deadline - 0.5 && $0 < deadline + 1.5 } == true, "closed after \(closedAfter ?? -1) s")
            #expect(h.process.isRunning)
        }
    }

    /// What HTTP says of methods, heads and malformed requests.
    @Test func requestsGetTheAnswersHTTPPrescribes() throws {
        try withViewer(groups: [uniqueGroup("methods")]) { port, _ in
            let head = exchange(port, Array("HEAD /stats.json HTTP/1.1\r\n\r\n".utf8))
            #expect(head.hasPrefix("HTTP/1.1 200 OK") && head.contains("Content-Length: "), "\(head)")
            #expect(head.hasSuffix("\r\n\r\n"), "HEAD sent a body: \(head.suffix(80))")
            let streamHead = exchange(port, Array("HEAD /stream.ivf HTTP/1.1\r\n\r\n".utf8))
            #expect(streamHead.hasPrefix("HTTP/1.1 200 OK") && streamHead.hasSuffix("\r\n\r\n"), "\(streamHead)")
            for method in ["POST", "PUT", "DELETE", "OPTIONS", "TRACE", "CONNECT", "PATCH"] {
                let answer = exchange(port, Array("\(method) /stats.json HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello".utf8))
                #expect(answer.hasPrefix("HTTP/1.1 405 ") && answer.contains("Allow: GET, HEAD"), "\(method): \(answer.prefix(60))")
            }
            let bareLF = exchange(port, Array("GET /stats.json HTTP/1.1\nHost: x\n\n".utf8))
            #expect(bareLF.hasPrefix("HTTP/1.1 200 OK"), "LF line ends: \(bareLF.prefix(60))")
            let huge = exchange(port, Array(("GET / HTTP/1.1\r\n" + String(repeating: "X-Filler: 0123456789abcdef\r\n", count: 2400) + "\r\n").utf8))
            #expect(huge.hasPrefix("HTTP/1.1 431 "), "64 KB of headers: \(huge.prefix(60))")
            for garbage in ["\r\n\r\n", "GET\r\n\r\n", "GET noslash HTTP/1.1\r\n\r\n", "GET / HTTP/9\r\n\r\n"] {
                let answer = exchange(port, Array(garbage.utf8))
                #expect(answer.hasPrefix("HTTP/1.1 400 ") || answer.hasPrefix("HTTP/1.1 505 "), "\(garbage.debugDescription): \(answer.prefix(60))")
            }
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

    /// A real Prometheus (Debian's) scrapes the host every second; PromQL
    /// gives the share's frame rate from the taken counter, a p99 from the
    /// latency histogram's buckets, and the build's version.
    @Test func prometheusScrapesTheHostAndPromQLGivesTheFrameRate() throws {
        let group = uniqueGroup("prom")
        try withViewer(groups: [group]) { port, _ in
            let dir = Paths.temporaryDirectory()
            let config = dir.appendingPathComponent("prometheus.yml")
            try """
                global:
                  scrape_interval: 1s
                scrape_configs:
                  - job_name: framerelay
                    static_configs:
                      - targets: ['127.0.0.1:\(port)']
                """.write(to: config, atomically: true, encoding: .utf8)
            let api = freePortPair()
            let prometheus = Spawned("/usr/bin/prometheus", [
                "--config.file=\(config.path)", "--storage.tsdb.path=\(dir.appendingPathComponent("tsdb").path)",
                "--web.listen-address=127.0.0.1:\(api)",
            ])
            defer {
                prometheus.signal(SIGTERM)
                _ = prometheus.wait()
            }
            /// The first sample of an instant query, once Prometheus has one.
            func query(_ promQL: String) -> (labels: [String: String], value: Double)? {
                let answer = run("/usr/bin/curl", ["-s", "-f", "-m", "5", "-G", "--data-urlencode", "query=\(promQL)", "http://127.0.0.1:\(api)/api/v1/query"])
                guard answer.status == 0, let json = try? JSONSerialization.jsonObject(with: Data(answer.stdout.utf8)) as? [String: Any],
                    let data = json["data"] as? [String: Any], let result = data["result"] as? [[String: Any]], let first = result.first,
                    let pair = first["value"] as? [Any], pair.count == 2, let text = pair[1] as? String, let value = Double(text), value.isFinite
                else { return nil }
                return (first["metric"] as? [String: String] ?? [:], value)
            }
            let selector = "{app_group=\"\(group.name)\"}"
            // Five scrapes in the window first: a rate over the series' first two samples is extrapolated from its start.
            for _ in 0..<60 where (query("count_over_time(framerelay_frames_taken_total\(selector)[5s])")?.value ?? 0) < 5 { usleep(500_000) }
            let rate = query("rate(framerelay_frames_taken_total\(selector)[5s])")?.value
            // The producer sends 30 frames a second; rate() over scrapes a second apart lands near it.
            #expect((20...40).contains(rate ?? 0), "PromQL frame rate \(String(describing: rate)): \(prometheus.stderr.suffix(400))")
            let p99 = query("histogram_quantile(0.99, rate(framerelay_capture_latency_seconds_bucket{app_group=\"\(group.name)\",stage=\"encoded\"}[5s]))")?.value
            #expect(p99 != nil && p99! > 0 && p99! <= 1, "p99 from the buckets: \(String(describing: p99))")
            #expect(query("framerelay_build_info")?.labels["version"] == FrameRelayVersion.string)
            #expect(query("up{job=\"framerelay\"}")?.value == 1)
        }
    }

    /// When the host stops, the page says the stream ended instead of
    /// freezing on stale numbers; before that it played, and its latency
    /// label names the stage it measures (no RTP: capture→encoded).
    @Test func theViewerSaysTheStreamEndedWhenTheHostStops() throws {
        let group = uniqueGroup("ended")
        let port = freePortPair()
        let h = host([group], ["--http", "\(port)", "--duration", "3"])
        let p = producer(group, ["--size", "640x360", "--fps", "30", "--duration", "30", "--quiet"])
        #expect(h.waitForLog("first-frame"))
        // A budget of virtual time far past the host's end: Chromium keeps the page until the host has ended and the page stops polling.
        let chromium = ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000", "--virtual-time-budget=600000"]
        let dom = run(chromium[0], Array(chromium.dropFirst()) + ["--dump-dom", "http://127.0.0.1:\(port)/"], timeout: 60)
        #expect(h.wait() == 0)
        p.signal(SIGTERM)
        #expect(p.wait() == 0)
        #expect(dom.stdout.contains("stream ended: the host"), "no ended state: \(dom.stdout.suffix(600)) \(dom.stderr.suffix(300))")
        let decoded = dom.stdout.components(separatedBy: "<b id=\"decoded\">").dropFirst().first?.prefix { $0.isNumber }
        #expect((Int(decoded ?? "") ?? 0) >= 1, "the page played nothing before the end")
        #expect(dom.stdout.contains("<i id=\"stage\">capture→encoded</i>"))
        // The chart comes before the picture: above the fold.
        let chart = try #require(dom.stdout.range(of: "id=\"chart\""))
        #expect(chart.lowerBound < dom.stdout.range(of: "id=\"video\"")!.lowerBound)
        #expect(!segmentExists(group))
    }

    @Test func liveIVFMetricsStatsAndSnapshot() throws {
        let group = uniqueGroup("http")
        try withViewer(groups: [group]) { port, _ in
            let base = "http://127.0.0.1:\(port)"
            // ffmpeg reads the live IVF over HTTP, from a keyframe, without errors, each frame at its own
            // capture time (a content-aware stream's rate varies: two frames a stall brought closer than
            // a frame interval met at one output time of ffmpeg's frame-rate grid).
            let live = run("/usr/bin/ffmpeg", ["-v", "error", "-t", "2", "-i", "\(base)/stream.ivf"] + FFmpeg.variableRate + ["-f", "null", "-"], timeout: 30)
            #expect(live.status == 0 && live.stderr.isEmpty, "\(live.stderr)")
            let clip = Paths.temporaryDirectory().appendingPathComponent("live.ivf").path
            _ = run("/usr/bin/curl", ["-s", "-m", "2", "-o", clip, "\(base)/stream.ivf"])
            #expect((FFmpeg.frameCount(clip) ?? 0) >= 20)
            #expect(FFmpeg.frames(clip).first?.key == true, "a new viewer must start on a keyframe")
            // Timed by the capture clock (90 kHz), each pts after the one before.
            let ivf = try IVFFile(clip)
            #expect(ivf.timebase == (1, 90_000))
            let pts = ivf.frames.map(\.pts)
            #expect(pts.count >= 20 && zip(pts, pts.dropFirst()).allSatisfy { $0 < $1 }, "pts \(pts.prefix(20))")

            let metrics = String(decoding: fetch("\(base)/metrics").body, as: UTF8.self)
            #expect(metrics.contains("framerelay_frames_taken_total{app_group=\"\(group.name)\"}"))
            #expect(metrics.contains("framerelay_frames_skipped_total{app_group=\"\(group.name)\"}"), "skipped apart from dropped")
            // The synthetic screen changes every frame: its producer says none repeats.
            #expect(metrics.contains("framerelay_frames_repeated_total{app_group=\"\(group.name)\"} 0"), "repeats counted apart")
            #expect(metrics.contains("framerelay_frames_located_total{app_group=\"\(group.name)\"} 0"), "nor says where it changes")
            #expect(metrics.contains("# TYPE framerelay_capture_latency_seconds histogram"))
            #expect(metrics.contains("framerelay_capture_latency_seconds_bucket{app_group=\"\(group.name)\",stage=\"encoded\",le=\"+Inf\"}"))
            #expect(metrics.contains("framerelay_build_info{version=\"\(FrameRelayVersion.string)\"} 1"))

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
        #expect(result.stderr.contains("HTTP address 127.0.0.1:\(port) is already in use: another program listens there; choose another port, such as --http 127.0.0.1:\(port + 1)"), "\(result.stderr)")
        let demo = run(Paths.executable("frame-relay"), ["demo", "--app-group", uniqueGroup().name, "--http", "\(port)"])
        // The port is bound before the producer starts: nothing else is said.
        #expect(demo.status != 0 && demo.stderr.contains("is already in use") && demo.stderr.split(separator: "\n").count == 1, "\(demo.stderr)")
    }

    /// Listening on every interface, the viewer is said at an address a browser can open, not 0.0.0.0.
    @Test func aViewerOnEveryInterfaceIsSaidAtAnAddressThatAnswers() throws {
        let port = freePortPair()
        let host = Spawned(Paths.executable("frame-relay"), ["--app-group", uniqueGroup("everywhere").name, "--http", "0.0.0.0:\(port)", "--duration", "3"])
        #expect(host.waitForLog("viewer:"))
        let url = host.stderr.components(separatedBy: "viewer: ").dropFirst().first?.prefix { $0 != " " } ?? ""
        #expect(url.hasPrefix("http://") && !url.contains("0.0.0.0") && host.stderr.contains("on every interface"), "\(host.stderr)")
        #expect(fetch("\(url)stats.json").status == 0, "\(url)")
        #expect(host.wait(timeout: 20) == 0, "\(host.stderr)")
    }

    /// `--quiet` turns the demo's status line off, as the README says; its viewer's address is still said.
    @Test func aQuietDemoWritesNoStatusLine() throws {
        let group = uniqueGroup("quietdemo")
        let port = freePortPair()
        let demo = run(Paths.executable("frame-relay"), ["demo", "--quiet", "--app-group", group.name, "--http", "\(port)", "--size", "320x240", "--duration", "5"])
        #expect(demo.status == 0, "\(demo.stderr)")
        #expect(demo.stderr.contains("viewer: http://127.0.0.1:\(port)/"), "\(demo.stderr)")
        #expect(!demo.stderr.contains("capture→encoded"), "\(demo.stderr)")
        #expect(!segmentExists(group))
    }

    /// `demo --content` shows a content model instead of the pattern: a
    /// still screen's frames are mostly skipped, where the pattern's all code.
    @Test func aDemoShowsTheContentAsked() throws {
        let group = uniqueGroup("contentdemo")
        let report = Paths.temporaryDirectory().appendingPathComponent("demo.json").path
        let demo = run(Paths.executable("frame-relay"), ["demo", "--quiet", "--content", "still", "--app-group", group.name, "--http", "\(freePortPair())",
                                                          "--size", "320x240", "--duration", "3", "--report", report])
        #expect(demo.status == 0, "\(demo.stderr)")
        let encoded = try #require(try JSONDecoder().decode([ShareStats].self, from: Data(contentsOf: URL(fileURLWithPath: report))).first?.encoded)
        #expect(encoded.frames > 0 && encoded.skipped >= 2 * encoded.frames, "\(encoded.frames) encoded, \(encoded.skipped) skipped")
        #expect(!segmentExists(group))
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
