import FrameRelaySystem
import FrameRelayRing
import FrameRelayJanus
import FrameRelayRTP
/// What the host knows about one share (one App Group), as reported in the
/// status line and the JSON summary.
public struct ShareStats: Sendable, Codable {
    public var appGroup: String
    /// When the host made these figures, and when the first frame it took was captured (CLOCK_MONOTONIC ns; 0: none yet).
    public var publishedAt: UInt64 = 0
    public var firstCaptured: UInt64 = 0
    /// Frames this host took, skipped as invalid, and the ring's own counters.
    public var taken: UInt64 = 0
    public var invalid: UInt64 = 0
    public var ring = RingCounters()
    /// Counters of rings the host followed before the current one (producer restarts).
    public var earlierRings = RingCounters()
    public var producerAttaches = 0
    public var producerDeaths = 0
    /// Rings let go because they were shrunk, unlinked or replaced under the host.
    public var ringsLost = 0
    public var checksumFailures: UInt64 = 0
    /// Frames whose payload checksum was checked and held (`--verify`).
    public var checksumsVerified: UInt64 = 0
    /// Whether the producer finished its broadcast (and no new one attached since).
    public var producerFinished = false
    /// Whether the producer paused its broadcast and has not resumed it (it sends no frames meanwhile).
    public var producerPaused = false
    /// Whether the producer died and no producer attached since.
    public var producerGone = false
    /// CPU time of the share's host thread so far (ring, conversion, encoding, sending), seconds.
    public var cpuSeconds: Double = 0
    /// Frames taken per second, recently, by their capture times
    /// (``FrameRateWindow``; 0 before two frames); in the exit report, over the whole run (``wholeRun``).
    public var fps: Double = 0
    /// The frames the rate counted over the whole run and the capture time
    /// they spanned (pauses, stops, the gaps between producers and stale
    /// frames left out; 0 before two frames).
    public var framesTimed = 0
    public var secondsTimed = 0.0
    /// Capture → taken, and publish → taken (the hand-off), in µs.
    public var captureToTaken = LatencySummary(count: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0)
    public var handoff = LatencySummary(count: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0)
    /// Capture → taken, encoded and sent as Prometheus histograms (for `/metrics`).
    public var histograms: [StageHistogram] = []
    /// The latest picture geometries in arrival order (at most ``historyLimit``): "WxH format orientation from frame N".
    public var geometries: [String] = []
    /// Every geometry change, including those no longer in ``geometries``.
    public var geometryChanges = 0
    /// Capture → encoded over the last second only (µs): latency over time, where the others are cumulative.
    public var recentCaptureToEncoded: LatencySummary?
    /// The encoder's figures, when the host encodes.
    public var encoded: EncodeStats?
    /// The RTP stream's figures, when the host streams.
    public var transport: TransportStats?
    /// Each simulcast stream's RTP, smallest first, when the share sends several.
    public var streams: [SimulcastStreamStats] = []
    /// The recording's figures, when the share records (`--record`).
    public var recording: RecordingStats?
    /// The Janus mountpoint the share streams into (`--janus`).
    public var janus: JanusMountpoint?
    /// The latest lifecycle and connection events (at most ``historyLimit``) with their CLOCK_MONOTONIC time (ns).
    public var events: [ShareEvent] = []
    /// Events no longer in ``events``.
    public var eventsDropped = 0

    /// How much history a share keeps: a producer toggling size or a
    /// receiver asking for keyframes all day must not grow the host.
    public static let historyLimit = 64

    /// Appends an event, forgetting the oldest past ``historyLimit``.
    mutating func appendEvent(_ event: ShareEvent) {
        events.append(event)
        if events.count > Self.historyLimit {
            events.removeFirst()
            eventsDropped += 1
        }
    }

    public init(appGroup: String) { self.appGroup = appGroup }

    /// Frames replaced before the host took them, over this ring and the
    /// earlier ones (saturating: the counts come from shared memory).
    public var totalDropped: UInt64 { ring.dropped.saturatingAdd(earlierRings.dropped) }

    /// Frames the producers published, over this ring and the earlier ones (saturating).
    public var totalWritten: UInt64 { ring.written.saturatingAdd(earlierRings.written) }

    /// The share's figures over its whole run, for the summary and the
    /// report: frames taken a second and encoded kbit/s over the time frames
    /// came (``framesTimed``, ``secondsTimed``; `fps` 0 and nil kbit/s before two frames).
    public var wholeRun: (stats: ShareStats, kbps: Double?) {
        var whole = self
        whole.fps = secondsTimed > 0 ? Double(framesTimed) / secondsTimed : 0
        return (whole, secondsTimed > 0 ? encoded.map { Double($0.allLayersBytes) * 8 / 1000 / secondsTimed } : nil)
    }
}

/// One thing that happened to a share.
public struct ShareEvent: Sendable, Codable {
    public var time: UInt64
    public var kind: String
    public var detail: String
}

/// One simulcast stream's RTP: its SSRC and what it sent and was asked
/// (the latencies are the whole picture's, in ``ShareStats/transport``).
public struct SimulcastStreamStats: Sendable, Codable, Equatable {
    public var ssrc: UInt32
    public var frames: UInt64
    public var keyframes: UInt64
    public var packets: UInt64
    public var octets: UInt64
    public var retransmitted: UInt64
    public var nacked: UInt64
    public var pli: UInt64
    public var fir: UInt64

    public init(_ stats: TransportStats) {
        (ssrc, frames, keyframes, packets, octets) = (stats.ssrc, stats.frames, stats.keyframes, stats.packets, stats.octets)
        (retransmitted, nacked, pli, fir) = (stats.retransmitted, stats.nacked, stats.pli, stats.fir)
    }
}
