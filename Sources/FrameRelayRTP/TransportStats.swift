import FrameRelaySystem
/// What one share's RTP stream did: ``RTPSender`` counts it, the socket
/// adapter adds what the kernel refused, the share adds the latency.
public struct TransportStats: Sendable, Codable {
    public var ssrc: UInt32 = 0
    public var frames: UInt64 = 0
    public var keyframes: UInt64 = 0
    public var packets: UInt64 = 0
    public var octets: UInt64 = 0
    public var sendErrors: UInt64 = 0
    /// errno of the last failed send.
    public var lastSendError: Int32?
    public var senderReports: UInt64 = 0
    public var receiverReports: UInt64 = 0
    public var rtcpReceived: UInt64 = 0
    public var pli: UInt64 = 0
    public var fir: UInt64 = 0
    public var nacked: UInt64 = 0
    public var retransmitted: UInt64 = 0
    public var lastFractionLost: Double = 0
    /// The last REMB a receiver sent about the stream, bits/s (0: none).
    public var estimatedBitrate: UInt64 = 0
    /// The target its receivers' reports set, bits/s (nil: the stream does not adapt).
    public var targetBitrate: Int?
    /// Packets of a frame larger than the sender's history (1,024 packets) that it no longer held when they were due.
    public var overwritten: UInt64 = 0
    /// Capture → last packet sent (µs), from the share's frame timings.
    public var captureToSent = LatencySummary(count: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0)
    /// Queued → last packet sent (µs): the time the frames spent in the pacer.
    public var pacer = LatencySummary(count: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0)

    public init() {}
}
