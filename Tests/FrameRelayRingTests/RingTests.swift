@preconcurrency import Glibc
import FrameRelayFrames
import FrameRelayRing
import FrameRelayProducer
import FrameRelayTestSupport
import Testing

/// The ring in one process: hand-off, newest-wins accounting, and a host
/// that refuses foreign segments and survives hostile metadata.
@Suite(.serialized) struct RingTests {
    @Test func hostTakesWhatTheProducerPublishedWithItsMetadata() throws {
        let group = uniqueGroup("ring")
        let buffer = try makeBuffer(65, 33, .nv12)
        let producer = try RingProducer(appGroup: group, slotCapacity: buffer.capacity)
        let host = RingHost(appGroup: group, verifyChecksums: true)
        try producer.publish(buffer, frameNumber: 41, captureTime: 123, orientation: .right, checksum: true)
        guard case .frame(let frame) = try nextFrameEvent(host) else {
            Issue.record("no frame")
            return
        }
        let m = frame.metadata
        #expect(m.frameNumber == 41 && m.captureTime == 123 && m.orientation == .right)
        #expect(m.width == 65 && m.height == 33 && m.format == .nv12)
        #expect(m.planes.strides.0 >= 65 && m.planes.strides.1 >= 66 && m.publishTime >= m.captureTime)
        frame.withUnsafePlane(1) { bytes, _ in #expect(bytes[0] == 8) }
        producer.finish()
        host.detach()
        #expect(!segmentExists(group))
    }

    @Test func aFrameNamesThePictureBeforeOnlyWhenItsProducerSaysItRepeatsIt() throws {
        let group = uniqueGroup("ring")
        let buffer = try makeBuffer()
        let producer = try RingProducer(appGroup: group, slotCapacity: buffer.capacity)
        let host = RingHost(appGroup: group)
        defer { host.detach() }
        func picture(_ n: Int, repeats: Bool, orientation: Orientation = .up, from producer: RingProducer) throws -> UInt64 {
            try producer.publish(buffer, frameNumber: UInt64(n), captureTime: 1, orientation: orientation, damage: repeats ? .none : .unknown)
            guard case .frame(let frame) = try nextFrameEvent(host) else { Issue.record("no frame \(n)"); return 0 }
            return frame.metadata.picture
        }
        let first = try picture(0, repeats: true, from: producer)  // nothing before it to repeat
        #expect(first != 0)
        #expect(try picture(1, repeats: true, from: producer) == first)
        #expect(try picture(2, repeats: true, from: producer) == first)
        let turned = try picture(3, repeats: true, orientation: .left, from: producer)  // same pixels, turned: another picture
        #expect(turned != first)
        let changed = try picture(4, repeats: false, orientation: .left, from: producer)
        #expect(changed != turned && changed != first)
        // Unpublished samples that changed the picture make the next frame a new one, whatever the capturer says of it.
        producer.finish()
        let sampler = try SampleHandler(group, capacity: buffer.capacity)
        defer { sampler.broadcastFinished() }
        #expect(sampler.processSample(buffer, frameNumber: 0, captureTime: 1) == .published(replacedUntaken: false))
        guard case .frame(let f0) = try nextFrameEvent(host) else { Issue.record("no frame from the sampler"); return }
        // A later producer's pictures are named apart from an earlier one's.
        #expect(f0.metadata.picture > changed)
        let start = f0.metadata.picture
        sampler.broadcastPaused()
        #expect(sampler.processSample(buffer, frameNumber: 1, captureTime: 2) == .ignored)
        sampler.broadcastResumed()
        #expect(sampler.processSample(buffer, frameNumber: 2, captureTime: 3, damage: .none) == .published(replacedUntaken: false))
        guard case .frame(let f2) = try nextFrameEvent(host) else { Issue.record("no frame 2"); return }
        #expect(f2.metadata.picture != start, "a change while paused was not carried to the next frame")
        #expect(sampler.processSample(buffer, frameNumber: 3, captureTime: 4, damage: .none) == .published(replacedUntaken: false))
        guard case .frame(let f3) = try nextFrameEvent(host) else { Issue.record("no frame 3"); return }
        #expect(f3.metadata.picture == f2.metadata.picture)
        // Each frame names the frame that last changed its picture: the sample ignored while paused did.
        #expect(f0.metadata.pictureFrame == 0 && f2.metadata.pictureFrame == 1 && f3.metadata.pictureFrame == 1,
                "\(f0.metadata.pictureFrame as Any), \(f2.metadata.pictureFrame as Any), \(f3.metadata.pictureFrame as Any)")
        #expect(sampler.processSample(buffer, frameNumber: 4, captureTime: 5, damage: .region(PixelRegion([PixelRect(x: 0, y: 0, width: 2, height: 2)])))
                == .published(replacedUntaken: false))
        guard case .frame(let f4) = try nextFrameEvent(host) else { Issue.record("no frame 4"); return }
        #expect(f4.metadata.pictureFrame == 4)
    }

    @Test func aFrameSaysWhereItChangedSinceThePictureTheHostTook() throws {
        let group = uniqueGroup("ring")
        let buffer = try makeBuffer(64, 48, .i420)
        let producer = try RingProducer(appGroup: group, slotCapacity: try PixelBuffer.capacity(width: 96, height: 48, format: .i420))
        let host = RingHost(appGroup: group)
        defer { host.detach() }
        let r1 = PixelRect(x: 0, y: 0, width: 16, height: 16), r2 = PixelRect(x: 32, y: 16, width: 8, height: 8), r3 = PixelRect(x: 48, y: 32, width: 16, height: 16)
        func publish(_ n: Int, _ changed: PixelRegion?, repeats: Bool = false, buffer: PixelBuffer? = nil) throws {
            try producer.publish(
                buffer ?? makeBuffer(64, 48, .i420), frameNumber: UInt64(n), captureTime: 1, damage: repeats ? .none : changed.map(Damage.within) ?? .unknown)
        }
        func take() throws -> FrameMetadata? {
            guard case .frame(let frame) = try nextFrameEvent(host) else { Issue.record("no frame"); return nil }
            return frame.metadata
        }
        try publish(0, nil)
        let a = try #require(try take())
        #expect(a.changedSince == 0, "a frame that says nothing names no picture")
        try publish(1, PixelRegion([r1]))
        let b = try #require(try take())
        #expect(b.changedSince == a.picture && b.changed == PixelRegion([r1]))
        // The host misses frame 2: frame 3 says what both changed since the picture the host holds.
        try publish(2, PixelRegion([r2]))
        try publish(3, PixelRegion([r3]))
        let d = try #require(try take())
        #expect(d.frameNumber == 3 && d.changedSince == b.picture && d.changed == PixelRegion([r2, r3]))
        // A repeat names its picture and no change; a frame whose capturer cannot say, none.
        try publish(4, nil, repeats: true)
        let e = try #require(try take())
        #expect(e.picture == d.picture && e.changedSince == d.picture && e.changed.isEmpty)
        try publish(5, nil)
        #expect(try take()?.changedSince == 0)
        try publish(6, PixelRegion([r1]))
        #expect(try take()?.changedSince != 0)
        // Another size is another picture: nothing to have changed since.
        try publish(7, PixelRegion([r1]), buffer: try makeBuffer(96, 48, .i420))
        #expect(try take()?.changedSince == 0)
        producer.finish()

        // A capturer's regions of samples left unpublished (paused, throttled) go with the next one published.
        let sampler = try SampleHandler(group, capacity: buffer.capacity)
        defer { sampler.broadcastFinished() }
        #expect(sampler.processSample(buffer, frameNumber: 0, captureTime: 1, damage: .region(PixelRegion([r1]))) == .published(replacedUntaken: false))
        let s0 = try #require(try take())
        sampler.broadcastPaused()
        _ = sampler.processSample(buffer, frameNumber: 1, captureTime: 2, damage: .region(PixelRegion([r2])))
        sampler.broadcastResumed()
        _ = sampler.processSample(buffer, frameNumber: 2, captureTime: 3, damage: .none)
        let s2 = try #require(try take())
        #expect(s2.picture != s0.picture && s2.changedSince == s0.picture && s2.changed == PixelRegion([r2]))
        sampler.broadcastPaused()
        _ = sampler.processSample(buffer, frameNumber: 3, captureTime: 4)  // changed, nobody says where
        sampler.broadcastResumed()
        _ = sampler.processSample(buffer, frameNumber: 4, captureTime: 5, damage: .region(PixelRegion([r3])))
        #expect(try take()?.changedSince == 0)
    }

    @Test func aRegionOfMoreRectanglesThanItHoldsMergesEachIntoTheOneItGrowsLeast() {
        var region = PixelRegion()
        region.add(PixelRect(x: 0, y: 0, width: 0, height: 9))  // empty: nothing
        #expect(region.isEmpty)
        let corners = [PixelRect(x: 0, y: 0, width: 10, height: 10), PixelRect(x: 100, y: 0, width: 10, height: 10),
                       PixelRect(x: 0, y: 100, width: 10, height: 10), PixelRect(x: 100, y: 100, width: 10, height: 10)]
        for rect in corners { region.add(rect) }
        region.add(PixelRect(x: 104, y: 112, width: 4, height: 4))  // just below the last corner
        #expect(region.count == PixelRegion.maxRects)
        #expect(region == PixelRegion(Array(corners.dropLast()) + [PixelRect(x: 100, y: 100, width: 10, height: 16)]))
    }

    @Test func newestFrameWinsAndEveryReplacedFrameCountsAsDropped() throws {
        let group = uniqueGroup("ring")
        let buffer = try makeBuffer()
        let producer = try RingProducer(appGroup: group, slotCapacity: buffer.capacity)
        let host = RingHost(appGroup: group)
        for n in 0..<5 { try producer.publish(buffer, frameNumber: UInt64(n), captureTime: 1) }
        guard case .frame(let frame) = try nextFrameEvent(host) else {
            Issue.record("no frame")
            return
        }
        #expect(frame.metadata.frameNumber == 4)
        #expect(producer.counters.written == 5)
        #expect(producer.counters.dropped == 4)
        #expect(producer.framesTaken == 1)
        // Interleaved: every frame taken, none dropped.
        for n in 5..<105 {
            try producer.publish(buffer, frameNumber: UInt64(n), captureTime: 1)
            guard case .frame(let f) = try nextFrameEvent(host) else { Issue.record("lost \(n)"); return }
            #expect(f.metadata.frameNumber == UInt64(n))
        }
        #expect(producer.counters.dropped == 4)
        #expect(producer.counters.written == producer.framesTaken + producer.counters.dropped)
        producer.finish()
    }

    @Test func secondProducerForTheSameGroupIsRefused() throws {
        let group = uniqueGroup("ring")
        let producer = try RingProducer(appGroup: group, slotCapacity: 4096)
        #expect(throws: RingError.self) { try RingProducer(appGroup: group, slotCapacity: 4096) }
        producer.finish()
        #expect(!segmentExists(group))
    }

    enum Corruption: String, CaseIterable {
        case zeroWidth, hugeHeight, unknownFormat, unknownOrientation, payloadPastSlot, zeroPayload
        case planeCount, strideTooSmall, offsetPastPayload, checksum, changedPastPicture
    }

    @Test(arguments: Corruption.allCases)
    func hostileMetadataIsCountedAndSkipped(_ corruption: Corruption) throws {
        let group = uniqueGroup("hostile")
        let buffer = try makeBuffer(64, 48, .i420)
        let producer = try RingProducer(appGroup: group, slotCapacity: buffer.capacity)
        defer { producer.finish() }
        let host = RingHost(appGroup: group, verifyChecksums: true)
        try producer.publish(buffer, frameNumber: 1, captureTime: 1, checksum: true)

        // Write into the published slot through a mapping of our own, as a hostile process would.
        let segment = try RawMapping(name: group.sharedMemoryName)
        let published = Int(segment.u32(RingLayout.slotStateOffset) & 3)
        let slot = RingLayout.slotOffset(published, capacity: producer.slotCapacity)
        switch corruption {
        case .zeroWidth: segment.setU32(slot + SlotHeader.Field.width, 0)
        case .hugeHeight: segment.setU32(slot + SlotHeader.Field.height, 0xFFFF_FFFF)
        case .unknownFormat: segment.setU32(slot + SlotHeader.Field.format, 77)
        case .unknownOrientation: segment.setU32(slot + SlotHeader.Field.orientation, 0)
        case .payloadPastSlot: segment.setU32(slot + SlotHeader.Field.payloadSize, UInt32(producer.slotCapacity + 1))
        case .zeroPayload: segment.setU32(slot + SlotHeader.Field.payloadSize, 0)
        case .planeCount: segment.setU32(slot + SlotHeader.Field.planeCount, 9)
        case .strideTooSmall: segment.setU32(slot + SlotHeader.Field.strides + 4, 3)
        case .offsetPastPayload: segment.setU32(slot + SlotHeader.Field.offsets + 8, 0x7FFF_FFFF)
        case .checksum: segment.setU32(slot + SlotHeader.Field.checksum, 12345)
        case .changedPastPicture:
            // 8 wide from x 60 in a 64-wide picture.
            segment.setU32(slot + SlotHeader.Field.changedSince, 7)
            segment.setU32(slot + SlotHeader.Field.changed, 60)
            segment.setU32(slot + SlotHeader.Field.changed + 4, 8 | 8 << 16)
        }
        guard case .invalidFrame = try nextFrameEvent(host) else {
            Issue.record("\(corruption) was not refused")
            return
        }
        #expect(host.counters.invalid == 1)
        // The ring still works after it.
        try producer.publish(buffer, frameNumber: 2, captureTime: 1, checksum: true)
        guard case .frame(let frame) = try nextFrameEvent(host) else { Issue.record("ring broken after \(corruption)"); return }
        #expect(frame.metadata.frameNumber == 2)
    }

    /// A changed rectangle with no width or height is "none" wherever it
    /// says it is (the layout's word), so one past the picture's edge is
    /// taken, not refused; the frame's region holds only the real rectangle.
    @Test func anEmptyChangedRectangleOutsideThePictureIsNone() throws {
        let (group, producer, host) = try ringWithOneFrameTaken("emptyrect", try makeBuffer(64, 48, .i420))
        defer { producer.finish() }
        try producer.publish(try makeBuffer(64, 48, .i420), frameNumber: 2, captureTime: 1, checksum: true)
        let segment = try RawMapping(name: group.sharedMemoryName)
        let slot = RingLayout.slotOffset(Int(segment.u32(RingLayout.slotStateOffset) & 3), capacity: producer.slotCapacity)
        segment.setU32(slot + SlotHeader.Field.changedSince, 1)
        segment.setU32(slot + SlotHeader.Field.changed, 8 | 4 << 16)  // (8, 4)
        segment.setU32(slot + SlotHeader.Field.changed + 4, 16 | 16 << 16)  // 16×16
        segment.setU32(slot + SlotHeader.Field.changed + 8, 900 | 700 << 16)  // (900, 700), outside
        segment.setU32(slot + SlotHeader.Field.changed + 12, 0 | 5 << 16)  // no width
        guard case .frame(let frame) = try nextFrameEvent(host) else { Issue.record("the frame was refused"); return }
        #expect(host.counters.invalid == 0)
        #expect(frame.metadata.changed.count == 1 && frame.metadata.changed[0] == PixelRect(x: 8, y: 4, width: 16, height: 16))
    }

    enum Foreign: String, CaseIterable { case otherOwner, wrongMagic, wrongVersion, otherAppGroup, groupWritable, worldWritable }

    @Test(arguments: Foreign.allCases)
    func segmentsPreparedBySomeoneElseAreRefusedByBothSides(_ kind: Foreign) throws {
        let group = uniqueGroup("foreign")
        let capacity = 4096
        let size = RingLayout.segmentSize(capacity: capacity)
        let name = group.sharedMemoryName
        let segment = try RawMapping(create: name, size: size)
        defer { shm_unlink(name) }
        // A well-formed header first, then the one thing that is wrong.
        segment.writeHeader(for: group, capacity: capacity)
        segment.setU32(RingLayout.slotStateOffset, 1 | 2 << 2)
        segment.setU32(RingLayout.producerPidOffset, UInt32(getpid()))
        var expected = ""
        switch kind {
        case .otherOwner: fchown(segment.fd, 65534, 65534); expected = "owned by uid 65534"
        case .wrongMagic: segment.setU64(RingLayout.magicOffset, 0xDEAD_BEEF); expected = "not a FrameRelay ring"
        case .wrongVersion: segment.setU32(RingLayout.versionOffset, 99); expected = "version 99"
        case .otherAppGroup:
            segment.setString("group.someone.else", lengthAt: RingLayout.appGroupLengthOffset, at: RingLayout.appGroupOffset)
            expected = "\"group.someone.else\", not \"\(group.name)\""
        case .groupWritable: fchmod(segment.fd, 0o620); expected = "mode 620"
        case .worldWritable: fchmod(segment.fd, 0o606); expected = "mode 606"
        }
        // Who owns it and who may write it are fatal; what is in it is refused while the host keeps waiting.
        do {
            let event = try RingHost(appGroup: group).next(timeoutNanoseconds: 50_000_000)
            if case .refused(let error) = event {
                #expect([.wrongMagic, .wrongVersion, .otherAppGroup].contains(kind), "\(kind) refused without an error")
                #expect(error.description.contains(expected), "\(error.description)")
            } else {
                Issue.record("host accepted a \(kind) segment: \(event)")
            }
        } catch {
            #expect(![.wrongMagic, .wrongVersion, .otherAppGroup].contains(kind), "\(kind) ended the host")
            #expect(error.description.contains(expected), "\(error.description)")
        }
        do {
            _ = try RingProducer(appGroup: group, slotCapacity: capacity)
            Issue.record("producer accepted a \(kind) segment")
        } catch {
            #expect(error.description.contains(expected) || kind == .otherAppGroup, "\(error.description)")
        }
        #expect(segmentExists(group), "someone else's segment must not be removed")
    }
}

/// A broadcast extension's sample handler on a test's App Group, started.
private final class SampleHandler: BroadcastSampleHandler {
    let group: String
    init(_ group: AppGroup, capacity: Int) throws {
        self.group = group.name
        super.init(slotCapacity: capacity)
        try broadcastStarted()
    }
    override func appGroupName() -> String { group }
}
