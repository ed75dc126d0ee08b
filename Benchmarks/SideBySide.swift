@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing
import FrameRelayHost
import FrameRelayTools

/// The same frames, the same settings, the same receiver, through four
/// pipelines: a plain libvpx loop, ffmpeg (raw video → libvpx → RTP),
/// GStreamer (shmsink → shmsrc → vp8enc → rtpvp8pay → udpsink) and ours
/// (ring → frame-relay → RTP). `frame-relay receive` decodes each stream,
/// reads the frame number stamped into every picture and matches it to the
/// time the feeder handed that frame over.
struct SideBySide {
    /// The pipelines, by the names `--side-pipelines` takes.
    enum Pipeline: String, CaseIterable {
        case plain, ffmpeg, gstreamer, ours
        /// Ours as it runs by default: only what changed is encoded, and
        /// keyframes come when the receiver asks (`frame-relay receive` says
        /// it will), not every 3 s. Not like for like with the peers, which
        /// is why it is a pipeline of its own.
        case oursDefault = "ours-default"
        /// The name in the results: `side_by_side.<input>.<mode>.<result key>...`.
        var resultKey: String {
            switch self {
            case .plain: "plain_libvpx"
            case .ffmpeg: "ffmpeg"
            case .gstreamer: "gstreamer"
            case .ours: "framerelay"
            case .oursDefault: "framerelay_default"
            }
        }
    }

    /// Runs one pipeline into a receiver on `port`.
    func run(_ pipeline: Pipeline, port: Int) throws -> Outcome {
        switch pipeline {
        case .plain: try runPlain(port: port)
        case .ffmpeg: try runFFmpeg(port: port)
        case .gstreamer: try runGStreamer(port: port)
        case .ours: try runOurs(port: port, everyFrame: true)
        case .oursDefault: try runOurs(port: port, everyFrame: false)
        }
    }

    let frames: [PixelBuffer]  // the clip in the input format, tight rows, stamped in place as each is fed
    let input: PixelFormat  // what the pipelines are given: i420, nv12 (what ReplayKit gives) or bgra
    let fps: Double  // 0: as fast as they go
    let count: Int
    let bitrate = 2500
    /// Encoder threads for all four: as given, else our policy's choice for this size on this machine.
    let threadsGiven: Int?
    var threads: Int {
        threadsGiven ?? VP8Settings.threadCount(width: width, height: height, cores: Processor.onlineCount, concurrentEncoders: 1)
    }
    let work: URL
    let keep: Bool  // keep the logs, and trace the plain loop's and our host's stages

    struct Outcome {
        var decoded = 0
        var seconds = 0.0  // first frame fed → last frame decoded
        var glassToGlass: LatencySummary?
        var keyframes: UInt64 = 0
        var framesLost: UInt64 = 0
    }

    /// Starts the receiver for pipeline `key`, runs `pipeline` (which feeds
    /// every frame through ``feed(_:_:)`` and returns when the feed started),
    /// and collects what the receiver decoded and matched to the capture log.
    /// Throughput counts from the first frame fed to the last frame decoded, so
    /// frames a pipeline still holds in its queues when the feed ends count too.
    func measure(key: String, port: Int, _ pipeline: () throws -> UInt64) throws -> Outcome {
        let report = work.appendingPathComponent("\(key).json").path
        let receiver = try launch("frame-relay", [
            // Done 2 s after the stream's last packet (a pipeline stalled that long has failed), or at the window's end.
            "receive", "--port", "\(port)", "--duration", "\(receiveSeconds)", "--idle", "2", "--captures", capturesPath(key), "--report", report,
            "--arrivals", work.appendingPathComponent("\(key)-arrivals.jsonl").path, "--quiet",
        ])
        usleep(300_000)
        let started = try pipeline()
        receiver.waitUntilExit()
        let result = try JSONDecoder().decode(ReceiveReport.self, from: Data(contentsOf: URL(fileURLWithPath: report)))
        struct Arrival: Decodable { var decoded: UInt64 }
        let arrivals = try String(contentsOf: work.appendingPathComponent("\(key)-arrivals.jsonl"), encoding: .utf8)
            .split(separator: "\n").map { try JSONDecoder().decode(Arrival.self, from: Data($0.utf8)) }
        let last = arrivals.map(\.decoded).max() ?? started
        return Outcome(decoded: result.matched, seconds: Double(last &- started) / 1e9, glassToGlass: result.glassToGlass,
                       keyframes: result.stats.keyframes, framesLost: result.stats.framesLost)
    }

    func capturesPath(_ key: String) -> String { work.appendingPathComponent("\(key)-captures.jsonl").path }

    /// Feeds every frame to `body` with its capture time and its media time,
    /// logging capture times for pipeline `key`; returns when it started
    /// (CLOCK_MONOTONIC ns). Paced, a frame is captured at its scheduled time
    /// (a pipeline that blocks the feeder makes the frames behind it late); as
    /// fast as they go, when it is handed over. The media time is the clip's
    /// own, `mediaRate` frames a second: what the encoders' rate control and
    /// keyframe spacing go by, in all four alike (ffmpeg and GStreamer are told
    /// the same rate), so each frame gets the same bits whatever the speed.
    func feed(_ key: String, _ body: (_ n: Int, _ frame: PixelBuffer, _ captured: UInt64, _ media: UInt64) throws -> Void) throws -> UInt64 {
        var lines = ""
        lines.reserveCapacity(count * 40)
        // Prepared before the clock starts; each frame is stamped with its number in place
        // (a few cells), so the feeder costs every pipeline the same, next to nothing.
        let start = MonotonicClock.now()
        for n in 0..<count {
            let media = start + UInt64(n) * 1_000_000_000 / UInt64(mediaRate)
            if fps > 0 { MonotonicClock.sleep(until: media) }
            let frame = frames[n % frames.count]
            FrameStamp.stamp(UInt64(n), into: frame)
            let captured = fps > 0 ? media : MonotonicClock.now()
            lines += "{\"frame\":\(n),\"captured\":\(captured)}\n"
            try body(n, frame, captured, media)
        }
        try lines.write(toFile: capturesPath(key), atomically: true, encoding: .utf8)
        return start
    }

    /// Writes all of a buffer's bytes to a pipe.
    func write(_ fd: Int32, _ buffer: PixelBuffer) {
        // A feeder whose encoder exited stops writing; the run reports the encoder's failure.
        buffer.withUnsafeBytes { bytes in _ = try? FileDescriptor.writeAll(fd, bytes, name: "pipe") }
    }

    /// The clip's frame rate as the encoders see it: the feed rate when paced, else the clip's 30.
    var mediaRate: Int { fps > 0 ? max(1, Int(fps.rounded())) : 30 }
    /// Keyframes every 3 s of media time, FrameRelay's default, as a frame count for ffmpeg and GStreamer.
    var keyframeDistance: Int { 3 * mediaRate }
    /// FrameRelay's cap on a keyframe's size (percent of a frame's budget), given to all four.
    var maxIntraPercent: Int { var settings = VP8Settings(); settings.frameRate = mediaRate; return settings.maxIntraBitratePercent }
    /// Threads GStreamer's videoconvert gets: the bands ours converts BGRA in.
    var conversionThreads: Int { FrameConverter.bands(concurrentEncoders: 1, cores: Processor.onlineCount) }
    var ffmpegPixelFormat: String { input == .i420 ? "yuv420p" : "\(input)" }  // ffmpeg's names: yuv420p, nv12, bgra
    var width: Int { frames[0].width }
    var height: Int { frames[0].height }
    /// Long enough for every frame of a pipeline that manages 40 frames/s, whatever the feed rate.
    var receiveSeconds: Double { Double(count) / min(fps > 0 ? fps : 40, 40) + 6 }

    func runPlain(port: Int) throws -> Outcome { try measure(key: "plain", port: port) {
        var options = RTPSession.Options()
        options.destinations = [try Destination("127.0.0.1:\(port)")]
        let rtp = try RTPSession(options: options)
        let encoder = try VP8Encoder(settings: {
            var s = VP8Settings(); s.bitrateKbps = bitrate; s.frameRate = mediaRate; s.screenContentMode = 0; s.threads = threads; return s
        }())
        var keyframes = KeyframeSchedule(interval: encoder.settings.keyframeInterval)
        // The floor: the same frames straight into libvpx (which reads I420 and NV12), converted first (one libyuv call) when they are BGRA.
        let picture = try PixelBuffer(width: width, height: height, format: .i420)
        // With `keep`, its stage times in the host's trace shape, to set beside ours frame by frame.
        var trace: [FrameTiming] = []
        trace.reserveCapacity(keep ? count : 0)
        var completed = 0
        let started = try feed("plain") { n, frame, captured, media in
            _ = rtp.poll(now: MonotonicClock.now())
            if frame.format == .bgra { _ = plainConvert(frame, into: picture) }
            var timing = FrameTiming()
            if keep { timing.frame = UInt64(n); timing.captured = captured; timing.converted = MonotonicClock.now() }
            let input = EncoderInput(frame.format == .bgra ? picture : frame)
            let keyframe = keyframes.isDue(width: input.width, height: input.height, pts: encoder.timestamp(for: media), periodic: true)
            let outcome = try encoder.encode(input, captureTime: media, keyframe: keyframe) { packet in
                if keep, timing.encoded == 0 { timing.encoded = MonotonicClock.now() }
                rtp.deliver(packet, captureTime: media, timing: &timing)
            }
            keyframes.encoded(outcome, width: input.width, height: input.height, bitrateKbps: encoder.bitrateKbps)
            if keep { trace.append(timing) }
            // When each frame's last packet left the pacer, as the host's trace says it.
            while completed < trace.count, rtp.complete(&trace[completed]) { completed += 1 }
        }
        rtp.finish()
        while completed < trace.count, rtp.complete(&trace[completed]) { completed += 1 }
        if keep {
            try trace.map { $0.jsonLine(share: "plain") }.joined().write(to: work.appendingPathComponent("plain-trace.jsonl"), atomically: true, encoding: .utf8)
        }
        return started
    } }

    func runFFmpeg(port: Int) throws -> Outcome { try measure(key: "ffmpeg", port: port) {
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = [
            "-v", "error", "-f", "rawvideo", "-pix_fmt", ffmpegPixelFormat, "-s", "\(width)x\(height)", "-framerate", "\(mediaRate)", "-i", "-",
            "-pix_fmt", "yuv420p", "-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "-6", "-b:v", "\(bitrate)k", "-minrate", "\(bitrate)k", "-maxrate", "\(bitrate)k",
            // The rate-control buffer as ours (1000 ms, starting at 500; ffmpeg fixes the optimal level at 5/6 of it, ours is 600 ms).
            "-bufsize", "\(bitrate)k", "-rc_init_occupancy", "\(bitrate / 2)k", "-qmin", "12", "-qmax", "56", "-undershoot-pct", "100", "-overshoot-pct", "15",
            "-static-thresh", "100", "-max-intra-rate", "\(maxIntraPercent)", "-lag-in-frames", "0", "-threads", "\(threads)", "-g", "\(keyframeDistance)",
            "-f", "rtp", "-payload_type", "96", "rtp://127.0.0.1:\(port)?pkt_size=1200",
        ]
        let pipe = Pipe()
        ffmpeg.standardInput = pipe
        ffmpeg.standardOutput = FileHandle.nullDevice
        try ffmpeg.run()
        usleep(500_000)  // started, as the others are, before the first frame
        let fd = pipe.fileHandleForWriting.fileDescriptor
        let started = try feed("ffmpeg") { _, frame, _, _ in write(fd, frame) }
        try pipe.fileHandleForWriting.close()
        ffmpeg.waitUntilExit()
        return started
    } }

    func runGStreamer(port: Int) throws -> Outcome { try measure(key: "gst", port: port) {
        let socket = work.appendingPathComponent("gst.shm").path
        let format = "\(input)"  // rawvideoparse's names: i420, nv12, bgra
        let frameBytes = frames[0].withUnsafeBytes(\.count)
        let encode = Process()
        encode.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
        encode.arguments = [
            "-q", "-e", "shmsrc", "socket-path=\(socket)", "is-live=true", "do-timestamp=true", "!",
            "rawvideoparse", "width=\(width)", "height=\(height)", "format=\(format)", "framerate=\(mediaRate)/1", "!",
            // Converting (NV12, BGRA) on as many threads as ours converts BGRA on.
            "videoconvert", "n-threads=\(conversionThreads)", "!", "video/x-raw,format=I420", "!",
            "vp8enc", "deadline=1", "cpu-used=-6", "target-bitrate=\(bitrate * 1000)", "end-usage=cbr", "min-quantizer=12", "max-quantizer=56",
            "undershoot=100", "overshoot=15", "static-threshold=100", "lag-in-frames=0", "threads=\(threads)", "keyframe-max-dist=\(keyframeDistance)",
            "buffer-size=1000", "buffer-initial-size=500", "buffer-optimal-size=600", "max-intra-bitrate=\(maxIntraPercent)", "!",
            "rtpvp8pay", "mtu=1200", "pt=96", "!", "udpsink", "host=127.0.0.1", "port=\(port)", "sync=false", "async=false",
        ]
        encode.standardError = FileHandle.nullDevice  // shmsrc complains when the feeder closes: expected at the end
        let source = Process()
        source.standardError = FileHandle.nullDevice
        source.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
        source.arguments = [
            "-q", "fdsrc", "fd=0", "blocksize=\(frameBytes)", "!", "shmsink", "socket-path=\(socket)", "shm-size=\(frameBytes * 2 + 65536)",
            "wait-for-connection=true", "sync=false",
        ]
        let pipe = Pipe()
        source.standardInput = pipe
        try source.run()
        usleep(300_000)
        try encode.run()
        usleep(500_000)
        let fd = pipe.fileHandleForWriting.fileDescriptor
        let started = try feed("gst") { _, frame, _, _ in write(fd, frame) }
        try pipe.fileHandleForWriting.close()
        source.waitUntilExit()
        usleep(1_000_000)
        kill(encode.processIdentifier, SIGINT)
        encode.waitUntilExit()
        unlink(socket)
        return started
    } }

    func runOurs(port: Int, everyFrame: Bool) throws -> Outcome { try measure(key: everyFrame ? "ours" : "ours-default", port: port) {
        let group = try AppGroup("group.bench.framerelay.sidebyside")
        let capacity = try PixelBuffer.capacity(width: width, height: height, format: input, rowAlignment: 1)
        let producer = try RingProducer(appGroup: group, slotCapacity: capacity)
        let host = try launch("frame-relay", [
            // Screen-content mode 0: ffmpeg and GStreamer cannot set it, so all four encode alike.
            "--app-group", group.name, "--rtp", "127.0.0.1:\(port)", "--bitrate", "\(bitrate)", "--screen-content-mode", "0", "--threads", "\(threads)",
            "--frame-rate", "\(mediaRate)", "--exit-when-finished", "--quiet",
        ]
            // Every frame encoded whole with periodic keyframes, as the other three do.
            + (everyFrame ? ["--encode-every-frame"] : [])
            + (keep ? ["--trace", work.appendingPathComponent("\(everyFrame ? "ours" : "ours-default")-trace.jsonl").path] : []))
        usleep(500_000)
        let started = try feed(everyFrame ? "ours" : "ours-default") { n, frame, _, media in
            try producer.publish(frame, frameNumber: UInt64(n), captureTime: media)
            // As fast as they go: the next frame when the host has taken this one, as a
            // pipe makes ffmpeg's and GStreamer's feeders wait (else the newest frame wins).
            // Polled every 0.5 ms: the host spends several ms on each frame, and a finer
            // poll would take CPU from it that a feeder blocked in write(2) does not.
            let deadline = MonotonicClock.now() + 1_000_000_000
            while fps == 0, producer.framesTaken <= UInt64(n), MonotonicClock.now() < deadline { usleep(500) }
        }
        usleep(500_000)
        producer.finish()
        host.waitUntilExit()
        return started
    } }
}

/// Runs the pipelines in turn, `rounds` times (each round starting
/// with the next pipeline, so none always meets the machine first), and
/// reports the median over rounds of decoded frames/s and glass-to-glass
/// p50/p99, and the median over rounds of ours as a ratio to each peer. Each pipeline's capture log,
/// decode log and receiver report stay in `keep` when given.
func sideBySide(clip: String, input: PixelFormat, fps: Double, count: Int, rounds: Int, pipelines: [SideBySide.Pipeline], threads: Int?, keep: String?) throws -> [BenchmarkResult] {
    let set = try loadFrames(source: "clip", width: 1280, height: 720, count: 60, clip: clip)
    let tight = try set.i420.map { frame -> PixelBuffer in
        let copy = try PixelBuffer(width: frame.width, height: frame.height, format: .i420, rowAlignment: 1)
        scale(frame, into: copy)
        return copy
    }
    let prepared = try convertFrames(tight, to: input, rowAlignment: 1)
    let mode = fps > 0 ? "\(Int(fps))fps" : "max"
    let root = keep.map { URL(fileURLWithPath: $0).appendingPathComponent("\(input)-\(mode)") }
        ?? FileManager.default.temporaryDirectory.appendingPathComponent("frame-relay-side-by-side-\(getpid())")
    defer { if keep == nil { try? FileManager.default.removeItem(at: root) } }
    let base = 42_000 + 2 * SideBySide.Pipeline.allCases.count * Int(getpid() % 1000)
    var outcomes: [SideBySide.Pipeline: [SideBySide.Outcome]] = [:]
    for round in 0..<rounds {
        let work = root.appendingPathComponent("round-\(round + 1)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let bench = SideBySide(frames: prepared, input: input, fps: fps, count: count, threadsGiven: threads, work: work, keep: keep != nil)
        for i in pipelines.indices {
            let which = pipelines[(i + round) % pipelines.count]
            let port = base + 2 * SideBySide.Pipeline.allCases.firstIndex(of: which)!
            outcomes[which, default: []].append(try bench.run(which, port: port))
        }
    }
    func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
    func throughput(_ o: SideBySide.Outcome) -> Double { Double(o.decoded) / max(o.seconds, 0.001) }
    var results: [BenchmarkResult] = []
    for pipeline in SideBySide.Pipeline.allCases {
        guard let runs = outcomes[pipeline] else { continue }
        let prefix = "side_by_side.\(input).\(mode).\(pipeline.resultKey)"
        let fpsValues = runs.map(throughput)
        let perRound = fpsValues.map { fixed($0, 1) }.joined(separator: " / ")
        func each(_ value: (SideBySide.Outcome) -> UInt64) -> String { runs.map { "\(value($0))" }.joined(separator: "/") }
        results.append(BenchmarkResult(name: prefix + ".decoded_throughput", unit: "fps", value: median(fpsValues),
            extra: "median of \(runs.count): \(perRound) fps; \(each { UInt64($0.decoded) }) of \(count) frames decoded; "
                + "keyframes \(each(\.keyframes)); frames lost \(each(\.framesLost))"))
        let latencies = runs.compactMap(\.glassToGlass)
        guard !latencies.isEmpty else { continue }
        let p99 = median(latencies.map(\.p99))
        results.append(BenchmarkResult(name: prefix + ".glass_to_glass.p50", unit: "us", value: median(latencies.map(\.p50))))
        results.append(BenchmarkResult(name: prefix + ".glass_to_glass.p99", unit: "us", value: p99,
            extra: latencies.map { fixed($0.p99 / 1000, 1) }.joined(separator: " / ") + " ms"))
    }
    // Ratios round by round (ours against each peer measured in the same round, a
    // minute apart at most), then their median: the shared machine's load drifts
    // between rounds far more than within one.
    func ratio(_ name: String, _ values: [Double]) {
        guard !values.isEmpty else { return }
        results.append(BenchmarkResult(name: "side_by_side.\(input).\(mode).\(name)", unit: "x", value: median(values),
            extra: "median of " + values.map { fixed($0, 2) }.joined(separator: " / ")))
    }
    func p99Ratios(_ mine: [SideBySide.Outcome], _ theirs: [SideBySide.Outcome]) -> [Double] {
        zip(mine, theirs).compactMap { pair -> Double? in
            guard let a = pair.0.glassToGlass?.p99, let b = pair.1.glassToGlass?.p99, b > 0 else { return nil }
            return a / b
        }
    }
    // Ours on its defaults against the plain loop's periodic keyframes: the keyframe tail that asking receivers avoid.
    if let ours = outcomes[.oursDefault], let plain = outcomes[.plain], plain.count == ours.count {
        ratio("default_p99_ratio_to_plain_libvpx", p99Ratios(ours, plain))
    }
    if let ours = outcomes[.ours] {
        for peer in SideBySide.Pipeline.allCases where peer != .ours && peer != .oursDefault {
            guard let other = outcomes[peer], other.count == ours.count else { continue }
            ratio("throughput_ratio_to_\(peer.resultKey)", zip(ours, other).map { throughput($0) / max(throughput($1), 0.001) })
            if peer != .plain { ratio("p99_ratio_to_\(peer.resultKey)", p99Ratios(ours, other)) }
        }
    }
    return results
}
