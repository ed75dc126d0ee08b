@testable import FrameRelayHost
import Testing

/// IVF timestamps: the capture clock at 90 kHz from the first frame, never the same twice.
struct IVFClockTests {
    /// Frames land at their capture times from the first, at any rate; a
    /// producer that stalls and catches up can hand over two frames with one
    /// capture time (90 kHz rounds 11 µs to 0), and the second still gets a
    /// pts of its own (ffmpeg refuses one twice); a frame after a gap is at
    /// its capture time again.
    @Test func framesKeepTheirCaptureTimesAndNeverShareAPts() {
        var clock = IVFClock()
        let captures: [Int64] = [900_000, 901_500, 903_000, 903_000, 903_001, 906_000, 990_000]
        #expect(captures.map { clock.pts(of: $0) } == [0, 1_500, 3_000, 3_001, 3_002, 6_000, 90_000])
        #expect(clock.last == 90_000)
        var fast = IVFClock()
        #expect((0..<121).map { fast.pts(of: 5_000 + Int64($0) * 1_500) }.last == 180_000, "120 frames at 60 a second span 2 s")
    }
}
