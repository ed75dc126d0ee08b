/// A stream's RTP sequence numbers as RFC 3550 appendix A.1 follows them:
/// extended with their wraps; a packet up to 3,000 ahead of the highest is
/// in order (the numbers between are missing), up to 100 behind (or as far
/// as the follower says: a resent packet can be farther) is late
/// (reordered, or resent); a jump farther than that either way is taken
/// only when the packet after it follows it (the sender restarted: a new
/// run begins there), and is otherwise set aside, counting for nothing. So
/// one forged or stray packet cannot make millions of packets "expected".
///
/// Packets expected are the runs' spans added up: from each run's first
/// sequence number to its highest.
package struct SequenceTracker {
    /// How far ahead a packet may be and still belong to the run, and (by default) how far behind.
    package static let maxDropout: UInt16 = 3000
    package static let maxMisorder: UInt16 = 100
    private let misorder: UInt16

    /// What a packet's sequence number says.
    package enum Verdict: Equatable {
        /// The new highest, `ahead` past the one before (1: the next; more: a gap).
        case ahead(Int)
        /// At or behind the highest, within reorder reach (a duplicate, a late or a resent packet).
        case late
        /// A jump the packet before confirmed: a new run starts here.
        case restarted
        /// A jump not (yet) confirmed: the packet is not the stream's.
        case setAside
    }

    /// The current run's first and highest sequence numbers, extended (wraps in the high bits).
    package private(set) var base: UInt32
    package private(set) var highest: UInt32
    /// Packets expected in the runs before this one.
    package private(set) var earlierExpected: UInt64 = 0
    /// The sequence number that would confirm a jump (the one after it).
    private var confirming: UInt16?

    /// A stream starting at `first`, whose late packets come at most `misorder` behind.
    package init(first: UInt16, misorder: UInt16 = maxMisorder) {
        precondition(misorder < UInt16.max - Self.maxDropout)
        self.misorder = misorder
        base = UInt32(first)
        highest = UInt32(first)
    }

    /// Packets expected in the current run, and in all runs.
    package var runExpected: UInt64 { UInt64(highest &- base) + 1 }
    package var expected: UInt64 { earlierExpected + runExpected }

    /// Takes a packet's sequence number (after the first's).
    package mutating func update(_ sequence: UInt16) -> Verdict {
        let delta = sequence &- UInt16(truncatingIfNeeded: highest)
        if delta != 0, delta < Self.maxDropout {
            // In order, with a permissible gap; past 65,535 a new cycle.
            highest = highest &+ UInt32(delta)
            confirming = nil
            return .ahead(Int(delta))
        }
        if delta == 0 || delta > UInt16.max - misorder { return .late }
        // A very large jump: a restart only when this packet follows the one that jumped.
        guard sequence == confirming else {
            confirming = sequence &+ 1
            return .setAside
        }
        earlierExpected += runExpected
        base = UInt32(sequence)
        highest = UInt32(sequence)
        confirming = nil
        return .restarted
    }
}
