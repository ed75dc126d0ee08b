// Wrappers for the parts of libvpx that Swift cannot import: the init macros
// and the variadic vpx_codec_control_, and the screen-share configuration.
#pragma once
#include <string.h>
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

static inline vpx_codec_iface_t *cvpx_vp8_encoder(void) { return vpx_codec_vp8_cx(); }

static inline vpx_codec_err_t cvpx_enc_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_init(ctx, vpx_codec_vp8_cx(), cfg, 0);
}

static inline vpx_codec_err_t cvpx_dec_init(vpx_codec_ctx_t *ctx) {
    return vpx_codec_dec_init(ctx, vpx_codec_vp8_dx(), NULL, 0);
}

static const long cvpx_dl_realtime = VPX_DL_REALTIME;
static const int cvpx_eflag_force_kf = VPX_EFLAG_FORCE_KF;
static const int cvpx_frame_is_key = VPX_FRAME_IS_KEY;

/// WebRTC's real-time screen-share configuration, in one place for the
/// relay's encoder and the benchmarks' plain libvpx loop: CBR, quantizers
/// 12-56, undershoot 100 / overshoot 15, buffer 500/600/1000 ms, no lag, no
/// frame dropping (until cvpx_set_bitrate lowers the bitrate) or resizing,
/// keyframes only when asked, 90 kHz time base.
static inline vpx_codec_err_t cvpx_screen_share_config(vpx_codec_enc_cfg_t *cfg, unsigned width, unsigned height,
                                                       unsigned threads, unsigned kbps) {
    vpx_codec_err_t err = vpx_codec_enc_config_default(vpx_codec_vp8_cx(), cfg, 0);
    if (err != VPX_CODEC_OK) return err;
    cfg->g_w = width;
    cfg->g_h = height;
    cfg->g_threads = threads;
    cfg->g_timebase.num = 1;
    cfg->g_timebase.den = 90000;
    cfg->g_lag_in_frames = 0;
    cfg->g_error_resilient = 0;
    cfg->rc_end_usage = VPX_CBR;
    cfg->rc_target_bitrate = kbps;
    cfg->rc_min_quantizer = 12;
    cfg->rc_max_quantizer = 56;
    cfg->rc_undershoot_pct = 100;
    cfg->rc_overshoot_pct = 15;
    cfg->rc_buf_initial_sz = 500;
    cfg->rc_buf_optimal_sz = 600;
    cfg->rc_buf_sz = 1000;
    cfg->rc_dropframe_thresh = 0;
    cfg->rc_resize_allowed = 0;
    cfg->kf_mode = VPX_KF_DISABLED;
    return VPX_CODEC_OK;
}

/// Two temporal layers (libvpx's `ts_*`, as its vpx_temporal_svc_encoder
/// example's 2-layer mode): the base layer (TL0) at half the frame rate
/// with `base_pct` percent of `kbps`, the upper layer (TL1) the rest. The
/// caller names each frame's layer (`cvpx_temporal_flags`).
static inline void cvpx_temporal_layers(vpx_codec_enc_cfg_t *cfg, unsigned kbps, unsigned base_pct) {
    cfg->ts_number_layers = 2;
    cfg->ts_target_bitrate[0] = kbps * base_pct / 100;
    cfg->ts_target_bitrate[1] = kbps;
    cfg->ts_rate_decimator[0] = 2;
    cfg->ts_rate_decimator[1] = 1;
    cfg->ts_periodicity = 2;
    cfg->ts_layer_id[0] = 0;
    cfg->ts_layer_id[1] = 1;
}

/// Sets a running encoder's target bitrate (and its temporal layers', the
/// base keeping its share), as libwebrtc does on a new estimate: the rate
/// control follows from the next frame, with no keyframe. `drop_frames`:
/// the rate control may drop a frame when its buffer runs under 30 % of
/// the optimal level (libwebrtc's threshold with frame dropping on), for a
/// bitrate under what the content costs at the highest quantizer.
static inline vpx_codec_err_t cvpx_set_bitrate(vpx_codec_ctx_t *ctx, vpx_codec_enc_cfg_t *cfg, unsigned kbps, unsigned base_pct, int drop_frames) {
    cfg->rc_target_bitrate = kbps;
    cfg->rc_dropframe_thresh = drop_frames ? 30 : 0;
    if (cfg->ts_number_layers == 2) {
        cfg->ts_target_bitrate[0] = kbps * base_pct / 100;
        cfg->ts_target_bitrate[1] = kbps;
    }
    return vpx_codec_enc_config_set(ctx, cfg);
}

/// The frame flags of a frame of temporal layer `layer` (0 or 1), after
/// setting the layer for the rate control. A TL0 frame references and
/// updates only the last TL0 frame (LAST); a TL1 frame references only that
/// and updates nothing, not even the entropy contexts, so that a viewer
/// without TL1 decodes every TL0 frame and may take TL1 up at any frame.
static inline vpx_codec_err_t cvpx_temporal_flags(vpx_codec_ctx_t *ctx, int layer, vpx_enc_frame_flags_t *flags) {
    vpx_codec_err_t err = vpx_codec_control_(ctx, VP8E_SET_TEMPORAL_LAYER_ID, layer);
    if (err != VPX_CODEC_OK) return err;
    *flags |= VP8_EFLAG_NO_REF_GF | VP8_EFLAG_NO_REF_ARF | VP8_EFLAG_NO_UPD_GF | VP8_EFLAG_NO_UPD_ARF;
    if (layer > 0) *flags |= VP8_EFLAG_NO_UPD_LAST | VP8_EFLAG_NO_UPD_ENTROPY;
    return VPX_CODEC_OK;
}

/// WebRTC's static threshold for screens: a macroblock whose prediction
/// error is under it is coded as unchanged.
#define CVPX_STATIC_THRESHOLD 100

/// The screen-share controls after init (cpu-used, static threshold 100,
/// screen-content mode, no noise sensitivity, one token partition, intra
/// bitrate cap); returns the first error.
static inline vpx_codec_err_t cvpx_screen_share_controls(vpx_codec_ctx_t *ctx, int speed, int screen_mode, int max_intra_pct) {
    vpx_codec_err_t err;
    if ((err = vpx_codec_control_(ctx, VP8E_SET_CPUUSED, speed)) != VPX_CODEC_OK) return err;
    if ((err = vpx_codec_control_(ctx, VP8E_SET_STATIC_THRESHOLD, CVPX_STATIC_THRESHOLD)) != VPX_CODEC_OK) return err;
    if ((err = vpx_codec_control_(ctx, VP8E_SET_SCREEN_CONTENT_MODE, screen_mode)) != VPX_CODEC_OK) return err;
    if ((err = vpx_codec_control_(ctx, VP8E_SET_NOISE_SENSITIVITY, 0)) != VPX_CODEC_OK) return err;
    if ((err = vpx_codec_control_(ctx, VP8E_SET_TOKEN_PARTITIONS, VP8_ONE_TOKENPARTITION)) != VPX_CODEC_OK) return err;
    return vpx_codec_control_(ctx, VP8E_SET_MAX_INTRA_BITRATE_PCT, max_intra_pct);
}

/// Sets cpu-used (-16...16) from the next frame on.
static inline vpx_codec_err_t cvpx_set_speed(vpx_codec_ctx_t *ctx, int speed) {
    return vpx_codec_control_(ctx, VP8E_SET_CPUUSED, speed);
}

/// Encodes only the macroblocks marked 1 in `map` (rows × cols, one byte
/// each) in the next inter frames; the others are coded as unchanged. A
/// NULL map encodes every macroblock again.
static inline vpx_codec_err_t cvpx_set_active_map(vpx_codec_ctx_t *ctx, unsigned char *map, unsigned rows, unsigned cols) {
    vpx_active_map_t active = { map, rows, cols };
    return vpx_codec_control_(ctx, VP8E_SET_ACTIVEMAP, &active);
}

/// The quantizer (0-63) libvpx chose for the last frame.
static inline int cvpx_last_quantizer(vpx_codec_ctx_t *ctx) {
    int q = 0;
    if (vpx_codec_control_(ctx, VP8E_GET_LAST_QUANTIZER_64, &q) != VPX_CODEC_OK) return -1;
    return q;
}


/// The VP8 segments a frame's macroblocks are put in (`cvpx_set_segments`).
enum {
    /// Coded at the frame's quantizer.
    CVPX_SEGMENT_CODED = 0,
    /// Coded finer: a region at rest refining.
    CVPX_SEGMENT_REFINE = 1,
    /// Not coded (0 in the active map): kept from the reference as it is,
    /// so not loop-filtered again either.
    CVPX_SEGMENT_KEPT = 2,
    /// Coded at the finest quantizer and not loop-filtered: a sweep's band
    /// (a frame's filter level, set for its own quantizer, blurred it).
    CVPX_SEGMENT_BAND = 3,
};

/// Puts each macroblock in the segment `map` names (rows × cols, one byte
/// each, CVPX_SEGMENT_*): the refine segment `delta_q` (on the 0-63 scale)
/// from the frame's quantizer, the kept one with no loop filter, the band
/// one at the finest quantizer (-63 on that scale: libvpx clamps the
/// segment's quantizer at 0 whatever the frame's) with no loop filter; every
/// segment keeps the static threshold. A NULL map turns segments off. Once
/// set, libvpx's own cyclic background refresh, which uses the same
/// segments, stays off for this encoder.
static inline vpx_codec_err_t cvpx_set_segments(vpx_codec_ctx_t *ctx, unsigned char *map, unsigned rows, unsigned cols, int delta_q) {
    vpx_roi_map_t roi = { 0 };
    roi.roi_map = map;
    roi.rows = rows;
    roi.cols = cols;
    if (map) {
        roi.delta_q[CVPX_SEGMENT_REFINE] = delta_q;
        // Only with a macroblock to keep: the feature alone, on no macroblock,
        // cost the video model 0.14 dB at the same rate (libvpx 1.12).
        if (memchr(map, CVPX_SEGMENT_KEPT, (size_t)rows * cols)) roi.delta_lf[CVPX_SEGMENT_KEPT] = -63;
        if (memchr(map, CVPX_SEGMENT_BAND, (size_t)rows * cols)) {
            roi.delta_q[CVPX_SEGMENT_BAND] = -63;
            roi.delta_lf[CVPX_SEGMENT_BAND] = -63;
        }
        for (int i = 0; i < 4; i++) roi.static_threshold[i] = CVPX_STATIC_THRESHOLD;
    }
    return vpx_codec_control_(ctx, VP8E_SET_ROI_MAP, &roi);
}
