/// The packets a stream skipped, asked for again (RFC 4585 generic NACK)
/// until they come or the asking is given up, and what that says about the
/// stream: packets expected and received, residual loss, and the round trip
/// from a NACK to the packet it brought. The one rule of when to NACK, for
/// every receiver of ours, with its parameters (``Rule``): the WebRTC
/// subscriber's and `frame-relay receive`'s.
package struct MissingPackets {
    private struct Entry {
        var firstSeen: UInt64
        var lastAsked: UInt64 = 0
        var tries = 0
    }

    /// When and how often to ask.
    package struct Rule: Sendable {
        /// The least time between two asks for one packet (retries come one
        /// and a half round trips apart when that is longer).
        package var retryInterval: UInt64
        /// How many times a packet is asked for, and for how long at most.
        package var maxTries: Int
        package var giveUpAfter: UInt64
        /// The widest gap asked for: one wider is lost whole (counted, never asked).
        package var widestGap: Int

        /// The WebRTC subscriber's: asks up to 10 times in a second, 100 ms
        /// apart at least. Janus 1.1 ignores a NACK for a packet it
        /// retransmitted in the last 200 ms (ice.c, MAX_NACK_IGNORE): asking
        /// sooner only costs bytes.
        package static let webRTC = Rule(retryInterval: 100_000_000, maxTries: 10, giveUpAfter: 1_000_000_000, widestGap: 512)
        /// `frame-relay receive`'s: asks once for each packet of a gap of at
        /// most 64 (its feedback is paid from a tenth of what it received, and
        /// a wider gap is a frame lost whole, for a PLI).
        package static let plainRTP = Rule(retryInterval: 20_000_000, maxTries: 1, giveUpAfter: 1_000_000_000, widestGap: 64)
    }

    package let rule: Rule

    private var missing: [UInt16: Entry] = [:]
    /// The stream's sequence numbers (RFC 3550 A.1): runs, wraps, jumps set aside.
    private var sequences: SequenceTracker?
    /// The round trip from a NACK to the packet it brought (ns), smoothed.
    package private(set) var roundTrip: UInt64?
    package private(set) var counts = Counts()

    package init(rule: Rule) { self.rule = rule }

    package struct Counts: Equatable, Codable, Sendable {
        /// Distinct packets received (duplicates and late copies aside).
        package var received: UInt64 = 0
        /// Sequence numbers asked for, retries counted.
        package var asked: UInt64 = 0
        /// Packets a NACK asked for that came as retransmissions.
        package var recovered: UInt64 = 0
        /// Packets given up on (never came within the tries).
        package var givenUp: UInt64 = 0
    }

    /// Packets the stream has had: from the first heard to the highest, over each run.
    package var expected: UInt64 { sequences?.expected ?? 0 }

    /// Notes a packet that arrived and was new (not a duplicate);
    /// `retransmitted` when it came as a retransmission (RFC 4588 RTX), which
    /// tells a NACK's answer from a packet that was only late. A jump that
    /// the packet after it does not confirm is set aside: neither received nor a gap.
    package mutating func received(_ sequence: UInt16, retransmitted: Bool, now: UInt64) {
        guard sequences != nil else {
            // A packet resent after a NACK can come as far behind as a receiver keeps packets (1,024).
            sequences = SequenceTracker(first: sequence, misorder: 1024)
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
        case .ahead(let ahead) where ahead <= rule.widestGap:
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
    /// drops what has been asked for too long, handing `givenUp` when each
    /// such packet was found missing.
    package mutating func due(now: UInt64, into out: inout [UInt16], givenUp: (UInt64) -> Void = { _ in }) {
        guard !missing.isEmpty, let top = sequences?.highest else { return }
        let retry = max(rule.retryInterval, (roundTrip ?? 0) * 3 / 2)
        for (sequence, var entry) in missing {
            if entry.tries >= rule.maxTries || now &- entry.firstSeen > rule.giveUpAfter {
                missing[sequence] = nil
                counts.givenUp += 1
                givenUp(entry.firstSeen)
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
        let base = UInt16(truncatingIfNeeded: top) &- UInt16(truncatingIfNeeded: rule.widestGap)
        out.sort { $0 &- base < $1 &- base }
    }

    /// Whether anything is waited for.
    package var isEmpty: Bool { missing.isEmpty }
}
