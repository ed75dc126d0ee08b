import Foundation
@testable import FrameRelayHost
import FrameRelayTestSupport
import Testing

/// The IVF file a recording writes.
struct IVFWriterTests {
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
        let file = try IVFFile(path)
        #expect(file.length == UInt64(UInt32.max), "the length stops at its limit")
        #expect(file.frames.map(\.pts) == [0, UInt64(fourteenHours)], "each frame keeps its time")
        #expect(abs(writer.seconds - (14 * 3600 + 1 / 30.0)) < 1e-6, "\(writer.seconds)")
    }
}
