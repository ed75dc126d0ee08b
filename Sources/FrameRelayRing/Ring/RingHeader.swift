import FrameRelaySystem
import Synchronization

/// Typed access to the header of a mapped ring segment. Atomic fields go
/// through `Atomic` with explicit orderings; plain fields are written once by
/// the creator before the magic is published.
struct RingHeader: @unchecked Sendable {
    // Sendable: the pointer is into a shared mapping that the owning
    // RingProducer or RingHost keeps alive; every shared field is atomic.
    let base: UnsafeMutableRawPointer

    func u32(_ offset: Int) -> UnsafeMutablePointer<Atomic<UInt32>> {
        (base + offset).assumingMemoryBound(to: Atomic<UInt32>.self)
    }

    func u64(_ offset: Int) -> UnsafeMutablePointer<Atomic<UInt64>> {
        (base + offset).assumingMemoryBound(to: Atomic<UInt64>.self)
    }

    var magic: UnsafeMutablePointer<Atomic<UInt64>> { u64(RingLayout.magicOffset) }
    var producerPid: UnsafeMutablePointer<Atomic<UInt32>> { u32(RingLayout.producerPidOffset) }
    var lifecycle: UnsafeMutablePointer<Atomic<UInt32>> { u32(RingLayout.lifecycleOffset) }
    var lifecycleSeq: UnsafeMutablePointer<Atomic<UInt32>> { u32(RingLayout.lifecycleSeqOffset) }
    var slotState: UnsafeMutablePointer<Atomic<UInt32>> { u32(RingLayout.slotStateOffset) }
    var framesWritten: UnsafeMutablePointer<Atomic<UInt64>> { u64(RingLayout.framesWrittenOffset) }
    var framesDropped: UnsafeMutablePointer<Atomic<UInt64>> { u64(RingLayout.framesDroppedOffset) }
    var hostPid: UnsafeMutablePointer<Atomic<UInt32>> { u32(RingLayout.hostPidOffset) }
    var stopRequested: UnsafeMutablePointer<Atomic<UInt32>> { u32(RingLayout.stopRequestedOffset) }
    var maxFrameRate: UnsafeMutablePointer<Atomic<UInt32>> { u32(RingLayout.maxFrameRateOffset) }
    var framesTaken: UnsafeMutablePointer<Atomic<UInt64>> { u64(RingLayout.framesTakenOffset) }
    var framesInvalid: UnsafeMutablePointer<Atomic<UInt64>> { u64(RingLayout.framesInvalidOffset) }

    /// The futex word (the same memory as ``slotState``).
    var slotStateWord: UnsafeMutablePointer<UInt32> {
        (base + RingLayout.slotStateOffset).assumingMemoryBound(to: UInt32.self)
    }

    func plainU32(_ offset: Int) -> UInt32 { UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }
    func plainU64(_ offset: Int) -> UInt64 { UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
    func setPlain(_ offset: Int, _ value: UInt32) { base.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt32.self) }
    func setPlain(_ offset: Int, _ value: UInt64) { base.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt64.self) }

    /// Reads a length-prefixed UTF-8 string, clamped to `maxBytes`.
    func string(lengthAt lengthOffset: Int, bytesAt offset: Int, maxBytes: Int) -> String {
        let length = min(Int(plainU32(lengthOffset)), maxBytes)
        let bytes = UnsafeRawBufferPointer(start: base + offset, count: length)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Writes a length-prefixed UTF-8 string, truncated to `maxBytes`.
    func setString(_ value: String, lengthAt lengthOffset: Int, bytesAt offset: Int, maxBytes: Int) {
        let bytes = Array(value.utf8.prefix(maxBytes))
        bytes.withUnsafeBytes { (base + offset).copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        setPlain(lengthOffset, UInt32(bytes.count))
    }

    var appGroupName: String {
        string(lengthAt: RingLayout.appGroupLengthOffset, bytesAt: RingLayout.appGroupOffset, maxBytes: AppGroup.maxLength)
    }

    var setupInfo: String {
        string(lengthAt: RingLayout.setupInfoLengthOffset, bytesAt: RingLayout.setupInfoOffset, maxBytes: RingLayout.maxSetupInfoBytes)
    }

    /// Wakes every host waiting on the slot state.
    func wakeHost() {
        _ = futexWake(slotStateWord)
    }
}
