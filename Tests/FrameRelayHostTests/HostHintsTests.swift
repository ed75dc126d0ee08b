@testable import FrameRelayHost
import FrameRelaySystem
import Testing

/// What the host says once when a share drops frames.
struct HostHintsTests {
    /// A producer at 30 frames a second, a host that takes 20 of them, from
    /// the host's first frame on: 60 frames the producer wrote before the
    /// host came are no drop of the host's, and the rates are the counters'
    /// over the time they were published (not when the hint was made).
    @Test func theBottleneckLineCountsFromTheHostsFirstFrame() {
        var hints = HostHints()
        var share = ShareStats(appGroup: "group.com.example.hints")
        share.producerAttaches = 1
        share.encoded = EncodeStats()
        let start = MonotonicClock.now()
        var said: [String] = []
        for tick in 0...16 {
            let seconds = Double(tick) * 0.25
            share.publishedAt = start + UInt64(seconds * 1e9)
            share.ring.written = 60 + UInt64(seconds * 30)
            share.taken = UInt64(seconds * 20)
            share.ring.dropped = share.ring.written - share.taken
            said += hints.lines(for: [share], since: start, quiet: false)
        }
        let line = said.first { $0.contains("% of frames dropped") }
        #expect(said.count == 1 && line?.hasPrefix("group.com.example.hints: 33 % of frames dropped (the newest wins): the host takes 20.0 frames/s of the producer's 30.0; ") == true, "\(said)")
        // Counters that went back (shared memory another process wrote) say nothing (the drops' difference
        // wrapped, and trapped at times twenty).
        for (written, dropped) in [(UInt64(500), UInt64(400)), (1200, 100)] {
            var other = HostHints()
            share.publishedAt = start
            share.taken = 100
            share.ring.written = 1000
            share.ring.dropped = 900
            _ = other.lines(for: [share], since: start, quiet: false)
            share.publishedAt = start + 3_000_000_000
            (share.ring.written, share.ring.dropped) = (written, dropped)
            #expect(other.lines(for: [share], since: start, quiet: false).isEmpty)
        }
    }
}
