import FrameRelaySystem
/// One share's latency at every stage, recorded from each frame's
/// ``FrameTiming`` in one place (fixed memory, no allocation per frame).
public struct ShareLatency {
    private var captureToTaken = LatencyHistogram()
    private var handoff = LatencyHistogram()
    private var convert = LatencyHistogram()
    private var encode = LatencyHistogram()
    private var captureToEncoded = LatencyHistogram()
    private var recentCaptureToEncoded = LatencyHistogram()
    private var captureToSent = LatencyHistogram()
    private var pacer = LatencyHistogram()

    public init() {}

    /// Records a frame's stages; a stage it did not reach (0) is left out.
    public mutating func record(_ t: FrameTiming) {
        captureToTaken.record(t.taken &- t.captured)
        handoff.record(t.taken &- t.published)
        guard t.encoded != 0 else { return }
        convert.record(t.converted &- t.taken)
        encode.record(t.encoded &- t.converted)
        captureToEncoded.record(t.encoded &- t.captured)
        recentCaptureToEncoded.record(t.encoded &- t.captured)
        if t.sent != 0 { captureToSent.record(t.sent &- t.captured) }
        if t.sent != 0, t.queued != 0 { pacer.record(t.sent &- t.queued) }
    }

    /// Copies the percentiles into the share's statistics (capture → taken,
    /// the hand-off, the encoder's stages, capture → sent).
    public func fill(_ stats: inout ShareStats) {
        stats.captureToTaken = captureToTaken.summary
        stats.handoff = handoff.summary
        stats.encoded?.convert = convert.summary
        stats.encoded?.encode = encode.summary
        stats.encoded?.captureToEncoded = captureToEncoded.summary
        // At the histogram's own resolution (16 ranges an octave, within 6.25 %): the load test
        // judges the p99 after the warm-up from these, and it must read as finely as the whole step's.
        stats.encoded?.captureToEncodedBins = captureToEncoded.bins(perOctave: LatencyHistogram.subBuckets)
        stats.transport?.captureToSent = captureToSent.summary
        stats.transport?.pacer = pacer.summary
        stats.histograms = [captureToTaken.prometheus(stage: "taken")]
        if stats.encoded != nil { stats.histograms.append(captureToEncoded.prometheus(stage: "encoded")) }
        if stats.transport != nil { stats.histograms.append(captureToSent.prometheus(stage: "sent")) }
    }

    /// Capture → encoded since the last call (a window of the run); starts a new window.
    public mutating func takeRecentCaptureToEncoded() -> LatencySummary {
        defer { recentCaptureToEncoded = LatencyHistogram() }
        return recentCaptureToEncoded.summary
    }

    /// Taken → converted so far (µs).
    public var convertSummary: LatencySummary { convert.summary }
    /// Capture → last packet sent so far (µs).
    public var captureToSentSummary: LatencySummary { captureToSent.summary }
}
