/// Renders share statistics in the Prometheus text exposition format.
enum PrometheusText {
    static func render(_ shares: [ShareStats]) -> String {
        var lines: [String] = []
        func metric(_ name: String, _ type: String, _ help: String, _ values: [(String, Double)]) {
            lines.append("# HELP framerelay_\(name) \(help)")
            lines.append("# TYPE framerelay_\(name) \(type)")
            for (labels, value) in values { lines.append("framerelay_\(name){\(labels)} \(value)") }
        }
        func label(_ share: ShareStats) -> String { "app_group=\"\(share.appGroup)\"" }
        metric("frames_taken_total", "counter", "Frames the host took from the ring.", shares.map { (label($0), Double($0.taken)) })
        metric("frames_dropped_total", "counter", "Frames replaced in the ring before the host took them.",
               shares.map { (label($0), Double($0.totalDropped)) })
        metric("frames_invalid_total", "counter", "Frames skipped for bad metadata or checksum.", shares.map { (label($0), Double($0.invalid)) })
        metric("frames_encoded_total", "counter", "VP8 frames encoded.", shares.map { (label($0), Double($0.encoded?.frames ?? 0)) })
        metric("frames_skipped_total", "counter", "Frames not encoded because nothing on the screen changed and still regions had converged (zero-hertz).",
               shares.map { (label($0), Double($0.encoded?.skipped ?? 0)) })
        metric("frames_partial_total", "counter", "Frames encoded only where the screen changed or still refines (an active map).",
               shares.map { (label($0), Double($0.encoded?.partial ?? 0)) })
        metric("encoded_bytes_total", "counter", "VP8 bytes produced.", shares.map { (label($0), Double($0.encoded?.bytes ?? 0)) })
        metric("rtp_packets_total", "counter", "RTP packets sent.", shares.map { (label($0), Double($0.transport?.packets ?? 0)) })
        metric("frames_per_second", "gauge", "Frames taken per second, recently.", shares.map { (label($0), $0.fps) })
        var latency: [(String, Double)] = []
        for share in shares {
            for (quantile, value) in [("0.5", share.captureToTaken.p50), ("0.99", share.captureToTaken.p99)] {
                latency.append((label(share) + ",stage=\"taken\",quantile=\"\(quantile)\"", value / 1e6))
            }
            if let encoded = share.encoded {
                for (quantile, value) in [("0.5", encoded.captureToEncoded.p50), ("0.99", encoded.captureToEncoded.p99)] {
                    latency.append((label(share) + ",stage=\"encoded\",quantile=\"\(quantile)\"", value / 1e6))
                }
            }
            if let sent = share.transport {
                for (quantile, value) in [("0.5", sent.captureToSent.p50), ("0.99", sent.captureToSent.p99)] {
                    latency.append((label(share) + ",stage=\"sent\",quantile=\"\(quantile)\"", value / 1e6))
                }
            }
        }
        metric("capture_latency_seconds", "summary", "Capture to each stage, in seconds.", latency)
        return lines.joined(separator: "\n") + "\n"
    }
}
