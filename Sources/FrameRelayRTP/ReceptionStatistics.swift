/// What a receiver tells the sender in each report block (RFC 3550 §6.4.1):
/// packets lost, the highest sequence number heard, interarrival jitter and
/// the delay since the sender's last report. Kept per followed stream, with
/// the arithmetic of RFC 3550 appendices A.1 (``SequenceTracker``), A.3 and A.8.
package struct ReceptionStatistics {
    /// The report block's fields, as they go on the wire.
    package struct Block: Equatable {
        package var fractionLost: UInt8
        /// Packets lost since the stream began (24 bits, signed: duplicates can make it negative).
        package var cumulativeLost: Int32
        package var extendedHighestSequence: UInt32
        /// Interarrival jitter in 90 kHz units.
        package var jitter: UInt32
        /// The middle 32 bits of the last Sender Report's NTP time, and the
        /// time since it came in 1/65536 s; both 0 before the first.
        package var lastSenderReport: UInt32
        package var delaySinceLastSenderReport: UInt32
    }

    private var sequences: SequenceTracker
    private var received: UInt64 = 0
    /// Packets expected and received as of the last block (A.3's `expected_prior`, `received_prior`).
    private var prior: (expected: UInt64, received: UInt64) = (0, 0)
    private var jitter = 0.0
    private var lastTransit: Int64?
    private var senderReportNTP: UInt32 = 0
    private var senderReportArrival: UInt64?

    /// A stream starting at `sequence`.
    package init(first sequence: UInt16) {
        sequences = SequenceTracker(first: sequence)
    }

    /// Counts one packet (resent and duplicate packets too, as RFC 3550
    /// counts them, but not one a jump set aside) arriving at `arrival`
    /// (CLOCK_MONOTONIC ns); the first packet too.
    package mutating func record(sequence: UInt16, timestamp: UInt32, arrival: UInt64) {
        switch sequences.update(sequence) {
        case .setAside:
            return
        case .restarted:
            // The sender started again (A.1's init_seq): the counts start again with this packet.
            (received, prior, lastTransit) = (0, (0, 0), nil)
        case .late:
            received += 1
            return
        case .ahead:
            break
        }
        received += 1
        // Jitter only from packets in order, in 90 kHz units (A.8).
        let transit = Int64(arrival / 100_000 * 9 + arrival % 100_000 * 9 / 100_000) &- Int64(timestamp)
        if let last = lastTransit {
            // The magnitude, not abs(): a hostile timestamp 2^31 away would trap abs(Int32.min).
            let d = Double(Int32(truncatingIfNeeded: transit &- last).magnitude)
            jitter += (d - jitter) / 16
        }
        lastTransit = transit
    }

    /// Notes a Sender Report whose NTP time is `ntp`, arriving at `arrival`.
    package mutating func senderReport(ntp: UInt64, arrival: UInt64) {
        senderReportNTP = UInt32(truncatingIfNeeded: ntp >> 16)
        senderReportArrival = arrival
    }

    /// The block for a report sent at `now`; the fraction lost covers the
    /// interval since the last block (A.3).
    package mutating func block(now: UInt64) -> Block {
        let expected = sequences.runExpected
        let lost = Int64(expected) - Int64(received)
        let expectedInterval = expected &- prior.expected
        let receivedInterval = received &- prior.received
        prior = (expected, received)
        let lostInterval = Int64(expectedInterval) - Int64(receivedInterval)
        let fraction = expectedInterval == 0 || lostInterval <= 0 ? 0 : UInt8(min(255, (lostInterval << 8) / Int64(expectedInterval)))
        // In 1/65536 s, saturated (a report older than 18 h); split so that no product overflows.
        let delay = senderReportArrival.map { arrival -> UInt32 in
            let elapsed = now &- arrival
            return UInt32(clamping: elapsed / 1_000_000_000 * 65_536 + elapsed % 1_000_000_000 * 65_536 / 1_000_000_000)
        } ?? 0
        return Block(fractionLost: fraction, cumulativeLost: Int32(max(-0x80_0000, min(0x7F_FFFF, lost))),
                     extendedHighestSequence: sequences.highest, jitter: UInt32(jitter), lastSenderReport: senderReportNTP,
                     delaySinceLastSenderReport: delay)
    }
}
