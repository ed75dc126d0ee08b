import FrameRelaySystem

extension LatencyHistogram {
    /// The distribution as a Prometheus histogram over ``StageHistogram/bounds``.
    func prometheus(stage: String) -> StageHistogram {
        StageHistogram(stage: stage, counts: cumulativeCounts(atMost: StageHistogram.bounds), count: count, sumSeconds: Double(sum) / 1e9)
    }
}
