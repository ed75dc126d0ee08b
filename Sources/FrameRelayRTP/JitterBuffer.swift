/// Received VP8 RTP payloads (RFC 7741) waiting to become whole frames: a
/// ring of ``capacity`` slots indexed by sequence number, each slot one
/// value, and the frame put together from them.
///
/// A frame is whole when its packets run without a gap from the one that
/// starts partition 0 (descriptor S=1, PID=0) to the one with the marker
/// bit, all with the frame's timestamp. Finding it walks only that frame's
/// packets, never the whole ring.
package struct JitterBuffer: ~Copyable {
    package static let capacity = 1024
    /// The largest payload kept (an RTP packet past a 1500-byte MTU is not ours).
    package static let payloadBytes = 1600
    /// The largest frame put together.
    package static let frameCapacity = 4 << 20

    package struct Slot {
        package var present = false
        package var marker = false
        package var sequence: UInt16 = 0
        package var timestamp: UInt32 = 0
        package var length = 0
    }

    /// A whole frame's place in the ring.
    package struct Frame {
        package var first: UInt16
        package var packets: Int
        package var bytes: Int
    }

    private var slots = [Slot](repeating: Slot(), count: capacity)
    private let payloads: UnsafeMutableRawPointer
    /// Where ``assemble(_:)`` puts a frame's bytes.
    private let frameStore: UnsafeMutableRawPointer

    package init() {
        payloads = .allocate(byteCount: Self.capacity * Self.payloadBytes, alignment: 16)
        frameStore = .allocate(byteCount: Self.frameCapacity, alignment: 16)
    }

    deinit {
        payloads.deallocate()
        frameStore.deallocate()
    }

    private static func index(_ sequence: UInt16) -> Int { Int(sequence) % capacity }

    private func payload(_ slot: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: payloads + slot * Self.payloadBytes, count: slots[slot].length)
    }

    /// Forgets every packet (a new stream).
    package mutating func removeAll() {
        for slot in slots.indices { slots[slot].present = false }
    }

    /// Keeps one packet's payload; false when it is too long to keep.
    package mutating func insert(_ payload: UnsafeRawBufferPointer, sequence: UInt16, timestamp: UInt32, marker: Bool) -> Bool {
        guard payload.count <= Self.payloadBytes else { return false }
        let slot = Self.index(sequence)
        (payloads + slot * Self.payloadBytes).copyMemory(from: payload.baseAddress!, byteCount: payload.count)
        slots[slot].present = true
        slots[slot].marker = marker
        slots[slot].sequence = sequence
        slots[slot].timestamp = timestamp
        slots[slot].length = payload.count
        return true
    }

    /// The whole frame that the packet `sequence` belongs to, if every one
    /// of its packets is here.
    package func wholeFrame(containing sequence: UInt16) -> Frame? {
        let here = slots[Self.index(sequence)]
        guard here.present, here.sequence == sequence else { return nil }
        let timestamp = here.timestamp
        func belongs(_ sequence: UInt16) -> Bool {
            let slot = slots[Self.index(sequence)]
            return slot.present && slot.sequence == sequence && slot.timestamp == timestamp
        }
        // Back to the packet that starts the frame, then on to the marker.
        var first = sequence
        var walked = 0
        while !Self.startsFrame(payload(Self.index(first))) {
            walked += 1
            guard walked < Self.capacity, belongs(first &- 1) else { return nil }
            first &-= 1
        }
        var last = first
        var bytes = 0
        var packets = 0
        while true {
            guard packets < Self.capacity, belongs(last) else { return nil }
            let payload = payload(Self.index(last))
            let skip = Self.descriptorLength(payload)
            guard skip > 0 else { return nil }
            bytes += payload.count - skip
            packets += 1
            guard bytes <= Self.frameCapacity else { return nil }
            if slots[Self.index(last)].marker { break }
            last &+= 1
        }
        return Frame(first: first, packets: packets, bytes: bytes)
    }

    /// Copies `frame`'s VP8 data (payloads without their descriptors) into
    /// one buffer, valid until the next call, and frees its slots.
    package mutating func assemble(_ frame: Frame) -> UnsafeRawBufferPointer {
        var size = 0
        for index in 0..<frame.packets {
            let slot = Self.index(frame.first &+ UInt16(index))
            let payload = payload(slot)
            let skip = Self.descriptorLength(payload)
            (frameStore + size).copyMemory(from: payload.baseAddress! + skip, byteCount: payload.count - skip)
            size += payload.count - skip
            slots[slot].present = false
        }
        return UnsafeRawBufferPointer(start: frameStore, count: size)
    }

    /// Whether a payload starts a frame: its descriptor has S=1 and partition 0.
    package static func startsFrame(_ payload: UnsafeRawBufferPointer) -> Bool {
        VP8PayloadDescriptor(payload)?.startsFrame ?? false
    }

    /// Bytes of the VP8 payload descriptor at the start of `payload` (0 when it is malformed).
    package static func descriptorLength(_ payload: UnsafeRawBufferPointer) -> Int {
        VP8PayloadDescriptor(payload)?.dataOffset ?? 0
    }
}
