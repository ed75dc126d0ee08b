@preconcurrency import Glibc
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayProducer
import FrameRelayDecoding
import FrameRelayHost
import FrameRelayTools

/// One way of encoding a content, measured as a viewer sees it: the host's
/// CPU time per frame, and the PSNR of the picture a viewer holds at each
/// source frame (a skipped frame counts as the picture already shown).
private final class ContentRun {
    let relay: RelayPath
    let viewers = FrameBroadcast()
    let decoder: VP8Decoder
    private var next: UInt64 = 0
    private var held: PixelBuffer?
    private var packet = [UInt8]()
    var cpu: [Double] = []
    var psnr: [Double] = []
    /// Taken → encoded of each frame (µs); nil for a skipped frame.
    var host: [Double?] = []

    init(capacity: Int, encodeEveryFrame: Bool, name: String) throws {
        var settings = VP8Settings()
        settings.threads = 1  // the CPU time of one thread is the whole cost
        settings.keyframeInterval = 0  // a viewer asks for keyframes when it needs one
        relay = try RelayPath(capacity: capacity, settings: settings, viewers: viewers, encodeEveryFrame: encodeEveryFrame,
                              group: "group.bench.framerelay.content.\(name)")
        decoder = try VP8Decoder()
    }

    func step(_ frame: PixelBuffer, number: Int, captureTime: UInt64, damage: Damage = .unknown) throws {
        let r = try relay.relay(frame, number: number, captureTime: captureTime, damage: damage)
        cpu.append(Double(r.cpu) / 1000)
        host.append(r.encoded ? Double(r.host) / 1000 : nil)
        while next < viewers.count {
            guard let got = try viewers.read(next, into: &packet) else { break }
            packet.withUnsafeBytes { bytes in
                _ = decoder.decode(UnsafeRawBufferPointer(rebasing: bytes[..<got.size])) { held = try? $0.copyI420() }
            }
            next += 1
        }
        psnr.append(held.map { PixelConversion.psnr(frame, $0) } ?? 0)
    }
}

/// Encoding only what changed against encoding every frame, on the shared
/// clip looped past 10 s, on the synthetic screen (which changes nearly
/// everywhere in every frame) and on every content model, at 720p and
/// 30 frames/s of media time, fed as fast as the host takes them. Both
/// ways see the same frames, interleaved frame by frame.
func contentBenchmarks(quick: Bool, clip: String?, wants: (String) -> Bool = { _ in true }) throws -> [BenchmarkResult] {
    var results: [BenchmarkResult] = []
    let width = 1280, height = 720
    var sources = ["pattern"] + ContentScreen.Content.allCases.map(\.rawValue)
    if clip != nil { sources.insert("clip", at: 0) }
    for source in sources where wants("content.\(source).720p") {
        let count = source == "mixed" ? (quick ? 600 : 1800) : (quick ? 150 : 360)
        let frames = try ContentFrames(source, width: width, height: height, clip: clip)
        let capacity = try PixelBuffer.capacity(width: width, height: height, format: .i420)
        let every = try ContentRun(capacity: capacity, encodeEveryFrame: true, name: "every")
        let aware = try ContentRun(capacity: capacity, encodeEveryFrame: false, name: "changed")
        // A content model also says which frames repeat the one before, and where the others changed, as broadcast-sim passes it on.
        let told = frames.knowsRepeats ? try ContentRun(capacity: capacity, encodeEveryFrame: false, name: "told") : nil
        let start = MonotonicClock.now()
        for n in 0..<count {
            let capture = start + UInt64(n) * 33_333_333
            let frame = try frames.frame(n)
            try every.step(frame.picture, number: n, captureTime: capture)
            try aware.step(frame.picture, number: n, captureTime: capture)
            try told?.step(frame.picture, number: n, captureTime: capture, damage: frame.damage)
        }
        let name = "content.\(source).720p"
        let cpuEvery = every.cpu.reduce(0, +), cpuAware = aware.cpu.reduce(0, +)
        let psnrEvery = every.psnr.reduce(0, +) / Double(count), psnrAware = aware.psnr.reduce(0, +) / Double(count)
        let skipped = aware.host.filter { $0 == nil }.count
        results.append(BenchmarkResult(name: name + ".cpu_saving_ratio", unit: "x", value: cpuEvery / cpuAware,
            extra: "host CPU encoding every frame / encoding what changed, \(count) frames (\(skipped) skipped); "
                + "\(fixed(Double(count) / (cpuEvery / 1e6), 0)) vs \(fixed(Double(count) / (cpuAware / 1e6), 0)) frames per CPU second"))
        results.append(BenchmarkResult(name: name + ".every_frame.frames_per_cpu_second", unit: "fps", value: Double(count) / (cpuEvery / 1e6)))
        results.append(BenchmarkResult(name: name + ".changed_only.frames_per_cpu_second", unit: "fps", value: Double(count) / (cpuAware / 1e6)))
        let seconds = Double(count) / 30
        let kbpsEvery = Double(every.relay.pipeline.stats.bytes) * 8 / seconds / 1000, kbpsAware = Double(aware.relay.pipeline.stats.bytes) * 8 / seconds / 1000
        results.append(BenchmarkResult(name: name + ".every_frame.kbps", unit: "kbit/s", value: kbpsEvery))
        results.append(BenchmarkResult(name: name + ".changed_only.kbps", unit: "kbit/s", value: kbpsAware))
        results.append(BenchmarkResult(name: name + ".every_frame.viewer_psnr", unit: "dB", value: psnrEvery))
        results.append(BenchmarkResult(name: name + ".changed_only.viewer_psnr", unit: "dB", value: psnrAware,
            extra: "\(fixed(psnrAware - psnrEvery, 2)) dB against encoding every frame"))
        // A changed frame's host time, taken → encoded, beside encoding every frame (frames both encoded).
        var everyChanged = Samples(), awareChanged = Samples()
        for n in 5..<count {
            guard let e = every.host[n], let a = aware.host[n] else { continue }
            everyChanged.add(e)
            awareChanged.add(a)
        }
        results.append(BenchmarkResult(name: name + ".changed_only.encoded_frame_host_time.p50", unit: "us", value: awareChanged.percentile(50),
            extra: "taken → encoded of the frames both ways encoded; every frame: \(fixed(everyChanged.percentile(50), 0)) µs, "
                + "\(fixed(awareChanged.percentile(50) - everyChanged.percentile(50), 0)) µs apart"))
        if let told {
            let cpuTold = told.cpu.reduce(0, +), stats = told.relay.pipeline.stats
            results.append(BenchmarkResult(name: name + ".producer_told.cpu_saving_ratio", unit: "x", value: cpuEvery / cpuTold,
                extra: "as cpu_saving_ratio, the producer saying which frames repeat the one before (\(stats.repeated) did) "
                    + "and where the others changed (\(stats.located) compared only there): "
                    + "\(fixed(Double(count) / (cpuTold / 1e6), 0)) frames per CPU second, \(fixed(told.psnr.reduce(0, +) / Double(count), 2)) dB"))
        }
        if source == "still" {
            // Once converged: the second half of the run.
            let half = count / 2
            let everyHalf = every.cpu[half...].reduce(0, +)
            results.append(BenchmarkResult(name: name + ".converged_cpu_share", unit: "%", value: aware.cpu[half...].reduce(0, +) / everyHalf * 100,
                extra: "host CPU of the still screen's second half against encoding every frame (the host finds what changed)"))
            if let told {
                results.append(BenchmarkResult(name: name + ".producer_told.converged_cpu_share", unit: "%", value: told.cpu[half...].reduce(0, +) / everyHalf * 100,
                    extra: "the same, the producer saying the frames repeat: neither compared nor converted"))
            }
        }
    }
    if wants("content.typing.720p.nothing_coded") { results.append(try nothingCoded(quick: quick, width: width, height: height)) }
    return results
}

/// What libvpx spends on a frame in which it codes nothing (an empty active
/// map, every macroblock kept and not loop-filtered), against coding the
/// whole frame, on typing, interleaved frame by frame: the floor under any
/// way of coding content that changes in every frame.
private func nothingCoded(quick: Bool, width: Int, height: Int) throws -> BenchmarkResult {
    let screen = try ContentScreen(.typing, width: width, height: height)
    var settings = VP8Settings()
    settings.threads = 1
    settings.keyframeInterval = 0
    let whole = try VP8Encoder(settings: settings), nothing = try VP8Encoder(settings: settings)
    let blocks = (width + 15) / 16 * ((height + 15) / 16)
    var active = [UInt8](repeating: 0, count: blocks), kept = [UInt8](repeating: VP8Encoder.Segment.kept, count: blocks)
    var cpu = (whole: 0.0, nothing: 0.0)
    for n in 0..<(quick ? 150 : 360) {
        guard let picture = screen.nextFrame(number: UInt64(n))?.picture else { break }
        let input = EncoderInput(picture), capture = UInt64(n) * 33_333_333
        var start = Processor.threadCPUNanoseconds()
        try whole.encode(input, captureTime: capture) { _ in }
        let wholeTime = Double(Processor.threadCPUNanoseconds() - start)
        start = Processor.threadCPUNanoseconds()
        if n == 0 {
            try nothing.encode(input, captureTime: capture) { _ in }  // the keyframe, left out of both
            continue
        }
        _ = try active.withUnsafeMutableBufferPointer { a in
            try kept.withUnsafeMutableBufferPointer { k in try nothing.encode(input, captureTime: capture, activeMap: a.baseAddress, segments: k.baseAddress) { _ in } }
        }
        cpu.nothing += Double(Processor.threadCPUNanoseconds() - start)
        cpu.whole += wholeTime
    }
    return BenchmarkResult(name: "content.typing.720p.nothing_coded_cpu_share", unit: "%", value: cpu.nothing / cpu.whole * 100,
        extra: "libvpx coding no macroblock of a typing frame against coding it whole: nothing that codes every frame of "
            + "typing can be more than \(fixed(cpu.whole / cpu.nothing, 2))x cheaper than encoding every frame")
}

/// The I420 frames of a content: the clip (looped), the synthetic screen, or a content model.
private final class ContentFrames {
    private var clipFrames: [PixelBuffer] = []
    private let screen: FrameSource?
    private let picture: PixelBuffer

    init(_ source: String, width: Int, height: Int, clip: String?) throws {
        picture = try PixelBuffer(width: width, height: height, format: .i420)
        switch source {
        case "clip":
            // One pass of the clip (120 frames), looped here.
            guard let clip else { throw UsageError("the clip needs --clip PATH") }
            let reader = try Y4MFileSource(path: clip, loop: false)
            while let frame = try reader.nextFrame(number: UInt64(clipFrames.count))?.picture {
                let copy = try PixelBuffer(width: width, height: height, format: .i420)
                scale(frame, into: copy)
                clipFrames.append(copy)
            }
            screen = nil
        case "pattern":
            screen = try SyntheticScreen(width: width, height: height, format: .i420)
        default:
            screen = try ContentScreen(ContentScreen.Content(rawValue: source)!, width: width, height: height, format: .i420)
        }
    }

    /// Whether the source says which frames repeat the one before (the content models do).
    var knowsRepeats: Bool { screen is ContentScreen }
    /// Frame `n` (in order), valid until the next call, with what its source says changed.
    func frame(_ n: Int) throws -> SourceFrame {
        guard let screen else { return SourceFrame(clipFrames[n % clipFrames.count]) }
        let frame = try screen.nextFrame(number: UInt64(n))!
        scale(frame.picture, into: picture)
        return SourceFrame(picture, damage: frame.damage)
    }
}

/// What simulcast layers cost the host: one share encoded as one layer
/// and as two (the whole picture and a half-size layer, each with two
/// temporal layers), fed the same 720p frames interleaved, frame by frame
/// (each first every other frame), so both meet the same machine at the same moment: the host's CPU per
/// frame (its thread's, every layer's encode included) of two layers over one.
/// A window moving every frame has an objective: two layers at most 1.3×.
/// The extra says the same for the run's second half (after both layers'
/// refinement of the first keyframe; typing's is a result of its own) and how many frames the small layer
/// encoded, how many of them searching motion (``Simulcast/motionShare``:
/// a scroll), and how many it left to a later one (``Simulcast/smallChangeRate``).
func layersBenchmarks(quick: Bool) throws -> [BenchmarkResult] {
    let count = quick ? 90 : 300
    let (width, height) = (1280, 720)
    var results: [BenchmarkResult] = []
    for source in ["pattern", "still", "typing", "scrolling"] {
        let frames = try ContentFrames(source, width: width, height: height, clip: nil)
        let capacity = try PixelBuffer.capacity(width: width, height: height, format: .i420)
        let one = try RelayPath(capacity: capacity, settings: VP8Settings(), encodeEveryFrame: false, group: "group.bench.framerelay.layers1")
        let two = try RelayPath(capacity: capacity, settings: VP8Settings(), encodeEveryFrame: false, simulcast: Simulcast(layers: 2),
                                group: "group.bench.framerelay.layers2")
        var cpu = (one: 0.0, two: 0.0), secondHalf = (one: 0.0, two: 0.0)
        let start = MonotonicClock.now()
        for n in 0..<count {
            let frame = try frames.frame(n)
            let capture = start + UInt64(n) * 33_333_333
            // Each goes first every other frame: the second finds the picture in the cache.
            let twoFirst = n % 2 == 1 ? try two.relay(frame.picture, number: n, captureTime: capture, damage: frame.damage) : nil
            let a = try one.relay(frame.picture, number: n, captureTime: capture, damage: frame.damage)
            let b = try twoFirst ?? two.relay(frame.picture, number: n, captureTime: capture, damage: frame.damage)
            guard n >= 5 else { continue }  // warm-up: the first keyframes
            cpu.one += Double(a.cpu)
            cpu.two += Double(b.cpu)
            if n >= count / 2 { (secondHalf.one, secondHalf.two) = (secondHalf.one + Double(a.cpu), secondHalf.two + Double(b.cpu)) }
        }
        let frameCount = Double(count - 5), halfCount = Double(count - count / 2), small = two.pipeline.stats.layers[0]
        results.append(BenchmarkResult(name: "layers.\(source).720p.two_to_one_layer_cpu_ratio", unit: "x", value: cpu.two / cpu.one,
            extra: String(format: "host CPU a frame: two layers %.0f µs, one layer %.0f µs; second half %.1f against %.1f µs; the small layer encoded %d frames (%d of them searching motion, where much of the picture moved), left %d to a later one (the rest had nothing to code)",
                          cpu.two / frameCount / 1000, cpu.one / frameCount / 1000, secondHalf.two / halfCount / 1000, secondHalf.one / halfCount / 1000,
                          small.frames, small.motionFrames, small.gathered),
            atMost: source == "pattern" ? 1.3 : nil))
        if source == "typing" {
            // Between keyframes: through Janus a keyframe comes only when a viewer joins or switches, and each costs the small layer its refinement.
            results.append(BenchmarkResult(name: "layers.typing.720p.refined_two_to_one_layer_cpu_ratio", unit: "x", value: secondHalf.two / secondHalf.one,
                extra: "the run's second half alone, after both layers refined their first keyframe"))
        }
    }
    return results
}
