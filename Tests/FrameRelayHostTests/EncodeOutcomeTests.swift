import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing
import FrameRelayProducer
import FrameRelayHost
import FrameRelayTestSupport
import Testing

/// The encoder's seams in one process: what an encode says it did, when the
/// keyframe schedule asks for one, and the sinks a pipeline hands frames to.
struct EncodeOutcomeTests {
    @Test func anEncodeSaysWhatItProducedAndMakesAKeyframeOnlyWhenTold() throws {
        var settings = VP8Settings()
        settings.keyframeInterval = 0
        settings.threads = 1
        let encoder = try VP8Encoder(settings: settings)
        let screen = try ContentScreen(.typing, width: 320, height: 240)
        var outcomes: [EncodeOutcome] = []
        var packetBytes: [Int] = []
        for n in 0..<6 {
            let picture = try #require(screen.nextFrame(number: UInt64(n))?.picture)
            var bytes = 0
            outcomes.append(try encoder.encode(EncoderInput(picture), captureTime: UInt64(n + 1) * 40_000_000, keyframe: n == 4) { bytes += $0.bytes.count })
            packetBytes.append(bytes)
        }
        #expect(outcomes.map(\.keyframe) == [true, false, false, false, true, false])  // the first, and the one asked for
        #expect(outcomes.filter(\.produced).count == 6)
        #expect(outcomes.map(\.bytes) == packetBytes)
        #expect(outcomes.allSatisfy { (0...63).contains($0.quantizer) && !$0.activeMap })
        #expect(outcomes.map(\.pts) == (1...6).map { Int64($0) * 3600 })  // 40 ms in 90 kHz ticks
        // A new size is a keyframe whatever the caller says.
        let larger = try #require(try ContentScreen(.typing, width: 352, height: 240).nextFrame(number: 0)?.picture)
        let resized = try encoder.encode(EncoderInput(larger), captureTime: 7 * 40_000_000) { _ in }
        #expect(resized.keyframe)
    }

    /// A bitrate lowered under what the content costs at the highest
    /// quantizer (a controller answering a narrow link) lets libvpx drop
    /// frames: the same frames at the same bitrate configured from the start
    /// (no dropping) come out every one, far over it; lowered, the stream
    /// keeps near it with fewer frames. The frames are noise, which no
    /// quantizer makes small (a screen's equivalent: content costlier than the link).
    @Test func aBitrateLoweredUnderTheContentsCostDropsFramesToMeetIt() throws {
        var generator = SystemRandomNumberGenerator()
        let pictures = try (0..<4).map { _ in
            let buffer = try PixelBuffer(width: 320, height: 240, format: .i420)
            for plane in 0..<3 { buffer.withUnsafeMutablePlane(plane) { bytes, _ in for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) } } }
            return buffer
        }
        func run(configured: Int, lowered: Int?) throws -> (produced: Int, bits: Int) {
            var settings = VP8Settings()
            settings.keyframeInterval = 0
            settings.threads = 1
            settings.bitrateKbps = configured
            let encoder = try VP8Encoder(settings: settings)
            if let lowered { try encoder.setBitrate(lowered) }
            var (produced, bytes) = (0, 0)
            for n in 0..<90 {
                let outcome = try encoder.encode(EncoderInput(pictures[n % 4]), captureTime: UInt64(n + 1) * 33_333_333, keyframe: n == 0) { _ in }
                if outcome.produced { produced += 1 }
                bytes += outcome.bytes
            }
            return (produced, bytes * 8)
        }
        let fixed = try run(configured: 200, lowered: nil)
        let lowered = try run(configured: 2500, lowered: 200)
        print("200 kbit/s over 3 s of noise: configured, \(fixed.produced) frames at \(fixed.bits / 3000) kbit/s; lowered, \(lowered.produced) at \(lowered.bits / 3000)")
        #expect(fixed.produced == 90 && fixed.bits > 3 * 3 * 200_000, "without dropping, the content's cost: \(fixed)")
        #expect(lowered.produced < 45 && lowered.bits < 2 * 3 * 200_000, "\(lowered) against \(fixed)")
    }

    @Test func theKeyframeScheduleAsksAtTheStartOnRequestOnANewSizeAndPeriodicallyWhenAllowed() {
        var schedule = KeyframeSchedule(interval: 1)
        #expect(schedule.isDue(width: 64, height: 48, pts: 0, periodic: false))
        schedule.encoded(EncodeOutcome(produced: true, keyframe: true, bytes: 1000, pts: 0), width: 64, height: 48, bitrateKbps: 500)
        #expect(!schedule.isDue(width: 64, height: 48, pts: 89_999, periodic: true))
        #expect(schedule.isDue(width: 64, height: 48, pts: 90_000, periodic: true))
        #expect(!schedule.isDue(width: 64, height: 48, pts: 900_000, periodic: false))  // every receiver asks for its own
        #expect(schedule.isDue(width: 80, height: 48, pts: 3000, periodic: false))
        // A request 300 ms after a small keyframe is answered at once; one sooner waits until then.
        schedule.request()
        #expect(!schedule.isDue(width: 64, height: 48, pts: 26_999, periodic: false))
        schedule.encoded(EncodeOutcome(produced: true, keyframe: false, pts: 26_999), width: 64, height: 48, bitrateKbps: 500)
        #expect(schedule.isDue(width: 64, height: 48, pts: 27_000, periodic: false), "the request outlives the inter frames before it is due")
        // A 25 kB keyframe at 500 kbit/s takes 400 ms to cross: a request waits 800 ms after it.
        schedule.encoded(EncodeOutcome(produced: true, keyframe: true, bytes: 25_000, pts: 90_000), width: 64, height: 48, bitrateKbps: 500)
        schedule.request()
        #expect(!schedule.isDue(width: 64, height: 48, pts: 90_000 + 71_999, periodic: false))
        #expect(schedule.isDue(width: 64, height: 48, pts: 90_000 + 72_000, periodic: false))
        // A new size is a keyframe at once, whatever the last one was.
        #expect(schedule.isDue(width: 80, height: 48, pts: 90_003, periodic: false))
        schedule.encoded(EncodeOutcome(produced: true, keyframe: true, bytes: 1000, pts: 162_000), width: 64, height: 48, bitrateKbps: 500)
        #expect(!schedule.isDue(width: 64, height: 48, pts: 165_000, periodic: true))
        #expect(schedule.isDue(width: 64, height: 48, pts: 252_000, periodic: true))
        // No interval: never periodic.
        var never = KeyframeSchedule(interval: 0)
        never.encoded(EncodeOutcome(produced: true, keyframe: true, pts: 0), width: 64, height: 48, bitrateKbps: 500)
        #expect(!never.isDue(width: 64, height: 48, pts: 90_000 * 3600, periodic: true))
    }

    /// Counts what a pipeline delivers.
    private final class CountingSink: FrameSink {
        var frames = 0, keyframes = 0, bytes = 0, finished = false
        var sizes: Set<String> = []

        func deliver(_ frame: EncodedFrame, captureTime: UInt64, timing: inout FrameTiming) {
            frames += 1
            keyframes += frame.isKeyframe ? 1 : 0
            bytes += frame.bytes.count
            sizes.insert("\(frame.width)x\(frame.height)")
        }

        func finish() { finished = true }
    }

    @Test func aSinkGivenToThePipelineGetsEveryEncodedFrameAndTheEnd() throws {
        let screen = try ContentScreen(.typing, width: 320, height: 240)
        let sink = CountingSink()
        let share = try InProcessShare("sink", width: 320, height: 240, sinks: [sink])
        let pipeline = share.pipeline
        for n in 0..<40 {
            let source = try #require(screen.nextFrame(number: UInt64(n)))
            _ = try share.relay(source.picture, n, damage: source.damage)
        }
        pipeline.finish(endedAt: MonotonicClock.now())
        #expect(sink.frames > 0)
        #expect(UInt64(sink.frames) == pipeline.stats.frames)
        #expect(UInt64(sink.keyframes) == pipeline.stats.keyframes)
        #expect(UInt64(sink.bytes) == pipeline.stats.bytes)
        #expect(sink.sizes == ["320x240"])
        #expect(sink.finished)
    }
}
