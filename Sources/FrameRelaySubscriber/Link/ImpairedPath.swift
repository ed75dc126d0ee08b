import FrameRelaySystem

/// One direction of an impaired link, in the subscriber's own socket
/// layer: a packet handed to it is dropped (loss, or a full rate queue) or
/// held until the link would deliver it (the rate's queueing, then delay
/// ± jitter, in order), as a netem and tbf pair would in the kernel. Packets are
/// copied into preallocated storage; nothing is allocated per packet.
final class ImpairedPath {
    let conditions: LinkConditions
    /// Whether the rate applies in this direction.
    let limitsRate: Bool
    static let slotBytes = 1536
    /// How many packets it can hold at once.
    let slots: Int
    private let storage: UnsafeMutableRawPointer
    /// Where each held packet came from (in) or goes to (out).
    private var addresses: [SocketAddress]
    private var free: [Int32]
    /// Held packets as (due time, admission order, slot, length), a binary
    /// min-heap on due time then order: packets due at once leave in order.
    private var heap: [Held] = []
    private var admitted: UInt64 = 0
    /// When the rate-limited link has sent everything admitted so far, and when the last packet admitted is due.
    private var linkFree: UInt64 = 0
    private var lastDue: UInt64 = 0
    private var random: UInt64
    /// Packets dropped at random, and because the rate's queue was full.
    private(set) var lost: UInt64 = 0
    private(set) var overflowed: UInt64 = 0

    init(_ conditions: LinkConditions, limitsRate: Bool, slots: Int) {
        self.conditions = conditions
        self.limitsRate = limitsRate && conditions.rate > 0
        self.slots = slots
        storage = .allocate(byteCount: slots * Self.slotBytes, alignment: 16)
        addresses = Array(repeating: SocketAddress(), count: slots)
        free = (0..<Int32(slots)).reversed().map { $0 }
        heap.reserveCapacity(slots)
        random = UInt64.random(in: 1...UInt64.max)
    }

    deinit { storage.deallocate() }

    /// xorshift64*: a uniform value in [0, 1).
    private func uniform() -> Double {
        random ^= random >> 12
        random ^= random << 25
        random ^= random >> 27
        return Double((random &* 2_685_821_657_736_338_717) >> 11) / Double(1 << 53)
    }

    /// Hands `packet` (from or to `address`) to the link at `now`; false when the link drops it.
    func admit(_ packet: UnsafeRawBufferPointer, address: SocketAddress, now: UInt64) -> Bool {
        if conditions.loss > 0, uniform() < conditions.loss {
            lost += 1
            return false
        }
        var departs = now
        if limitsRate {
            // The packet leaves once the link has sent what came before it.
            let start = max(now, linkFree)
            guard start - now <= conditions.queue else {
                overflowed += 1
                return false
            }
            departs = start + UInt64(packet.count + 28) * 8 * 1_000_000_000 / conditions.rate  // with IP and UDP headers
            linkFree = departs
        }
        var due = departs + conditions.delay
        if conditions.jitter > 0 {
            // Jitter varies each packet's delay but keeps their order, as a
            // queue whose service time varies does (netem's jitter reorders;
            // packets 0.3 ms apart would then arrive shuffled, which is not what a viewer's path does).
            due = max(lastDue, due - conditions.jitter + UInt64(uniform() * Double(2 * conditions.jitter)))
            lastDue = due
        }
        guard packet.count <= Self.slotBytes, let slot = free.popLast() else {
            overflowed += 1
            return false
        }
        (storage + Int(slot) * Self.slotBytes).copyMemory(from: packet.baseAddress!, byteCount: packet.count)
        addresses[Int(slot)] = address
        admitted += 1
        push(Held(due: due, order: admitted, slot: slot, length: Int32(packet.count)))
        return true
    }

    /// When the next held packet is due, if any.
    var nextDue: UInt64? { heap.first?.due }

    /// Hands every packet due by `now` to `deliver`, in the order the link delivers them.
    func release(now: UInt64, _ deliver: (UnsafeMutableRawBufferPointer, SocketAddress) -> Void) {
        while let first = heap.first, first.due <= now {
            pop()
            deliver(UnsafeMutableRawBufferPointer(start: storage + Int(first.slot) * Self.slotBytes, count: Int(first.length)), addresses[Int(first.slot)])
            free.append(first.slot)
        }
    }

    private struct Held {
        var due: UInt64
        var order: UInt64
        var slot: Int32
        var length: Int32

        func before(_ other: Held) -> Bool { due < other.due || (due == other.due && order < other.order) }
    }

    private func push(_ entry: Held) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].before(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private func pop() {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].before(heap[smallest]) { smallest = left }
            if right < heap.count, heap[right].before(heap[smallest]) { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
