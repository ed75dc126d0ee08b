import Foundation
import FrameRelayHost
@testable import FrameRelaySubscriber
import FrameRelayTestSupport
import Testing

/// A viewer behind Janus turns its PictureIDs back into the host's frames
/// from the host's trace: the anchors at its keyframes decide every latency
/// and picture check it reports, so a wrong one is a wrong figure.
@Suite struct HostTraceTests {
    static let interval: UInt64 = 33_333_333
    static func captured(_ n: Int) -> UInt64 { 1_000_000_000 + UInt64(n) * interval }

    /// Two layers at 30 frames/s for 300 frames, written as the host writes
    /// its trace: keyframes on both every 90 frames and at frame 100 (a
    /// PLI), each of its own size, and small frames between.
    static func trace() throws -> HostTrace {
        var timing = FrameTiming()
        var lines = ""
        for n in 0..<300 {
            timing.frame = UInt64(n)
            timing.captured = captured(n)
            timing.streams = SentStreams()
            let key = n % 90 == 0 || n == 100
            timing.streams.record(.init(stream: 0, picture: UInt16(1000 + n), width: 640, keyframe: key, bytes: key ? 20_000 + n : 900))
            timing.streams.record(.init(stream: 1, picture: UInt16(5000 + n), width: 1280, keyframe: key, bytes: key ? 60_000 + n : 3000))
            lines += timing.jsonLine(share: "s")
        }
        let path = Paths.temporaryDirectory().appendingPathComponent("trace.jsonl").path
        try lines.write(toFile: path, atomically: true, encoding: .utf8)
        return try HostTrace(paths: [path])
    }

    /// A viewer on a slow link gets the keyframe of frame 90 half a second
    /// late, after the host made another (frame 100) for someone else's
    /// PLI, and leaves before the next. By time alone the later keyframe
    /// looks as likely; the keyframe's size says which it was.
    @Test func aKeyframeThatCrossedASlowLinkIsTheOneOfItsSize() throws {
        let trace = try Self.trace()
        let delay: UInt64 = 500_000_000
        // Janus numbers the viewer's PictureIDs from 1 at its first keyframe.
        let seen = [HostTrace.SeenKeyframe(picture: 1, width: 1280, bytes: 60_090, at: Self.captured(90) + delay)]
        let frames = (0..<10).map { (picture: UInt16(1 + $0), at: Self.captured(90 + $0) + delay) }
        let anchors = trace.anchors(of: "s", keyframes: seen)
        #expect(anchors == [HostTrace.Anchor(from: Self.captured(90) + delay, stream: 1, offset: 5089)])
        for (picture, at) in frames {
            let found = try #require(trace.frame(of: "s", picture: picture, at: at, anchors: anchors))
            #expect(at - found.sent.captured == delay && found.scale == 1)
        }
    }

    /// Steady keyframes every 90 frames: a viewer that steps down to the
    /// small layer at frame 100's keyframe and keeps to it through the
    /// keyframes after is anchored there, each frame at its true delay.
    @Test func steadyKeyframesAreToldApartBySize() throws {
        let trace = try Self.trace()
        let delay: UInt64 = 120_000_000
        var seen = [HostTrace.SeenKeyframe(picture: 1, width: 1280, bytes: 60_090, at: Self.captured(90) + delay)]
        seen += [100, 180, 270].map { HostTrace.SeenKeyframe(picture: UInt16($0 - 89), width: 640, bytes: 20_000 + $0, at: Self.captured($0) + delay) }
        let frames = (90..<300).map { (picture: UInt16($0 - 89), at: Self.captured($0) + delay) }
        let anchors = trace.anchors(of: "s", keyframes: seen)
        #expect(anchors.map(\.stream) == [1, 0, 0, 0])
        #expect(anchors.map(\.offset) == [5089, 1089, 1089, 1089])
        let scales = try frames.map { frame in
            let found = try #require(trace.frame(of: "s", picture: frame.picture, at: frame.at, anchors: anchors))
            #expect(frame.at - found.sent.captured == delay)
            return found.scale
        }
        #expect(scales.filter { $0 == 2 }.count == 200)
    }

    /// A viewer whose link drained when it stepped down: its small
    /// layer's keyframe came with less delay than the top layer's frames
    /// before it, and is still the one of its size.
    @Test func aKeyframeFasterThanTheFramesBeforeItIsFound() throws {
        let trace = try Self.trace()
        let seen = [HostTrace.SeenKeyframe(picture: 1, width: 1280, bytes: 60_090, at: Self.captured(90) + 240_000_000),
                    HostTrace.SeenKeyframe(picture: 11, width: 640, bytes: 20_100, at: Self.captured(100) + 100_000_000)]
        #expect(trace.anchors(of: "s", keyframes: seen).map(\.offset) == [5089, 1089])
    }

    /// A keyframe the trace has none like (a host that wrote no trace for
    /// it): the frames after it are mapped to nothing, not to the last anchor's stream.
    @Test func aKeyframeOfNoKnownSizeMapsNothingUntilTheNext() throws {
        let trace = try Self.trace()
        let seen = [HostTrace.SeenKeyframe(picture: 1, width: 1280, bytes: 60_090, at: Self.captured(90) + 50_000_000),
                    HostTrace.SeenKeyframe(picture: 11, width: 640, bytes: 12_345, at: Self.captured(100) + 50_000_000),
                    HostTrace.SeenKeyframe(picture: 91, width: 640, bytes: 20_180, at: Self.captured(180) + 50_000_000)]
        let anchors = trace.anchors(of: "s", keyframes: seen)
        #expect(trace.frame(of: "s", picture: 5, at: Self.captured(94) + 50_000_000, anchors: anchors)?.sent.frame == 94)
        #expect(trace.frame(of: "s", picture: 20, at: Self.captured(109) + 50_000_000, anchors: anchors) == nil)
        #expect(trace.frame(of: "s", picture: 95, at: Self.captured(184) + 50_000_000, anchors: anchors)?.sent.frame == 184)
    }

    /// A frame the host sent on its own with a change a layer held back
    /// (``FrameTiming/heldBack``: the last frame's picture, sent when no
    /// frame came) is found as the frame it shows, marked: a viewer's
    /// latency figures leave it out, its picture check does not.
    @Test func aFrameSentWithAHeldBackChangeIsMarked() throws {
        var timing = FrameTiming(), lines = ""
        for n in 0..<3 {
            timing.frame = UInt64(n)
            timing.captured = Self.captured(n)
            timing.streams = SentStreams()
            timing.streams.record(.init(stream: 0, picture: UInt16(n), width: 640, keyframe: n == 0, bytes: n == 0 ? 20_000 : 900))
            lines += timing.jsonLine(share: "s")
        }
        timing.heldBack = true
        timing.streams = SentStreams()
        timing.streams.record(.init(stream: 0, picture: 3, width: 640, keyframe: false, bytes: 700))
        lines += timing.jsonLine(share: "s")
        let path = Paths.temporaryDirectory().appendingPathComponent("heldback.jsonl").path
        try lines.write(toFile: path, atomically: true, encoding: .utf8)
        let trace = try HostTrace(paths: [path])
        let anchors = trace.anchors(of: "s", keyframes: [HostTrace.SeenKeyframe(picture: 0, width: 640, bytes: 20_000, at: Self.captured(0) + 1_000_000)])
        let late = Self.captured(2) + 250_000_000
        #expect(trace.frame(of: "s", picture: 3, at: late, anchors: anchors)?.sent == HostTrace.Sent(frame: 2, shows: nil, captured: Self.captured(2), heldBack: true))
        #expect(trace.frame(of: "s", picture: 2, at: Self.captured(2) + 1_000_000, anchors: anchors)?.sent.heldBack == false)
    }

    /// A last line without its newline is one a running host is still
    /// writing, after the records it wrote: a file of nothing else is no trace.
    @Test func aFileOfOnlyAPartLineIsNoTrace() throws {
        let dir = Paths.temporaryDirectory()
        let partial = dir.appendingPathComponent("partial.jsonl").path, garbage = dir.appendingPathComponent("garbage.jsonl").path
        var timing = FrameTiming()
        timing.captured = 1
        try (timing.jsonLine(share: "s") + "{\"share\":\"s\",\"fra").write(toFile: partial, atomically: true, encoding: .utf8)
        try "not a trace at all".write(toFile: garbage, atomically: true, encoding: .utf8)
        _ = try HostTrace(paths: [partial])
        #expect(throws: HostTraceError.self) { try HostTrace(paths: [garbage]) }
    }
}
