import FrameRelaySystem
import Synchronization

/// Hands encoded frames from one writer (the share's thread) to any number
/// of readers (viewer connections) without a lock: a byte ring of frames plus
/// a ring of frame records, each published with a release store of the
/// frame's sequence number. A reader copies a frame out, then checks that
/// the writer has not lapped it; a reader that falls behind resyncs on the
/// newest keyframe.
public final class FrameBroadcast: FrameSink, @unchecked Sendable {
    // @unchecked Sendable: the single writer only appends; readers only read
    // records whose sequence they saw published (acquire), and validate after copying.
    public struct Frame {
        public var sequence: UInt64
        public var size: Int
        public var pts: Int64
        public var isKeyframe: Bool
        public var width: Int
        public var height: Int
    }

    private struct Record {
        var sequence: UInt64 = .max
        var position: UInt64 = 0  // absolute byte position in the stream of bytes written
        var size: Int = 0
        var pts: Int64 = 0
        var isKeyframe = false
        var width = 0
        var height = 0
    }

    private let bytes: UnsafeMutableRawPointer
    private let capacity: Int
    private let records: UnsafeMutablePointer<Record>
    private let recordCount = 512
    private let recordSequences: UnsafeMutablePointer<Atomic<UInt64>>
    private var written: UInt64 = 0
    private let writtenPublished = Atomic<UInt64>(0)
    /// Frames published so far (the next sequence number).
    private let published = Atomic<UInt64>(0)
    private let lastKeyframe = Atomic<UInt64>(.max)
    /// The low 32 bits of ``count``, a futex word readers sleep on, and how
    /// many sleep: the writer wakes them only when someone waits.
    private let frameWord: UnsafeMutablePointer<Atomic<UInt32>>
    private let sleepers = Atomic<Int>(0)

    public init(capacity: Int = 16 << 20) {
        self.capacity = capacity
        bytes = .allocate(byteCount: capacity, alignment: 64)
        records = .allocate(capacity: recordCount)
        records.initialize(repeating: Record(), count: recordCount)
        recordSequences = .allocate(capacity: recordCount)
        for i in 0..<recordCount { (recordSequences + i).initialize(to: Atomic(.max)) }
        frameWord = .allocate(capacity: 1)
        frameWord.initialize(to: Atomic(0))
    }

    deinit {
        bytes.deallocate()
        records.deallocate()
        recordSequences.deinitialize(count: recordCount)
        recordSequences.deallocate()
        frameWord.deinitialize(count: 1)
        frameWord.deallocate()
    }

    /// Appends the frame for the viewers (a sink of the share's pipeline).
    public func deliver(_ frame: EncodedFrame, captureTime: UInt64, timing: inout FrameTiming) {
        // The whole picture only: a lower simulcast layer is for narrow links.
        if frame.isTopLayer { append(frame) }
    }

    /// The viewers wait on the share between frames.
    public var isLive: Bool { true }

    /// Appends one frame (writer thread only). Frames larger than a quarter
    /// of the ring are not broadcast.
    public func append(_ frame: EncodedFrame) {
        let (width, height) = (frame.width, frame.height)
        let size = frame.bytes.count
        guard size > 0, size <= capacity / 4 else { return }
        let sequence = published.load(ordering: .relaxed)
        let slot = Int(sequence % UInt64(recordCount))
        recordSequences[slot].store(.max, ordering: .releasing)  // invalidate while rewriting
        let start = Int(written % UInt64(capacity))
        if start + size <= capacity {
            (bytes + start).copyMemory(from: frame.bytes.baseAddress!, byteCount: size)
        } else {
            let first = capacity - start
            (bytes + start).copyMemory(from: frame.bytes.baseAddress!, byteCount: first)
            bytes.copyMemory(from: frame.bytes.baseAddress! + first, byteCount: size - first)
        }
        records[slot] = Record(sequence: sequence, position: written, size: size, pts: frame.pts, isKeyframe: frame.isKeyframe, width: width, height: height)
        written += UInt64(size)
        writtenPublished.store(written, ordering: .releasing)
        recordSequences[slot].store(sequence, ordering: .releasing)
        if frame.isKeyframe { lastKeyframe.store(sequence, ordering: .releasing) }
        published.store(sequence + 1, ordering: .releasing)
        // Sequentially consistent with the sleepers' count in waitForFrame: either a
        // reader sees the new word and does not sleep, or this sees the reader and wakes it.
        frameWord.pointee.store(UInt32(truncatingIfNeeded: sequence + 1), ordering: .sequentiallyConsistent)
        if sleepers.load(ordering: .sequentiallyConsistent) > 0 { _ = futexWake(futexWord) }
    }

    /// Sleeps until frame `sequence` is published, at most `timeoutNanoseconds`.
    public func waitForFrame(_ sequence: UInt64, timeoutNanoseconds: Int64) {
        sleepers.add(1, ordering: .sequentiallyConsistent)
        defer { sleepers.subtract(1, ordering: .sequentiallyConsistent) }
        let word = frameWord.pointee.load(ordering: .sequentiallyConsistent)
        guard sequence >= published.load(ordering: .acquiring) else { return }
        futexWait(futexWord, expected: word, timeoutNanoseconds: timeoutNanoseconds)
    }

    private var futexWord: UnsafeMutablePointer<UInt32> { UnsafeMutableRawPointer(frameWord).assumingMemoryBound(to: UInt32.self) }

    /// The next sequence a new reader should start from: the newest keyframe, if any.
    public var startSequence: UInt64? {
        let key = lastKeyframe.load(ordering: .acquiring)
        return key == .max ? nil : key
    }

    /// Frames published so far.
    public var count: UInt64 { published.load(ordering: .acquiring) }

    /// Copies frame `sequence` into `out` (resized as needed). Returns nil
    /// when it is not published yet; throws ``Lapped`` when the writer has
    /// overwritten it (the reader must resync).
    public func read(_ sequence: UInt64, into out: inout [UInt8]) throws(Lapped) -> Frame? {
        guard sequence < published.load(ordering: .acquiring) else { return nil }
        let slot = Int(sequence % UInt64(recordCount))
        guard recordSequences[slot].load(ordering: .acquiring) == sequence else { throw Lapped() }
        // A seqlock: the record and bytes are copied, then the sequence is checked again below.
        let record = records[slot]
        guard record.size <= capacity / 4 else { throw Lapped() }
        if out.count < record.size { out = [UInt8](repeating: 0, count: record.size) }
        let start = Int(record.position % UInt64(capacity))
        out.withUnsafeMutableBytes { target in
            if start + record.size <= capacity {
                target.baseAddress!.copyMemory(from: bytes + start, byteCount: record.size)
            } else {
                let first = capacity - start
                target.baseAddress!.copyMemory(from: bytes + start, byteCount: first)
                (target.baseAddress! + first).copyMemory(from: bytes, byteCount: record.size - first)
            }
        }
        // Valid only if the writer has not come round to these bytes or this record meanwhile.
        let now = writtenPublished.load(ordering: .acquiring)
        guard now - record.position <= UInt64(capacity), recordSequences[slot].load(ordering: .acquiring) == sequence else { throw Lapped() }
        return Frame(sequence: sequence, size: record.size, pts: record.pts, isKeyframe: record.isKeyframe, width: record.width, height: record.height)
    }

    /// The reader fell behind the writer.
    public struct Lapped: Error {}
}
