// Wrappers for the parts of libvpx that Swift cannot import: the init macros
// and the variadic vpx_codec_control_.
#pragma once
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

static inline vpx_codec_err_t cvpx_control_int(vpx_codec_ctx_t *ctx, int id, int value) {
    return vpx_codec_control_(ctx, id, value);
}

static const long cvpx_dl_realtime = VPX_DL_REALTIME;
static const int cvpx_eflag_force_kf = VPX_EFLAG_FORCE_KF;
static const int cvpx_frame_is_key = VPX_FRAME_IS_KEY;
