import FrameRelaySystem

/// One direction of an impaired link, in the subscriber's own socket
/// layer: a packet handed to it is dropped (loss, a full rate queue, or a
/// full buffer) or held until the link would deliver it (the rate's
/// queueing, then delay ± jitter, in order), as a netem and tbf pair would
/// in the kernel. Packets of any size a UDP datagram has (up to 64 KB) are
/// copied into one preallocated byte ring; nothing is allocated per packet.
///
/// Packets leave in the order they came: each is due no sooner than the
/// one before it (the rate sends them one after the other, and jitter
/// varies each delay but keeps the order, as a queue whose service time
/// varies does), so the held packets are a first-in, first-out queue.
final class ImpairedPath {
    let conditions: LinkConditions
    /// What the link does now (``LinkConditions/changes``), from its first packet on.
    private var current: LinkConditions
    private var started: UInt64?
    /// Whether the rate applies in this direction.
    let limitsRate: Bool
    /// The bytes it can hold at once (every packet held, and the room a packet that would not fit before the ring's end leaves there).
    let capacity: Int
    private let storage: UnsafeMutableRawPointer
    /// Held packets, oldest first, in a ring of ``Held``: `count` of them from `head`.
    private var held: [Held]
    private var head = 0
    private var count = 0
    /// The bytes: the oldest held packet's start, where the next one goes,
    /// and whether that has wrapped to before the oldest (the end of the ring
    /// is then held up to where the packet that wrapped left it).
    private var readOffset = 0
    private var writeOffset = 0
    private var wrapped = false
    /// When the rate-limited link has sent everything admitted so far, and when the last packet admitted is due.
    private var linkFree: UInt64 = 0
    private var lastDue: UInt64 = 0
    private var random: UInt64
    /// Packets dropped at random, because the rate's queue was full, and because the buffer was full.
    private(set) var lost: UInt64 = 0
    private(set) var overflowed: UInt64 = 0
    private(set) var bufferFull: UInt64 = 0

    /// The addresses packets came from or go to (a path has a peer or two; ``Held`` names one by its index).
    private var addresses: [SocketAddress] = []
    static let addressLimit = 8

    /// A path holding up to `capacity` bytes of packets at once, and as
    /// many packets as that holds of 256 bytes each (media packets are
    /// about 1,200, feedback about 100).
    init(_ conditions: LinkConditions, limitsRate: Bool, capacity: Int) {
        self.conditions = conditions
        current = conditions
        self.limitsRate = limitsRate && (conditions.rate > 0 || conditions.changes.contains { $0.conditions.rate > 0 })
        self.capacity = capacity
        storage = .allocate(byteCount: capacity, alignment: 16)
        held = Array(repeating: Held(), count: max(64, capacity / 256))
        addresses.reserveCapacity(Self.addressLimit)
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
        // A link that changes over time: as it is this long after its first packet.
        if !conditions.changes.isEmpty {
            let start = started ?? now
            started = start
            current = conditions.at(now - start)
        }
        let conditions = current
        if conditions.loss > 0, uniform() < conditions.loss {
            lost += 1
            return false
        }
        var departs = now
        if limitsRate, conditions.rate > 0 {
            // The packet leaves once the link has sent what came before it (the link's time is taken only once it is held).
            let start = max(now, linkFree)
            guard start - now <= conditions.queue else {
                overflowed += 1
                return false
            }
            departs = start + UInt64(packet.count + 28) * 8 * 1_000_000_000 / conditions.rate  // with IP and UDP headers
        }
        var due = departs + conditions.delay
        if conditions.jitter > 0 { due = due - conditions.jitter + UInt64(uniform() * Double(2 * conditions.jitter)) }
        due = max(lastDue, due)
        guard count < held.count, let index = index(of: address), let (offset, wraps) = room(for: packet.count) else {
            bufferFull += 1
            return false
        }
        lastDue = due
        if limitsRate, conditions.rate > 0 { linkFree = departs }
        if packet.count > 0 { (storage + offset).copyMemory(from: packet.baseAddress!, byteCount: packet.count) }
        held[(head + count) % held.count] = Held(due: due, offset: Int32(offset), length: Int32(packet.count), wraps: wraps, address: UInt8(index))
        count += 1
        return true
    }

    /// `address`'s index among ``addresses`` (added when new; nil when the table is full).
    private func index(of address: SocketAddress) -> Int? {
        if let known = addresses.firstIndex(where: { $0.isIdentical(to: address) }) { return known }
        if count == 0 { addresses.removeAll(keepingCapacity: true) }
        guard addresses.count < Self.addressLimit else { return nil }
        addresses.append(address)
        return addresses.count - 1
    }

    /// Where `length` bytes go in the ring (taken), and whether they wrap to its start; nil when they do not fit.
    private func room(for length: Int) -> (offset: Int, wraps: Bool)? {
        if count == 0 { (readOffset, writeOffset, wrapped) = (0, 0, false) }
        let offset: Int, wraps: Bool
        if !wrapped, capacity - writeOffset >= length {
            (offset, wraps) = (writeOffset, false)
        } else if !wrapped, readOffset >= length {
            // Not enough room before the end: start again at the beginning, behind the oldest packet.
            (offset, wraps) = (0, true)
            wrapped = true
        } else if wrapped, readOffset - writeOffset >= length {
            (offset, wraps) = (writeOffset, false)
        } else {
            return nil
        }
        writeOffset = offset + length
        return (offset, wraps)
    }

    /// How many packets it holds now.
    var heldCount: Int { count }

    /// When the next held packet is due, if any.
    var nextDue: UInt64? { count > 0 ? held[head].due : nil }

    /// Hands every packet due by `now` to `deliver`, in the order the link delivers them.
    func release(now: UInt64, _ deliver: (UnsafeMutableRawBufferPointer, SocketAddress) -> Void) {
        while count > 0, held[head].due <= now {
            let packet = held[head]
            head = (head + 1) % held.count
            count -= 1
            // The reader passed the wrap: the bytes are in one piece again.
            if packet.wraps { wrapped = false }
            readOffset = Int(packet.offset) + Int(packet.length)
            deliver(UnsafeMutableRawBufferPointer(start: storage + Int(packet.offset), count: Int(packet.length)), addresses[Int(packet.address)])
        }
    }

    private struct Held {
        var due: UInt64 = 0
        var offset: Int32 = 0
        var length: Int32 = 0
        /// It was placed at the ring's start, after the end ran out of room.
        var wraps = false
        /// Its index in ``addresses``.
        var address: UInt8 = 0
    }
}
