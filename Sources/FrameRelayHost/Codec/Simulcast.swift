import FrameRelayFrames

/// How a share is encoded in simulcast layers, so that each viewer (Janus
/// forwards each one its substream) gets the picture its link carries: the
/// whole picture on top, and below it layers of half the width and height
/// of the one above, each VP8 with two temporal layers. With one layer the
/// stream is the whole picture alone, with no temporal layers.
public struct Simulcast: Sendable, Equatable {
    /// The most layers (Janus's substreams 0, 1, 2).
    public static let maxLayers = 3
    /// No layer narrower or lower than this.
    public static let minimumSide = 64
    /// With the layer count left to the host, the picture's width from which it sends a lower layer.
    public static let automaticWidth = 640
    /// A lower layer's bitrate: a quarter of the one above, at least this
    /// (LiveKit's rule for a screen share's half-size layer), and never more than half the one above.
    public static let minimumLowerBitrate = 150
    /// No layer of several below this: VP8 at its coarsest quantizer spends
    /// 156 kbit/s on a 320×180 moving screen at 30 frames/s (the smallest
    /// layer of 720p in three), so under it the encoder meets its rate only by dropping frames.
    public static let minimumLayerBitrate = 150

    /// libvpx `cpu-used` of every layer below the top: the fastest. A lower
    /// layer's frame costs the encoder a floor over its whole picture however
    /// little it codes; at -16 two layers cost 1.28x one on a still screen
    /// and 1.38x typing before small changes were gathered (1.39x, 1.45x at
    /// the top's -6; `frame-relay-bench --filter layers --repeat 3`), for 0.3 dB less on the desktop clip at
    /// 640x360 and 625 kbit/s (46.6 against 46.9 dB, ffmpeg's libvpx).
    public static let lowerLayerSpeed = -16
    /// A lower layer's frame that differs from the frame it references in at
    /// least one in this many of its macroblocks (a scroll or video over a
    /// quarter of the picture; a dragged window only if that large) is coded
    /// at ``lowerLayerMotionSpeed``: at -16 libvpx hardly searches motion, and while
    /// the screen scrolled the small layer's base temporal layer alone came
    /// to ~900 kbit/s against 375 for the layer, where the top spent 750 at
    /// 1280x720; its pacer fell ever further behind, and through Janus its
    /// viewers on a free link waited 360 ms (p50) with 30–44 freezes a minute.
    public static let motionShare = 4

    /// libvpx `cpu-used` of a lower layer's frame that moves much of its
    /// picture (``motionShare``). At the top's -6 the scrolling model's small
    /// layer came to 695 kbit/s against its 625, its base temporal layer to
    /// 1.05–1.36 Mbit/s in the half seconds of a scroll, each base frame of
    /// it 9–14 KB; at -4, 470 kbit/s, at most 0.71 Mbit/s, 4–7 KB (-2: 320
    /// kbit/s, but two layers cost 1.92x one while scrolling; -5 searches no
    /// better than -6: 745 kbit/s, 1.05 Mbit/s). It costs the host 2–7 %
    /// scrolling and 4–5 % on a window moving (`frame-relay-bench --filter
    /// layers`, two sets of runs interleaved with -6: scrolling 1.43–1.44x
    /// against 1.40–1.42x and 1.60x against 1.50x, a window moving 1.21x
    /// against 1.14–1.16x and 1.27x against 1.21–1.22x).
    /// Through Janus its smaller frames leave the pacer at once, and viewers
    /// on a free link see room for the large layer while the screen scrolls
    /// (docs/STREAMING.md).
    public static let lowerLayerMotionSpeed = -4

    /// The cap on a lower layer's keyframe, in percent of a frame's bit
    /// budget (``VP8Settings/keyframeCapPercent``): 300 % at any frame rate,
    /// under the 900 % the top keeps at 30 frames/s. Uncapped, the small
    /// layer's keyframe asked for in the middle of a scroll came to 37–43 KB
    /// at 625 kbit/s (29 KB capped), more than a 1 Mbit/s link's 300 ms
    /// queue holds, and its viewers there lost their first picture.
    public static let lowerLayerKeyframeCap = 300

    /// A layer below the top sends a frame that would code little (what
    /// changed since its last frame and what still refines under one in
    /// ``smallChangeShare`` of its macroblocks: typing, a pointer, a clock)
    /// at most this many times a second, each frame carrying all that
    /// changed since its last; a larger change (a window moving, a scroll,
    /// video) and a picture refining after a keyframe go at the full rate,
    /// as a keyframe does. libvpx's work on a frame is mostly over its whole
    /// picture: coding nothing costs 43–46 % of coding every macroblock
    /// (docs/ENCODING.md), so a frame coding a sixteenth of the picture is
    /// nearly all that floor. Refinement is not gathered: a frame would
    /// carry six frames' bits (after a keyframe, 20–30 KB at 640x360), which
    /// a narrow link's queue cannot take and which a viewer's layer rule
    /// reads as a slow link. The rate is a screen share's on a narrow link
    /// elsewhere: Chrome caps a conference screen share's base layer at
    /// 5 frames/s, and Jitsi sends screens at 5.
    public static let smallChangeRate = 5
    /// A frame coding under one in this many of a layer's macroblocks codes little (``smallChangeRate``).
    public static let smallChangeShare = 16

    /// How a lower layer gathers small changes at `frameRate` frames/s:
    /// the least time (ns) between its frames, one in ``smallChangeRate``
    /// of a second less half a frame interval (capture times jitter), and
    /// the most frames it leaves in a row (5 at 30 frames/s); nil at a
    /// frame rate that leaves nothing to gather.
    public static func gathering(frameRate: Int) -> (interval: UInt64, frames: Int)? {
        let frameRate = Int64(max(1, frameRate))
        let interval = 1_000_000_000 / Int64(smallChangeRate) - 500_000_000 / frameRate
        guard interval > 1_000_000_000 / frameRate else { return nil }
        return (UInt64(interval), max(1, Int(frameRate) / smallChangeRate - 1))
    }

    /// Layers asked for, 1...3; nil: 2, the lower one sent only where the picture is at least ``automaticWidth`` wide.
    public var layers: Int?
    /// Each layer's bitrate in kbit/s, smallest first; nil: the top layer's is
    /// the share's bitrate and each below it max(``minimumLowerBitrate``, a quarter of the one above), at most half of it.
    public var bitrates: [Int]?

    public init(layers: Int? = nil, bitrates: [Int]? = nil) {
        self.layers = layers
        self.bitrates = bitrates
    }

    /// Streams the share has room for (a Janus mountpoint's ports), smallest first.
    public var streams: Int { layers ?? 2 }

    /// Throws a ``CodecError`` naming what is out of range, with the top layer at `top` kbit/s.
    public func validate(top: Int) throws(CodecError) {
        if let layers, !(1...Self.maxLayers).contains(layers) {
            throw .invalidSetting("invalid layer count \(layers): must be 1...\(Self.maxLayers)")
        }
        if let bitrates {
            guard bitrates.count == streams else {
                throw .invalidSetting("\(bitrates.count) layer \(bitrates.count == 1 ? "bitrate" : "bitrates") for \(streams) \(streams == 1 ? "layer" : "layers"): give one per layer, smallest first")
            }
            for rate in bitrates where !(1...100_000).contains(rate) { throw .invalidSetting("invalid layer bitrate \(rate) kbps: must be 1...100000") }
            guard zip(bitrates, bitrates.dropFirst()).allSatisfy({ $0 < $1 }) else {
                throw .invalidSetting("layer bitrates \(bitrates.map(String.init).joined(separator: ",")) must rise from the smallest layer to the top")
            }
        }
        // Asked for (with the count left to the host, a lower layer under it is not sent).
        if (layers ?? bitrates?.count ?? 1) > 1 {
            let rates = (0..<streams).map { bitrate(stream: $0, top: top) }
            if let low = rates.first, low < Self.minimumLayerBitrate {
                throw .invalidSetting("layer bitrates \(rates.map(String.init).joined(separator: ",")) kbit/s: each of several layers needs at least \(Self.minimumLayerBitrate) (under it VP8 meets its rate only by dropping frames); raise the top layer's bitrate or ask for fewer layers")
            }
        }
    }

    /// Throws a ``CodecError`` when the layers asked for do not fit a
    /// `width`×`height` picture (one would have a side under ``minimumSide``).
    public func check(width: Int, height: Int, top: Int) throws(CodecError) {
        guard let layers, sizes(width: width, height: height, top: top).count < layers else { return }
        let side = Self.minimumSide << (layers - 1)
        throw .invalidSetting("\(layers) layers need a picture at least \(side)x\(side) (each half the width and height of the one above, none under \(Self.minimumSide) px): this share's is \(width)x\(height); ask for fewer layers")
    }

    /// The layers sent for a `width`×`height` picture, smallest first, each
    /// with its stream (0 is the smallest the share has room for): each half
    /// the width and height of the one above, even, none with a side under
    /// ``minimumSide``, and with the count left to the host none below a
    /// picture narrower than ``automaticWidth`` or a top bitrate of `top`
    /// kbit/s that leaves the lower layer under ``minimumLayerBitrate``.
    public func sizes(width: Int, height: Int, top: Int) -> [(stream: Int, width: Int, height: Int)] {
        var sizes = [(stream: streams - 1, width: width, height: height)]
        let wanted = layers ?? (width >= Self.automaticWidth && bitrate(stream: 0, top: top) >= Self.minimumLayerBitrate ? 2 : 1)
        while sizes.count < wanted {
            let above = sizes[0]
            let size = (stream: above.stream - 1, width: above.width / 2 & ~1, height: above.height / 2 & ~1)
            guard size.width >= Self.minimumSide, size.height >= Self.minimumSide else { break }
            sizes.insert(size, at: 0)
        }
        return sizes
    }

    /// Stream `stream`'s encoder settings when the top one's are `top`: its
    /// bitrate, two temporal layers when there are several streams, and
    /// below the top ``lowerLayerSpeed`` and ``lowerLayerKeyframeCap``.
    public func settings(stream: Int, top: VP8Settings) -> VP8Settings {
        var layer = top
        layer.bitrateKbps = bitrate(stream: stream, top: top.bitrateKbps)
        layer.temporalLayers = streams > 1 ? 2 : 1
        if stream < streams - 1 { (layer.speed, layer.keyframeCapPercent) = (Self.lowerLayerSpeed, Self.lowerLayerKeyframeCap) }
        return layer
    }

    /// Stream `stream`'s bitrate when the top one's is `top`.
    public func bitrate(stream: Int, top: Int) -> Int {
        if let bitrates { return bitrates[stream] }
        var rate = top
        for _ in stream..<(streams - 1) { rate = max(1, min(rate / 2, max(Self.minimumLowerBitrate, rate / 4))) }
        return rate
    }
}
