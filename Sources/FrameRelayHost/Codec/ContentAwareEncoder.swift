import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing

/// VP8 that codes only what changed, in one call per frame, in each
/// simulcast layer (``Simulcast``): it converts the frame (only where the
/// producer says it changed, or not at all when it says it repeats), finds
/// what changed since the picture it keeps (``DamageDetector``, once, on
/// the whole picture: a lower layer takes that damage scaled down), and for
/// each layer, smallest first, chooses the macroblocks to code or refine
/// (``RefreshSchedule``), whether a keyframe is due (``KeyframeSchedule``)
/// and the temporal layer (``TemporalPattern``), and encodes; a layer with
/// nothing to code skips the frame, and a layer below the top leaves a
/// small change to a later frame (``Simulcast/smallChangeRate``). With `encodeEveryFrame` it converts and
/// encodes every frame whole, as a camera pipeline does.
///
/// With two temporal layers a frame of the upper one is never a reference,
/// so a macroblock it coded stays refining until a base-layer frame codes
/// it: only base-layer frames let macroblocks converge, and a still screen
/// ends on a base-layer frame that a viewer of the base layer alone sees.
public final class ContentAwareEncoder {
    /// What one frame came to: when its picture was ready to encode, and
    /// what the encoder did (the top layer's, or the first layer's that
    /// encoded; nil: skipped on every layer, nothing to code).
    public struct Result {
        public var converted: UInt64
        public var outcome: EncodeOutcome?
    }

    public let simulcast: Simulcast
    /// The top layer's bitrate as configured (kbit/s): with the count left to the host, whether a lower layer is sent.
    private let topBitrate: Int
    private let converter: FrameConverter
    /// What changed since the last picture; nil when every frame is encoded whole.
    private let damage: DamageDetector?
    /// One per stream, smallest first; the last is the whole picture.
    let layers: [SimulcastLayer]
    /// What it did so far (the share's statistics add the latencies).
    public private(set) var stats = EncodeStats()
    /// The last frame's metadata, for ``flushHeldBack(captureTime:output:)`` and ``encodeTail(captureTime:output:)``.
    private var lastMetadata: FrameMetadata?
    /// WebRTC's zero-hertz repeat: on a still screen streamed over RTP, one
    /// frame a second that codes nothing (a few hundred bytes, about 1 ms of
    /// libvpx at 720p), so that a receiver joining hears the stream, and can
    /// ask for a keyframe, and middleboxes keep its path open. Viewers and
    /// recordings need none: a viewer asks for its keyframe itself (a
    /// recording gets one at its end: ``encodeTail(captureTime:output:)``). With
    /// several layers, twice a second on each: Janus (1.1.2) asks for a
    /// keyframe when the substream a viewer watches has sent nothing it
    /// could relay for a second (janus_streaming.c, `need_pli`), and a
    /// repeat a second on each layer would come just past that.
    public let idleRepeatInterval: UInt64

    /// `converter` scales and converts what the ring holds into what VP8 reads.
    public init(settings: VP8Settings, simulcast: Simulcast = Simulcast(layers: 1), converter: FrameConverter, encodeEveryFrame: Bool) throws {
        try simulcast.validate(top: settings.bitrateKbps)
        self.simulcast = simulcast
        topBitrate = settings.bitrateKbps
        layers = try (0..<simulcast.streams).map { stream in
            try SimulcastLayer(stream: stream, isTop: stream == simulcast.streams - 1, settings: simulcast.settings(stream: stream, top: settings))
        }
        self.converter = converter
        damage = encodeEveryFrame ? nil : DamageDetector()
        idleRepeatInterval = simulcast.streams > 1 ? 500_000_000 : 1_000_000_000
    }

    /// The top layer's target bitrate now, kbit/s.
    public var topBitrateKbps: Int { layers[layers.count - 1].encoder.bitrateKbps }

    /// Sets the top layer's target bitrate (kbit/s) from the next frame on:
    /// what its direct receivers carry (``RTPSession``'s bitrate controller).
    public func setTopBitrate(_ kbps: Int) throws(CodecError) {
        let top = layers[layers.count - 1]
        try top.encoder.setBitrate(kbps)
        top.stats.bitrateKbps = top.encoder.bitrateKbps
    }

    /// Makes the next frame a keyframe on stream `stream` (nil: on every one).
    public func requestKeyframe(stream: Int? = nil) {
        for layer in layers where stream == nil || layer.stream == stream { layer.keyframes.request() }
    }

    /// Converts and encodes one frame, handing each packet to `output`
    /// (valid only during the call). `periodicKeyframes`: whether the
    /// periodic keyframe applies (some receiver cannot ask for one: the
    /// transport's answer, given as a value; the encoder never asks the transport);
    /// `repeatWhenIdle`: send the idle repeat (``idleRepeatInterval``) on a
    /// still screen. A frame whose content cannot be converted or encoded
    /// throws ``InvalidFrame/undecodable(frameNumber:reason:)``.
    public func encode(
        _ view: FrameView, periodicKeyframes: Bool, repeatWhenIdle: Bool, output: (EncodedFrame) throws -> Void
    ) throws -> Result {
        let metadata = view.metadata
        // The producer says this is the picture already held: nothing to convert or compare.
        let held = damage?.heldPicture(for: metadata)
        // It says where the frame changed since the picture held: convert and compare only there.
        let region = held != nil || converter.scales(metadata) ? nil : damage?.changes(in: metadata)
        var input: EncoderInput
        do {
            input = try held ?? converter.convert(view, only: region)
        } catch {
            throw InvalidFrame.undecodable(frameNumber: metadata.frameNumber, reason: "\(error)")
        }
        let converted = MonotonicClock.now()
        let top = layers[layers.count - 1]
        if let damage {
            top.schedule.prepare(columns: (input.width + 15) / 16, rows: (input.height + 15) / 16)
            if held != nil {
                stats.repeated += 1
            } else {
                let comparison: DamageDetector.Comparison
                do {
                    comparison = try top.schedule.withDamage { try damage.compare(input, source: metadata, region: region, into: $0) }
                } catch {
                    throw InvalidFrame.undecodable(frameNumber: metadata.frameNumber, reason: "\(error)")
                }
                if region != nil {
                    // Converted only in the region: the kept copy is the whole picture.
                    stats.located += 1
                    input = comparison.picture
                }
            }
        }
        // Periodic keyframes only while some receiver cannot ask for one (always when every frame is encoded whole).
        let periodic = damage == nil || periodicKeyframes
        var result = Result(converted: converted, outcome: nil)
        let sizes = simulcast.sizes(width: input.width, height: input.height, top: topBitrate)
        if let asked = simulcast.layers, sizes.count < asked { try simulcast.check(width: input.width, height: input.height, top: topBitrate) }
        for layer in layers { layer.stats.sending = sizes.contains { $0.stream == layer.stream } }
        for size in sizes {
            let layer = layers[size.stream]
            if damage != nil, !layer.isTop {
                layer.schedule.prepare(columns: (size.width + 15) / 16, rows: (size.height + 15) / 16, keepingDamage: layer.gathering)
                layer.schedule.takeDamage(from: top.schedule, scale: Double(input.width) / Double(size.width))
                let keyframeDue = layer.keyframes.isDue(width: size.width, height: size.height, pts: layer.encoder.timestamp(for: metadata.captureTime), periodic: periodic)
                if layer.gathers(captureTime: metadata.captureTime, keyframeDue: keyframeDue) {
                    layer.stats.gathered += 1
                    layer.framesGathered += 1
                    continue
                }
                layer.framesGathered = 0
            }
            if let outcome = try encode(layer, { try self.picture(of: layer, from: input, size: size) }, size: (size.width, size.height), metadata,
                                        periodic: periodic, idleRepeatAfter: repeatWhenIdle ? idleRepeatInterval : nil, output),
               result.outcome == nil || layer.isTop {
                result.outcome = outcome
            }
        }
        lastMetadata = metadata
        stats.layers = layers.map(\.stats)
        return result
    }

    /// Whether a layer holds a change back from a viewer of its base
    /// temporal layer: a change a layer below the top left to a later frame
    /// (``Simulcast/smallChangeRate``), or one that only an upper-layer frame
    /// carries. Never when every frame is encoded whole (a comparison mode:
    /// no picture is kept to send again).
    public var holdsBack: Bool { damage != nil && layers.contains(where: \.holdsBack) }

    /// Encodes the last picture, in the base temporal layer, on each layer
    /// that holds a change back (``holdsBack``), for when no frame comes to
    /// carry it: a producer that sends nothing while its screen is still, or
    /// one paused. `captureTime`: the time on the capture clock it goes out
    /// at (its RTP time stamp; as the last frame's, libvpx would take it for
    /// a frame a 90 kHz tick long and code it at its coarsest). Each layer
    /// is tried once: one libvpx drops, or one no longer sent, holds nothing
    /// back after (no retry every idle poll). Returns whether a layer encoded.
    public func flushHeldBack(captureTime: UInt64, output: (EncodedFrame) throws -> Void) throws -> Bool {
        guard let damage, var metadata = lastMetadata, let input = damage.keptPicture else { return false }
        metadata.captureTime = max(captureTime, metadata.captureTime)
        let sizes = simulcast.sizes(width: input.width, height: input.height, top: topBitrate)
        var encoded = false
        for layer in layers where layer.holdsBack {
            (layer.framesGathered, layer.baseBehind) = (0, false)
            guard let size = sizes.first(where: { $0.stream == layer.stream }) else { continue }
            if try encode(layer, { try self.picture(of: layer, from: input, size: size) }, size: (size.width, size.height), metadata,
                          periodic: false, idleRepeatAfter: nil, base: true, output) != nil {
                encoded = true
            }
        }
        stats.layers = layers.map(\.stats)
        return encoded
    }

    /// Encodes the last picture on the top layer once more at `captureTime`
    /// (where the share ended, on the capture clock), when the top's last
    /// frame went out ``tailAfter`` or more before it: a screen still to the share's end, nothing
    /// coded where nothing refines. The recording's last frame, so that it
    /// plays as long as the share lasted rather than stopping at the last
    /// change. Not when every frame is encoded whole, nor when the top would
    /// make a keyframe or the last picture was not the top's last size (a
    /// frame that failed mid-way). Returns whether it encoded.
    public func encodeTail(captureTime: UInt64, output: (EncodedFrame) throws -> Void) throws -> Bool {
        let top = layers[layers.count - 1]
        guard let damage, var metadata = lastMetadata, let input = damage.keptPicture, captureTime >= top.lastEncodedCapture &+ Self.tailAfter,
              input.width == top.stats.width, input.height == top.stats.height,
              !top.keyframes.isDue(width: input.width, height: input.height, pts: top.encoder.timestamp(for: captureTime), periodic: false) else { return false }
        metadata.captureTime = captureTime
        let encoded = try encode(top, { input }, size: (input.width, input.height), metadata, periodic: false, idleRepeatAfter: 0, base: true, output) != nil
        stats.layers = layers.map(\.stats)
        return encoded
    }

    /// How long before the share's end the top's last frame must have gone
    /// out for the recording to get one more (``encodeTail(captureTime:output:)``):
    /// a shorter still end costs the file less than this, and a finish a few
    /// frames after the last frame (a busy machine's) adds none.
    static let tailAfter: UInt64 = 500_000_000

    /// A base-layer frame of the top layer whose picture changed since the
    /// last base frame in under one in this many macroblocks is of a calm
    /// screen (``VP8Encoder/setCalm(_:)``): typing, a pointer, a clock, a
    /// still screen refining; a window moving, a scroll or video are not;
    /// nor any while the layer sends more than its bitrate (``LayerSpend``).
    /// A keyframe is not: at the calm split the top's keyframes on typing
    /// came to 48–55 KB against 41–45. Nor is a lower layer ever: libvpx's
    /// buffer, fuller at the calm split, let the small layer's keyframe in
    /// a scroll come to 43–49 KB against 29, over a narrow link's queue
    /// (``Simulcast/lowerLayerKeyframeCap``); its refinement goes in sweeps at its own pace.
    static let calmShare = 16

    /// `layer`'s picture of `input` (the whole picture): the top's is
    /// `input`; a lower layer's is scaled again only in the rows that changed
    /// (a keyframe, a new size: all of them).
    private func picture(of layer: SimulcastLayer, from input: EncoderInput, size: (stream: Int, width: Int, height: Int)) throws -> EncoderInput {
        guard !layer.isTop else { return input }
        guard damage != nil else { return try layer.scaler.scale(input, width: size.width, height: size.height) }
        layer.schedule.noteChangedRows()
        return try layer.scaler.scale(input, width: size.width, height: size.height, changedRows: layer.schedule.changedRows)
    }

    /// One layer's frame: its plan, keyframe and temporal layer (`base`: the
    /// base one), a lower layer's speed, then the encode of `picture` (made
    /// only when something is encoded); nil when it skips the frame.
    /// `idleRepeatAfter` (ns): a frame with nothing to code still goes out,
    /// coding nothing, once the layer's last is this long before it (nil: never; 0: now).
    private func encode(
        _ layer: SimulcastLayer, _ picture: () throws -> EncoderInput, size: (width: Int, height: Int), _ metadata: FrameMetadata,
        periodic: Bool, idleRepeatAfter: UInt64?, base: Bool = false, _ output: (EncodedFrame) throws -> Void
    ) throws -> EncodeOutcome? {
        let keyframe = layer.keyframes.isDue(width: size.width, height: size.height, pts: layer.encoder.timestamp(for: metadata.captureTime), periodic: periodic)
        // With two temporal layers, a frame of the upper one codes only what changed since the last base frame.
        let temporalLayer = layer.encoder.settings.temporalLayers > 1 && !base ? layer.temporal.layer(captureTime: metadata.captureTime, keyframe: keyframe) : 0
        var plan = RefreshSchedule.Plan.everything
        if let allowance = layer.sweepBudget?.allowance(at: metadata.captureTime) { layer.schedule.bandAllowance = allowance }
        if damage != nil { plan = temporalLayer == 0 ? layer.schedule.plan(keyframe: keyframe) : layer.schedule.planUpper() }
        let idle: Bool
        switch plan {
        case .skip where idleRepeatAfter.map { metadata.captureTime &- layer.lastEncodedCapture < $0 } ?? true:
            if layer.isTop { stats.skipped += 1 }
            return nil
        case .skip: idle = true
        default: idle = false
        }
        let input: EncoderInput
        do {
            input = try picture()
        } catch {
            throw InvalidFrame.undecodable(frameNumber: metadata.frameNumber, reason: "\(error)")
        }
        // A lower layer searches motion where much differs from the frame it references (``Simulcast/motionShare``;
        // a keyframe references none); every frame encoded whole (the comparison mode) keeps the layer's speed.
        if !layer.isTop, damage != nil {
            let motion = !keyframe && layer.schedule.sinceBaseCount * Simulcast.motionShare >= layer.schedule.columns * layer.schedule.rows
            try setSpeed(of: layer, motion ? Simulcast.lowerLayerMotionSpeed : Simulcast.lowerLayerSpeed, metadata)
            if motion { layer.stats.motionFrames += 1 }
        }
        // The top's base frame of a calm screen: its upper layer's frames will carry little, the base refines with most of the rate.
        if layer.isTop, temporalLayer == 0, damage != nil {
            let calm = !keyframe && layer.spend.withinRate && layer.schedule.sinceBaseCount * Self.calmShare < layer.schedule.columns * layer.schedule.rows
            do {
                try layer.encoder.setCalm(calm)
            } catch {
                throw InvalidFrame.undecodable(frameNumber: metadata.frameNumber, reason: "\(error)")
            }
        }
        layer.temporal.encoded(captureTime: metadata.captureTime, layer: temporalLayer)
        let outcome: EncodeOutcome
        switch plan {
        case _ where idle:
            if layer.isTop { stats.idleRepeats += 1 }
            // Nothing coded, nothing loop-filtered again: every macroblock kept.
            outcome = try layer.schedule.withMaps { active, segments in
                try encode(layer, input, metadata, keyframe: keyframe, temporalLayer: temporalLayer, activeMap: active, segments: segments, output)
            }
        case .everything where damage == nil || keyframe:
            outcome = try encode(layer, input, metadata, keyframe: keyframe, temporalLayer: temporalLayer, activeMap: nil, output)
        case .everything:
            // Whole, with the regions at rest in the refine segment.
            outcome = try layer.schedule.withMaps { _, segments in
                try encode(layer, input, metadata, keyframe: keyframe, temporalLayer: temporalLayer, activeMap: nil, segments: segments, output)
            }
        case .some(let active):
            if layer.isTop {
                stats.partial += 1
                stats.activeMacroblocks += UInt64(active)
            }
            outcome = try layer.schedule.withMaps { active, segments in
                try encode(layer, input, metadata, keyframe: keyframe, temporalLayer: temporalLayer, activeMap: active, segments: segments, output)
            }
        case .skip:
            preconditionFailure("a skipped frame is idle or returned")
        }
        layer.keyframes.encoded(outcome, width: input.width, height: input.height, bitrateKbps: layer.encoder.bitrateKbps)
        if outcome.produced { layer.baseBehind = outcome.temporalLayer > 0 }
        // A frame libvpx dropped coded nothing: what changed in it still refines.
        if damage != nil, outcome.produced {
            if outcome.keyframe { layer.schedule.restart() }
            // Only a base-layer frame is a reference: only it lets a macroblock converge.
            if outcome.temporalLayer == 0 {
                layer.schedule.noteBand(bytes: outcome.bytes, keyframe: outcome.keyframe)
                layer.schedule.baseEncoded()
                if let reconstruction = layer.encoder.reconstruction() {
                    layer.schedule.converge(source: input, reconstruction: reconstruction, quantizer: outcome.quantizer, measure: plan != .everything)
                }
            }
        }
        if layer.isTop { stats.refining = layer.schedule.refiningCount }
        return outcome
    }

    /// Sets `layer`'s libvpx speed (a change re-applies libvpx's configuration: once at each edge of a scroll).
    private func setSpeed(of layer: SimulcastLayer, _ speed: Int, _ metadata: FrameMetadata) throws {
        do {
            try layer.encoder.setSpeed(speed)
        } catch {
            throw InvalidFrame.undecodable(frameNumber: metadata.frameNumber, reason: "\(error)")
        }
    }

    /// Encodes `input` on `layer` (only the macroblocks marked in `activeMap`, when
    /// given, each in the segment `segments` names).
    private func encode(
        _ layer: SimulcastLayer, _ input: EncoderInput, _ metadata: FrameMetadata, keyframe: Bool, temporalLayer: Int,
        activeMap: UnsafeMutablePointer<UInt8>?, segments: UnsafeMutablePointer<UInt8>? = nil, _ output: (EncodedFrame) throws -> Void
    ) throws -> EncodeOutcome {
        let encoder = layer.encoder
        let outcome: EncodeOutcome
        do {
            outcome = try encoder.encode(
                input, captureTime: metadata.captureTime, keyframe: keyframe, temporalLayer: temporalLayer, activeMap: activeMap, segments: segments,
                refineDelta: RefreshSchedule.refineDelta
            ) { frame in
                var frame = frame
                (frame.layer, frame.isTopLayer) = (layer.stream, layer.isTop)
                try output(frame)
            }
        } catch let error as CodecError {
            throw InvalidFrame.undecodable(frameNumber: metadata.frameNumber, reason: "\(error)")
        }
        layer.lastEncodedCapture = metadata.captureTime
        layer.sweepBudget?.spent(outcome.bytes, keyframe: outcome.keyframe)
        if layer.isTop { layer.spend.sent(outcome.bytes, keyframe: outcome.keyframe, captureTime: metadata.captureTime, kbps: encoder.bitrateKbps) }
        layer.stats.width = input.width
        layer.stats.height = input.height
        layer.stats.frames = encoder.framesEncoded
        layer.stats.keyframes = encoder.keyframes
        layer.stats.bytes += UInt64(outcome.bytes)
        if outcome.produced, outcome.temporalLayer == 0 { layer.stats.baseFrames += 1 }
        if layer.isTop {
            stats.bytes += UInt64(outcome.bytes)
            stats.frames = encoder.framesEncoded
            stats.keyframes = encoder.keyframes
            stats.width = input.width
            stats.height = input.height
            stats.threads = encoder.threads
        }
        return outcome
    }
}
