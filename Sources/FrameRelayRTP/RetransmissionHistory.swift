/// The last ``capacity`` RTP packets a stream sent, kept to answer NACKs,
/// with the limits that keep NACKs (which anyone who knows the SSRC can
/// send) from making the stream more than twice its rate to any one
/// destination. The limits are each destination's own: one that asks for
/// everything spends its own budget, not another's.
package struct RetransmissionHistory: ~Copyable {
    package static let capacity = 1024
    /// Retransmissions allowed at once to a destination; one more is allowed for each packet sent first.
    package static let resendBurst = 256
    /// The least time between two retransmissions of one packet to one destination (ns).
    package static let resendInterval: UInt64 = 100_000_000

    private struct Entry {
        var sequence: UInt16 = 0
        var length = 0
    }

    private let packetSize: Int
    private let destinations: Int
    private let store: UnsafeMutableRawPointer
    private var entries = [Entry](repeating: Entry(), count: capacity)
    /// When each packet was last sent again to each destination (CLOCK_MONOTONIC ns, 0 for never): slot × destinations + destination.
    private var resentAt: [UInt64]
    /// Each destination's retransmissions left.
    private var tokens: [Int]

    /// Room for packets of up to `packetSize` bytes, resent to any of `destinations`.
    package init(packetSize: Int, destinations: Int = 1) {
        precondition(destinations >= 1)
        self.packetSize = packetSize
        self.destinations = destinations
        store = .allocate(byteCount: packetSize * Self.capacity, alignment: 16)
        resentAt = Array(repeating: 0, count: Self.capacity * destinations)
        tokens = Array(repeating: Self.resendBurst, count: destinations)
    }

    deinit { store.deallocate() }

    /// Keeps a packet about to be sent for the first time.
    package mutating func record(_ packet: UnsafeRawBufferPointer, sequence: UInt16) {
        let slot = Int(sequence) % Self.capacity
        (store + slot * packetSize).copyMemory(from: packet.baseAddress!, byteCount: packet.count)
        entries[slot] = Entry(sequence: sequence, length: packet.count)
        for destination in 0..<destinations {
            resentAt[slot * destinations + destination] = 0
            tokens[destination] = min(tokens[destination] + 1, Self.resendBurst)
        }
    }

    /// The packet to send again to `destination` for its NACK of `sequence`,
    /// counted as resent to it at `now`; nil when it is no longer held, was
    /// resent to it less than ``resendInterval`` ago, or its budget is spent.
    package mutating func resend(_ sequence: UInt16, to destination: Int = 0, now: UInt64) -> UnsafeRawBufferPointer? {
        let slot = Int(sequence) % Self.capacity
        let entry = entries[slot], at = slot * destinations + destination
        guard (0..<destinations).contains(destination), entry.sequence == sequence, entry.length > 0, tokens[destination] > 0,
            resentAt[at] == 0 || now &- resentAt[at] >= Self.resendInterval
        else { return nil }
        resentAt[at] = now
        tokens[destination] -= 1
        return UnsafeRawBufferPointer(start: store + slot * packetSize, count: entry.length)
    }

    /// The packet kept for `sequence`, to send for the first time; nil when a later one took its place.
    package func packet(_ sequence: UInt16) -> UnsafeRawBufferPointer? {
        let slot = Int(sequence) % Self.capacity
        guard entries[slot].sequence == sequence, entries[slot].length > 0 else { return nil }
        return UnsafeRawBufferPointer(start: store + slot * packetSize, count: entries[slot].length)
    }
}
