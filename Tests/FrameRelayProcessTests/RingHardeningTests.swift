@preconcurrency import Glibc
import Foundation
import FrameRelaySystem
@testable import FrameRelayFrames
@testable import FrameRelayRing
@testable import FrameRelayProducer
@testable import FrameRelayHost
import Synchronization
import FrameRelayTestSupport
import Testing

/// Someone who can write the App Group's shared memory (a buggy or hostile
/// producer, any process of the same user) attacks both sides of the ring:
/// nothing they write, shrink or unlink may crash either process, and the
/// ring recovers once they stop.
@Suite(.serialized) struct RingHardeningTests {
    static let forged: UInt64 = 0xFFFF_FFFF_FFFF_FF00

    @Test func countersForgedNearTheLimitNeitherTrapNorWrap() throws {
        let group = uniqueGroup("overflow")
        let report = Paths.temporaryDirectory().appendingPathComponent("host.json").path
        let h = host([group], ["--no-encode", "--report", report])
        for round in 1...3 {
            let p = producer(group, ["--fps", "60", "--duration", "60", "--size", "64x48"])
            try #require(h.waitForLog("first-frame", count: round), "round \(round): \(h.stderr)")
            let ring = try RawMapping(name: group.sharedMemoryName)
            for offset in [RingLayout.framesTakenOffset, RingLayout.framesInvalidOffset, RingLayout.framesDroppedOffset] {
                ring.setU64(offset, Self.forged)
            }
            p.signal(SIGKILL)
            _ = p.wait()
            try #require(h.waitForLog("died", count: round), "round \(round): \(h.stderr)")
        }
        h.signal(SIGTERM)
        #expect(h.wait(timeout: 20) == 0, "\(h.stderr)")
        let share = try #require(try readShareStats(report).first)
        #expect(share.producerAttaches == 3)
        #expect(share.earlierRings.taken == .max && share.earlierRings.dropped == .max, "saturated, not wrapped")
        #expect(share.totalDropped == .max)
        #expect(!segmentExists(group))
    }

    @Test func segmentShrunkUnderBothSidesIsLetGoNotFatal() throws {
        let buffer = try makeBuffer(256, 128, .i420)
        let (group, producer, host) = try ringWithOneFrameTaken("shrink", buffer)
        defer { producer.finish() }
        try producer.publish(buffer, frameNumber: 2, captureTime: 1)
        // Published, not yet taken; now cut the segment down to its header page under both mappings.
        let raw = try RawMapping(name: group.sharedMemoryName)
        #expect(ftruncate(raw.fd, 4096) == 0)
        let lost = try nextEvent(host) { if case .ringLost = $0 { true } else { false } }
        #expect(lost != nil, "the host must let the shrunk ring go")
        try producer.publish(buffer, frameNumber: 3, captureTime: 1)
        #expect(producer.recreations == 1, "the producer must notice and make a fresh ring")
        guard case .frame(let frame) = try nextFrameEvent(host) else { Issue.record("no frame after the shrink"); return }
        #expect(frame.metadata.frameNumber == 3)
        frame.withUnsafePlane(0) { bytes, _ in #expect(bytes[0] == 7) }
    }

    /// A picture larger than the slots (a cast window resized): the
    /// producer grows the ring (a new segment under the same name, not
    /// counted as damage) and the host takes the larger frame whole from it.
    @Test func aRingGrownForALargerPictureIsFollowedByTheHost() throws {
        let small = try makeBuffer(256, 128, .i420)
        let (group, producer, host) = try ringWithOneFrameTaken("grow", small)
        defer { producer.finish() }
        let large = try makeBuffer(640, 360, .i420, fill: 9)
        #expect(throws: RingError.self) { try producer.publish(large, frameNumber: 2, captureTime: 1) }
        try producer.grow(slotCapacity: large.capacity)
        #expect(producer.slotCapacity == large.capacity && producer.recreations == 0)
        try producer.publish(large, frameNumber: 3, captureTime: 2)
        guard case .frame(let frame) = try nextFrameEvent(host) else { Issue.record("no frame from the grown ring"); return }
        #expect(frame.metadata.frameNumber == 3 && frame.metadata.width == 640 && frame.metadata.height == 360)
        frame.withUnsafePlane(0) { bytes, _ in #expect(bytes[0] == 9 && bytes[640 * 359] == 9) }
        #expect(segmentExists(group))
    }

    @Test(arguments: [UInt32(0xF), 0x3, 0x13, 0xFFFF_FFFF])
    func hostileStateWordMakesTheProducerStartAFreshRing(_ state: UInt32) throws {
        let buffer = try makeBuffer()
        let (group, producer, host) = try ringWithOneFrameTaken("state", buffer)
        defer { producer.finish() }
        try RawMapping(name: group.sharedMemoryName).setU32(RingLayout.slotStateOffset, state)
        let publication = try producer.publish(buffer, frameNumber: 2, captureTime: 1)
        #expect(producer.recreations == 1)
        #expect(publication.ringRecreated?.contains("slot state") == true, "\(publication.ringRecreated ?? "")")
        guard case .frame(let frame) = try nextFrameEvent(host) else { Issue.record("no frame from the fresh ring"); return }
        #expect(frame.metadata.frameNumber == 2)
    }

    @Test func damagedRingOfADeadProducerIsReclaimedByTheNextOne() throws {
        let group = uniqueGroup("reclaim")
        let capacity = try makeBuffer().capacity
        let name = group.sharedMemoryName
        let dead = Spawned("/bin/true", [])
        _ = dead.wait()
        do {
            // What a producer that crashed mid-write could leave: a ring of ours with an impossible state word.
            let raw = try RawMapping(create: name, size: RingLayout.segmentSize(capacity: capacity))
            raw.writeHeader(for: group, capacity: capacity)
            raw.setU32(RingLayout.slotStateOffset, 0x3)
            raw.setU32(RingLayout.producerPidOffset, UInt32(dead.pid))
        }
        let producer = try RingProducer(appGroup: group, slotCapacity: capacity)
        try producer.publish(try makeBuffer(), frameNumber: 1, captureTime: 1)
        guard case .frame = try nextFrameEvent(RingHost(appGroup: group)) else { Issue.record("no frame"); return }
        producer.finish()
        #expect(!segmentExists(group))
    }

    @Test func forgedFinishedDoesNotTakeALiveProducersRing() throws {
        let buffer = try makeBuffer()
        let (group, producer, host) = try ringWithOneFrameTaken("forged", buffer)
        defer { producer.finish() }
        let raw = try RawMapping(name: group.sharedMemoryName)
        raw.setU32(RingLayout.lifecycleOffset, ProducerState.finished.rawValue)
        raw.setU32(RingLayout.lifecycleSeqOffset, raw.u32(RingLayout.lifecycleSeqOffset) &+ 1)
        let finished = try nextEvent(host) { if case .lifecycle(.finished) = $0 { true } else { false } }
        #expect(finished != nil)
        #expect(segmentExists(group), "the host removed a live producer's ring on a forged \"finished\"")
        try producer.publish(buffer, frameNumber: 2, captureTime: 1)
        #expect(producer.recreations == 1, "the producer must notice a lifecycle it never announced")
        guard case .frame(let frame) = try nextFrameEvent(host) else { Issue.record("no frame after the forgery"); return }
        #expect(frame.metadata.frameNumber == 2)
    }

    @Test func unlinkedRingIsMadeAnewByItsProducer() throws {
        let buffer = try makeBuffer()
        let (group, producer, host) = try ringWithOneFrameTaken("unlinked", buffer)
        defer { producer.finish() }
        shm_unlink(group.sharedMemoryName)
        usleep(150_000)  // past the producer's 100 ms check of its name
        try producer.publish(buffer, frameNumber: 2, captureTime: 1)
        #expect(producer.recreations == 1)
        #expect(segmentExists(group))
        guard case .frame(let frame) = try nextFrameEvent(host) else { Issue.record("the host did not follow the new ring"); return }
        #expect(frame.metadata.frameNumber == 2)
    }

    @Test func sizeChangesKeepABoundedHistory() throws {
        let group = uniqueGroup("history")
        let small = try makeBuffer(64, 48), large = try makeBuffer(96, 64)
        let producer = try RingProducer(appGroup: group, slotCapacity: large.capacity)
        defer { producer.finish() }
        let receiver = ShareReceiver(appGroup: group, options: .init(), log: { _ in })
        let stop = StopFlag()
        let thread = Thread {
            try? receiver.run(shouldStop: { stop.isSet })
            stop.finished.store(true, ordering: .releasing)
        }
        thread.start()
        let changes = 4 * ShareStats.historyLimit
        for n in 0..<changes {
            try producer.publish(n.isMultiple(of: 2) ? small : large, frameNumber: UInt64(n), captureTime: MonotonicClock.now())
            let deadline = MonotonicClock.now() + 2_000_000_000
            while producer.framesTaken < UInt64(n + 1), MonotonicClock.now() < deadline { usleep(200) }
        }
        stop.flag.store(true, ordering: .releasing)
        while !stop.finished.load(ordering: .acquiring) { usleep(1000) }
        let stats = receiver.snapshot
        #expect(stats.taken == UInt64(changes))
        #expect(stats.geometryChanges == changes)
        #expect(stats.geometries.count == ShareStats.historyLimit)
        #expect(stats.geometries.last?.hasPrefix("96x64") == true)
        #expect(stats.events.count <= ShareStats.historyLimit)
    }

    /// 10,000 random mutations of a live ring over about ten seconds: the
    /// segment truncated and grown, header words and slot bytes rewritten,
    /// "finished" forged, the name unlinked. Both sides live through it and
    /// frames flow again once it stops. (The host → producer controls, stop
    /// and maximum frame rate, are left alone: anyone who can write the
    /// ring may stop or slow a broadcast, by design.)
    @Test func tenThousandRandomMutationsUnderALiveHostAndProducer() throws {
        let group = uniqueGroup("mutate")
        let dir = Paths.temporaryDirectory()
        let hostReport = dir.appendingPathComponent("host.json").path, producerReport = dir.appendingPathComponent("producer.json").path
        let port = freePortPair()
        let h = host([group], ["--http", "\(port)", "--verify", "--report", hostReport, "--quiet"])
        let p = producer(group, ["--size", "160x120", "--fps", "60", "--duration", "120", "--checksum", "--report", producerReport])
        let name = group.sharedMemoryName
        func stats() throws -> ShareStats? {
            let result = run("/usr/bin/curl", ["-s", "-f", "-m", "5", "http://127.0.0.1:\(port)/stats.json"])
            return try JSONDecoder().decode([ShareStats].self, from: Data(result.stdout.utf8)).first
        }
        let started = MonotonicClock.now()
        while (try? stats())?.taken ?? 0 < 10, MonotonicClock.now() - started < 20_000_000_000 { usleep(50_000) }

        let words = [
            RingLayout.magicOffset, RingLayout.versionOffset, RingLayout.headerSizeOffset, RingLayout.slotCountOffset,
            RingLayout.slotCapacityOffset, RingLayout.slotStrideOffset, RingLayout.segmentSizeOffset, RingLayout.appGroupLengthOffset,
            RingLayout.appGroupOffset, RingLayout.producerPidOffset, RingLayout.lifecycleOffset, RingLayout.lifecycleSeqOffset,
            RingLayout.slotStateOffset, RingLayout.framesWrittenOffset, RingLayout.framesDroppedOffset, RingLayout.hostPidOffset,
            RingLayout.framesTakenOffset, RingLayout.framesInvalidOffset, RingLayout.setupInfoLengthOffset,
        ]
        let wideWords = [
            RingLayout.magicOffset, RingLayout.slotCapacityOffset, RingLayout.slotStrideOffset, RingLayout.segmentSizeOffset,
            RingLayout.createdAtOffset, RingLayout.framesWrittenOffset, RingLayout.framesDroppedOffset, RingLayout.framesTakenOffset,
            RingLayout.framesInvalidOffset,
        ]
        var generator = SystemRandomNumberGenerator()
        var fd: Int32 = -1
        var size = 0
        var mutations = 0, truncations = 0, unlinks = 0
        defer { if fd >= 0 { close(fd) } }
        while mutations < 10_000, p.process.isRunning, h.process.isRunning, MonotonicClock.now() - started < 90_000_000_000 {
            // Follow the name: the producer replaces a ring it finds damaged.
            var named = stat(), opened = stat()
            if stat("/dev/shm" + name, &named) != 0 { usleep(1000); continue }
            if fd < 0 || fstat(fd, &opened) != 0 || opened.st_ino != named.st_ino {
                if fd >= 0 { close(fd) }
                fd = shm_open(name, O_RDWR, 0)
                guard fd >= 0 else { continue }
            }
            size = Int(named.st_size)
            guard size > 0 else { usleep(1000); continue }
            func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
                var value = value
                _ = pwrite(fd, &value, MemoryLayout<T>.size, off_t(offset))
            }
            switch Int.random(in: 0..<100, using: &generator) {
            case 0..<10:
                let sizes = [0, 100, 4096, 4095, size / 2, size - 1, size + 4096, size, size]
                ftruncate(fd, off_t(sizes.randomElement(using: &generator)!))
                truncations += 1
            case 10..<45:
                put(UInt32.random(in: 0...UInt32.max, using: &generator), at: words.randomElement(using: &generator)!)
            case 45..<55:
                put(UInt64.random(in: 0...UInt64.max, using: &generator), at: wideWords.randomElement(using: &generator)!)
            case 55..<60:
                put(UInt32(ProducerState.finished.rawValue), at: RingLayout.lifecycleOffset)
                put(UInt32.random(in: 0...UInt32.max, using: &generator), at: RingLayout.lifecycleSeqOffset)
            case 60..<99:
                // Slot bytes: metadata fields and payload.
                let stride = (size - RingLayout.headerSize) / 3
                guard stride > SlotHeader.byteCount else { continue }
                let slot = RingLayout.headerSize + Int.random(in: 0..<3, using: &generator) * stride
                let offset = slot + (Bool.random(using: &generator) ? Int.random(in: 0..<SlotHeader.byteCount, using: &generator) & ~3 : Int.random(in: 0..<stride, using: &generator))
                put(UInt32.random(in: 0...UInt32.max, using: &generator), at: offset)
            default:
                shm_unlink(name)
                unlinks += 1
            }
            mutations += 1
            if mutations % 2 == 0 { usleep(1000) }
        }
        let mutated = Double(MonotonicClock.now() - started) / 1e9
        try #require(h.process.isRunning, "the host died under the mutations: \(h.stderr.suffix(500))")
        try #require(p.process.isRunning, "the producer died under the mutations (after \(mutations)): \(p.wait()) \(p.stderr.suffix(1500))")
        #expect(mutations == 10_000, "\(p.stderr.suffix(3000))")
        // Frames flow again once the mutations stop.
        usleep(1_000_000)
        let before = try #require(try stats())
        usleep(1_000_000)
        let after = try #require(try stats())
        #expect(after.taken >= before.taken + 30, "\(after.taken - before.taken) frames in the second after the mutations")
        p.signal(SIGTERM)
        h.signal(SIGTERM)
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        #expect(!segmentExists(group))
        let share = try #require(try readShareStats(hostReport).first)
        let produced = try #require(try readJSON(producerReport) as? [String: Any])
        print("mutations: \(mutations) in \(Int(mutated)) s (\(truncations) truncations, \(unlinks) unlinks); producer made \(produced["ringsRecreated"] ?? "?") fresh rings; host took \(share.taken) frames, skipped \(share.invalid) invalid, lost \(share.ringsLost) rings, attached \(share.producerAttaches) times")
    }

    @Test func malformedJPEGFramesAreCountedAndTheOtherShareGoesOn() throws {
        let bad = uniqueGroup("jpeg"), good = uniqueGroup("jpegok")
        let report = Paths.temporaryDirectory().appendingPathComponent("host.json").path
        let h = host([bad, good], ["--duration", "4", "--report", report])
        let other = producer(good, ["--fps", "30", "--duration", "4", "--size", "64x48", "--quiet"])
        let picture = try makeBuffer(64, 48)
        let formatter = FrameFormatter(format: .jpeg, orientation: .up)
        let valid = try formatter.format(picture)
        // Good frames alternate between two pictures, so each is a change the host encodes (a repeated one would be skipped).
        let otherValid = try FrameFormatter(format: .jpeg, orientation: .up).format(try makeBuffer(64, 48, fill: 200))
        let wrongSize = try FrameFormatter(format: .jpeg, orientation: .up).format(try makeBuffer(32, 32))
        // Garbage with a JPEG's first bytes, in a 64x48 JPEG frame.
        let garbage = try PixelBuffer(width: 64, height: 48, format: .jpeg)
        let bytes = UnsafeMutableRawBufferPointer(start: garbage.storage, count: 600)
        for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: i &* 131) }
        bytes[0] = 0xFF; bytes[1] = 0xD8; bytes[2] = 0xFF
        garbage.setJPEGByteCount(600)
        // The 32x32 JPEG's bytes under 64x48 metadata: a header that disagrees with the slot.
        let mismatched = try PixelBuffer(width: 64, height: 48, format: .jpeg)
        wrongSize.withUnsafeBytes { mismatched.storage.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        mismatched.setJPEGByteCount(wrongSize.byteCount)
        let ring = try RingProducer(appGroup: bad, slotCapacity: valid.capacity)
        for n in 0..<90 {
            let frame = [garbage, mismatched, n / 3 % 2 == 0 ? valid : otherValid][n % 3]
            try ring.publish(frame, frameNumber: UInt64(n), captureTime: MonotonicClock.now())
            usleep(33_000)
        }
        ring.finish()
        #expect(h.wait(timeout: 20) == 0, "\(h.stderr)")
        _ = other.wait()
        let shares = try readShareStats(report)
        let hit = try #require(shares.first { $0.appGroup == bad.name })
        let spared = try #require(shares.first { $0.appGroup == good.name })
        #expect(hit.invalid >= 20, "invalid \(hit.invalid) of \(hit.taken)")
        #expect((hit.encoded?.frames ?? 0) >= 10, "the share must go on encoding its good frames: \(hit.taken) taken, \(hit.invalid) invalid; \(h.stderr)")
        #expect((spared.encoded?.frames ?? 0) >= 60, "the other share must not notice")
    }
}

/// A stop flag a test thread and the test share.
final class StopFlag: Sendable {
    let flag = Atomic<Bool>(false)
    let finished = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .acquiring) }
}
