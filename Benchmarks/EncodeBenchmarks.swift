@preconcurrency import Glibc
import CVpx
import CYuv
import Foundation
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing
import FrameRelayProducer
import FrameRelayHost
import FrameRelayTools

/// Frames held in memory for the encode benchmarks.
struct FrameSet {
    var name: String
    var width: Int
    var height: Int
    var i420: [PixelBuffer]
}

/// `count` frames of the shared clip (scaled to the size) or of the synthetic screen.
func loadFrames(source: String, width: Int, height: Int, count: Int, clip: String?) throws -> FrameSet {
    var frames: [PixelBuffer] = []
    if source == "clip" {
        guard let clip else { throw UsageError("the clip benchmark needs --clip PATH (the shared clip after xz -dk)") }
        let reader = try Y4MFileSource(path: clip)
        for n in 0..<count {
            guard let frame = try reader.nextFrame(number: UInt64(n))?.picture else { break }
            let out = try PixelBuffer(width: width, height: height, format: .i420)
            scale(frame, into: out)
            frames.append(out)
        }
    } else {
        let screen = try SyntheticScreen(width: width, height: height, format: .i420)
        for n in 0..<count {
            let frame = screen.nextFrame(number: UInt64(n))!.picture
            let out = try PixelBuffer(width: width, height: height, format: .i420)
            scale(frame, into: out)
            frames.append(out)
        }
    }
    return FrameSet(name: source, width: width, height: height, i420: frames)
}

/// libyuv I420Scale (a plain copy when the sizes match).
func scale(_ source: PixelBuffer, into target: PixelBuffer) {
    source.withUnsafeMutablePlane(0) { sy, ssy in source.withUnsafeMutablePlane(1) { su, ssu in source.withUnsafeMutablePlane(2) { sv, ssv in
        target.withUnsafeMutablePlane(0) { ty, sty in target.withUnsafeMutablePlane(1) { tu, stu in target.withUnsafeMutablePlane(2) { tv, stv in
            _ = I420Scale(sy.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(ssy), su.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(ssu),
                          sv.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(ssv), Int32(source.width), Int32(source.height),
                          ty.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(sty), tu.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(stu),
                          tv.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(stv), Int32(target.width), Int32(target.height), kFilterBox)
        } } }
    } } }
}

/// The frames in another format (one libyuv call each, as the producer's
/// formatter does), rows aligned to `rowAlignment` bytes.
func convertFrames(_ frames: [PixelBuffer], to format: PixelFormat, rowAlignment: Int = 64) throws -> [PixelBuffer] {
    if frames.first?.format == format { return frames }
    return try frames.map { frame in
        let converted = try PixelBuffer(width: frame.width, height: frame.height, format: format, rowAlignment: rowAlignment)
        PixelConversion.convert(frame, to: converted)
        return converted
    }
}

/// Exact percentiles of a benchmark's samples (not a hot path: sorting is fine).
struct Samples {
    var values: [Double] = []
    mutating func add(_ value: Double) { values.append(value) }
    var sum: Double { values.reduce(0, +) }
    func percentile(_ p: Double) -> Double { values.sorted().nearestRankPercentile(p) }
}

/// A plain libvpx encoder at the relay's settings, driven by hand: the floor
/// the relay is measured against.
final class PlainLibvpx {
    private var context = vpx_codec_ctx_t()
    private var image = vpx_image_t()
    private var count: Int64 = 0

    init(width: Int, height: Int, settings: VP8Settings, threads: Int) {
        // The very configuration the relay's encoder uses (one definition, in the CVpx shim).
        var config = vpx_codec_enc_cfg_t()
        precondition(cvpx_screen_share_config(&config, UInt32(width), UInt32(height), UInt32(threads), UInt32(settings.bitrateKbps)) == VPX_CODEC_OK)
        precondition(cvpx_enc_init(&context, &config) == VPX_CODEC_OK)
        precondition(cvpx_screen_share_controls(&context, Int32(settings.speed), Int32(settings.screenContentMode), Int32(settings.maxIntraBitratePercent)) == VPX_CODEC_OK)
    }

    deinit { vpx_codec_destroy(&context) }

    /// Encodes one I420 frame and returns the nanoseconds it took.
    func encode(_ frame: PixelBuffer, captureTime: UInt64) -> UInt64 {
        frame.withUnsafeMutablePlane(0) { y, sy in frame.withUnsafeMutablePlane(1) { u, su in frame.withUnsafeMutablePlane(2) { v, sv in
            vpx_img_wrap(&image, VPX_IMG_FMT_I420, UInt32(frame.width), UInt32(frame.height), 1, y.baseAddress!.assumingMemoryBound(to: UInt8.self))
            image.planes = (y.baseAddress!.assumingMemoryBound(to: UInt8.self), u.baseAddress!.assumingMemoryBound(to: UInt8.self),
                            v.baseAddress!.assumingMemoryBound(to: UInt8.self), nil)
            image.stride = (Int32(sy), Int32(su), Int32(sv), 0)
        } } }
        let start = MonotonicClock.now()
        let flags: vpx_enc_frame_flags_t = count == 0 ? vpx_enc_frame_flags_t(cvpx_eflag_force_kf) : 0
        vpx_codec_encode(&context, &image, vpx_codec_pts_t(captureTime / 100_000 * 9), 3000, flags, UInt(cvpx_dl_realtime))
        count += 1
        var iterator: vpx_codec_iter_t? = nil
        var bytes = 0
        while let packet = vpx_codec_get_cx_data(&context, &iterator) {
            if packet.pointee.kind == VPX_CODEC_CX_FRAME_PKT { bytes += packet.pointee.data.frame.sz }
        }
        return MonotonicClock.now() - start
    }
}

/// What any program fed BGRA has to do before libvpx, done the plain way: one
/// libyuv call (the relay's own conversion, on one thread) into a buffer
/// allocated once. Returns the nanoseconds the conversion took.
func plainConvert(_ bgra: PixelBuffer, into i420: PixelBuffer) -> UInt64 {
    let start = MonotonicClock.now()
    PixelConversion.convert(bgra, to: i420)
    return MonotonicClock.now() - start
}

/// The relay path: ring write, take, convert if needed, encode.
final class RelayPath {
    let producer: RingProducer
    let host: RingHost
    let pipeline: SharePipeline
    private(set) var latency = ShareLatency()

    /// `encodeEveryFrame`: as the plain loop does (the comparisons); otherwise only what changed.
    init(capacity: Int, settings: VP8Settings, transport: RTPSession? = nil, viewers: FrameBroadcast? = nil, encodeEveryFrame: Bool = true,
         simulcast: Simulcast = Simulcast(layers: 1), group: String = "group.bench.framerelay.encode") throws {
        let group = try AppGroup(group)  // fixed names: a crashed run's segment is reclaimed by the next
        producer = try RingProducer(appGroup: group, slotCapacity: capacity)
        host = RingHost(appGroup: group)
        var options = SharePipeline.Options()
        options.settings = settings
        options.encodeEveryFrame = encodeEveryFrame
        options.simulcast = simulcast
        let sinks: [(any FrameSink)?] = [transport, viewers]
        pipeline = try SharePipeline(options: options, sinks: sinks.compactMap { $0 })
    }

    deinit {
        producer.finish()
        host.detach()
    }

    /// Records the frames whose timing waited on the pacer (after the pipeline finished).
    func finishTimings() { pipeline.finishedTimings(waiting: false) { latency.record($0) } }

    /// Publishes and relays one frame stamped `captureTime` (the encoder's
    /// clock, as the plain loop's); returns host-side ns, publish → encoded ns
    /// measured from this call, the ring write's ns, the host side's CPU ns
    /// on this thread, and whether the frame was encoded (not skipped).
    /// `damage`: what the producer says changed since the frame before.
    func relay(
        _ frame: PixelBuffer, number: Int, captureTime: UInt64, damage: Damage = .unknown
    ) throws -> (host: UInt64, endToEnd: UInt64, write: UInt64, cpu: UInt64, encoded: Bool) {
        let entry = MonotonicClock.now()
        try producer.publish(frame, frameNumber: UInt64(number), captureTime: captureTime, damage: damage)
        let takeStart = MonotonicClock.now()
        let write = takeStart - entry
        let cpuStart = Processor.threadCPUNanoseconds()
        while true {
            switch try host.next(timeoutNanoseconds: 100_000_000) {
            case .frame(let view):
                var frame = HostFrame(view, taken: MonotonicClock.now())
                try pipeline.process(&frame)
                let end = MonotonicClock.now()
                let cpu = Processor.threadCPUNanoseconds() - cpuStart
                pipeline.finishedTimings { latency.record($0) }
                return (end - takeStart, end - entry, write, cpu, frame.timing.encoded != 0)
            case .invalidFrame(let reason): throw UsageError("benchmark frame invalid: \(reason)")
            default: continue
            }
        }
    }
}

/// Plain libvpx and the relay side by side on the same frames, frame by
/// frame interleaved so both meet the same machine at the same moment.
func encodeBenchmarks(quick: Bool, clip: String?) throws -> [BenchmarkResult] {
    var results: [BenchmarkResult] = []
    let count = quick ? 20 : 120
    var cases: [(String, Int, Int)] = [("synthetic", 1280, 720), ("synthetic", 1920, 1080)]
    if clip != nil { cases = [("clip", 1280, 720), ("clip", 1920, 1080)] + cases }
    let cores = Processor.onlineCount
    for (source, width, height) in cases {
        let set = try loadFrames(source: source, width: width, height: height, count: count, clip: clip)
        let settings = VP8Settings()
        let threads = VP8Settings.threadCount(width: width, height: height, cores: cores, concurrentEncoders: 1)
        for format in [PixelFormat.i420, .nv12, .bgra] {
            let frames = try convertFrames(set.i420, to: format)
            // The plain loop reads I420; fed BGRA it converts first, as any program must.
            let plainPicture = try PixelBuffer(width: width, height: height, format: .i420)
            let plain = PlainLibvpx(width: width, height: height, settings: settings, threads: threads)
            let relay = try RelayPath(capacity: frames.map(\.capacity).max()!, settings: settings)
            var plainTimes = Samples(), plainEncodes = Samples(), relayTimes = Samples(), endToEnd = Samples(), added = Samples(), addedOverEncode = Samples(), writes = Samples()
            let start = MonotonicClock.now()
            for n in frames.indices {
                let capture = start + UInt64(n) * 33_333_333
                // Both encoders see the same pictures and time stamps, so their rate control makes the same choices.
                let c = format == .bgra ? plainConvert(frames[n], into: plainPicture) : 0
                let p = plain.encode(format == .bgra ? plainPicture : set.i420[n], captureTime: capture)
                let r = try relay.relay(frames[n], number: n, captureTime: capture)
                guard n >= 5 else { continue }  // warm-up
                plainTimes.add(Double(c + p) / 1000)
                plainEncodes.add(Double(p) / 1000)
                relayTimes.add(Double(r.host) / 1000)
                endToEnd.add(Double(r.endToEnd) / 1000)
                added.add(Double(r.endToEnd) / 1000 - Double(c + p) / 1000)
                addedOverEncode.add(Double(r.endToEnd) / 1000 - Double(p) / 1000)
                writes.add(Double(r.write) / 1000)
            }
            let name = "encode.\(source).\(width)x\(height).\(format)"
            let plainFPS = Double(plainTimes.values.count) / (plainTimes.sum / 1e6)
            let encodeOnlyFPS = Double(plainEncodes.values.count) / (plainEncodes.sum / 1e6)
            let relayFPS = Double(relayTimes.values.count) / (relayTimes.sum / 1e6)
            results.append(BenchmarkResult(name: name + ".relay_throughput_ratio", unit: "x", value: relayFPS / plainFPS,
                extra: String(format: "relay %.0f fps, plain libvpx %.0f fps%@", relayFPS, plainFPS, format == .bgra ? " (libyuv conversion + encode)" : "")))
            if format == .bgra {
                // The stricter reading: against encoding pictures converted beforehand, for free.
                results.append(BenchmarkResult(name: name + ".relay_throughput_to_encode_only_ratio", unit: "x", value: relayFPS / encodeOnlyFPS,
                    extra: String(format: "relay %.0f fps, plain libvpx encode alone %.0f fps", relayFPS, encodeOnlyFPS)))
            }
            results.append(BenchmarkResult(name: name + ".capture_to_encoded.p50", unit: "us", value: endToEnd.percentile(50),
                extra: String(format: "plain encode p50 %.0f µs", plainEncodes.percentile(50))))
            results.append(BenchmarkResult(name: name + ".capture_to_encoded.p99", unit: "us", value: endToEnd.percentile(99),
                extra: String(format: "plain encode p99 %.0f µs", plainEncodes.percentile(99))))
            results.append(BenchmarkResult(name: name + ".added_latency.p50", unit: "us", value: added.percentile(50),
                extra: String(format: "relay capture→encoded minus the plain loop's (same frame, same job); convert p50 %.0f µs, ring write p50 %.0f µs",
                              relay.latency.convertSummary.p50, writes.percentile(50))))
            if format == .bgra {
                results.append(BenchmarkResult(name: name + ".added_latency_over_encode_alone.p50", unit: "us", value: addedOverEncode.percentile(50),
                    extra: "relay capture→encoded minus plain libvpx's encode alone: conversion counted as added"))
            }
        }
    }
    return results
}

/// Capture → last RTP packet sent at 30 frames/s in real time, beside the
/// plain libvpx encode time of the same frames.
func streamingBenchmarks(quick: Bool, clip: String?) throws -> [BenchmarkResult] {
    var results: [BenchmarkResult] = []
    let count = quick ? 30 : 150
    let source = clip == nil ? "synthetic" : "clip"
    let cores = Processor.onlineCount
    for (width, height) in [(1280, 720), (1920, 1080)] {
        let set = try loadFrames(source: source, width: width, height: height, count: count, clip: clip)
        let settings = VP8Settings()
        let plain = PlainLibvpx(width: width, height: height, settings: settings,
                                threads: VP8Settings.threadCount(width: width, height: height, cores: cores, concurrentEncoders: 1))
        var rtp = RTPSession.Options()
        rtp.destinations = [try Destination("127.0.0.1:\(40_000 + 2 * Int(getpid() % 5000))")]
        let transport = try RTPSession(options: rtp)
        let relay = try RelayPath(capacity: set.i420.map(\.capacity).max()!, settings: settings, transport: transport)
        var plainTimes = Samples()
        let start = MonotonicClock.now()
        for n in set.i420.indices {
            let due = start + UInt64(n) * 33_333_333
            MonotonicClock.sleep(until: due)
            let p = plain.encode(set.i420[n], captureTime: due)
            _ = try relay.relay(set.i420[n], number: n, captureTime: MonotonicClock.now())
            _ = transport.poll(now: MonotonicClock.now())
            if n >= 5 { plainTimes.add(Double(p) / 1000) }
        }
        // The last frames' packets leave the pacer.
        relay.pipeline.finish(endedAt: MonotonicClock.now())
        relay.finishTimings()
        let sent = relay.latency.captureToSentSummary
        let name = "stream.\(source).\(width)x\(height)p30"
        results.append(BenchmarkResult(name: name + ".capture_to_sent.p50", unit: "us", value: sent.p50,
            extra: String(format: "plain libvpx encode p50 %.0f µs: +%.0f µs", plainTimes.percentile(50), sent.p50 - plainTimes.percentile(50))))
        results.append(BenchmarkResult(name: name + ".capture_to_sent.p99", unit: "us", value: sent.p99,
            extra: String(format: "plain libvpx encode p99 %.0f µs", plainTimes.percentile(99))))
        results.append(BenchmarkResult(name: name + ".sent_minus_plain_encode.p50", unit: "us", value: sent.p50 - plainTimes.percentile(50)))
    }
    return results
}
