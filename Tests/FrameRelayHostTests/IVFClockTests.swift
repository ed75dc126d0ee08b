import Foundation
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

    /// The header's length (u32, in 90 kHz ticks) holds 13 h 15 min 21 s: a
    /// longer recording's header stops there, its frames keep their times,
    /// and the host's figure says how long it really plays.
    @Test func aRecordingLongerThanTheHeaderHoldsKeepsItsFramesTimes() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ivf-\(getpid())-long.ivf").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try IVFWriter(path: path, width: 64, height: 64, frameRate: 30)
        let bytes: [UInt8] = [1, 2, 3]
        let fourteenHours: Int64 = 14 * 3600 * 90_000
        try bytes.withUnsafeBytes { frame in
            for pts in [5_000, 5_000 + fourteenHours] {
                try writer.write(EncodedFrame(bytes: frame, isKeyframe: pts == 5_000, pts: pts, width: 64, height: 64))
            }
        }
        writer.finish()
        let file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        func little(_ at: Int, _ count: Int) -> UInt64 { (0..<count).reduce(0) { $0 | UInt64(file[at + $1]) << (8 * $1) } }
        #expect(little(24, 4) == UInt64(UInt32.max), "the length stops at its limit")
        #expect(little(32 + 4, 8) == 0 && little(32 + 12 + 3 + 4, 8) == UInt64(fourteenHours), "each frame keeps its time")
        #expect(abs(writer.seconds - (14 * 3600 + 1 / 30.0)) < 1e-6, "\(writer.seconds)")
    }
}
