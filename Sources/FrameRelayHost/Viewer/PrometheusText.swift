/// Renders share statistics in the Prometheus text exposition format,
/// with Prometheus's conventions: counters end in `_total`, units are in
/// the names (`_seconds`, `_bytes`), latencies are histograms with `le`
/// buckets, `_sum` and `_count`, and `framerelay_build_info` carries the version.
import FrameRelayRTP
import FrameRelaySystem

enum PrometheusText {
    static func render(_ shares: [ShareStats]) -> String {
        var lines: [String] = []
        func header(_ name: String, _ type: String, _ help: String) {
            lines.append("# HELP framerelay_\(name) \(help)")
            lines.append("# TYPE framerelay_\(name) \(type)")
        }
        func metric(_ name: String, _ type: String, _ help: String, _ values: [(String, Double)]) {
            header(name, type, help)
            for (labels, value) in values { lines.append("framerelay_\(name){\(labels)} \(number(value))") }
        }
        func label(_ share: ShareStats) -> String { "app_group=\"\(escape(share.appGroup))\"" }
        func counter(_ name: String, _ help: String, _ value: (ShareStats) -> UInt64?) {
            metric(name, "counter", help, shares.compactMap { share in value(share).map { (label(share), Double($0)) } })
        }
        metric("build_info", "gauge", "The FrameRelay version serving these metrics (always 1).", [("version=\"\(FrameRelayVersion.string)\"", 1)])
        counter("frames_taken_total", "Frames the host took from the ring.") { $0.taken }
        counter("frames_dropped_total", "Frames replaced in the ring before the host took them.") { $0.totalDropped }
        counter("frames_invalid_total", "Frames skipped for bad metadata or checksum.") { $0.invalid }
        counter("frames_encoded_total", "VP8 frames encoded.") { $0.encoded?.frames ?? 0 }
        counter("keyframes_encoded_total", "VP8 keyframes encoded (on request, size change, or periodic).") { $0.encoded?.keyframes ?? 0 }
        counter("frames_skipped_total", "Frames not encoded because nothing on the screen changed and still regions had converged (zero-hertz).") { $0.encoded?.skipped ?? 0 }
        counter("frames_repeated_total", "Frames the producer said repeat the picture before (a still screen it knows is still): neither converted nor compared.") { $0.encoded?.repeated ?? 0 }
        counter("frames_located_total", "Frames the producer said where they changed: converted and compared only there.") { $0.encoded?.located ?? 0 }
        counter("frames_partial_total", "Frames encoded only where the screen changed or still refines (an active map).") { $0.encoded?.partial ?? 0 }
        counter("encoded_bytes_total", "VP8 bytes produced (the whole picture's layer; every layer's are framerelay_layer_*).") { $0.encoded?.bytes ?? 0 }
        // Each simulcast layer apart (with --layers 2 or 3): stream 0 is the smallest.
        func layerCounter(_ name: String, _ help: String, _ value: (LayerStats) -> UInt64) {
            metric(name, "counter", help, shares.flatMap { share in
                (share.encoded?.layers ?? []).count > 1 ? share.encoded!.layers.map { (label(share) + ",layer=\"\($0.stream)\"", Double(value($0))) } : []
            })
        }
        layerCounter("layer_encoded_bytes_total", "VP8 bytes each simulcast layer produced (layer 0 is the smallest).") { $0.bytes }
        layerCounter("layer_frames_encoded_total", "VP8 frames each simulcast layer encoded.") { $0.frames }
        layerCounter("layer_keyframes_encoded_total", "VP8 keyframes each simulcast layer encoded.") { $0.keyframes }
        counter("recorded_frames_total", "Whole frames written to the share's recording (--record).") { $0.recording?.frames }
        metric("recording_stopped", "gauge", "1 when the share's recording stopped before the share (a full disk); the share goes on.",
               shares.compactMap { share in share.recording.map { (label(share), $0.stopped == nil ? 0 : 1) } })
        counter("rtp_packets_total", "RTP packets sent.") { $0.transport?.packets ?? 0 }
        counter("rtp_payload_bytes_total", "RTP payload bytes sent (the Sender Report's octet count).") { $0.transport?.octets }
        counter("rtp_send_errors_total", "RTP packets the kernel refused to send.") { $0.transport?.sendErrors }
        counter("rtcp_nack_packets_total", "Packets receivers asked to have resent (generic NACK).") { $0.transport?.nacked }
        counter("rtp_retransmitted_packets_total", "Packets sent again for a NACK.") { $0.transport?.retransmitted }
        counter("rtcp_pli_total", "Picture Loss Indications received (keyframe requests).") { $0.transport?.pli }
        counter("rtcp_fir_total", "Full Intra Requests received (keyframe requests).") { $0.transport?.fir }
        counter("rtcp_receiver_reports_total", "RTCP receiver report blocks received.") { $0.transport?.receiverReports }
        metric("rtp_fraction_lost_ratio", "gauge", "Fraction of packets lost, from the last receiver report about this stream (0-1).",
               shares.compactMap { share in share.transport.map { (label(share), $0.lastFractionLost) } })
        metric("frames_per_second", "gauge", "Frames taken per second, recently.", shares.map { (label($0), $0.fps) })
        metric("cpu_seconds_total", "counter", "CPU time of the share's host thread (ring, conversion, encoding, sending).", shares.map { (label($0), $0.cpuSeconds) })
        header("capture_latency_seconds", "histogram", "Capture to each stage (taken, encoded, sent), in seconds.")
        for share in shares {
            for histogram in share.histograms {
                let labels = label(share) + ",stage=\"\(histogram.stage)\""
                for (bound, count) in zip(StageHistogram.bounds, histogram.counts) {
                    lines.append("framerelay_capture_latency_seconds_bucket{\(labels),le=\"\(number(Double(bound) / 1e9))\"} \(count)")
                }
                lines.append("framerelay_capture_latency_seconds_bucket{\(labels),le=\"+Inf\"} \(histogram.count)")
                lines.append("framerelay_capture_latency_seconds_sum{\(labels)} \(number(histogram.sumSeconds))")
                lines.append("framerelay_capture_latency_seconds_count{\(labels)} \(histogram.count)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A sample value as Prometheus reads it (no exponent for everyday sizes).
    private static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// A label value with `\`, `"` and newlines escaped.
    private static func escape(_ text: String) -> String { text.escaped(["\\": "\\\\", "\"": "\\\"", "\n": "\\n"]) }
}
