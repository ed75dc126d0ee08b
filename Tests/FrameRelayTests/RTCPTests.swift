import FrameRelayRTP
import Testing

/// The receiver's report arithmetic (RFC 3550 A.1, A.3) and the compound
/// packet it sends, read back by the sender's parser.
struct RTCPTests {
    @Test func receptionStatisticsCountLossAcrossTheSequenceWrap() {
        var reception = ReceptionStatistics(first: 65_530)
        // 65530 … 65535, 0 … 5 with 2 lost and 4 arriving twice: 12 expected, 12 received (a duplicate makes up for the loss).
        let sequences: [UInt16] = [65_530, 65_531, 65_532, 65_533, 65_534, 65_535, 0, 1, 3, 4, 4, 5]
        for (i, sequence) in sequences.enumerated() {
            reception.record(sequence: sequence, timestamp: UInt32(i) * 3000, arrival: UInt64(i) * 33_333_333)
        }
        let first = reception.block(now: 0)
        #expect(first.extendedHighestSequence == 65_536 + 5)
        #expect(first.cumulativeLost == 0 && first.fractionLost == 0)
        // Then 6 … 15 with 8 and 9 lost: 10 expected in the interval, 8 received.
        for sequence: UInt16 in [6, 7, 10, 11, 12, 13, 14, 15] {
            reception.record(sequence: sequence, timestamp: UInt32(sequence) * 3000, arrival: UInt64(sequence) * 33_333_333)
        }
        let second = reception.block(now: 0)
        #expect(second.cumulativeLost == 2)
        #expect(second.fractionLost == 51)  // 2/10 × 256, truncated
        #expect(second.extendedHighestSequence == 65_536 + 15)
        // Evenly spaced packets at their own rate: no jitter.
        #expect(second.jitter == 0)
    }

    /// RFC 3550 A.1: a jump is set aside unless the packet after it follows
    /// it (then the sender restarted and a new run begins), so one stray or
    /// forged sequence number makes nothing lost.
    @Test func aJumpCountsOnlyWhenTheNextPacketConfirmsIt() {
        var tracker = SequenceTracker(first: 100)
        let verdicts = ([101, 105, 103, 103, 40_000, 106, 60_000, 60_001, 60_002, 59_990] as [UInt16]).map { tracker.update($0) }
        #expect(verdicts == [.ahead(1), .ahead(4), .late, .late, .setAside, .ahead(1), .setAside, .restarted, .ahead(1), .late], "\(verdicts)")
        // 100 … 106 (7), then the run from 60,001 to 60,002 (2).
        #expect(tracker.expected == 9 && tracker.runExpected == 2 && tracker.highest == 60_002)
        // 3,000 ahead is a jump; 2,999 is a gap; 101 behind is a jump by default, and late for a follower that says so.
        var far = SequenceTracker(first: 0), near = SequenceTracker(first: 0), patient = SequenceTracker(first: 1000, misorder: 1024)
        #expect(far.update(3000) == .setAside && near.update(2999) == .ahead(2999))
        var strict = SequenceTracker(first: 1000)
        #expect(strict.update(899) == .setAside && patient.update(100) == .late)
    }

    @Test func receptionStatisticsSetAJumpAsideAndStartAgainAfterARestart() {
        var reception = ReceptionStatistics(first: 100)
        var time: UInt64 = 0
        func record(_ sequence: UInt16) {
            time += 33_333_333
            reception.record(sequence: sequence, timestamp: UInt32(time / 11_111), arrival: time)
        }
        for sequence: UInt16 in 100...109 { record(sequence) }
        record(40_000)  // one forged packet
        for sequence: UInt16 in 110...119 { record(sequence) }
        let steady = reception.block(now: time)
        #expect(steady.extendedHighestSequence == 119 && steady.cumulativeLost == 0 && steady.fractionLost == 0, "\(steady)")
        // The sender restarted at 50,000: the run begins at the packet that confirmed it.
        for sequence: UInt16 in [50_000, 50_001, 50_002, 50_004] { record(sequence) }
        let restarted = reception.block(now: time)
        #expect(restarted.extendedHighestSequence == 50_004 && restarted.cumulativeLost == 1, "\(restarted)")
    }

    /// Hostile timestamps and a receiver left running for days do not trap.
    @Test func timestampsHalfTheClockApartAndAnOldSenderReportDoNotTrap() {
        var reception = ReceptionStatistics(first: 1)
        reception.record(sequence: 1, timestamp: 0, arrival: 0)
        reception.record(sequence: 2, timestamp: 0x8000_0000, arrival: 0)  // transit differs by exactly 2^31
        reception.record(sequence: 3, timestamp: 0, arrival: 0)
        reception.senderReport(ntp: 1 << 32, arrival: 0)
        let block = reception.block(now: 400 * 3_600 * 1_000_000_000)  // 400 h after that report
        #expect(block.delaySinceLastSenderReport == UInt32.max)
        #expect(block.jitter > 0)
    }

    @Test func aReceiversReportSaysItAsksAndCarriesTheLossAndTheLastSenderReport() {
        var reception = ReceptionStatistics(first: 100)
        reception.record(sequence: 100, timestamp: 0, arrival: 0)
        reception.record(sequence: 102, timestamp: 3000, arrival: 33_333_333)
        reception.senderReport(ntp: 0x1234_5678_9ABC_DEF0, arrival: 1_000_000_000)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
        defer { buffer.deallocate() }
        let block = reception.block(now: 1_500_000_000)
        #expect(block.lastSenderReport == 0x5678_9ABC)
        #expect(block.delaySinceLastSenderReport == 32_768)  // 0.5 s in 1/65536 s
        var length = RTCP.writeReceiverReport(into: buffer, sender: 7, media: 0xAABB_CCDD, block: block)
        length += RTCP.writeAsksForRepair(into: buffer + length, sender: 7, media: 0xAABB_CCDD)
        #expect(length == 48)
        var feedback = RTCP.Feedback()
        RTCP.parse(UnsafeRawBufferPointer(start: buffer, count: length), ssrc: 0xAABB_CCDD, into: &feedback)
        #expect(feedback.receiverReports == 1 && feedback.asksForRepair)
        #expect(feedback.fractionLost == 85)  // 1 of 3 lost
        // A report about another stream says nothing about ours, and its promise is for that stream only.
        var other = RTCP.Feedback()
        RTCP.parse(UnsafeRawBufferPointer(start: buffer, count: length), ssrc: 1, into: &other)
        #expect(other.fractionLost == nil && !other.asksForRepair)
        // Cut short, the APP packet is not read.
        var cut = RTCP.Feedback()
        RTCP.parse(UnsafeRawBufferPointer(start: buffer, count: length - 4), ssrc: 0xAABB_CCDD, into: &cut)
        #expect(!cut.asksForRepair)
    }
}
