@preconcurrency import Glibc
import Synchronization
internal import CMemory
import FrameRelaySystem
import FrameRelayFrames

/// The producer's end of a frame ring: creates the App Group's segment and
/// publishes frames into it without ever waiting for the host.
///
/// The newest frame wins: publishing over a frame the host has not taken
/// replaces it and counts it as dropped. The segment is removed by
/// ``finish()`` (or `deinit`); a segment left by a producer that died is
/// reclaimed by the next one.
public final class RingProducer {
    public let appGroup: AppGroup
    /// Payload bytes per slot: the largest frame this ring carries.
    public private(set) var slotCapacity: Int
    private let setupInfo: String
    private var segment: SharedMemorySegment
    private var header: RingHeader
    private var sequence: UInt32 = 0
    private var producerSlot: Int
    private var isFinished = false
    /// The lifecycle this producer last announced: the header must still say so.
    private var announced = ProducerState.started
    private var written: UInt64 = 0
    private var dropped: UInt64 = 0
    private var nextFullCheck: UInt64 = 0
    /// The last picture published (``FrameMetadata/picture``) and its
    /// geometry; pictures count up from the clock at creation, so no two
    /// producers of one machine name different pictures alike.
    private var picture: UInt64
    private var pictureGeometry: (width: Int, height: Int, format: PixelFormat, orientation: Orientation)?
    /// What the last frame published said it changed since (``FrameMetadata/changedSince``, 0: nothing said) and where.
    private var lastChangedSince: UInt64 = 0
    private var lastChanged = PixelRegion()
    /// Rings this producer made anew after finding its own corrupted, unlinked or shrunk.
    public private(set) var recreations = 0
    /// Counts every ring this producer made (``RingSlot/ring``): a slot of a ring made since holds nothing drawn.
    private var generation = 0

    /// Creates the ring of `appGroup` with room for frames of up to
    /// `slotCapacity` bytes, reclaiming a stale segment of a dead producer
    /// and refusing one that is not ours.
    public init(appGroup: AppGroup, slotCapacity: Int, setupInfo: String = "") throws(RingError) {
        guard slotCapacity > 0, slotCapacity < Int(Int32.max) - 8192 else { throw .badCapacity(slotCapacity) }
        let segment = try Self.makeRing(appGroup: appGroup, capacity: slotCapacity, setupInfo: setupInfo, state: .started)
        self.appGroup = appGroup
        self.slotCapacity = slotCapacity
        self.setupInfo = setupInfo
        self.producerSlot = SlotState.initial.producerSlot
        self.header = RingHeader(base: segment.base)
        self.segment = segment
        self.picture = MonotonicClock.now()
    }

    deinit { finish() }

    /// A new segment with a complete header, its magic published last.
    private static func makeRing(appGroup: AppGroup, capacity: Int, setupInfo: String, state: ProducerState) throws(RingError) -> SharedMemorySegment {
        let segment = try createSegment(name: appGroup.sharedMemoryName, appGroup: appGroup, capacity: capacity)
        let header = RingHeader(base: segment.base)
        header.setPlain(RingLayout.versionOffset, RingLayout.version)
        header.setPlain(RingLayout.headerSizeOffset, UInt32(RingLayout.headerSize))
        header.setPlain(RingLayout.slotCountOffset, UInt32(RingLayout.slotCount))
        header.setPlain(RingLayout.slotCapacityOffset, UInt64(capacity))
        header.setPlain(RingLayout.slotStrideOffset, UInt64(RingLayout.slotStride(capacity: capacity)))
        header.setPlain(RingLayout.segmentSizeOffset, UInt64(segment.size))
        header.setPlain(RingLayout.createdAtOffset, MonotonicClock.now())
        header.setString(appGroup.name, lengthAt: RingLayout.appGroupLengthOffset, bytesAt: RingLayout.appGroupOffset, maxBytes: AppGroup.maxLength)
        header.setString(setupInfo, lengthAt: RingLayout.setupInfoLengthOffset, bytesAt: RingLayout.setupInfoOffset, maxBytes: RingLayout.maxSetupInfoBytes)
        header.slotState.pointee.store(SlotState.initial.raw, ordering: .relaxed)
        header.producerPid.pointee.store(UInt32(bitPattern: Processor.currentPID), ordering: .relaxed)
        header.lifecycle.pointee.store(state.rawValue, ordering: .relaxed)
        header.lifecycleSeq.pointee.store(1, ordering: .relaxed)
        header.magic.pointee.store(RingLayout.magic, ordering: .releasing)
        return segment
    }

    private static func createSegment(name: String, appGroup: AppGroup, capacity: Int) throws(RingError) -> SharedMemorySegment {
        let size = RingLayout.segmentSize(capacity: capacity)
        var lastError = SystemError("shm_open", name, code: .fileExists)
        for _ in 0..<5 {
            do {
                return try SharedMemorySegment.create(name: name, size: size)
            } catch {
                guard error.code == .fileExists else { throw .system(error) }
                lastError = error
            }
            try reclaimIfStale(name: name, appGroup: appGroup)
        }
        throw .system(lastError)
    }

    /// Removes the App Group's ring when its producer is gone without
    /// finishing (killed with SIGKILL) and nobody could have taken it over;
    /// leaves alone a ring whose producer runs, and a segment that is not
    /// ours. Returns whether a segment was removed.
    @discardableResult
    public static func removeStale(_ appGroup: AppGroup) -> Bool {
        let name = appGroup.sharedMemoryName
        guard (try? SharedMemorySegment.open(name: name)) != nil else { return false }
        do {
            try reclaimIfStale(name: name, appGroup: appGroup)
        } catch {
            return false
        }
        return (try? SharedMemorySegment.open(name: name)) == nil
    }

    /// Removes an existing segment of ours whose producer is dead; throws if
    /// the segment is someone else's or its producer is alive.
    private static func reclaimIfStale(name: String, appGroup: AppGroup) throws(RingError) {
        var opened: SharedMemorySegment?
        for attempt in 0..<2 where opened == nil {
            do {
                opened = try SharedMemorySegment.open(name: name)
            } catch {
                switch error {
                case .missing:
                    return  // gone meanwhile: try again
                case .empty where attempt == 0:
                    MonotonicClock.sleep(nanoseconds: 200_000_000)  // a creator about to size it
                case .empty:
                    SharedMemorySegment.unlink(name: name)  // its creator died before sizing it
                    return
                default:
                    throw RingError(error, segment: name)
                }
            }
        }
        guard let existing = opened else { return }
        let header = RingHeader(base: existing.base)
        let pid = Int32(bitPattern: header.producerPid.pointee.load(ordering: .acquiring))
        let producerAlive = processIsAlive(pid)
        do throws(RingError) {
            var inspection = try header.inspect(mappedSize: existing.size, appGroup: appGroup, segment: name)
            if case .initializing = inspection {
                // A creator between O_EXCL and publishing its magic, or one that died there.
                MonotonicClock.sleep(nanoseconds: 200_000_000)
                inspection = try header.inspect(mappedSize: existing.size, appGroup: appGroup, segment: name)
            }
            if case .ring = inspection {
                let finished = header.lifecycle.pointee.load(ordering: .acquiring) == ProducerState.finished.rawValue
                if !finished, producerAlive { throw RingError.producerRunning(segment: name, pid: pid) }
            }
        } catch {
            // A ring of ours whose producer crashed mid-write, or that someone
            // scribbled on, is reclaimed once nobody is producing into it; a
            // segment that is not a ring of this version is left alone.
            guard case .malformedHeader = error, !producerAlive else { throw error }
        }
        existing.unlinkIfStillLinked()
    }

    /// Copies `buffer` into the free slot and publishes it as the newest
    /// frame. Never waits. Returns whether an untaken frame was replaced,
    /// and why the ring was made anew on the way, if it was.
    /// `damage` ``Damage/none``: the caller knows the pixels are byte for
    /// byte those of the frame it published before; the frame then names the
    /// same picture (at the same size, format and orientation), and the host
    /// skips comparing it. ``Damage/region(_:)``: the caller knows the pixels
    /// differ from the frame before only there; the frame then says so
    /// against the last picture the host took (while the host has not taken
    /// the frame before, its region is carried into this one's), and a host
    /// holding that picture converts and compares only the region.
    /// `pictureFrame`: the frame that last changed the picture, when the
    /// caller knows (``FrameMetadata/pictureFrame``; nil: not said).
    ///
    /// Everything read back from the shared header is checked first: a
    /// ring that was corrupted, shrunk or unlinked by someone else is
    /// replaced by a fresh one (``recreations``) and the frame goes there.
    @discardableResult
    public func publish(
        _ buffer: PixelBuffer, frameNumber: UInt64, captureTime: UInt64,
        orientation: Orientation = .up, checksum: Bool = false, damage: Damage = .unknown, pictureFrame: UInt64? = nil
    ) throws(RingError) -> Publication {
        let bytes = buffer.byteCount
        return try publish(
            width: buffer.width, height: buffer.height, format: buffer.format, layout: buffer.layout, bytes: bytes, frameNumber: frameNumber,
            captureTime: captureTime, orientation: orientation, checksum: checksum, damage: damage, pictureFrame: pictureFrame
        ) { payload, _ in
            // Non-temporal: the producer never reads the frame again (and the
            // host reads it on another core), so the copy need not pass through this core's cache.
            cmem_stream_copy(payload, buffer.storage, bytes)
            return true
        }
    }

    /// Publishes a frame of `width`×`height` in `format` drawn straight into
    /// the free slot: `draw` gets the slot's payload as a buffer of that
    /// geometry, and which slot it is (``RingSlot``: the same slot again holds
    /// what was last drawn there, so a capturer need only draw what changed
    /// since, as a compositor redraws a buffer by its age). No copy: the
    /// picture the host reads is the one drawn. When `draw` returns false
    /// (it could not), nothing is published (``Publication/published``).
    /// Otherwise as ``publish(_:frameNumber:captureTime:orientation:checksum:damage:pictureFrame:)``.
    @discardableResult
    public func publish(
        drawing width: Int, height: Int, format: PixelFormat, frameNumber: UInt64, captureTime: UInt64,
        orientation: Orientation = .up, checksum: Bool = false, damage: Damage = .unknown, pictureFrame: UInt64? = nil,
        draw: (PixelBuffer, RingSlot) -> Bool
    ) throws(RingError) -> Publication {
        precondition(format != .jpeg, "a JPEG is encoded, not drawn in place")
        // The planes as a PixelBuffer of that geometry lays them out.
        let (layout, bytes) = PlaneLayout.padded(width: width, height: height, format: format, rowAlignment: 64)
        return try publish(
            width: width, height: height, format: format, layout: layout, bytes: bytes, frameNumber: frameNumber, captureTime: captureTime,
            orientation: orientation, checksum: checksum, damage: damage, pictureFrame: pictureFrame
        ) { payload, slot in
            let key = slot.index
            if slotBuffers[key].map({ $0.storage != payload || $0.width != width || $0.height != height || $0.format != format }) ?? true {
                // One wrapper a slot, made again only for a new ring or geometry: no allocation a frame.
                guard let wrapper = try? PixelBuffer(wrapping: payload, width: width, height: height, format: format) else { return false }
                slotBuffers[key] = wrapper
            }
            return draw(slotBuffers[key]!, slot)
        }
    }

    /// The buffers over each slot's payload that frames are drawn into (``publish(drawing:height:format:frameNumber:captureTime:orientation:checksum:damage:pictureFrame:draw:)``).
    private var slotBuffers: [Int: PixelBuffer] = [:]

    /// Publishes the frame `write` puts into the free slot's payload (`bytes`
    /// bytes, planes as `layout` says); false from `write`: nothing published.
    private func publish(
        width: Int, height: Int, format: PixelFormat, layout: PlaneLayout, bytes: Int, frameNumber: UInt64, captureTime: UInt64,
        orientation: Orientation, checksum: Bool, damage: Damage, pictureFrame: UInt64?,
        write: (UnsafeMutableRawPointer, RingSlot) -> Bool
    ) throws(RingError) -> Publication {
        guard bytes <= slotCapacity else { throw .frameTooLarge(bytes: bytes, capacity: slotCapacity) }
        // Finished: the ring's name is gone on purpose, and no new ring may outlive the broadcast.
        guard !isFinished else { return Publication() }
        var publication = Publication()
        if let reason = corruption() {
            try recreate(reason)
            publication.ringRecreated = reason
        }
        let repeatsPrevious = damage == .none
        let changed: PixelRegion? = if case .region(let region) = damage { region } else { nil }
        let geometry = (width: width, height: height, format: format, orientation: orientation)
        let sameGeometry = pictureGeometry.map { $0 == geometry } ?? false
        let previous = picture
        if !repeatsPrevious || !sameGeometry { picture &+= 1 }
        pictureGeometry = geometry
        var changedSince: UInt64 = 0
        var region = repeatsPrevious ? PixelRegion() : changed ?? PixelRegion()
        if sameGeometry, repeatsPrevious || changed != nil {
            if SlotState(raw: header.slotState.pointee.load(ordering: .acquiring)).isFresh {
                // The frame before is still untaken and this one replaces it: the host holds what that
                // one changed since. (Taken meanwhile: the host finds it does not hold that, and compares all.)
                changedSince = lastChangedSince
                region = lastChanged.union(region)
            } else {
                changedSince = previous
            }
        }
        if changedSince == 0 { region = PixelRegion() }
        lastChangedSince = changedSince
        lastChanged = region
        for attempt in 0..<2 {
            let slot = segment.base + RingLayout.slotOffset(producerSlot, capacity: slotCapacity)
            let payload = slot + SlotHeader.byteCount
            guard write(payload, RingSlot(ring: generation, index: producerSlot)) else {
                // Not drawn: nothing published, and the next frame names no picture before it.
                pictureGeometry = nil
                publication.published = false
                return publication
            }
            let sum = checksum ? FrameChecksum.of(UnsafeRawBufferPointer(start: payload, count: bytes)) : 0
            let metadata = FrameMetadata(
                frameNumber: frameNumber, captureTime: captureTime, publishTime: MonotonicClock.now(), checksum: sum, picture: picture,
                changedSince: changedSince, changed: region, pictureFrame: pictureFrame, width: width, height: height, format: format, orientation: orientation,
                payloadSize: bytes, planes: layout)
            SlotHeader.store(metadata, to: slot)
            if segment.faults == 0, let replaced = publishSlot() {
                publication.replacedUntaken = replaced
                return publication
            }
            // Shrunk under the copy, or the slot state was rewritten: write the frame again into a fresh ring.
            guard attempt == 0 else { break }
            let reason = segment.faults != 0 ? "segment shrunk under the producer" : "slot state \(hex(header.slotState.pointee.load(ordering: .relaxed)))"
            try recreate(reason)
            publication.ringRecreated = reason
        }
        return publication
    }

    /// Swaps the written slot into the published position (lock-free: the
    /// compare-exchange only retries when the host swapped at that instant).
    /// Nil when the state word is not one the triple buffer can be in.
    private func publishSlot() -> Bool? {
        sequence &+= 1
        var current = SlotState(raw: header.slotState.pointee.load(ordering: .acquiring))
        while true {
            // The host only ever swaps the published slot with its own: ours must still be ours.
            guard current.isValid, current.producerSlot == producerSlot else { return nil }
            let next = current.publishing(sequence: sequence)
            let (exchanged, original) = header.slotState.pointee.compareExchange(
                expected: current.raw, desired: next.raw, ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = SlotState(raw: original)
        }
        producerSlot = current.published
        written &+= 1
        header.framesWritten.pointee.store(written, ordering: .relaxed)
        if current.isFresh {
            dropped &+= 1
            header.framesDropped.pointee.store(dropped, ordering: .relaxed)
        }
        header.wakeHost()
        return current.isFresh
    }

    /// What is wrong with the ring, if anything: the header words this
    /// producer wrote on every frame, and every 100 ms whether the name,
    /// the size and the fixed fields are still what it made.
    private func corruption() -> String? {
        if segment.faults != 0 { return "segment shrunk under the producer" }
        let magic = header.magic.pointee.load(ordering: .relaxed)
        if magic != RingLayout.magic { return "magic \(hex(magic))" }
        let lifecycle = header.lifecycle.pointee.load(ordering: .relaxed)
        if lifecycle != announced.rawValue { return "lifecycle \(lifecycle), announced \(announced.rawValue)" }
        let state = SlotState(raw: header.slotState.pointee.load(ordering: .relaxed))
        if !state.isValid || state.producerSlot != producerSlot { return "slot state \(hex(state.raw))" }
        // The host writes 1 to ask for a stop; any other value is damage, not a request.
        let stop = header.stopRequested.pointee.load(ordering: .relaxed)
        if stop > 1 { return "stop word \(hex(stop))" }
        let rate = header.maxFrameRate.pointee.load(ordering: .relaxed)
        if rate > RingLayout.maxRequestedFrameRate { return "frame rate word \(rate)" }
        let now = MonotonicClock.now()
        guard now >= nextFullCheck else { return nil }
        nextFullCheck = now &+ 100_000_000
        if !segment.isStillLinked { return "segment unlinked or replaced" }
        if let size = segment.currentSize, size != segment.size { return "segment resized to \(size) bytes" }
        do {
            guard case .ring(let capacity) = try header.inspect(mappedSize: segment.size, appGroup: appGroup, segment: segment.name),
                capacity == slotCapacity
            else { return "header rewritten" }
        } catch {
            return "\(error)"
        }
        if header.producerPid.pointee.load(ordering: .relaxed) != UInt32(bitPattern: Processor.currentPID) { return "producer pid rewritten" }
        return nil
    }

    /// Replaces the ring with one whose slots hold `capacity` bytes, for a
    /// picture larger than any before (a window resized, a monitor's new
    /// mode): the host finds the new segment under the same name, as after
    /// a ring was made anew, and the next frame is its first there.
    public func grow(slotCapacity capacity: Int) throws(RingError) {
        guard capacity > slotCapacity else { return }
        guard capacity < Int(Int32.max) - 8192 else { throw .badCapacity(capacity) }
        guard !isFinished else { return }
        slotCapacity = capacity
        try recreate("slots grown to \(capacity) bytes", damaged: false)
    }

    /// Replaces the ring with a fresh one in the announced state; the old
    /// name is removed if it is still the old segment's. `damaged`: made
    /// anew because someone else damaged it (``recreations``).
    private func recreate(_ reason: String, damaged: Bool = true) throws(RingError) {
        // What the host asked for (stop, a frame-rate limit) carries over, when it is a value the host could have written.
        let stop = header.stopRequested.pointee.load(ordering: .acquiring) == 1
        let rate = header.maxFrameRate.pointee.load(ordering: .acquiring)
        segment.unlinkIfStillLinked()
        segment = try Self.makeRing(appGroup: appGroup, capacity: slotCapacity, setupInfo: setupInfo, state: announced)
        header = RingHeader(base: segment.base)
        producerSlot = SlotState.initial.producerSlot
        header.framesWritten.pointee.store(written, ordering: .relaxed)
        header.framesDropped.pointee.store(dropped, ordering: .relaxed)
        if stop { header.stopRequested.pointee.store(1, ordering: .releasing) }
        if rate <= RingLayout.maxRequestedFrameRate { header.maxFrameRate.pointee.store(rate, ordering: .releasing) }
        if damaged { recreations += 1 }
        generation += 1
        slotBuffers.removeAll()
        nextFullCheck = 0
        header.wakeHost()
    }

    /// Tells the host about a lifecycle change (paused, resumed, …).
    public func setState(_ state: ProducerState) {
        announced = state
        header.lifecycle.pointee.store(state.rawValue, ordering: .releasing)
        header.lifecycleSeq.pointee.wrappingAdd(1, ordering: .releasing)
        header.wakeHost()
    }

    /// Whether the host asked this producer to stop.
    public var stopRequested: Bool { header.stopRequested.pointee.load(ordering: .acquiring) == 1 }

    /// The frame rate the host asked for, if it asked.
    public var requestedMaxFrameRate: Int? {
        let rate = header.maxFrameRate.pointee.load(ordering: .acquiring)
        return rate == 0 ? nil : Int(rate)
    }

    /// Frames published, and those replaced before the host took them
    /// (this producer's own counts, whatever the shared header says).
    public var counters: (written: UInt64, dropped: UInt64) { (written, dropped) }

    /// Frames the host took so far (any host, across restarts).
    public var framesTaken: UInt64 { header.framesTaken.pointee.load(ordering: .relaxed) }

    /// The host attached now, if one is and it is alive: its pid (a host
    /// killed with -9 leaves its pid behind; one that detached, none).
    public var hostPid: Int32? {
        let pid = Int32(bitPattern: header.hostPid.pointee.load(ordering: .acquiring))
        return pid > 0 && processIsAlive(pid) ? pid : nil
    }

    /// Marks the broadcast finished, wakes the host and removes the segment's
    /// name; the host keeps its mapping until it lets go.
    public func finish() {
        guard !isFinished else { return }
        isFinished = true
        setState(.finished)
        segment.unlinkIfStillLinked()
    }
}

private func hex(_ value: some BinaryInteger) -> String { "0x" + String(value, radix: 16) }
