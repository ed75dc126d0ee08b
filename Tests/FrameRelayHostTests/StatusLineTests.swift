@testable import FrameRelayHost
import FrameRelaySystem
import Testing

/// The status line, the exit summary and the bitrate they show.
struct StatusLineTests {
    /// Before any frame is taken, the line has the fields (and order) it will
    /// have, and no latency or bitrate is said to be 0: none is measured yet.
    @Test func statusLineBeforeAnyFrameKeepsItsFieldsAndMeasuresNothing() {
        var share = ShareStats(appGroup: "group.com.example.status")
        share.encoded = EncodeStats()
        #expect(StatusLine.format(share) == "group.com.example.status  waiting for producer  dropped 0  capture→encoded p50 – p99 –  taken 0  "
            + "skipped 0  encode p99 –  – kbit/s  invalid 0  capture→taken p50 – p99 –  hand-off p99 –")
    }

    @Test func statusLineCountsSkippedApartFromDropped() {
        var share = ShareStats(appGroup: "group.com.example.status")
        share.producerAttaches = 1
        share.ring.dropped = 3
        share.taken = 43
        share.encoded = EncodeStats()
        share.encoded?.skipped = 40
        let line = StatusLine.format(share)
        #expect(line.contains("dropped 3  capture→encoded p50 ") && line.contains("  skipped 40  "), "\(line)")
    }

    /// A figure that has no frame yet is "–" however many frames were taken
    /// (the first frame's latencies come after it is taken): once "0.00 ms".
    @Test func aFigureWithoutAFrameIsADashNotZero() {
        var share = ShareStats(appGroup: "group.com.example.status")
        share.producerAttaches = 1
        share.taken = 1
        share.encoded = EncodeStats()
        let line = StatusLine.format(share)
        #expect(line == "group.com.example.status  – fps  dropped 0  capture→encoded p50 – p99 –  taken 1  skipped 0  encode p99 –  – kbit/s  "
            + "invalid 0  capture→taken p50 – p99 –  hand-off p99 –", "\(line)")
    }

    /// At exit the summary gives frames/s and kbit/s over the whole run,
    /// the producer's state after them; the live line gives the state alone.
    @Test func theSummaryGivesTheRunsRatesWhateverTheProducersState() {
        var share = ShareStats(appGroup: "group.com.example.status")
        share.producerAttaches = 1
        share.producerFinished = true
        share.taken = 301
        share.framesTimed = 300
        share.secondsTimed = 10
        share.fps = 0
        share.encoded = EncodeStats()
        share.encoded?.bytes = 3_119_801
        let whole = share.wholeRun
        #expect(whole.stats.fps == 30 && whole.kbps.map { abs($0 - 2495.84) < 0.01 } == true, "\(whole.stats.fps) \(String(describing: whole.kbps))")
        let summary = StatusLine.format(whole.stats, kbps: whole.kbps, summary: true)
        #expect(summary.hasPrefix("group.com.example.status  30.0 fps  producer finished  dropped 0  ") && summary.contains("  2496 kbit/s  "), "\(summary)")
        #expect(StatusLine.format(share).hasPrefix("group.com.example.status  producer finished  dropped 0  "))
        // One frame, or none: no rate.
        share.taken = 1
        (share.framesTimed, share.secondsTimed) = (0, 0)
        #expect(share.wholeRun.stats.fps == 0 && share.wholeRun.kbps == nil)
        #expect(StatusLine.format(share.wholeRun.stats, kbps: nil, summary: true).hasPrefix("group.com.example.status  – fps  producer finished  "))
    }

    /// With simulcast layers the line and the summary give what the share
    /// sends, every layer's bytes (the top's alone read 2458 kbit/s for a
    /// share sending 3.1 Mbit/s), and say how many layers; `/metrics` has
    /// each layer's own counters beside the top's.
    @Test func withLayersTheBitrateIsEveryLayersAndMetricsHaveEachLayer() {
        var share = ShareStats(appGroup: "group.com.example.layers")
        share.producerAttaches = 1
        share.taken = 301
        (share.framesTimed, share.secondsTimed) = (300, 10)
        share.encoded = EncodeStats()
        share.encoded?.bytes = 3_119_801
        var small = LayerStats(), top = LayerStats()
        (small.stream, small.bytes, small.frames, small.keyframes) = (0, 780_000, 150, 2)
        (top.stream, top.bytes, top.frames, top.keyframes) = (1, 3_119_801, 300, 1)
        share.encoded?.layers = [small, top]
        let whole = share.wholeRun
        #expect(whole.kbps.map { abs($0 - 3119.84) < 0.01 } == true, "\(String(describing: whole.kbps))")
        #expect(StatusLine.format(whole.stats, kbps: whole.kbps, summary: true).contains("  3120 kbit/s (2 layers)  "))
        let status = StatusLine(enabled: false)
        share.publishedAt = 5_000_000_000
        _ = status.bitrate(share)
        share.publishedAt += 1_000_000_000
        share.encoded?.layers[0].bytes += 78_000
        share.encoded?.layers[1].bytes += 312_500
        share.encoded?.bytes += 312_500
        #expect(status.bitrate(share).map { abs($0 - 3124) < 0.01 } == true, "\(String(describing: status.bitrate(share)))")
        let lines = PrometheusText.render([share]).split(separator: "\n").map(String.init)
        #expect(lines.contains(#"framerelay_layer_encoded_bytes_total{app_group="group.com.example.layers",layer="0"} 858000"#), "\(lines)")
        #expect(lines.contains(#"framerelay_layer_frames_encoded_total{app_group="group.com.example.layers",layer="1"} 300"#))
        #expect(lines.contains(#"framerelay_encoded_bytes_total{app_group="group.com.example.layers"} 3432301"#))
        share.encoded?.layers = [top]
        #expect(!PrometheusText.render([share]).contains("framerelay_layer_encoded_bytes_total{"), "one layer: no layer samples")
    }

    /// The bitrate is a second's bytes over that second, both from the
    /// share's published figures (every 250 ms), however late a line reads
    /// them: read against the time the line was drawn, it swung 2000–2700
    /// for a share at 2500. Nothing before a second from the first frame; 0
    /// within a second and a quarter of the frames' stop.
    @Test func theBitrateIsASecondsBytesOverTheirOwnSecond() {
        let status = StatusLine(enabled: false)
        var share = ShareStats(appGroup: "group.com.example.bitrate")
        share.encoded = EncodeStats()
        share.producerAttaches = 1
        let start: UInt64 = 1_000_000_000_000, frameBytes = 10_417  // 30 frames a second at 2500 kbit/s
        var reads: [(ms: Int, kbps: Double?)] = []
        for ms in stride(from: 0, through: 6000, by: 100) {
            // Published every 250 ms; the frames stop at 4 s; a line reads every 100 ms.
            let published = ms / 250 * 250
            let frames = min(published, 4000) * 30 / 1000
            share.publishedAt = start + UInt64(published) * 1_000_000
            share.taken = UInt64(frames)
            share.encoded?.bytes = UInt64(frames * frameBytes)
            reads.append((ms, status.bitrate(share)))
        }
        let running = reads.filter { $0.ms >= 1300 && $0.ms < 4000 }, stopped = reads.filter { $0.ms >= 5250 }
        #expect(reads.filter { $0.ms < 1250 }.allSatisfy { $0.kbps == nil }, "\(reads)")
        #expect(running.allSatisfy { $0.kbps.map { abs($0 - 2500) < 2500 * 0.04 } == true }, "\(running)")
        #expect(stopped.allSatisfy { $0.kbps == 0 }, "\(stopped)")
    }
}
