@preconcurrency import Glibc
internal import CVpx
import FrameRelayFrames
import FrameRelayRTP
import FrameRelaySystem

/// Owns one libvpx VP8 encoder context configured for real-time screen
/// content. Reconfigures itself (with a keyframe) when the picture size
/// changes; otherwise it makes a keyframe when told (``KeyframeSchedule``
/// decides when), and says what it did in an ``EncodeOutcome``. With two
/// temporal layers (``VP8Settings/temporalLayers``) the caller names each
/// frame's layer; a keyframe is always in the base layer.
public final class VP8Encoder {
    public let settings: VP8Settings
    public private(set) var width = 0
    public private(set) var height = 0
    public private(set) var threads = 0
    /// Frames encoded and keyframes among them.
    public private(set) var framesEncoded: UInt64 = 0
    public private(set) var keyframes: UInt64 = 0
    private var context = vpx_codec_ctx_t()
    /// The configuration it was opened with, kept for ``setBitrate(_:)``.
    private var config = vpx_codec_enc_cfg_t()
    /// The target bitrate now, kbit/s (the settings', until ``setBitrate(_:)``).
    public private(set) var bitrateKbps: Int
    /// Whether the screen changes little (``setCalm(_:)``): the base temporal layer's share is then ``VP8Settings/calmBaseLayerPercent``.
    public private(set) var calm = false
    /// The base temporal layer's share of the bitrate now, in percent.
    var baseLayerPercent: Int { calm ? settings.calmBaseLayerPercent : settings.baseLayerPercent }
    /// libvpx `cpu-used` now (the settings', until ``setSpeed(_:)``).
    public private(set) var speed: Int
    private var isOpen = false
    private var lastPts: Int64 = -1
    private var image = vpx_image_t()
    private var activeMapSet = false
    /// Whether the last frame had segments (``encode(_:captureTime:keyframe:activeMap:segments:refineDelta:output:)``).
    private var segmentsSet = false

    public init(settings: VP8Settings = VP8Settings()) throws(CodecError) {
        try settings.validate()
        self.settings = settings
        bitrateKbps = settings.bitrateKbps
        speed = settings.speed
    }

    deinit { close() }

    private func close() {
        if isOpen { vpx_codec_destroy(&context) }
        isOpen = false
    }

    private func open(width: Int, height: Int) throws(CodecError) {
        guard (1...FrameMetadata.maxDimension).contains(width), (1...FrameMetadata.maxDimension).contains(height) else {
            throw .invalidSetting("invalid frame size \(width)x\(height): VP8 codes 1...16383")
        }
        close()
        let cores = Processor.onlineCount
        threads = settings.threads ?? VP8Settings.threadCount(width: width, height: height, cores: cores, concurrentEncoders: settings.concurrentEncoders)
        config = vpx_codec_enc_cfg_t()
        let configured = cvpx_screen_share_config(&config, UInt32(width), UInt32(height), UInt32(threads), UInt32(bitrateKbps))
        guard configured == VPX_CODEC_OK else {
            throw .library("vpx_codec_enc_config_default", String(cString: vpx_codec_err_to_string(configured)))
        }
        if settings.temporalLayers == 2 { cvpx_temporal_layers(&config, UInt32(bitrateKbps), UInt32(baseLayerPercent)) }
        if bitrateKbps < settings.bitrateKbps { config.rc_dropframe_thresh = 30 }  // as setBitrate(_:) leaves it
        let status = cvpx_enc_init(&context, &config)
        guard status == VPX_CODEC_OK else {
            throw .library("vpx_codec_enc_init", String(cString: vpx_codec_err_to_string(status)))
        }
        isOpen = true
        try control("vpx_codec_control", cvpx_screen_share_controls(&context, Int32(speed), Int32(screenContentMode), Int32(settings.maxIntraBitratePercent)))
        self.width = width
        self.height = height
        activeMapSet = false
        segmentsSet = false
    }

    /// Sets the target bitrate (kbit/s, 1...100000) from the next frame on,
    /// without a keyframe (a bitrate controller's answer to its receivers).
    /// Under the settings' bitrate, libvpx may drop frames: a screen at 720p
    /// costs about 760 kbit/s at 30 frames/s at the highest quantizer
    /// (the pattern here), so a narrower link gets fewer frames, not a queue.
    public func setBitrate(_ kbps: Int) throws(CodecError) {
        let kbps = min(100_000, max(1, kbps))
        guard kbps != bitrateKbps else { return }
        bitrateKbps = kbps
        try configureRate()
    }

    /// Says whether the screen changes little, from the next frame on: with
    /// two temporal layers the base layer then takes
    /// ``VP8Settings/calmBaseLayerPercent`` of the bitrate, else
    /// ``VP8Settings/baseLayerPercent`` (no keyframe; libvpx keeps each
    /// layer's buffer). One temporal layer has no split: nothing changes.
    public func setCalm(_ calm: Bool) throws(CodecError) {
        guard settings.temporalLayers > 1, calm != self.calm else { return }
        self.calm = calm
        try configureRate()
    }

    /// Gives a running encoder ``bitrateKbps``, split between its temporal layers by ``baseLayerPercent``.
    private func configureRate() throws(CodecError) {
        guard isOpen else { return }
        try control("vpx_codec_enc_config_set", cvpx_set_bitrate(&context, &config, UInt32(bitrateKbps), UInt32(baseLayerPercent), bitrateKbps < settings.bitrateKbps ? 1 : 0))
    }

    /// Sets libvpx `cpu-used` (-16...16) from the next frame on.
    public func setSpeed(_ speed: Int) throws(CodecError) {
        let speed = min(16, max(-16, speed))
        guard speed != self.speed else { return }
        self.speed = speed
        guard isOpen else { return }
        try control("VP8E_SET_CPUUSED", cvpx_set_speed(&context, Int32(speed)))
    }

    /// The screen-content mode libvpx runs in: the settings', but at most 1
    /// with temporal layers. Mode 2 lets libvpx drop a frame after coding it
    /// when it overshoots (vp8_drop_encodedframe_overshoot), and after such a
    /// drop of an upper-layer frame the next frames no longer decode to their
    /// pictures until a keyframe: live through Janus, each run with one such
    /// drop (1 in 3) had 57-178 wrong pictures a viewer of the top layer, the runs without none.
    var screenContentMode: Int { settings.temporalLayers > 1 ? min(settings.screenContentMode, 1) : settings.screenContentMode }

    /// The 90 kHz time stamp of a capture time (CLOCK_MONOTONIC ns).
    private static func pts(_ captureTime: UInt64) -> Int64 {
        Int64(captureTime / 100_000 * 9 + (captureTime % 100_000) * 9 / 100_000)
    }

    /// The 90 kHz time stamp a picture captured at `captureTime` gets:
    /// from the capture clock, and always after the last one.
    public func timestamp(for captureTime: UInt64) -> Int64 {
        max(Self.pts(captureTime), lastPts + 1)
    }

    /// Encodes one picture captured at `captureTime` (CLOCK_MONOTONIC ns) and
    /// hands each resulting packet to `output` (valid only during the call).
    /// It is a keyframe when `keyframe` says so, and when the picture is the
    /// first or of a new size.
    ///
    /// With `activeMap` (one byte per macroblock, rows of ``macroblockColumns``),
    /// an inter frame codes only the macroblocks marked 1 and keeps the others
    /// as they are in the reference; a keyframe codes every macroblock.
    ///
    /// With `segments` (the same layout), each macroblock is in the
    /// ``Segment`` it names: ``Segment/refine`` is coded `refineDelta` (on
    /// libvpx's 0–63 scale, negative: finer) from the frame's quantizer, and
    /// ``Segment/kept`` (for macroblocks the active map leaves out) is not
    /// loop-filtered again, and ``Segment/band`` is coded at the finest quantizer,
    /// not loop-filtered. The first such frame turns libvpx's own cyclic
    /// background refresh off for good: it uses the same segments, and the
    /// caller now says which macroblocks to refine.
    ///
    /// `temporalLayer` (0 or 1, with two temporal layers): the frame's layer;
    /// a keyframe is always 0.
    @discardableResult
    public func encode(
        _ input: EncoderInput, captureTime: UInt64, keyframe: Bool = false, temporalLayer: Int = 0, activeMap: UnsafeMutablePointer<UInt8>? = nil,
        segments: UnsafeMutablePointer<UInt8>? = nil, refineDelta: Int = 0, output: (EncodedFrame) throws -> Void
    ) throws -> EncodeOutcome {
        var forceKeyframe = keyframe
        if !isOpen || input.width != width || input.height != height {
            try open(width: input.width, height: input.height)
            forceKeyframe = true
        }
        // 90 kHz time stamps from the capture clock, strictly increasing.
        let pts = timestamp(for: captureTime)
        lastPts = pts
        if activeMap != nil || activeMapSet {
            try control("VP8E_SET_ACTIVEMAP", cvpx_set_active_map(&context, activeMap, UInt32(macroblockRows), UInt32(macroblockColumns)))
            activeMapSet = activeMap != nil
        }
        if segments != nil || segmentsSet {
            try control("VP8E_SET_ROI_MAP", cvpx_set_segments(&context, segments, UInt32(macroblockRows), UInt32(macroblockColumns), Int32(refineDelta)))
            segmentsSet = segments != nil
        }

        image.fmt = input.format == .nv12 ? VPX_IMG_FMT_NV12 : VPX_IMG_FMT_I420
        image.w = UInt32(input.width)
        image.h = UInt32(input.height)
        image.d_w = UInt32(input.width)
        image.d_h = UInt32(input.height)
        image.x_chroma_shift = 1
        image.y_chroma_shift = 1
        image.bps = 12
        let y = UnsafeMutablePointer(mutating: input.planes.0.assumingMemoryBound(to: UInt8.self))
        let u = UnsafeMutablePointer(mutating: input.planes.1.assumingMemoryBound(to: UInt8.self))
        if input.format == .nv12 {
            image.planes = (y, u, u + 1, nil)
            image.stride = (Int32(input.strides.0), Int32(input.strides.1), Int32(input.strides.1), 0)
        } else {
            let v = UnsafeMutablePointer(mutating: input.planes.2!.assumingMemoryBound(to: UInt8.self))
            image.planes = (y, u, v, nil)
            image.stride = (Int32(input.strides.0), Int32(input.strides.1), Int32(input.strides.2), 0)
        }
        var flags: vpx_enc_frame_flags_t = forceKeyframe ? vpx_enc_frame_flags_t(cvpx_eflag_force_kf) : 0
        // One temporal layer: every frame is in it (a reference, as before layers).
        let layer = forceKeyframe || settings.temporalLayers == 1 ? 0 : temporalLayer
        if settings.temporalLayers > 1 { try control("VP8E_SET_TEMPORAL_LAYER_ID", cvpx_temporal_flags(&context, Int32(layer), &flags)) }
        let duration = UInt(VP8Settings.frameTicks(settings.frameRate))
        let status = vpx_codec_encode(&context, &image, pts, duration, flags, UInt(cvpx_dl_realtime))
        guard status == VPX_CODEC_OK else {
            throw CodecError.library("vpx_codec_encode", String(cString: vpx_codec_error_detail(&context) ?? vpx_codec_error(&context)))
        }
        var outcome = EncodeOutcome(pts: pts, activeMap: activeMap != nil)
        outcome.temporalLayer = layer
        // The upper layer references only the base and nothing references it.
        let temporal = settings.temporalLayers > 1 ? VP8TemporalLayer(id: UInt8(layer), sync: layer > 0, discardable: layer > 0) : nil
        var iterator: vpx_codec_iter_t? = nil
        while let packet = vpx_codec_get_cx_data(&context, &iterator) {
            guard packet.pointee.kind == VPX_CODEC_CX_FRAME_PKT else { continue }
            let frame = packet.pointee.data.frame
            let isKey = frame.flags & UInt32(cvpx_frame_is_key) != 0
            framesEncoded += 1
            if isKey { keyframes += 1 }
            outcome.produced = true
            outcome.keyframe = outcome.keyframe || isKey
            outcome.bytes += frame.sz
            try output(EncodedFrame(bytes: UnsafeRawBufferPointer(start: frame.buf, count: frame.sz), isKeyframe: isKey, pts: frame.pts, width: width, height: height,
                                    temporalLayer: temporal))
        }
        outcome.quantizer = Int(cvpx_last_quantizer(&context))
        return outcome
    }

    /// Macroblocks (16×16) across and down the picture being encoded.
    public var macroblockColumns: Int { (width + 15) / 16 }
    public var macroblockRows: Int { (height + 15) / 16 }

    /// The VP8 segment a macroblock is put in (the bytes of `segments`).
    public enum Segment {
        /// Coded at the frame's quantizer.
        public static let coded = UInt8(CVPX_SEGMENT_CODED)
        /// Coded `refineDelta` finer: a region at rest refining.
        public static let refine = UInt8(CVPX_SEGMENT_REFINE)
        /// Left out by the active map: kept from the reference as it is, not loop-filtered again.
        public static let kept = UInt8(CVPX_SEGMENT_KEPT)
        /// At the finest quantizer, not loop-filtered: a sweep's band (``RefreshSchedule/sweeps``).
        public static let band = UInt8(CVPX_SEGMENT_BAND)
    }

    /// Throws what libvpx said when a control call `name` refused.
    private func control(_ name: String, _ status: vpx_codec_err_t) throws(CodecError) {
        guard status == VPX_CODEC_OK else {
            throw .library(name, String(cString: vpx_codec_error_detail(&context) ?? vpx_codec_err_to_string(status)))
        }
    }

    /// The encoder's reconstruction of the last frame (what every decoder
    /// shows), I420, borrowed from libvpx until the next encode.
    func reconstruction() -> EncoderInput? {
        guard isOpen, let image = vpx_codec_get_preview_frame(&context), let y = image.pointee.planes.0, let u = image.pointee.planes.1,
            let v = image.pointee.planes.2
        else { return nil }
        let strides = image.pointee.stride
        return EncoderInput(width: width, height: height, format: .i420, planes: (UnsafeRawPointer(y), UnsafeRawPointer(u), UnsafeRawPointer(v)),
                            strides: (Int(strides.0), Int(strides.1), Int(strides.2)))
    }
}
