@testable import FrameRelayHost
import Testing

/// The host's frames/s, read as the status line reads it (every 100 ms),
/// from frames taken a few milliseconds after their capture.
struct FrameRateWindowTests {
    /// What the window says at each read (ms), frames captured at
    /// `captures` (ms, stamped `stamps` where given) and taken `delays[i % count]`
    /// ms later (in order: a frame is never taken before the one before it).
    private func reads(captures: [Double], stamps: [Double]? = nil, delays: [Double] = [2, 14, 5, 23, 1, 9],
                       until end: Double) -> [(at: Double, rate: Double?)] {
        var window = FrameRateWindow(now: 0)
        var result: [(at: Double, rate: Double?)] = []
        var next = 0, lastTaken = 0.0
        for tick in stride(from: 100.0, through: end, by: 100) {
            while next < captures.count, max(lastTaken, captures[next] + delays[next % delays.count]) <= tick {
                lastTaken = max(lastTaken, captures[next] + delays[next % delays.count])
                window.took(captured: UInt64((stamps?[next] ?? captures[next]) * 1e6), taken: UInt64(lastTaken * 1e6))
                next += 1
            }
            result.append((tick, window.rate(now: UInt64(tick * 1e6))))
        }
        return result
    }

    private func steady(_ fps: Double, seconds: Double, from start: Double = 0) -> [Double] {
        (0..<Int(fps * seconds)).map { start + Double($0) * 1000 / fps }
    }

    /// A producer at 30 (and 60) frames a second reads its rate in every
    /// window, however the frames fall about the window's edges: counted
    /// against the host's clock, these frames read 28–32 (a summary once
    /// said 31.1). A pipeline 120 ms behind its producer reads the same.
    @Test func aSteadyProducerReadsItsRate() {
        for fps in [30.0, 60.0] {
            for delays in [[2.0, 14, 5, 23, 1, 9], [120, 131, 118]] {
                let rates = reads(captures: steady(fps, seconds: 10), delays: delays, until: 4900)
                let measured = rates.filter { $0.at >= 300 }.compactMap(\.rate)
                #expect(measured.count == rates.count - 2 && measured.allSatisfy { abs($0 - fps) < 0.01 }, "\(fps) \(delays): \(rates)")
            }
        }
    }

    /// One or two frames a second read 1 and 2 in every window, those
    /// without a frame too (a count that started afresh after each half
    /// second without a frame read nothing, and showed 0), from the start
    /// and after 30 a second (judged stopped by 30's intervals, it read 0).
    @Test func aSlowProducerReadsItsRate() {
        for fps in [1.0, 2.0] {
            let rates = reads(captures: steady(fps, seconds: 10), until: 9000).filter { $0.at >= 2100 }
            #expect(rates.allSatisfy { $0.rate.map { abs($0 - fps) < 0.01 } == true }, "\(fps): \(rates)")
            let slowed = reads(captures: steady(30, seconds: 2) + steady(fps, seconds: 8, from: 2000), until: 10_000).filter { $0.at >= 5100 }
            #expect(slowed.allSatisfy { $0.rate.map { abs($0 - fps) < 0.01 } == true }, "\(fps): \(slowed)")
        }
    }

    /// Capture times the host's clock does not bear out give way to the
    /// times the frames were taken: stamps from the future, and stamps a
    /// nanosecond apart (a compositor's repeated times, made to rise).
    @Test func capturesTheHostsClockDoesNotBearOutGiveWayToItsTimes() {
        let captures = steady(30, seconds: 10)
        // From the future (a second ahead: taken as the takes); a nanosecond apart, from the past and from the future.
        let stamps = [captures.map { $0 + 1000 }, captures.indices.map { Double($0) * 1e-6 }, captures.indices.map { 1000 + Double($0) * 1e-6 }]
        for stamps in stamps {
            let rates = reads(captures: captures, stamps: stamps, until: 4900)
            #expect(rates.allSatisfy { $0.rate.map { abs($0 - 30) < 30 * 0.15 } == true }, "\(rates)")
        }
        // One frame stamped as the one before it, then nothing for 10 s: 0, not the last rate; then 30 again,
        // and the run's figures leave the 10 s out.
        var window = FrameRateWindow(now: 0)
        for (n, ms) in (steady(30, seconds: 1) + [1000] + steady(30, seconds: 1, from: 11_000)).enumerated() {
            let stamp = n == 30 ? 29 * 1000 / 30.0 : ms  // frame 29's
            window.took(captured: UInt64(stamp * 1e6), taken: UInt64((ms + 3) * 1e6))
            if n == 29 { _ = window.rate(now: UInt64(1000 * 1e6)) }  // a window closes before the repeated stamp
            if n == 30 {
                let quiet = stride(from: 1100.0, through: 10_900, by: 100).map { window.rate(now: UInt64($0 * 1e6)) }
                #expect(quiet.suffix(80).allSatisfy { $0 == 0 }, "\(quiet)")
            }
            if n > 41, n % 5 == 0 { _ = window.rate(now: UInt64((ms + 4) * 1e6)) }
        }
        #expect(window.rate(now: UInt64(12_100 * 1e6)).map { abs($0 - 30) < 0.5 } == true)
        let timed = window.timed(now: UInt64(12_100 * 1e6))
        #expect(abs(Double(timed.frames) / timed.seconds - 30) < 1, "\(timed)")
    }

    /// Nothing before two frames; 0 once the frames stop, and the count
    /// afresh from the next: a burst after a quiet spell counts from its
    /// first frame and to the window's end. Over the run, the frames and
    /// the time they came (the quiet spell left out).
    @Test func aRateNeedsTwoFramesAndFallsToNothingWhenTheyStop() {
        #expect(reads(captures: [], until: 1000).allSatisfy { $0.rate == nil })
        #expect(reads(captures: [50], until: 1000).allSatisfy { $0.rate == nil })
        // 30 a second for a second, then nothing: 30, then 0 from the window after the last frame on.
        let stopped = reads(captures: steady(30, seconds: 1), until: 3000)
        #expect(stopped.filter { $0.at <= 1000 }.allSatisfy { abs($0.rate! - 30) < 0.01 }, "\(stopped)")
        #expect(stopped.filter { $0.at >= 2000 }.allSatisfy { $0.rate == 0 }, "\(stopped)")
        // After two quiet seconds, three frames 33 ms apart: 2 intervals over the half second they end in.
        let burst = reads(captures: steady(30, seconds: 1) + [3050, 3083, 3116], until: 4000)
        let after = burst.first { $0.at >= 3500 }?.rate ?? -1
        #expect(after > 3 && after < 5, "\(burst)")
        // 30 a second for 2 s, 3 s of nothing, 30 a second for 2 s: 118 frames counted over 3.9 s.
        var window = FrameRateWindow(now: 0)
        for (n, ms) in (steady(30, seconds: 2) + steady(30, seconds: 2, from: 5000)).enumerated() {
            window.took(captured: UInt64(ms * 1e6), taken: UInt64((ms + Double(n % 3)) * 1e6))
            if n % 5 == 0 { _ = window.rate(now: UInt64((ms + 3) * 1e6)) }
            if n == 59 { for quiet in stride(from: 2100.0, through: 5000, by: 100) { _ = window.rate(now: UInt64(quiet * 1e6)) } }
        }
        let timed = window.timed(now: UInt64(7000 * 1e6))
        #expect(timed.frames == 118 && abs(timed.seconds - 3.9333) < 0.001, "\(timed)")
    }
}
