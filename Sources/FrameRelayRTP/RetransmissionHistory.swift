/// The last ``capacity`` RTP packets a stream sent, kept to answer NACKs,
/// with the limits that keep NACKs (which anyone who knows the SSRC can
/// send) from making the stream more than twice its rate.
package struct RetransmissionHistory: ~Copyable {
    package static let capacity = 1024
    /// Retransmissions allowed at once; one more is allowed for each packet sent first.
    package static let resendBurst = 256
    /// The least time between two retransmissions of one packet (ns).
    package static let resendInterval: UInt64 = 100_000_000

    private struct Entry {
        var sequence: UInt16 = 0
        var length = 0
        /// When it was last sent again (CLOCK_MONOTONIC ns), 0 for never.
        var resentAt: UInt64 = 0
    }

    private let packetSize: Int
    private let store: UnsafeMutableRawPointer
    private var entries = [Entry](repeating: Entry(), count: capacity)
    private var tokens = resendBurst

    /// Room for packets of up to `packetSize` bytes.
    package init(packetSize: Int) {
        self.packetSize = packetSize
        store = .allocate(byteCount: packetSize * Self.capacity, alignment: 16)
    }

    deinit { store.deallocate() }

    /// Keeps a packet about to be sent for the first time.
    package mutating func record(_ packet: UnsafeRawBufferPointer, sequence: UInt16) {
        let slot = Int(sequence) % Self.capacity
        (store + slot * packetSize).copyMemory(from: packet.baseAddress!, byteCount: packet.count)
        entries[slot] = Entry(sequence: sequence, length: packet.count, resentAt: 0)
        tokens = min(tokens + 1, Self.resendBurst)
    }

    /// The packet to send again for a NACK of `sequence`, counted as resent
    /// at `now`; nil when it is no longer held, was resent less than
    /// ``resendInterval`` ago, or the retransmission budget is spent.
    package mutating func resend(_ sequence: UInt16, now: UInt64) -> UnsafeRawBufferPointer? {
        let slot = Int(sequence) % Self.capacity
        let entry = entries[slot]
        guard entry.sequence == sequence, entry.length > 0, tokens > 0,
            entry.resentAt == 0 || now &- entry.resentAt >= Self.resendInterval
        else { return nil }
        entries[slot].resentAt = now
        tokens -= 1
        return UnsafeRawBufferPointer(start: store + slot * packetSize, count: entry.length)
    }

    /// The packet kept for `sequence`, to send for the first time; nil when a later one took its place.
    package func packet(_ sequence: UInt16) -> UnsafeRawBufferPointer? {
        let slot = Int(sequence) % Self.capacity
        guard entries[slot].sequence == sequence, entries[slot].length > 0 else { return nil }
        return UnsafeRawBufferPointer(start: store + slot * packetSize, count: entries[slot].length)
    }
}
