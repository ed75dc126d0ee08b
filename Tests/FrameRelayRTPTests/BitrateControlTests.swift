import Foundation
import FrameRelayRTP
import Testing

/// The bitrate a stream is sent at, from what its receivers report: the
/// sender's loss-based controller (``BitrateController``) and the
/// receiver's delay-based estimate it sends as a REMB (``DelayBasedEstimator``),
/// on their rules and on a modelled narrow link, with times of our own.
@Suite struct BitrateControlTests {
    static let second: UInt64 = 1_000_000_000

    @Test func lossOverTenPercentCutsUnderTwoGrowsAndBetweenHolds() {
        var controller = BitrateController(floor: 150_000, ceiling: 2_500_000)
        controller.report(fractionLost: 0, now: 0)
        #expect(controller.target(now: 0) == 2_500_000, "it starts at the ceiling, and never goes past it")
        controller.report(fractionLost: 0.5, now: Self.second)
        #expect(controller.target(now: Self.second) == 1_875_000, "50 % lost: down a quarter")
        controller.report(fractionLost: 0.5, now: Self.second + 100_000_000)
        #expect(controller.target(now: Self.second) == 1_875_000, "a second cut waits 300 ms")
        controller.report(fractionLost: 0.05, now: 2 * Self.second)
        #expect(controller.target(now: 2 * Self.second) == 1_875_000, "5 % lost: it holds")
        controller.report(fractionLost: 0.01, now: 3 * Self.second)
        #expect(controller.target(now: 3 * Self.second) == 2_025_000, "1 % lost a second later: 8 % more")
        for n in 4..<40 { controller.report(fractionLost: 0.9, now: UInt64(n) * Self.second) }
        #expect(controller.target(now: 40 * Self.second) == 150_000, "the floor")
    }

    @Test func theReceiverThatLosesMostMovesTheRateAndTheLowestREMBCapsIt() {
        var controller = BitrateController(floor: 150_000, ceiling: 2_000_000, receivers: 2)
        controller.report(fractionLost: 0.3, from: 1, now: 0)
        controller.report(fractionLost: 0, from: 0, now: 500_000_000)
        #expect(controller.target(now: Self.second) == 1_700_000, "receiver 1's 30 % still counts after receiver 0's clean report")
        controller.remb(1_200_000, from: 0, now: Self.second)
        controller.remb(900_000, from: 1, now: Self.second)
        #expect(controller.target(now: Self.second) == 900_000)
        #expect(controller.target(now: 7 * Self.second) == 1_700_000, "a REMB 6 s old no longer caps")
        controller.report(fractionLost: 0.05, from: 1, now: 7 * Self.second)  // 5 %: it holds (and its report is fresh)
        controller.remb(300_000, from: 0, now: 8 * Self.second)
        controller.report(fractionLost: 0, from: 0, now: 8 * Self.second)
        #expect(controller.lossBased == 600_000, "growth starts from twice what the receiver takes, once it reports")
    }

    /// A receiver's report holds the rate for three of its report intervals
    /// (at least 5 s; 15 s for one report alone) and no longer: one that
    /// reported loss and left no longer holds its stream down against
    /// another's clean reports; one on RFC 3550's schedule (7 s apart) holds
    /// it from report to report; and with no receiver's report holding, the
    /// rate grows as clean reports would grow it, from the time the last
    /// lapsed (an attacker's burst of lossy reports held a stream at the floor for good).
    @Test func aReportHoldsTheRateForThreeOfItsIntervalsAndSilenceLetsItGrow() {
        var two = BitrateController(floor: 150_000, ceiling: 2_000_000, receivers: 2)
        two.report(fractionLost: 0.3, from: 1, now: 0)
        #expect(two.lossBased == 1_700_000)
        two.report(fractionLost: 0, from: 0, now: 14 * Self.second)
        #expect(two.lossBased == 1_700_000, "receiver 1's one report of 14 s ago still holds")
        two.report(fractionLost: 0, from: 0, now: 15 * Self.second + 1)
        #expect(two.lossBased == 1_836_000, "15 s on it no longer does: a second's 8 %")
        var slow = BitrateController(floor: 150_000, ceiling: 2_000_000)
        slow.report(fractionLost: 0.5, now: 0)
        for n in 1..<6 {
            for t in 1...7 { slow.tick(now: (UInt64(n - 1) * 7 + UInt64(t)) * Self.second - 1) }
            slow.report(fractionLost: 0.05, now: UInt64(n) * 7 * Self.second)
        }
        #expect(slow.lossBased == 1_500_000, "5 % every 7 s holds the rate: \(slow.lossBased)")
        var one = BitrateController(floor: 150_000, ceiling: 2_500_000)
        for n in 0..<12 { one.report(fractionLost: 0.5, now: UInt64(n) * 350_000_000) }
        #expect(one.target(now: 4 * Self.second) == 150_000)
        one.tick(now: 8 * Self.second)
        #expect(one.lossBased == 150_000, "under 5 s after the last report (3.85 s): nothing")
        one.tick(now: 9_850_000_000)
        #expect(one.lossBased == 162_000, "a second past its lifetime: 8 %")
        for n in 1...300 { one.tick(now: 9_850_000_000 + UInt64(n) * 100_000_000) }
        #expect(abs(one.lossBased - Int((162_000 * pow(1.08, 30.0)).rounded())) <= 2, "30 s more at 8 % a second: \(one.lossBased)")
        #expect(one.target(now: 40 * Self.second) == one.lossBased)
        let grown = one.lossBased
        one.report(fractionLost: 0.5, now: 40 * Self.second)
        #expect(one.lossBased == grown * 3 / 4, "a fresh lossy report cuts again: \(one.lossBased)")
    }

    /// A REMB alone (no report after it: a forged one, or a receiver gone
    /// quiet) caps the rate for its lifetime and no longer: the loss-based
    /// rate is what it was. Reports in quick succession grow the rate by
    /// their time, not by their number.
    @Test func aREMBWithNoReportCapsForFiveSecondsAndAFloodOfReportsGrowsNoFaster() {
        var controller = BitrateController(floor: 150_000, ceiling: 1_000_000)
        controller.remb(0, now: Self.second)
        #expect(controller.target(now: 2 * Self.second) == 150_000)
        #expect(controller.target(now: 7 * Self.second) == 1_000_000 && controller.lossBased == 1_000_000)
        for n in 0..<20 { controller.report(fractionLost: 0.9, now: 8 * Self.second + UInt64(n) * Self.second) }
        #expect(controller.target(now: 30 * Self.second) == 150_000)
        // 50,000 clean reports in half a second: 1.08^0.5 more, not 50 Mbit/s (the first, 3 s after the last, earns a second's 8 %).
        controller.report(fractionLost: 0, now: 30 * Self.second)
        #expect(controller.lossBased == 162_000)
        for n in 1...50_000 { controller.report(fractionLost: 0, now: 30 * Self.second + UInt64(n) * 10_000) }
        #expect(abs(controller.lossBased - 168_356) <= 2, "\(controller.lossBased)")
    }

    /// A sender at `rate` (bits/s) through a link of `capacity` with a
    /// 300 ms queue (a tbf), as the receiver sees it: each packet's RTP
    /// timestamp, size and arrival; frames of 30 a second, paced at 2.5
    /// times the rate. Returns the packets of one second from `start` and
    /// when the link is next free.
    static func link(rate: Int, capacity: Int, start: UInt64, free: inout UInt64, lost: inout Int,
                     into estimator: inout DelayBasedEstimator) {
        for frame in 0..<30 {
            let capture = start + UInt64(frame) * Self.second / 30
            var bytes = rate / 8 / 30
            var sent = capture + 10_000_000  // encoded 10 ms after capture
            while bytes > 0 {
                let size = min(1200, bytes)
                bytes -= size
                let queued = free > sent ? free - sent : 0
                if queued > 300_000_000 {
                    lost += 1
                } else {
                    free = max(free, sent) + UInt64(size * 8) * Self.second / UInt64(capacity)
                    estimator.packet(timestamp: UInt32(truncatingIfNeeded: capture / 100_000 * 9), size: size, arrival: free)
                }
                sent += UInt64(size * 8) * Self.second * 2 / UInt64(5 * rate)
            }
        }
    }

    @Test func aFreeLinkGetsNoEstimate() {
        var estimator = DelayBasedEstimator()
        var (free, lost) = (UInt64(0), 0)
        for second in 0..<10 {
            Self.link(rate: 2_500_000, capacity: 100_000_000, start: UInt64(second) * Self.second, free: &free, lost: &lost, into: &estimator)
            #expect(estimator.report(now: UInt64(second + 1) * Self.second) == nil)
        }
        #expect(lost == 0 && (estimator.queueing ?? .max) < 2_000_000)
    }

    /// The receiver's estimate and the sender's controller together on a
    /// modelled 1 Mbit/s link with a 300 ms queue, the stream starting at
    /// 2.5 Mbit/s: within 5 s the sender is below the link's rate, and from
    /// then on next to nothing is lost.
    @Test func aSenderFollowingItsReceiverSettlesUnderANarrowLink() {
        var estimator = DelayBasedEstimator()
        var controller = BitrateController(floor: 150_000, ceiling: 2_500_000)
        var (free, lost) = (UInt64(0), 0)
        var rates: [Int] = []
        var lostAfter = 0
        var sentAfter = 0
        for second in 0..<30 {
            let rate = controller.target(now: UInt64(second) * Self.second)
            rates.append(rate)
            let before = lost
            Self.link(rate: rate, capacity: 1_000_000, start: UInt64(second) * Self.second, free: &free, lost: &lost, into: &estimator)
            if second >= 5 {
                lostAfter += lost - before
                sentAfter += (rate / 8 / 30 + 1199) / 1200 * 30
            }
            let now = UInt64(second + 1) * Self.second
            let fraction = Double(lost - before) / Double(max(1, (rate / 8 / 30 + 1199) / 1200 * 30))
            controller.report(fractionLost: fraction, now: now)
            if let estimate = estimator.report(now: now) { controller.remb(UInt64(estimate), now: now) }
        }
        #expect(rates[5...].allSatisfy { $0 < 1_100_000 } && rates[5...].reduce(0, +) / rates[5...].count < 1_000_000, "\(rates)")
        #expect(Double(lostAfter) < 0.02 * Double(sentAfter), "\(lostAfter) of \(sentAfter) lost after 5 s: \(rates)")
        #expect(rates.last! > 600_000, "it does not collapse: \(rates)")
    }

    /// What `frame-relay receive` reported through a real 1 Mbit/s tbf with
    /// a 300 ms queue (`scripts/rtp-through-tbf 1mbit 30 300ms`, release
    /// build, this machine): each report's second, fraction lost (of 256)
    /// and REMB (kbit/s; nil before the first overuse).
    static let recordedThroughATBF: [(at: Double, lost: Int, remb: Int?)] = [
        (0.1, 0, nil), (1.2, 95, 783), (2.2, 84, 706), (3.2, 0, 763), (4.2, 0, 795), (5.2, 0, 827), (6.2, 0, 859), (7.2, 0, 891),
        (8.2, 0, 923), (9.2, 0, 955), (10.2, 0, 987), (11.2, 0, 1019), (12.2, 0, 1051), (13.2, 0, 773), (14.3, 0, 774), (15.3, 0, 774),
        (16.3, 0, 806), (17.3, 0, 838), (18.3, 0, 870), (19.3, 0, 902), (20.3, 0, 934), (21.3, 0, 966), (22.3, 0, 998), (23.3, 0, 1030),
        (24.3, 0, 1062), (25.3, 0, 776), (26.3, 0, 773), (27.4, 0, 773), (28.4, 0, 805), (29.4, 0, 837), (30.4, 0, 869),
    ]

    /// The recorded reports, replayed into the sender's controller: the two
    /// lossy seconds cut the loss-based rate (37 % and 33 % lost: by 18 %
    /// and then 16 %), each REMB caps the target the moment it comes, down
    /// as well as up, and the target never leaves the link's neighbourhood
    /// once the receiver has spoken.
    @Test func theRecordedReportsOfARealTBFMoveTheTargetAsTheyShould() {
        var controller = BitrateController(floor: 150_000, ceiling: 2_500_000)
        var targets: [Int] = []
        for report in Self.recordedThroughATBF {
            let now = UInt64(report.at * 1e9)
            // As the sender takes them: the REMB, then the report it came with.
            if let remb = report.remb { controller.remb(UInt64(remb) * 1000, now: now) }
            controller.report(fractionLost: Double(report.lost) / 256, now: now)
            if report.at == 1.2 { #expect(controller.lossBased == 1_275_433, "twice the REMB's 783 kbit/s less 95/512") }
            if let remb = report.remb {
                #expect(controller.target(now: now) == remb * 1000, "at \(report.at) s the REMB rules: the loss-based rate is above it")
            }
            targets.append(controller.target(now: now))
        }
        #expect(targets[0] == 2_500_000)
        #expect(controller.lossBased <= 2 * 869_000 * 108 / 100 && controller.lossBased >= 869_000, "\(controller.lossBased): within twice the receiver's rate (and a report's growth)")
        #expect(targets[13] == 773_000 && targets[12] == 1_051_000, "the REMB's fall is followed at once")
        #expect(targets[1...].allSatisfy { $0 < 1_100_000 }, "\(targets)")
    }
}
