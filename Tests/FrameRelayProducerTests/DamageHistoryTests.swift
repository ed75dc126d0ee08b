import FrameRelayFrames
@testable import FrameRelayProducer
import Testing

/// What a ring slot holding an older picture needs drawn to be the newest.
struct DamageHistoryTests {
    let a = PixelRect(x: 0, y: 0, width: 16, height: 16)
    let b = PixelRect(x: 64, y: 32, width: 32, height: 16)
    let c = PixelRect(x: 200, y: 100, width: 8, height: 8)

    @Test func aSlotAFewPicturesBehindNeedsWhatChangedSinceItsPicture() {
        var history = DamageHistory()
        history.add(nil)  // the first picture: all of it
        history.add(PixelRegion([a]))
        history.add(PixelRegion([b]))
        history.add(PixelRegion([c]))
        #expect(history.newest == 4)
        #expect(history.changed(since: 4) == PixelRegion())
        #expect(history.changed(since: 3) == PixelRegion([c]))
        #expect(history.changed(since: 2) == PixelRegion([b, c]))
        #expect(history.changed(since: 1) == PixelRegion([a, b, c]))
        // Before the first picture (whole), unknown, or from a picture not yet taken: all of it.
        #expect(history.changed(since: 0) == nil)
        #expect(history.changed(since: nil) == nil)
        #expect(history.changed(since: 5) == nil)
    }

    @Test func aPictureOfUnknownChangeOrOneOlderThanKeptIsAllOfIt() {
        var history = DamageHistory(length: 3)
        history.add(nil)
        for _ in 0..<4 { history.add(PixelRegion([a])) }
        // Pictures 3...5 are kept: a slot holding 2 needs 3, 4 and 5; one holding 1 is older than that.
        #expect(history.changed(since: 2) == PixelRegion([a]))
        #expect(history.changed(since: 1) == nil)
        history.add(nil)  // a new size, or a compositor that said nothing
        history.add(PixelRegion([b]))
        #expect(history.changed(since: 6) == PixelRegion([b]))
        #expect(history.changed(since: 5) == nil)
    }

    @Test func anEmptyDamageChangesNothing() {
        var history = DamageHistory()
        history.add(nil)
        history.add(PixelRegion())
        #expect(history.changed(since: 1) == PixelRegion())
    }
}
