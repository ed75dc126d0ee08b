@testable import FrameRelayHost
import Testing

/// The host's frames/s, read as the status line reads it (every 100 ms),
/// from frames taken a few milliseconds after their capture.
struct FrameRateWindowTests {
    /// What the window says at each read, frames captured at `captures` (ms) and taken `delays[i % count]` ms later.
    private func reads(captures: [Double], delays: [Double] = [2, 14, 5, 23, 1, 9], until end: Double) -> [(at: Double, rate: Double?)] {
        var window = FrameRateWindow(now: 0)
        var result: [(at: Double, rate: Double?)] = []
        var next = 0
        for tick in stride(from: 100.0, through: end, by: 100) {
            while next < captures.count, captures[next] + delays[next % delays.count] <= tick {
                window.took(captured: UInt64(captures[next] * 1e6))
                next += 1
            }
            result.append((tick, window.rate(now: UInt64(tick * 1e6))))
        }
        return result
    }

    /// A producer at 30 (and 60) frames a second reads its rate in every
    /// window, however the frames fall about the window's edges: counted
    /// against the host's clock, these frames read 28–32 (a summary once said 31.1).
    @Test func aSteadyProducerReadsItsRate() {
        for fps in [30.0, 60.0] {
            let interval = 1000 / fps
            let rates = reads(captures: (0..<300).map { Double($0) * interval }, until: 4900)
            let measured = rates.compactMap(\.rate)
            #expect(rates.first?.rate != nil && measured.count == rates.count, "\(rates)")
            #expect(measured.allSatisfy { abs($0 - fps) < 0.01 }, "\(fps): \(measured)")
        }
    }

    /// Nothing before two frames; 0 once the frames stop; a burst after a
    /// quiet spell counts from its first frame and to the window's end.
    @Test func aRateNeedsTwoFramesAndFallsToNothingWhenTheyStop() {
        #expect(reads(captures: [], until: 1000).allSatisfy { $0.rate == nil })
        #expect(reads(captures: [50], until: 1000).allSatisfy { $0.rate == nil })
        // 30 a second for a second, then nothing: 30, then 0 from the window after the last frame on.
        let stopped = reads(captures: (0..<30).map { Double($0) * 1000 / 30 }, until: 3000)
        #expect(stopped.filter { $0.at <= 1000 }.allSatisfy { abs($0.rate! - 30) < 0.01 }, "\(stopped)")
        #expect(stopped.filter { $0.at >= 2000 }.allSatisfy { $0.rate == 0 }, "\(stopped)")
        // After two quiet seconds, three frames 33 ms apart: 2 intervals over the half second they end in.
        let burst = reads(captures: (0..<30).map { Double($0) * 1000 / 30 } + [3050, 3083, 3116], until: 4000)
        let after = burst.first { $0.at >= 3500 }?.rate ?? -1
        #expect(after > 3 && after < 5, "\(burst)")
    }
}
