@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing
import FrameRelayProducer
import FrameRelayDecoding
import FrameRelayHost
import FrameRelayTools
import FrameRelayTestSupport
import Testing

/// What changed between two pictures, found by the host or said by the producer.
@Suite(.serialized) struct DamageTests {
    @Test(arguments: [PixelFormat.i420, .nv12])
    func damageMarksExactlyTheMacroblocksThatChanged(_ format: PixelFormat) throws {
        let picture = try makeBuffer(100, 50, format)  // 7 × 4 macroblocks, ragged at the right and bottom
        let detector = DamageDetector()
        var map = [UInt8](repeating: 0, count: 7 * 4)
        #expect(try detector.compare(EncoderInput(picture), into: &map).marked == 28, "the first picture is all new")
        map = map.map { _ in 0 }
        #expect(try detector.compare(EncoderInput(picture), into: &map).marked == 0)
        // One luma byte in macroblock (column 6, row 3): the ragged corner.
        picture.withUnsafeMutablePlane(0) { bytes, stride in bytes[49 * stride + 99] &+= 1 }
        // One chroma byte in macroblock (column 2, row 1): the second plane's (x 20, y 10) is pixel (40, 20).
        picture.withUnsafeMutablePlane(1) { bytes, stride in bytes[10 * stride + (format == .nv12 ? 41 : 20)] &+= 1 }
        #expect(try detector.compare(EncoderInput(picture), into: &map).marked == 2)
        let marked = map.indices.filter { map[$0] == 1 }
        #expect(marked == [1 * 7 + 2, 3 * 7 + 6], "\(marked)")
        map = map.map { _ in 0 }
        #expect(try detector.compare(EncoderInput(picture), into: &map).marked == 0, "the changed rows were kept")
    }

    @Test(arguments: [PixelFormat.i420, .nv12])
    func aRegionTheProducerNamesIsAllThatIsCompared(_ format: PixelFormat) throws {
        let picture = try makeBuffer(100, 50, format)  // 7 × 4 macroblocks, ragged at the right and bottom
        let detector = DamageDetector()
        var map = [UInt8](repeating: 0, count: 7 * 4)
        _ = try detector.compare(EncoderInput(picture), into: &map)
        // Changes in macroblocks (column 6, row 3), the ragged corner, and (column 0, row 0); the region names the corner only.
        picture.withUnsafeMutablePlane(0) { bytes, stride in bytes[49 * stride + 99] &+= 1; bytes[0] &+= 1 }
        map = map.map { _ in 0 }
        let corner = PixelRegion([PixelRect(x: 90, y: 40, width: 10, height: 10)])
        let comparison = try detector.compare(EncoderInput(picture), region: corner, into: &map)
        #expect(comparison.marked == 1)
        #expect(map.indices.filter { map[$0] == 1 } == [3 * 7 + 6])
        // What to encode is the whole kept picture: the corner as it is now, (0, 0) as it was.
        let kept = comparison.picture, stride = kept.stride(0)
        #expect(kept.width == 100 && kept.height == 50)
        picture.withUnsafeMutablePlane(0) { bytes, pictureStride in
            #expect(kept.plane(0)[49 * stride + 99] == bytes[49 * pictureStride + 99] && kept.plane(0)[0] == bytes[0] &- 1)
        }
        // What the region left out was neither compared nor kept: the whole picture finds it.
        map = map.map { _ in 0 }
        #expect(try detector.compare(EncoderInput(picture), into: &map).marked == 1 && map[0] == 1)
    }
}
