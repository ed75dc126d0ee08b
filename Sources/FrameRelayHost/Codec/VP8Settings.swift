import FrameRelayFrames
/// How the VP8 encoder is configured: WebRTC's real-time screen-share
/// settings by default, each overridable.
public struct VP8Settings: Sendable, Equatable {
    /// Target bitrate in kilobits per second (CBR).
    public var bitrateKbps = 2500
    /// The frame rate the rate control plans for.
    public var frameRate = 30
    /// Seconds between periodic keyframes (0: only on request or size change).
    public var keyframeInterval: Double = 3
    /// libvpx `cpu-used`: negative is a fixed speed (WebRTC uses -6 for screens); -16 fastest.
    public var speed = -6
    /// Encoder threads; nil chooses from the size, the cores and how many encoders share them.
    public var threads: Int?
    /// libvpx screen-content mode: 2 (WebRTC's screen share), 1, or 0 (camera-like, as ffmpeg and GStreamer leave it).
    public var screenContentMode = 2
    /// Encoders running at once on this machine (for the thread policy).
    public var concurrentEncoders = 1
    /// Temporal layers: 1, or 2 (the base layer at half the frame rate, so
    /// that a viewer on a narrow link, or Janus for it, may take only that).
    public var temporalLayers = 1
    /// The base layer's share of the bitrate with two temporal layers, in
    /// percent (libwebrtc's VP8 split for two layers: 60/40).
    public var baseLayerPercent = 60
    /// The base layer's share while the screen changes little (typing, a
    /// pointer, a picture refining: ``VP8Encoder/setCalm(_:)``). An
    /// upper-layer frame then codes only the little that changed since the
    /// base frame before it, while only base frames refine the picture: at
    /// 60 % the top layer of typing at 720p30 refined its first keyframe
    /// in 44 frames (one temporal layer: 21), and two simulcast layers cost
    /// 1.13–1.16x one layer's CPU over 10 s; at 90 %, 32 frames and
    /// 1.06–1.09x (`SimulcastTests.aCalmScreenGivesTheBaseTemporalLayerMostOfTheRate`,
    /// `frame-relay-bench --filter layers.typing`, four runs of each interleaved).
    public var calmBaseLayerPercent = 90

    public init() {}

    /// The cap on a keyframe's size, in percent of a frame's bit budget:
    /// ``keyframeCapPercent`` where set, else WebRTC's 900 % at 30 frames/s,
    /// scaled with the frame rate, at least 300 %.
    public var maxIntraBitratePercent: Int { keyframeCapPercent ?? max(300, 900 * 30 / max(1, frameRate)) }
    public var keyframeCapPercent: Int?

    /// One frame at `frameRate` in ticks of the 90 kHz media clock (RTP's, and a recording's): at least one.
    public static func frameTicks(_ frameRate: Int) -> Int { 90_000 / min(90_000, max(1, frameRate)) }

    /// Throws a ``CodecError`` naming the first setting out of range.
    public func validate() throws(CodecError) {
        guard (1...100_000).contains(bitrateKbps) else { throw .invalidSetting("invalid bitrate \(bitrateKbps) kbps: must be 1...100000") }
        guard (1...240).contains(frameRate) else { throw .invalidSetting("invalid frame rate \(frameRate): must be 1...240") }
        guard keyframeInterval >= 0, keyframeInterval <= 3600 else { throw .invalidSetting("invalid keyframe interval \(keyframeInterval) s: must be 0...3600") }
        guard (-16...16).contains(speed) else { throw .invalidSetting("invalid speed \(speed): libvpx cpu-used is -16...16") }
        if let threads, !(1...16).contains(threads) { throw .invalidSetting("invalid thread count \(threads): must be 1...16") }
        guard (0...2).contains(screenContentMode) else { throw .invalidSetting("invalid screen-content mode \(screenContentMode): must be 0, 1 or 2") }
        if let keyframeCapPercent, !(1...10_000).contains(keyframeCapPercent) {
            throw .invalidSetting("invalid keyframe cap \(keyframeCapPercent) %: must be 1...10000")
        }
        guard (1...2).contains(temporalLayers) else { throw .invalidSetting("invalid temporal layer count \(temporalLayers): must be 1 or 2") }
        for share in [baseLayerPercent, calmBaseLayerPercent] where !(10...90).contains(share) {
            throw .invalidSetting("invalid base-layer share \(share) %: must be 10...90")
        }
    }

    /// The thread policy: WebRTC's for VP8 (`LibvpxVp8Encoder::NumberOfThreads`:
    /// a second thread only from three cores up, more only for large pictures
    /// on many cores), capped so that all the encoders on the machine together
    /// use no more threads than it has cores. libvpx's VP8 threads stall when
    /// they fight for busy cores: on two cores, the host encoding 720p at
    /// 30 frames/s has an encode p99 of 18–20 ms with one thread and 25–32 ms
    /// with two (`Benchmarks/thread-count.sh`).
    public static func threadCount(width: Int, height: Int, cores: Int, concurrentEncoders: Int) -> Int {
        let pixels = width * height
        let webRTC: Int
        if pixels >= 1920 * 1080, cores > 8 {
            webRTC = 8
        } else if pixels > 1280 * 960, cores >= 6 {
            webRTC = 3
        } else if pixels > 640 * 480, cores >= 3 {
            webRTC = cores >= 6 ? 3 : 2
        } else {
            webRTC = 1
        }
        return max(1, min(webRTC, cores / max(1, concurrentEncoders)))
    }
}
