@preconcurrency import Glibc
import Foundation
import FrameRelay

/// The same frames, the same settings, the same receiver, through four
/// pipelines: a plain libvpx loop, ffmpeg (raw video → libvpx → RTP),
/// GStreamer (shmsink → shmsrc → vp8enc → rtpvp8pay → udpsink) and ours
/// (ring → frame-relay → RTP). `frame-relay receive` decodes each stream,
/// reads the frame number stamped into every picture and matches it to the
/// time the feeder handed that frame over.
struct SideBySide {
    let frames: [PixelBuffer]  // upright I420, tight rows
    let input: PixelFormat  // what the pipelines are given: i420 or bgra
    let fps: Double  // 0: as fast as they go
    let count: Int
    let bitrate = 2500
    let work: URL

    struct Outcome {
        var name: String
        var decoded = 0
        var offered = 0
        var seconds = 0.0
        var glassToGlass: LatencySummary?
        var missing = 0
    }

    /// Frame `n` stamped with its number, in `format` (the input format by default).
    func payload(_ n: Int, format: PixelFormat? = nil) throws -> PixelBuffer {
        let source = frames[n % frames.count]
        let copy = try PixelBuffer(width: source.width, height: source.height, format: .i420, rowAlignment: 1)
        source.withUnsafeBytes { bytes in copy.withUnsafeMutablePlane(0) { target, _ in target.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) } }
        FrameStamp.stamp(UInt64(n), into: copy)
        if (format ?? input) == .i420 { return copy }
        let bgra = try PixelBuffer(width: copy.width, height: copy.height, format: .bgra, rowAlignment: 1)
        _ = try FrameFormatter(format: .bgra, orientation: .up).format(copy).withUnsafeBytes { bytes in
            bgra.withUnsafeMutablePlane(0) { target, _ in target.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        }
        return bgra
    }

    /// Starts the receiver on `port` for `seconds`.
    func receiver(port: Int, captures: String, report: String, seconds: Double) throws -> Process {
        try launch("frame-relay", ["receive", "--port", "\(port)", "--duration", "\(seconds)", "--captures", captures, "--report", report, "--quiet"])
    }

    /// Feeds every frame on schedule to `feed`, logging capture times; returns the log's path.
    func feed(_ name: String, format: PixelFormat? = nil, _ body: (Int, PixelBuffer, UInt64) throws -> Void) throws -> (log: String, seconds: Double) {
        let log = work.appendingPathComponent("\(name)-captures.jsonl").path
        var lines = ""
        let prepared = try (0..<min(count, 60)).map { try payload($0, format: format) }
        let start = MonotonicClock.now()
        for n in 0..<count {
            if fps > 0 { MonotonicClock.sleep(until: start + UInt64(Double(n) * 1e9 / fps)) }
            let frame = n < prepared.count ? prepared[n] : try payload(n, format: format)
            let captured = MonotonicClock.now()
            lines += "{\"frame\":\(n),\"captured\":\(captured)}\n"
            try body(n, frame, captured)
        }
        let seconds = Double(MonotonicClock.now() - start) / 1e9
        try lines.write(toFile: log, atomically: true, encoding: .utf8)
        return (log, seconds)
    }

    func finish(_ name: String, report: String, offered: Int, seconds: Double, receiver: Process) throws -> Outcome {
        receiver.waitUntilExit()
        let result = try JSONDecoder().decode(ReceiveReport.self, from: Data(contentsOf: URL(fileURLWithPath: report)))
        return Outcome(name: name, decoded: result.matched, offered: offered, seconds: seconds, glassToGlass: result.glassToGlass, missing: result.missing)
    }

    /// Writes all of a buffer's bytes to a pipe.
    func write(_ fd: Int32, _ buffer: PixelBuffer) {
        buffer.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { return }
                offset += n
            }
        }
    }

    var width: Int { frames[0].width }
    var height: Int { frames[0].height }
    var receiveSeconds: Double { (fps > 0 ? Double(count) / fps : Double(count) / 40) + 6 }

    func runPlain(port: Int) throws -> Outcome {
        let report = work.appendingPathComponent("plain.json").path
        let captures = work.appendingPathComponent("plain-captures.jsonl").path
        let rx = try receiver(port: port, captures: captures, report: report, seconds: receiveSeconds)
        usleep(300_000)
        var options = RTPSession.Options()
        options.destinations = [try Destination("127.0.0.1:\(port)")]
        let rtp = try RTPSession(options: options)
        let encoder = try VP8Encoder(settings: { var s = VP8Settings(); s.bitrateKbps = bitrate; s.screenContentMode = 0; return s }())
        // The floor: libvpx's own input format, whatever the others are given.
        let (log, seconds) = try feed("plain", format: .i420) { _, frame, captured in
            _ = rtp.poll(now: captured)
            try encoder.encode(EncoderInput(frame), captureTime: captured) { rtp.send($0, captureTime: captured) }
        }
        rename(log, captures)
        return try finish("plain libvpx", report: report, offered: count, seconds: seconds, receiver: rx)
    }

    func runFFmpeg(port: Int) throws -> Outcome {
        let report = work.appendingPathComponent("ffmpeg.json").path
        let captures = work.appendingPathComponent("ffmpeg-captures.jsonl").path
        let rx = try receiver(port: port, captures: captures, report: report, seconds: receiveSeconds)
        usleep(300_000)
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = [
            "-v", "error", "-f", "rawvideo", "-pix_fmt", input == .bgra ? "bgra" : "yuv420p", "-s", "\(width)x\(height)", "-framerate", "30", "-i", "-",
            "-pix_fmt", "yuv420p", "-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "-6", "-b:v", "\(bitrate)k", "-minrate", "\(bitrate)k", "-maxrate", "\(bitrate)k",
            "-bufsize", "\(bitrate)k", "-qmin", "12", "-qmax", "56", "-undershoot-pct", "100", "-overshoot-pct", "15", "-static-thresh", "100",
            "-lag-in-frames", "0", "-threads", "2", "-g", "90", "-f", "rtp", "-payload_type", "96", "rtp://127.0.0.1:\(port)?pkt_size=1200",
        ]
        let pipe = Pipe()
        ffmpeg.standardInput = pipe
        ffmpeg.standardOutput = FileHandle.nullDevice
        try ffmpeg.run()
        let fd = pipe.fileHandleForWriting.fileDescriptor
        let (log, seconds) = try feed("ffmpeg") { _, frame, _ in write(fd, frame) }
        try pipe.fileHandleForWriting.close()
        ffmpeg.waitUntilExit()
        rename(log, captures)
        return try finish("ffmpeg", report: report, offered: count, seconds: seconds, receiver: rx)
    }

    func runGStreamer(port: Int) throws -> Outcome {
        let report = work.appendingPathComponent("gst.json").path
        let captures = work.appendingPathComponent("gst-captures.jsonl").path
        let socket = work.appendingPathComponent("gst.shm").path
        let rx = try receiver(port: port, captures: captures, report: report, seconds: receiveSeconds)
        let format = input == .bgra ? "bgra" : "i420"
        let frameBytes = input == .bgra ? width * height * 4 : width * height * 3 / 2
        let encode = Process()
        encode.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
        encode.arguments = [
            "-q", "shmsrc", "socket-path=\(socket)", "is-live=true", "do-timestamp=true", "!",
            "rawvideoparse", "width=\(width)", "height=\(height)", "format=\(format)", "framerate=30/1", "!",
            "videoconvert", "!", "video/x-raw,format=I420", "!",
            "vp8enc", "deadline=1", "cpu-used=-6", "target-bitrate=\(bitrate * 1000)", "end-usage=cbr", "min-quantizer=12", "max-quantizer=56",
            "undershoot=100", "overshoot=15", "static-threshold=100", "lag-in-frames=0", "threads=2", "keyframe-max-dist=90", "!",
            "rtpvp8pay", "mtu=1200", "pt=96", "!", "udpsink", "host=127.0.0.1", "port=\(port)", "sync=false", "async=false",
        ]
        encode.standardError = FileHandle.nullDevice  // shmsrc complains when the feeder closes: expected at the end
        let source = Process()
        source.standardError = FileHandle.nullDevice
        source.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
        source.arguments = [
            "-q", "fdsrc", "fd=0", "blocksize=\(frameBytes)", "!", "shmsink", "socket-path=\(socket)", "shm-size=\(frameBytes * 8)",
            "wait-for-connection=true", "sync=false",
        ]
        let pipe = Pipe()
        source.standardInput = pipe
        try source.run()
        usleep(300_000)
        try encode.run()
        usleep(500_000)
        let fd = pipe.fileHandleForWriting.fileDescriptor
        let (log, seconds) = try feed("gst") { _, frame, _ in write(fd, frame) }
        try pipe.fileHandleForWriting.close()
        source.waitUntilExit()
        usleep(1_000_000)
        kill(encode.processIdentifier, SIGINT)
        encode.waitUntilExit()
        unlink(socket)
        rename(log, captures)
        return try finish("GStreamer", report: report, offered: count, seconds: seconds, receiver: rx)
    }

    func runOurs(port: Int) throws -> Outcome {
        let report = work.appendingPathComponent("ours.json").path
        let captures = work.appendingPathComponent("ours-captures.jsonl").path
        let rx = try receiver(port: port, captures: captures, report: report, seconds: receiveSeconds)
        let group = try AppGroup("group.bench.framerelay.sidebyside")
        let sample = try payload(0)
        let producer = try RingProducer(appGroup: group, slotCapacity: sample.capacity)
        let host = try launch("frame-relay", [
            // Screen-content mode 0: ffmpeg and GStreamer cannot set it, so all four encode alike.
            "--app-group", group.name, "--rtp", "127.0.0.1:\(port)", "--bitrate", "\(bitrate)", "--screen-content-mode", "0",
            "--exit-when-finished", "--quiet",
        ])
        usleep(500_000)
        let (log, seconds) = try feed("ours") { n, frame, captured in
            try producer.publish(frame, frameNumber: UInt64(n), captureTime: captured)
            // As fast as they go: the next frame when the host has taken this one, as a
            // pipe makes ffmpeg's and GStreamer's feeders wait (else the newest frame wins).
            let deadline = MonotonicClock.now() + 1_000_000_000
            while fps == 0, producer.framesTaken <= UInt64(n), MonotonicClock.now() < deadline { usleep(50) }
        }
        usleep(500_000)
        producer.finish()
        host.waitUntilExit()
        rename(log, captures)
        return try finish("FrameRelay", report: report, offered: count, seconds: seconds, receiver: rx)
    }
}

/// Runs the four pipelines in turn and reports decoded frames/s and glass-to-glass latency.
func sideBySide(clip: String, input: PixelFormat, fps: Double, count: Int) throws -> [BenchmarkResult] {
    let set = try loadFrames(source: "clip", width: 1280, height: 720, count: 60, clip: clip)
    let tight = try set.i420.map { frame -> PixelBuffer in
        let copy = try PixelBuffer(width: frame.width, height: frame.height, format: .i420, rowAlignment: 1)
        scale(frame, into: copy)
        return copy
    }
    let work = FileManager.default.temporaryDirectory.appendingPathComponent("frame-relay-side-by-side-\(getpid())")
    try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: work) }
    let bench = SideBySide(frames: tight, input: input, fps: fps, count: count, work: work)
    let base = 42_000 + 8 * Int(getpid() % 1000)
    var outcomes: [SideBySide.Outcome] = []
    outcomes.append(try bench.runPlain(port: base))
    outcomes.append(try bench.runFFmpeg(port: base + 2))
    outcomes.append(try bench.runGStreamer(port: base + 4))
    outcomes.append(try bench.runOurs(port: base + 6))
    let mode = fps > 0 ? "\(Int(fps))fps" : "max"
    var results: [BenchmarkResult] = []
    for outcome in outcomes {
        let key = outcome.name.lowercased().replacingOccurrences(of: " ", with: "_")
        let name = "side_by_side.\(input).\(mode).\(key)"
        let throughput = Double(outcome.decoded) / max(outcome.seconds, 0.001)
        results.append(BenchmarkResult(name: name + ".decoded_throughput", unit: "fps", value: throughput,
            extra: "\(outcome.decoded) of \(outcome.offered) frames decoded by the receiver, \(outcome.missing) missing"))
        if let g2g = outcome.glassToGlass {
            results.append(BenchmarkResult(name: name + ".glass_to_glass.p50", unit: "us", value: g2g.p50))
            results.append(BenchmarkResult(name: name + ".glass_to_glass.p99", unit: "us", value: g2g.p99))
        }
    }
    return results
}
