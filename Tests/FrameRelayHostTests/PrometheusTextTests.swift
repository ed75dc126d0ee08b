import FrameRelaySystem
@testable import FrameRelayHost
import Testing

/// The `/metrics` page: each share's figures as Prometheus text.
struct PrometheusTextTests {
    @Test func sharesRenderAsPrometheusTextWithEscapedLabelsAndCumulativeBuckets() {
        var share = ShareStats(appGroup: "group.a\"b\\c")
        share.taken = 7
        share.fps = 29.5
        share.histograms = [StageHistogram(stage: "encoded", counts: [0, 1, 1, 2, 3, 3, 3, 3, 3, 3, 3], count: 4, sumSeconds: 1.25)]
        let lines = PrometheusText.render([share]).split(separator: "\n").map(String.init)
        let label = #"app_group="group.a\"b\\c""#
        #expect(lines.contains("framerelay_build_info{version=\"\(FrameRelayVersion.string)\"} 1"))
        #expect(lines.contains("# TYPE framerelay_frames_taken_total counter"))
        #expect(lines.contains("framerelay_frames_taken_total{\(label)} 7"))
        #expect(lines.contains("framerelay_frames_per_second{\(label)} 29.5"))
        let buckets = lines.filter { $0.hasPrefix("framerelay_capture_latency_seconds_bucket") }
        #expect(buckets.first == "framerelay_capture_latency_seconds_bucket{\(label),stage=\"encoded\",le=\"0.0005\"} 0")
        #expect(buckets.count == StageHistogram.bounds.count + 1)
        #expect(buckets.last == "framerelay_capture_latency_seconds_bucket{\(label),stage=\"encoded\",le=\"+Inf\"} 4")
        #expect(lines.contains("framerelay_capture_latency_seconds_sum{\(label),stage=\"encoded\"} 1.25"))
        #expect(lines.contains("framerelay_capture_latency_seconds_count{\(label),stage=\"encoded\"} 4"))
        // Figures a share does not have (no encoder, no RTP) are not made up: no sample line.
        #expect(!lines.contains { $0.hasPrefix("framerelay_rtp_send_errors_total{") })
        #expect(lines.allSatisfy { $0.hasPrefix("#") || $0.hasPrefix("framerelay_") })
    }
}
