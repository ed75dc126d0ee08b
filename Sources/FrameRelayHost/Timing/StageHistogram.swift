/// One stage's latency as a Prometheus histogram: cumulative counts at
/// fixed bounds from 0.5 ms to 1 s, their total and their sum (seconds).
public struct StageHistogram: Sendable, Codable, Equatable {
    /// The `le` bounds, in nanoseconds: 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500 ms, 1 s.
    public static let bounds: [UInt64] = [500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000, 20_000_000, 50_000_000, 100_000_000, 200_000_000, 500_000_000, 1_000_000_000]

    /// "taken", "encoded" or "sent": capture → that stage.
    public var stage: String
    /// Durations at most each of ``bounds``.
    public var counts: [UInt64]
    public var count: UInt64
    public var sumSeconds: Double
}
