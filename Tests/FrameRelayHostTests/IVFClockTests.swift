@testable import FrameRelayHost
import Testing

/// IVF timestamps: frames of the share's frame rate, never the same twice.
struct IVFClockTests {
    /// A producer that stalls and then catches up hands over frames 1 ms
    /// apart: each still gets a frame of its own (ffmpeg, taking the time
    /// base as the frame rate, refused a pts twice in a live IVF), and a
    /// frame after a gap lands at its capture time again.
    @Test func framesCapturedWithinOneFrameGetFramesOfTheirOwn() {
        var clock = IVFClock(frameRate: 30)
        let captures: [Int64] = [900_000, 903_000, 906_000, 909_090, 909_180, 912_000, 930_000]  // 90 kHz
        #expect(captures.map { clock.pts(of: $0) } == [0, 1, 2, 3, 4, 5, 10])
        #expect(clock.last == 10 && clock.ahead == 0, "a stall's catch-up runs ahead, then falls back")
        // Frames at 60 a second on a clock of 30: each a frame later than its capture time's, half a second ahead after 30.
        var fast = IVFClock(frameRate: 30)
        let ahead = (0..<31).map { n -> Int64 in _ = fast.pts(of: Int64(n) * 1_500); return fast.ahead }
        #expect(ahead.last == 15 && zip(ahead, ahead.dropFirst()).allSatisfy { $0 <= $1 }, "\(ahead)")
        var slow = IVFClock(frameRate: 0)  // a frame rate below 1 is 1
        #expect(slow.frameRate == 1 && [0, 45_000, 90_000].map { slow.pts(of: $0) } == [0, 1, 2])
    }
}
