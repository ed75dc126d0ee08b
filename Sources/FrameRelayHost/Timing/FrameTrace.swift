import Synchronization

/// Every stage time of one frame, on CLOCK_MONOTONIC (ns; 0: stage not run).
public struct FrameTiming: Sendable, Codable, Equatable {
    public var frame: UInt64 = 0
    /// The frame that last changed the picture it carries, as the producer said (nil: not said).
    public var shows: UInt64?
    public var captured: UInt64 = 0
    public var published: UInt64 = 0
    public var taken: UInt64 = 0
    public var converted: UInt64 = 0
    public var encoded: UInt64 = 0
    /// When its packets were handed to the RTP pacer, and when the last of them left it.
    public var queued: UInt64 = 0
    public var sent: UInt64 = 0
    /// The VP8 PictureID it was sent with over RTP (none when it was not).
    public var pictureID: UInt16?
    /// With simulcast streams, what each one sent of it (smallest first; none when it sent nothing).
    public var streams = SentStreams()
    /// Sent on its own by the layers that held its change back from their
    /// base temporal layer, when no frame came to carry it
    /// (``SharePipeline/flushHeldBack(now:)``): in the trace (`"heldBack":true`),
    /// out of the latency figures, the host's and its viewers' (it took nothing new).
    public var heldBack = false
    public init() {}

    /// One line of a `--trace` file (JSON, newline-terminated); with
    /// simulcast streams, `streams` lists each one's `[stream, PictureID,
    /// width, keyframe, bytes]`.
    public func jsonLine(share: String) -> String {
        let streams = self.streams.sent.map { "[\($0.stream),\($0.picture),\($0.width),\($0.keyframe ? 1 : 0),\($0.bytes)]" }
        return "{\"share\":\"\(share)\",\"frame\":\(frame),\(shows.map { "\"shows\":\($0)," } ?? "")\"captured\":\(captured),\"published\":\(published),"
            + "\"taken\":\(taken),\"converted\":\(converted),\"encoded\":\(encoded),\"queued\":\(queued),\"sent\":\(sent)"
            + (pictureID.map { ",\"picture\":\($0)" } ?? "") + (streams.isEmpty ? "" : ",\"streams\":[\(streams.joined(separator: ","))]")
            + (heldBack ? ",\"heldBack\":true" : "") + "}\n"
    }
}

/// What each simulcast stream sent of one frame, in a fixed size (the
/// trace's ring allocates nothing per frame).
public struct SentStreams: Sendable, Codable, Equatable {
    public struct Sent: Sendable, Codable, Equatable {
        public var stream: Int
        public var picture: UInt16
        public var width: Int
        public var keyframe: Bool
        /// The encoded frame's size: a keyframe's tells a viewer behind Janus which one it got.
        public var bytes: Int

        public init(stream: Int, picture: UInt16, width: Int, keyframe: Bool, bytes: Int) {
            self.stream = stream
            self.picture = picture
            self.width = width
            self.keyframe = keyframe
            self.bytes = bytes
        }
    }

    private var first: Sent?
    private var second: Sent?
    private var third: Sent?

    public init() {}

    /// Notes what stream `sent.stream` (0...2) sent.
    public mutating func record(_ sent: Sent) {
        switch sent.stream {
        case 0: first = sent
        case 1: second = sent
        default: third = sent
        }
    }

    public var sent: [Sent] { [first, second, third].compactMap { $0 } }
}

/// A single-producer, single-consumer ring of ``FrameTiming``: the share's
/// thread pushes one record per frame without allocating or locking; the
/// reporting thread drains it. When the reader falls behind, records are
/// dropped and counted, never waited for.
public final class FrameTraceRing: @unchecked Sendable {
    // @unchecked Sendable: slot i is written only by the producer before it
    // publishes `head` past i (release), and read only by the consumer after
    // it sees that (acquire) and before it moves `tail` past i.
    private let capacity: Int
    private let slots: UnsafeMutablePointer<FrameTiming>
    private let head = Atomic<Int>(0)
    private let tail = Atomic<Int>(0)
    /// Records lost because the ring was full.
    public let overflows = Atomic<Int>(0)

    public init(capacity: Int = 8192) {
        self.capacity = capacity
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: FrameTiming(), count: capacity)
    }

    deinit { slots.deallocate() }

    /// Adds a record (producer thread only).
    @inline(__always)
    public func push(_ timing: FrameTiming) {
        let h = head.load(ordering: .relaxed)
        guard h - tail.load(ordering: .acquiring) < capacity else {
            overflows.wrappingAdd(1, ordering: .relaxed)
            return
        }
        slots[h % capacity] = timing
        head.store(h + 1, ordering: .releasing)
    }

    /// Hands every pending record to `body` (consumer thread only).
    public func drain(_ body: (FrameTiming) -> Void) {
        let t = tail.load(ordering: .relaxed)
        let h = head.load(ordering: .acquiring)
        for index in t..<h { body(slots[index % capacity]) }
        tail.store(h, ordering: .releasing)
    }
}
