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
    /// The most packets followed at once: a gap wider than this is a new start.
    static let limit = 512

    private var missing: [UInt16: Entry] = [:]
    /// The highest sequence number heard, extended with its wraps.
    private var highest: Int64?
    private var first: Int64 = 0
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

    /// Packets the stream has had, from the first heard to the highest.
    var expected: UInt64 { highest.map { UInt64($0 - first + 1) } ?? 0 }

    /// Notes a packet that arrived and was new (not a duplicate);
    /// `retransmitted` when it came as a retransmission (RFC 4588 RTX), which
    /// tells a NACK's answer from a packet that was only late.
    mutating func received(_ sequence: UInt16, retransmitted: Bool, now: UInt64) {
        counts.received += 1
        guard let top = highest else {
            highest = Int64(sequence)
            first = Int64(sequence)
            return
        }
        let ahead = Int64(Int16(bitPattern: sequence &- UInt16(truncatingIfNeeded: top)))
        if ahead > 0 {
            if ahead > Int64(Self.limit) {
                // A jump (a new stream after a switch): nothing between is asked for.
                missing.removeAll()
            } else {
                for gap in 1..<ahead { missing[UInt16(truncatingIfNeeded: top + gap)] = Entry(firstSeen: now) }
            }
            highest = top + ahead
        } else if let entry = missing.removeValue(forKey: sequence), entry.tries > 0, retransmitted {
            counts.recovered += 1
            let sample = now &- entry.lastAsked
            roundTrip = roundTrip.map { ($0 * 7 + sample) / 8 } ?? sample
        }
    }

    /// The sequence numbers to ask for now (first asks, and retries one and a
    /// half round trips apart but at least ``retryInterval``), in order;
    /// drops what has been asked for too long.
    mutating func due(now: UInt64, into out: inout [UInt16]) {
        guard !missing.isEmpty, let top = highest else { return }
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
