import FrameRelayRTP

/// The packets a stream skipped, asked for again (RFC 4585 generic NACK)
/// until they come or the asking is given up, and what that says about the
/// stream: packets expected and received, residual loss, and the round trip
/// from a NACK to the packet it brought.
struct MissingPackets {
    private struct Entry {
        var firstSeen: UInt64
        var lastAsked: UInt64 = 0
        var tries = 0
    }

    /// The least time between two asks for one packet. Janus 1.1 ignores a
    /// NACK for a packet it retransmitted in the last 200 ms (ice.c,
    /// MAX_NACK_IGNORE): asking sooner only costs bytes.
    static let retryInterval: UInt64 = 100_000_000
    /// How many times a packet is asked for, and for how long at most.
    static let maxTries = 10
    static let giveUpAfter: UInt64 = 1_000_000_000
    /// The widest gap asked for: one wider is lost whole (counted, never asked).
    static let limit = 512

    private var missing: [UInt16: Entry] = [:]
    /// The stream's sequence numbers (RFC 3550 A.1): runs, wraps, jumps set aside.
    private var sequences: SequenceTracker?
    /// The round trip from a NACK to the packet it brought (ns), smoothed.
    private(set) var roundTrip: UInt64?
    private(set) var counts = Counts()

    struct Counts: Equatable, Codable, Sendable {
        /// Distinct packets received (duplicates and late copies aside).
        var received: UInt64 = 0
        /// Sequence numbers asked for, retries counted.
        var asked: UInt64 = 0
        /// Packets a NACK asked for that came as retransmissions.
        var recovered: UInt64 = 0
        /// Packets given up on (never came within the tries).
        var givenUp: UInt64 = 0
    }

    /// Packets the stream has had: from the first heard to the highest, over each run.
    var expected: UInt64 { sequences?.expected ?? 0 }

    /// Notes a packet that arrived and was new (not a duplicate);
    /// `retransmitted` when it came as a retransmission (RFC 4588 RTX), which
    /// tells a NACK's answer from a packet that was only late. A jump that
    /// the packet after it does not confirm is set aside: neither received nor a gap.
    mutating func received(_ sequence: UInt16, retransmitted: Bool, now: UInt64) {
        guard sequences != nil else {
            // A packet resent after a NACK can be as far behind as the tracker follows frames.
            sequences = SequenceTracker(first: sequence, misorder: UInt16(FrameTracker.capacity))
            counts.received += 1
            return
        }
        let top = UInt16(truncatingIfNeeded: sequences!.highest)
        switch sequences!.update(sequence) {
        case .setAside:
            return
        case .restarted:
            // The sender started again: what the run before missed is lost, nothing of it asked for.
            missing.removeAll()
        case .ahead(let ahead) where ahead <= Self.limit:
            for gap in 1..<ahead { missing[top &+ UInt16(gap)] = Entry(firstSeen: now) }
        case .ahead:
            break
        case .late:
            if let entry = missing.removeValue(forKey: sequence), entry.tries > 0, retransmitted {
                counts.recovered += 1
                let sample = now &- entry.lastAsked
                roundTrip = roundTrip.map { ($0 * 7 + sample) / 8 } ?? sample
            }
        }
        counts.received += 1
    }

    /// The sequence numbers to ask for now (first asks, and retries one and a
    /// half round trips apart but at least ``retryInterval``), in order;
    /// drops what has been asked for too long.
    mutating func due(now: UInt64, into out: inout [UInt16]) {
        guard !missing.isEmpty, let top = sequences?.highest else { return }
        let retry = max(Self.retryInterval, (roundTrip ?? 0) * 3 / 2)
        for (sequence, var entry) in missing {
            if entry.tries >= Self.maxTries || now &- entry.firstSeen > Self.giveUpAfter {
                missing[sequence] = nil
                counts.givenUp += 1
                continue
            }
            guard entry.tries == 0 || now &- entry.lastAsked >= retry else { continue }
            entry.tries += 1
            entry.lastAsked = now
            missing[sequence] = entry
            out.append(sequence)
        }
        counts.asked += UInt64(out.count)
        // In wrap-around order from the oldest, as a NACK lists them.
        let base = UInt16(truncatingIfNeeded: top) &- UInt16(Self.limit)
        out.sort { $0 &- base < $1 &- base }
    }

    /// Whether anything is waited for.
    var isEmpty: Bool { missing.isEmpty }
}
