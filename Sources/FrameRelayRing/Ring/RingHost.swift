@preconcurrency import Glibc
import Synchronization
import FrameRelaySystem
import FrameRelayFrames

/// What ``RingHost/next(timeoutNanoseconds:)`` saw.
public enum HostEvent {
    /// The newest frame, valid until the next call.
    case frame(FrameView)
    /// A frame whose metadata or checksum failed validation; it was skipped and counted.
    case invalidFrame(InvalidFrame)
    /// Attached to a producer's ring (first time, or a restarted producer).
    case attached(producerPid: Int32, setupInfo: String, createdAt: UInt64)
    /// The producer changed state (started, paused, resumed, finished).
    case lifecycle(ProducerState)
    /// The producer process is gone without finishing (crash, `kill -9`).
    case producerDied(pid: Int32)
    /// The ring attached to was shrunk, unlinked or replaced under the host;
    /// it was let go, and the host waits for the producer's next ring.
    case ringLost(reason: String)
    /// A segment under the App Group's name that the host will not read
    /// (not a ring of this version, or a malformed header); said once per
    /// distinct reason while the host goes on waiting for a good one.
    case refused(RingError)
    /// Nothing happened before the timeout.
    case idle
}

/// Counters of one ring as both sides keep them in its header.
public struct RingCounters: Sendable, Equatable, Codable {
    public var written: UInt64 = 0
    public var dropped: UInt64 = 0
    public var taken: UInt64 = 0
    public var invalid: UInt64 = 0

    public init(written: UInt64 = 0, dropped: UInt64 = 0, taken: UInt64 = 0, invalid: UInt64 = 0) {
        self.written = written
        self.dropped = dropped
        self.taken = taken
        self.invalid = invalid
    }
}

/// The host's end of a frame ring: waits for the App Group's producer
/// (before or after it starts), takes the newest frame zero-copy, and
/// follows the producer through pauses, crashes and restarts.
public final class RingHost {
    public let appGroup: AppGroup
    /// Verify the payload checksum of frames that carry one.
    public var verifyChecksums: Bool
    /// Counters of the ring attached now, or of the last one.
    public private(set) var lastCounters = RingCounters()
    private var attachment: Attachment?
    private let segmentName: String
    private var lastRefusal: String?

    /// A host for `appGroup`; it attaches when the producer's ring appears.
    public init(appGroup: AppGroup, verifyChecksums: Bool = false) {
        self.appGroup = appGroup
        self.verifyChecksums = verifyChecksums
        self.segmentName = appGroup.sharedMemoryName
    }

    deinit { detach() }

    /// Waits at most `timeoutNanoseconds` for something to happen and says
    /// what. Throws only for a segment that is not ours to read.
    public func next(timeoutNanoseconds: UInt64) throws(RingError) -> HostEvent {
        let deadline = MonotonicClock.now() &+ timeoutNanoseconds
        while true {
            if let attachment, attachment.segment.faults != 0 {
                let size = attachment.segment.currentSize.map { "\($0) bytes" } ?? "unknown size"
                detach()
                return .ringLost(reason: "segment shrunk under the host (now \(size))")
            }
            if let attachment {
                if let event = poll(attachment) { return event }
            } else if let event = try attach() {
                return event
            }
            let now = MonotonicClock.now()
            if now >= deadline { return .idle }
            let slice = min(deadline - now, attachment == nil || attachment!.producerGone ? 10_000_000 : 100_000_000)
            if let attachment, !attachment.producerGone {
                futexWait(attachment.header.slotStateWord, expected: attachment.lastSeenState, timeoutNanoseconds: Int64(slice))
            } else {
                MonotonicClock.sleep(nanoseconds: slice)
            }
        }
    }

    /// Asks the producer to finish its broadcast.
    public func requestStop() {
        attachment?.header.stopRequested.pointee.store(1, ordering: .releasing)
    }

    /// Asks the producer to publish at most `framesPerSecond` (0: no limit).
    public func requestMaxFrameRate(_ framesPerSecond: Int) {
        attachment?.header.maxFrameRate.pointee.store(UInt32(clamping: framesPerSecond), ordering: .releasing)
    }

    /// Lets go of the ring; removes the segment if its producer is gone.
    ///
    /// Only a dead producer's segment is removed: a producer that finished
    /// removes its own, and a "finished" that someone else wrote into the
    /// header must not take a live producer's ring away.
    public func detach() {
        guard let attachment else { return }
        lastCounters = attachment.counters
        let me = UInt32(bitPattern: Processor.currentPID)
        _ = attachment.header.hostPid.pointee.compareExchange(expected: me, desired: 0, ordering: .releasing)
        if !processIsAlive(attachment.producerPid) {
            attachment.segment.unlinkIfStillLinked()
        }
        self.attachment = nil
    }

    /// The live host attached to `appGroup`'s ring now, other than this
    /// process, if any: a second host is refused before it opens any output
    /// (a recording it would truncate, a report, a mountpoint).
    public static func otherHost(of appGroup: AppGroup) -> Int32? {
        guard let segment = try? SharedMemorySegment.open(name: appGroup.sharedMemoryName) else { return nil }
        let header = RingHeader(base: segment.base)
        guard case .ring = try? header.inspect(mappedSize: segment.size, appGroup: appGroup, segment: appGroup.sharedMemoryName) else { return nil }
        let holder = Int32(bitPattern: header.hostPid.pointee.load(ordering: .acquiring))
        return holder != 0 && holder != Processor.currentPID && processIsAlive(holder) ? holder : nil
    }

    // MARK: - Attaching

    private func attach() throws(RingError) -> HostEvent? {
        let segment: SharedMemorySegment
        do {
            segment = try SharedMemorySegment.open(name: segmentName)
        } catch {
            switch error {
            case .missing, .empty: return nil  // no producer yet, or one still creating its segment
            default: throw RingError(error, segment: segmentName)
            }
        }
        let header = RingHeader(base: segment.base)
        let inspection: RingHeader.Inspection
        do {
            inspection = try header.inspect(mappedSize: segment.size, appGroup: appGroup, segment: segmentName)
        } catch {
            switch error {
            case .notARing, .versionMismatch, .appGroupMismatch, .malformedHeader:
                // What is in the segment may change (a producer replacing a damaged ring): say it once, keep waiting.
                guard error.description != lastRefusal else { return nil }
                lastRefusal = error.description
                return .refused(error)
            default:
                throw error
            }
        }
        guard case .ring(let capacity) = inspection else {
            return nil  // the producer is still setting it up
        }
        lastRefusal = nil
        if header.lifecycle.pointee.load(ordering: .acquiring) == ProducerState.finished.rawValue {
            // Finished: its producer removes it; if that producer died before it could, the host does.
            if !processIsAlive(Int32(bitPattern: header.producerPid.pointee.load(ordering: .acquiring))) { segment.unlinkIfStillLinked() }
            return nil
        }
        let me = UInt32(bitPattern: Processor.currentPID)
        var holder = header.hostPid.pointee.load(ordering: .acquiring)
        while holder != me {
            if holder != 0, processIsAlive(Int32(bitPattern: holder)) {
                throw .hostRunning(segment: segmentName, pid: Int32(bitPattern: holder))
            }
            let (exchanged, original) = header.hostPid.pointee.compareExchange(expected: holder, desired: me, ordering: .acquiringAndReleasing)
            if exchanged { break }
            holder = original
        }
        let attachment = Attachment(segment: segment, capacity: capacity)
        self.attachment = attachment
        return .attached(producerPid: attachment.producerPid, setupInfo: header.setupInfo, createdAt: header.plainU64(RingLayout.createdAtOffset))
    }

    // MARK: - Polling

    private func poll(_ attachment: Attachment) -> HostEvent? {
        let header = attachment.header
        let state = SlotState(raw: header.slotState.pointee.load(ordering: .acquiring))
        attachment.lastSeenState = state.raw
        if state.isFresh, state.isValid {
            let (exchanged, _) = header.slotState.pointee.compareExchange(
                expected: state.raw, desired: state.taking().raw, ordering: .acquiringAndReleasing)
            if exchanged { return take(slot: state.published, from: attachment) }
            return poll(attachment)
        }
        let sequence = header.lifecycleSeq.pointee.load(ordering: .acquiring)
        if sequence != attachment.lifecycleSeq {
            attachment.lifecycleSeq = sequence
            let raw = header.lifecycle.pointee.load(ordering: .acquiring)
            let lifecycle = ProducerState(rawValue: raw) ?? .initializing
            if lifecycle == .finished { detach() }
            return .lifecycle(lifecycle)
        }
        let now = MonotonicClock.now()
        if now >= attachment.nextCheck {
            // A few times a second: is the name still this segment, and its size what was mapped?
            attachment.nextCheck = now &+ 100_000_000
            if !attachment.producerGone, !attachment.segment.isStillLinked {
                detach()
                return .ringLost(reason: "ring unlinked or replaced")
            }
            if let size = attachment.segment.currentSize, size != attachment.segment.size {
                detach()
                return .ringLost(reason: "segment resized to \(size) bytes under the host")
            }
        }
        if attachment.producerGone {
            // Wait for a new producer's segment under the same name.
            if let current = FileIdentity.ofSharedMemory(name: segmentName), current != attachment.segment.identity {
                detach()
            }
            return nil
        }
        if !processIsAlive(attachment.producerPid) {
            attachment.producerGone = true
            lastCounters = attachment.counters
            return .producerDied(pid: attachment.producerPid)
        }
        return nil
    }

    private func take(slot: Int, from attachment: Attachment) -> HostEvent {
        attachment.header.framesTaken.pointee.wrappingAdd(1, ordering: .relaxed)
        let base = UnsafeRawPointer(attachment.segment.base + RingLayout.slotOffset(slot, capacity: attachment.capacity))
        let payload = base + SlotHeader.byteCount
        do throws(InvalidFrame) {
            let metadata = try SlotHeader.load(from: base, capacity: attachment.capacity)
            if verifyChecksums, metadata.checksum != 0,
                FrameChecksum.of(UnsafeRawBufferPointer(start: payload, count: metadata.payloadSize)) != metadata.checksum
            {
                throw .checksumMismatch(frameNumber: metadata.frameNumber)
            }
            return .frame(FrameView(metadata: metadata, payload: payload))
        } catch {
            attachment.header.framesInvalid.pointee.wrappingAdd(1, ordering: .relaxed)
            return .invalidFrame(error)
        }
    }

    /// Counters of the ring attached now (or the last one).
    public var counters: RingCounters {
        if let attachment { lastCounters = attachment.counters }
        return lastCounters
    }
}

/// One mapped ring and what the host remembers about it.
private final class Attachment {
    let segment: SharedMemorySegment
    let header: RingHeader
    let capacity: Int
    let producerPid: Int32
    var lifecycleSeq: UInt32 = 0
    var lastSeenState: UInt32 = 0
    var nextCheck: UInt64 = 0
    var producerGone = false

    init(segment: consuming SharedMemorySegment, capacity: Int) {
        self.header = RingHeader(base: segment.base)
        self.capacity = capacity
        self.producerPid = Int32(bitPattern: header.producerPid.pointee.load(ordering: .acquiring))
        self.segment = segment
    }

    var counters: RingCounters {
        RingCounters(
            written: header.framesWritten.pointee.load(ordering: .relaxed),
            dropped: header.framesDropped.pointee.load(ordering: .relaxed),
            taken: header.framesTaken.pointee.load(ordering: .relaxed),
            invalid: header.framesInvalid.pointee.load(ordering: .relaxed))
    }
}
