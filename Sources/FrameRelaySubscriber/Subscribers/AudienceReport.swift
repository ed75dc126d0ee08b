import FrameRelaySystem

/// What an audience saw, per group: how many joined and kept watching,
/// its packets and frames, freezes, keyframe waits, NACK recoveries and
/// PLIs, latency (capture → decodable, from the host's trace), and the
/// audience process's own CPU. Times in milliseconds (keys ending `Ms`).
public struct AudienceReport: Codable, Sendable {
    public var groups: [Group] = []
    /// How long the audience watched, and the CPU its process used meanwhile (s).
    public var seconds = 0.0
    public var cpuSeconds = 0.0
    /// Why the hosts' traces (`--captures`) could not be read, when they could not: no latency then.
    public var capturesError: String?

    public init() {}

    /// CPU milliseconds one viewer costs per second of stream.
    public var cpuMsPerViewerSecond: Double {
        let viewerSeconds = Double(groups.map(\.watching).reduce(0, +)) * seconds
        return viewerSeconds == 0 ? 0 : cpuSeconds * 1000 / viewerSeconds
    }

    public struct Group: Codable, Sendable {
        public var share: String
        public var janus: String
        public var mountpoint: UInt64
        public var link: String
        public var viewers: Int
        /// Viewers that joined (Janus answered, ICE and DTLS connected), and that still watched at the end.
        public var joined = 0
        public var watching = 0
        public var decoders = 0
        /// Why viewers failed, as one line (the first reason; several viewers may share it).
        public var error: String?
        public var totals = SubscriberStats()
        /// Capture → decodable at the viewers, over every frame of every viewer (ms).
        public var latency: LatencyPercentiles?
        /// Watch → first decodable frame: median and slowest viewer (ms).
        public var firstFrameP50Ms: Double?
        public var firstFrameMaxMs: Double?
        /// Freezes per viewer-minute, and keyframe waits.
        public var freezesPerMinute = 0.0
        /// Per viewer: decodable frames a second and kilobits a second received, over the time watched.
        public var framesPerSecond = 0.0
        public var kbitPerSecond = 0.0
        /// Decoded pictures whose stamp is the frame that last changed the picture the host sent with that PictureID, and those whose stamp is not.
        public var picturesMatched: UInt64 = 0
        public var picturesMismatched: UInt64 = 0
        /// Decoded pictures not checked: on a layer too small for the stamp to be read (the smallest of three at 720p).
        public var picturesTooSmall: UInt64 = 0
        public var subscribers: [SubscriberStats] = []

        /// Residual loss over the group, percent.
        public var lossPercent: Double { totals.lossPercent }
    }

    /// p50, p90, p99 and max of a latency distribution (ms), and how many values.
    public struct LatencyPercentiles: Codable, Sendable, Equatable {
        public var count: UInt64
        public var p50Ms: Double
        public var p90Ms: Double
        public var p99Ms: Double
        public var maxMs: Double

        init(_ histogram: LatencyHistogram) {
            count = histogram.count
            p50Ms = Double(histogram.percentile(50)) / 1e6
            p90Ms = Double(histogram.percentile(90)) / 1e6
            p99Ms = Double(histogram.percentile(99)) / 1e6
            maxMs = Double(histogram.max) / 1e6
        }
    }
}

extension SubscriberStats {
    /// Adds another subscriber's counters (states, first-frame times and round trips aside).
    mutating func add(_ other: SubscriberStats) {
        packetsExpected += other.packetsExpected
        packetsReceived += other.packetsReceived
        packetsLost += other.packetsLost
        bytesReceived += other.bytesReceived
        duplicates += other.duplicates
        nackedPackets += other.nackedPackets
        recoveredPackets += other.recoveredPackets
        givenUpPackets += other.givenUpPackets
        plisSent += other.plisSent
        receiverReports += other.receiverReports
        senderReports += other.senderReports
        framesComplete += other.framesComplete
        framesDecodable += other.framesDecodable
        keyframes += other.keyframes
        framesSkipped += other.framesSkipped
        framesHeld += other.framesHeld
        keyframeWaits += other.keyframeWaits
        keyframeWaitMs += other.keyframeWaitMs
        freezes += other.freezes
        freezeMs += other.freezeMs
        framesDecoded += other.framesDecoded
        decodeErrors += other.decodeErrors
        stampsRead += other.stampsRead
        srtpFailures += other.srtpFailures
        strangeSSRCs += other.strangeSSRCs
        stunAnswered += other.stunAnswered
        stunRefused += other.stunRefused
        linkLostIn += other.linkLostIn
        linkLostOut += other.linkLostOut
        linkQueueDrops += other.linkQueueDrops
        linkBufferDrops += other.linkBufferDrops
        layerMs.merge(other.layerMs, uniquingKeysWith: +)
        layerSwitches += other.layerSwitches
    }
}
