@preconcurrency import Glibc
import Synchronization
internal import CMemory

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
    public let slotCapacity: Int
    private let segment: SharedMemorySegment
    private let header: RingHeader
    private var sequence: UInt32 = 0
    private var producerSlot: Int
    private var isFinished = false

    /// Creates the ring of `appGroup` with room for frames of up to
    /// `slotCapacity` bytes, reclaiming a stale segment of a dead producer
    /// and refusing one that is not ours.
    public init(appGroup: AppGroup, slotCapacity: Int, setupInfo: String = "") throws(RingError) {
        guard slotCapacity > 0, slotCapacity < Int(Int32.max) - 8192 else { throw .badCapacity(slotCapacity) }
        let name = appGroup.sharedMemoryName
        let segment = try Self.createSegment(name: name, appGroup: appGroup, capacity: slotCapacity)
        let header = RingHeader(base: segment.base)
        header.setPlain(RingLayout.versionOffset, RingLayout.version)
        header.setPlain(RingLayout.headerSizeOffset, UInt32(RingLayout.headerSize))
        header.setPlain(RingLayout.slotCountOffset, UInt32(RingLayout.slotCount))
        header.setPlain(RingLayout.slotCapacityOffset, UInt64(slotCapacity))
        header.setPlain(RingLayout.slotStrideOffset, UInt64(RingLayout.slotStride(capacity: slotCapacity)))
        header.setPlain(RingLayout.segmentSizeOffset, UInt64(segment.size))
        header.setPlain(RingLayout.createdAtOffset, MonotonicClock.now())
        header.setString(appGroup.name, lengthAt: RingLayout.appGroupLengthOffset, bytesAt: RingLayout.appGroupOffset, maxBytes: AppGroup.maxLength)
        header.setString(setupInfo, lengthAt: RingLayout.setupInfoLengthOffset, bytesAt: RingLayout.setupInfoOffset, maxBytes: RingLayout.maxSetupInfoBytes)
        header.slotState.pointee.store(SlotState.initial.raw, ordering: .relaxed)
        header.producerPid.pointee.store(UInt32(bitPattern: getpid()), ordering: .relaxed)
        header.lifecycle.pointee.store(ProducerState.started.rawValue, ordering: .relaxed)
        header.lifecycleSeq.pointee.store(1, ordering: .relaxed)
        header.magic.pointee.store(RingLayout.magic, ordering: .releasing)

        self.appGroup = appGroup
        self.slotCapacity = slotCapacity
        self.producerSlot = SlotState.initial.producerSlot
        self.header = header
        self.segment = segment
    }

    deinit { finish() }

    private static func createSegment(name: String, appGroup: AppGroup, capacity: Int) throws(RingError) -> SharedMemorySegment {
        let size = RingLayout.segmentSize(capacity: capacity)
        var lastError = SystemError("shm_open", name, code: EEXIST)
        for _ in 0..<5 {
            do {
                return try SharedMemorySegment.create(name: name, size: size)
            } catch {
                guard error.code == EEXIST else { throw .system(error) }
                lastError = error
            }
            try reclaimIfStale(name: name, appGroup: appGroup)
        }
        throw .system(lastError)
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
                    shm_unlink(name)  // its creator died before sizing it
                    return
                default:
                    throw RingError(error, segment: name)
                }
            }
        }
        guard let existing = opened else { return }
        let header = RingHeader(base: existing.base)
        var inspection = try header.inspect(mappedSize: existing.size, appGroup: appGroup, segment: name)
        if case .initializing = inspection {
            // A creator between O_EXCL and publishing its magic, or one that died there.
            MonotonicClock.sleep(nanoseconds: 200_000_000)
            inspection = try header.inspect(mappedSize: existing.size, appGroup: appGroup, segment: name)
        }
        if case .ring = inspection {
            let pid = Int32(bitPattern: header.producerPid.pointee.load(ordering: .acquiring))
            let finished = header.lifecycle.pointee.load(ordering: .acquiring) == ProducerState.finished.rawValue
            if !finished, processIsAlive(pid) { throw .producerRunning(segment: name, pid: pid) }
        }
        existing.unlinkIfStillLinked()
    }

    /// Copies `buffer` into the free slot and publishes it as the newest
    /// frame. Never waits. Returns whether an untaken frame was replaced.
    @discardableResult
    public func publish(
        _ buffer: PixelBuffer, frameNumber: UInt64, captureTime: UInt64,
        orientation: Orientation = .up, checksum: Bool = false
    ) throws(RingError) -> Bool {
        let bytes = buffer.byteCount
        guard bytes <= slotCapacity else { throw .frameTooLarge(bytes: bytes, capacity: slotCapacity) }
        let slot = segment.base + RingLayout.slotOffset(producerSlot, capacity: slotCapacity)
        let payload = slot + FrameMetadata.byteCount
        // Non-temporal: the producer never reads the frame again (and the
        // host reads it on another core), so the copy need not pass through this core's cache.
        cmem_stream_copy(payload, buffer.storage, bytes)
        var metadata = buffer.layout
        metadata.frameNumber = frameNumber
        metadata.captureTime = captureTime
        metadata.orientation = orientation
        metadata.payloadSize = bytes
        metadata.checksum = checksum ? FrameChecksum.of(UnsafeRawBufferPointer(start: payload, count: bytes)) : 0
        metadata.publishTime = MonotonicClock.now()
        metadata.store(to: slot)
        return publishSlot()
    }

    /// Swaps the written slot into the published position (lock-free: the
    /// compare-exchange only retries when the host swapped at that instant).
    private func publishSlot() -> Bool {
        sequence &+= 1
        var current = SlotState(raw: header.slotState.pointee.load(ordering: .acquiring))
        while true {
            let next = current.publishing(sequence: sequence)
            let (exchanged, original) = header.slotState.pointee.compareExchange(
                expected: current.raw, desired: next.raw, ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = SlotState(raw: original)
        }
        producerSlot = current.published
        header.framesWritten.pointee.wrappingAdd(1, ordering: .relaxed)
        if current.isFresh { header.framesDropped.pointee.wrappingAdd(1, ordering: .relaxed) }
        header.wakeHost()
        return current.isFresh
    }

    /// Tells the host about a lifecycle change (paused, resumed, …).
    public func setState(_ state: ProducerState) {
        header.lifecycle.pointee.store(state.rawValue, ordering: .releasing)
        header.lifecycleSeq.pointee.wrappingAdd(1, ordering: .releasing)
        header.wakeHost()
    }

    /// Whether the host asked this producer to stop.
    public var stopRequested: Bool { header.stopRequested.pointee.load(ordering: .acquiring) != 0 }

    /// The frame rate the host asked for, if it asked.
    public var requestedMaxFrameRate: Int? {
        let rate = header.maxFrameRate.pointee.load(ordering: .acquiring)
        return rate == 0 ? nil : Int(rate)
    }

    /// Frames published, and those replaced before the host took them.
    public var counters: (written: UInt64, dropped: UInt64) {
        (header.framesWritten.pointee.load(ordering: .relaxed), header.framesDropped.pointee.load(ordering: .relaxed))
    }

    /// Frames the host took so far (any host, across restarts).
    public var framesTaken: UInt64 { header.framesTaken.pointee.load(ordering: .relaxed) }

    /// Marks the broadcast finished, wakes the host and removes the segment's
    /// name; the host keeps its mapping until it lets go.
    public func finish() {
        guard !isFinished else { return }
        isFinished = true
        setState(.finished)
        segment.unlinkIfStillLinked()
    }
}
