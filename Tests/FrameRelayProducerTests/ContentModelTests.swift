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

/// The content models: started anywhere, they redraw only what changed, to
/// the same bytes, and carry the frame stamp.
@Suite(.serialized) struct ContentModelTests {
    /// A screen started k frames into its script shows at its first frame
    /// what one started at 0 shows at frame k (a frame that changed the
    /// picture, so both carry stamp k): typing, mixed in its scrolling and
    /// in its video phase.
    @Test(arguments: [(ContentScreen.Content.typing, 100), (.mixed, 600), (.mixed, 1000)])
    func aContentModelStartedLaterShowsWhatItWouldHaveShownThen(_ content: ContentScreen.Content, _ k: Int) throws {
        let fromStart = try ContentScreen(content, width: 320, height: 180)
        var expected: PixelBuffer?
        for n in 0...k { expected = fromStart.nextFrame(number: UInt64(n))?.picture }
        let later = try ContentScreen(content, width: 320, height: 180, start: k)
        let first = try #require(later.nextFrame(number: UInt64(k))?.picture)
        let same = try #require(expected).withUnsafeBytes { a in first.withUnsafeBytes { b in a.elementsEqual(b) } }
        #expect(same)
        // And not what it showed at 0.
        let zero = try #require(try ContentScreen(content, width: 320, height: 180).nextFrame(number: UInt64(k))?.picture)
        #expect(!zero.withUnsafeBytes { a in first.withUnsafeBytes { b in a.elementsEqual(b) } })
    }

    /// A content model redraws only where its picture changed (the caret's
    /// lines, the video, the dragged window): each changed frame must be,
    /// byte for byte, what drawing everything gives (a model started at
    /// that frame draws it whole). The whole scripted minute in NV12 and
    /// BGRA (chroma in 2×2 blocks; four bytes a pixel), and typing at 720p
    /// (every length doubled).
    @Test(arguments: [(PixelFormat.nv12, 320, 180, 1800), (.bgra, 320, 180, 1800), (.i420, 1280, 720, 90)])
    func contentModelsRedrawOnlyWhatChangedToTheSameBytes(_ format: PixelFormat, _ width: Int, _ height: Int, _ frames: Int) throws {
        let content: ContentScreen.Content = frames > 300 ? .mixed : .typing
        let screen = try ContentScreen(content, width: width, height: height, format: format)
        var compared = 0
        for n in 0..<frames {
            let frame = try #require(screen.nextFrame(number: UInt64(n)))
            let picture = frame.picture
            guard frame.damage != .none, n % (frames > 300 ? 5 : 1) == 0 else { continue }
            let whole = try #require(try ContentScreen(content, width: width, height: height, format: format, start: n).nextFrame(number: UInt64(n))).picture
            let same = picture.withUnsafeBytes { a in whole.withUnsafeBytes { b in a.elementsEqual(b) } }
            #expect(same, "\(content) \(format) frame \(n) differs from drawing everything")
            if !same { return }
            compared += 1
        }
        #expect(compared >= frames / 12, "\(compared) frames compared")
    }

    @Test(arguments: ContentScreen.Content.allCases)
    func contentModelsChangeWhatTheyClaimAndCarryTheFrameStamp(_ content: ContentScreen.Content) throws {
        let screen = try ContentScreen(content, width: 1280, height: 720)
        let detector = DamageDetector()
        var changedFractions: [Double] = []
        var lastStamp: UInt64 = 0
        for n in 0..<90 {
            let picture = try #require(screen.nextFrame(number: UInt64(n))?.picture)
            var map = [UInt8](repeating: 0, count: 80 * 45)
            let changed = try detector.compare(EncoderInput(picture), into: &map).marked
            if n > 0 { changedFractions.append(Double(changed) / 3600) }
            // The stamp: this frame's number when the picture changed, else the last one's.
            let number = picture.withUnsafeMutablePlane(0) { bytes, stride in
                FrameStamp.read(luma: UnsafeRawBufferPointer(bytes), stride: stride, width: 1280, height: 720)
            }
            if changed > 0 { lastStamp = UInt64(n) }
            #expect(number == lastStamp, "frame \(n)")
        }
        let mean = changedFractions.reduce(0, +) / Double(changedFractions.count)
        switch content {
        case .still: #expect(mean == 0)
        case .typing: #expect(changedFractions.allSatisfy { $0 > 0 } && mean < 0.01, "typing changed \(mean * 100) % a frame")
        case .scrolling: #expect(changedFractions.filter { $0 > 0.2 }.count >= 20 && changedFractions.filter { $0 < 0.01 }.count >= 40, "bursts and rests")
        case .video: #expect(mean > 0.2 && mean < 0.35, "a 640×360 region of 1280×720 is 25 %: \(mean * 100) %")
        case .drag: #expect(mean > 0.02 && mean < 0.3, "\(mean * 100) %")
        case .mixed: #expect(mean > 0 && mean < 0.01, "the first 90 frames of the minute are typing: \(mean * 100) %")
        }
    }
}
