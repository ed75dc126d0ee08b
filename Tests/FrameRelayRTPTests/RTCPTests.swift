@testable import FrameRelayRTP
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

    /// Each writer against its byte-exact vector (pion/rtcp's where it has
    /// one: the same fields give the same bytes), and read back by the parser.
    @Test func everyWriterWritesItsVectorAndThePacketReadsBack() {
        func written(_ write: (UnsafeMutableRawPointer) -> Int) -> [UInt8] {
            var bytes = [UInt8](repeating: 0xEE, count: 64)
            let length = bytes.withUnsafeMutableBytes { write($0.baseAddress!) }
            return Array(bytes[..<length])
        }
        func parsed(_ bytes: [UInt8], ssrc: UInt32) -> RTCP.Feedback {
            var feedback = RTCP.Feedback()
            bytes.withUnsafeBytes { RTCP.parse($0, ssrc: ssrc, into: &feedback) }
            return feedback
        }
        let sr = written { RTCP.writeSenderReport(into: $0, ssrc: 0x902F_9E2E, ntp: 0xDA8B_D1FC_DDDD_A05A, rtpTimestamp: 0xAAF4_EDD5, packets: 1, octets: 2); return 28 }
        #expect(sr == [0x80, 0xC8, 0x00, 0x06, 0x90, 0x2F, 0x9E, 0x2E, 0xDA, 0x8B, 0xD1, 0xFC, 0xDD, 0xDD, 0xA0, 0x5A, 0xAA, 0xF4, 0xED, 0xD5, 0, 0, 0, 1, 0, 0, 0, 2])
        let block = ReceptionStatistics.Block(fractionLost: 0, cumulativeLost: 0, extendedHighestSequence: 0x46E1, jitter: 273, lastSenderReport: 0x09F3_6432,
                                              delaySinceLastSenderReport: 150_137)
        let rr = written { RTCP.writeReceiverReport(into: $0, sender: 0x902F_9E2E, media: 0xBC5E_9A40, block: block) }
        #expect(rr == [0x81, 0xC9, 0x00, 0x07, 0x90, 0x2F, 0x9E, 0x2E, 0xBC, 0x5E, 0x9A, 0x40, 0, 0, 0, 0, 0, 0, 0x46, 0xE1, 0, 0, 0x01, 0x11,
                       0x09, 0xF3, 0x64, 0x32, 0x00, 0x02, 0x4A, 0x79])
        #expect(parsed(rr, ssrc: 0xBC5E_9A40).receiverReports == 1 && parsed(rr, ssrc: 0xBC5E_9A40).fractionLost == 0)
        let pli = written { RTCP.writePLI(into: $0, sender: 0x902F_9E2E, media: 0x902F_9E2E) }
        #expect(pli == [0x81, 0xCE, 0x00, 0x02, 0x90, 0x2F, 0x9E, 0x2E, 0x90, 0x2F, 0x9E, 0x2E] && parsed(pli, ssrc: 0x902F_9E2E).pictureLoss)
        let fir = written { RTCP.writeFIR(into: $0, sender: 0, media: 0x1234_5678, sequence: 0x42) }
        #expect(fir == [0x84, 0xCE, 0x00, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78, 0x42, 0, 0, 0])
        #expect(parsed(fir, ssrc: 0x1234_5678).fullIntraRequest && parsed(fir, ssrc: 0x1234_5678).firSequence == 0x42)
        let remb = written { RTCP.writeREMB(into: $0, sender: 1, bitrate: 8_927_168, media: [1_215_622_422]) }
        #expect(remb == [143, 206, 0, 5, 0, 0, 0, 1, 0, 0, 0, 0, 82, 69, 77, 66, 1, 26, 32, 223, 72, 116, 237, 22])
        #expect(parsed(remb, ssrc: 1_215_622_422).estimatedBitrate == 8_927_168 && parsed(remb, ssrc: 7).estimatedBitrate == nil)
        // A bitrate past 18 bits of mantissa loses its low bits, never its size.
        let rounded = written { RTCP.writeREMB(into: $0, sender: 1, bitrate: 1_000_001, media: [5]) }
        #expect(parsed(rounded, ssrc: 5).estimatedBitrate == 1_000_000)
        // A mantissa of 2 shifted by 63 would wrap to 0 bit/s: it is the most there is.
        var huge = remb
        huge[16...19] = [1, 0xFC, 0, 2]  // 1 SSRC, exponent 63, mantissa 2
        #expect(parsed(huge, ssrc: 1_215_622_422).estimatedBitrate == UInt64.max)
        let empty = written { RTCP.writeEmptyReceiverReport(into: $0, sender: 0x0102_0304) }
        #expect(empty == [0x80, 0xC9, 0x00, 0x01, 0x01, 0x02, 0x03, 0x04])
        let app = written { RTCP.writeAsksForRepair(into: $0, sender: 0x0102_0304, media: 0x0A0B_0C0D) }
        #expect(app == [0x80, 0xCC, 0x00, 0x03, 0x01, 0x02, 0x03, 0x04, 0x46, 0x52, 0x66, 0x62, 0x0A, 0x0B, 0x0C, 0x0D] && parsed(app, ssrc: 0x0A0B_0C0D).asksForRepair)
    }

    /// A NACK naming 6,324 packets (372 words, every bit set, in one
    /// 1,500-byte datagram) is read up to what a sender keeps, 1,024: a
    /// flood of them cost the pacer's thread six times as much before.
    @Test func aNACKIsReadUpToWhatTheSenderKeeps() {
        var bytes = [UInt8](repeating: 0, count: 12 + 372 * 4)
        bytes[0] = 0x81
        bytes[1] = 205
        (bytes[2], bytes[3]) = (UInt8((bytes.count / 4 - 1) >> 8), UInt8((bytes.count / 4 - 1) & 0xFF))
        (bytes[8], bytes[9], bytes[10], bytes[11]) = (0x0A, 0x0B, 0x0C, 0x0D)
        for word in 0..<372 {
            let first = UInt16(word * 17)
            (bytes[12 + word * 4], bytes[13 + word * 4], bytes[14 + word * 4], bytes[15 + word * 4]) = (UInt8(first >> 8), UInt8(first & 0xFF), 0xFF, 0xFF)
        }
        var feedback = RTCP.Feedback()
        bytes.withUnsafeBytes { RTCP.parse($0, ssrc: 0x0A0B_0C0D, into: &feedback) }
        #expect(feedback.nacked.count == RTCP.Feedback.maxNacked && feedback.nacked.prefix(18) == [0] + (1...17).map { UInt16($0) })
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
