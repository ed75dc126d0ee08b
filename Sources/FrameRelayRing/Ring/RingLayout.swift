/// Where everything lives in a ring segment. Public so that tools and tests
/// (and producers written in other languages) can read the format.
///
/// ### Layout
/// ```
///  0      header (4096 bytes, fields below)
///  4096   slot 0: FrameMetadata (128 bytes), then payload (slotCapacity bytes)
///  4096 + slotStride      slot 1
///  4096 + 2 × slotStride  slot 2        slotStride = align(128 + capacity, 4096)
///
///  header:
///    0  magic "FRMRING1" u64 (written last)   320  producerPid   u32 atomic
///    8  version u32                           324  lifecycle     u32 atomic (ProducerState)
///   12  headerSize u32                        328  lifecycleSeq  u32 atomic
///   16  slotCount u32 (3)                     336  createdAt     u64 (CLOCK_MONOTONIC ns)
///                                             384  slotState     u32 atomic, futex word
///   24  slotCapacity u64                      448  framesWritten u64 atomic (producer)
///   32  slotStride u64                        456  framesDropped u64 atomic (producer)
///   40  segmentSize u64                       512  hostPid       u32 atomic
///   64  appGroupLength u32                    516  stopRequested u32 atomic (host → producer)
///   68  appGroup, UTF-8, 200 bytes            520  maxFrameRate  u32 atomic (host → producer)
///                                             528  framesTaken   u64 atomic (host)
///                                             536  framesInvalid u64 atomic (host)
///                                            1024  setupInfoLength u32, 1028 setupInfo (2048 bytes)
/// ```
/// `slotState` packs the triple buffer: bits 0–1 the published slot, bits
/// 2–3 the host's slot, bit 4 "published and not yet taken", bits 5–31 the
/// publish sequence. The producer owns the third slot.
public enum RingLayout {
    public static let magic: UInt64 = 0x3147_4E49_524D_5246  // "FRMRING1" little-endian
    public static let version: UInt32 = 2
    public static let headerSize = 4096
    public static let slotCount = 3
    public static let maxSetupInfoBytes = 2048
    /// The highest frame rate a host may ask a producer for (`maxFrameRate`).
    public static let maxRequestedFrameRate = 1000

    public static let magicOffset = 0
    public static let versionOffset = 8
    public static let headerSizeOffset = 12
    public static let slotCountOffset = 16
    public static let slotCapacityOffset = 24
    public static let slotStrideOffset = 32
    public static let segmentSizeOffset = 40
    public static let appGroupLengthOffset = 64
    public static let appGroupOffset = 68
    public static let producerPidOffset = 320
    public static let lifecycleOffset = 324
    public static let lifecycleSeqOffset = 328
    public static let createdAtOffset = 336
    public static let slotStateOffset = 384
    public static let framesWrittenOffset = 448
    public static let framesDroppedOffset = 456
    public static let hostPidOffset = 512
    public static let stopRequestedOffset = 516
    public static let maxFrameRateOffset = 520
    public static let framesTakenOffset = 528
    public static let framesInvalidOffset = 536
    public static let setupInfoLengthOffset = 1024
    public static let setupInfoOffset = 1028

    /// Bytes from one slot to the next for a payload capacity.
    public static func slotStride(capacity: Int) -> Int {
        (SlotHeader.byteCount + capacity + 4095) / 4096 * 4096
    }

    /// Byte offset of slot `index`'s metadata.
    public static func slotOffset(_ index: Int, capacity: Int) -> Int {
        headerSize + index * slotStride(capacity: capacity)
    }

    /// Total segment size for a payload capacity.
    public static func segmentSize(capacity: Int) -> Int {
        headerSize + slotCount * slotStride(capacity: capacity)
    }
}

/// The producer's lifecycle as the host sees it (ReplayKit's callbacks).
public enum ProducerState: UInt32, Sendable, CustomStringConvertible {
    case initializing = 0
    case started = 1
    case paused = 2
    case resumed = 3
    case finished = 4

    public var description: String {
        switch self {
        case .initializing: "initializing"
        case .started: "started"
        case .paused: "paused"
        case .resumed: "resumed"
        case .finished: "finished"
        }
    }
}

/// The triple buffer's state word, decoded.
struct SlotState: Equatable {
    static let freshBit: UInt32 = 1 << 4

    var raw: UInt32

    var published: Int { Int(raw & 3) }
    var hostSlot: Int { Int((raw >> 2) & 3) }
    var isFresh: Bool { raw & Self.freshBit != 0 }
    /// The producer's slot: the one neither published nor the host's.
    var producerSlot: Int { 3 - published - hostSlot }

    /// A valid state has three distinct slots.
    var isValid: Bool { published < 3 && hostSlot < 3 && published != hostSlot }

    static let initial = SlotState(raw: 1 | (2 << 2))  // producer 0, published 1 (empty), host 2

    /// The state after the producer publishes its slot.
    func publishing(sequence: UInt32) -> SlotState {
        SlotState(raw: (sequence << 5) | Self.freshBit | UInt32(hostSlot << 2) | UInt32(producerSlot))
    }

    /// The state after the host swaps its slot for the published one.
    func taking() -> SlotState {
        SlotState(raw: (raw & ~31) | UInt32(published << 2) | UInt32(hostSlot))
    }
}
