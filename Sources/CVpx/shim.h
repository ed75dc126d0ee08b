// Wrappers for the parts of libvpx that Swift cannot import: the init macros
// and the variadic vpx_codec_control_.
#pragma once
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

static inline vpx_codec_iface_t *cvpx_vp8_encoder(void) { return vpx_codec_vp8_cx(); }
static inline vpx_codec_iface_t *cvpx_vp8_decoder(void) { return vpx_codec_vp8_dx(); }

static inline vpx_codec_err_t cvpx_enc_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_init(ctx, vpx_codec_vp8_cx(), cfg, 0);
}

static inline vpx_codec_err_t cvpx_dec_init(vpx_codec_ctx_t *ctx) {
    return vpx_codec_dec_init(ctx, vpx_codec_vp8_dx(), NULL, 0);
}

static inline vpx_codec_err_t cvpx_control_int(vpx_codec_ctx_t *ctx, int id, int value) {
    return vpx_codec_control_(ctx, id, value);
}

static inline vpx_codec_err_t cvpx_control_uint(vpx_codec_ctx_t *ctx, int id, unsigned int value) {
    return vpx_codec_control_(ctx, id, value);
}

static inline vpx_codec_err_t cvpx_get_last_quantizer(vpx_codec_ctx_t *ctx, int *q) {
    return vpx_codec_control_(ctx, VP8E_GET_LAST_QUANTIZER_64, q);
}

static inline vpx_codec_err_t cvpx_peek_keyframe(const uint8_t *data, unsigned int size, int *is_kf) {
    vpx_codec_stream_info_t si;
    si.sz = sizeof(si);
    vpx_codec_err_t err = vpx_codec_peek_stream_info(vpx_codec_vp8_dx(), data, size, &si);
    *is_kf = si.is_kf;
    return err;
}

static const long cvpx_dl_realtime = VPX_DL_REALTIME;
static const int cvpx_eflag_force_kf = VPX_EFLAG_FORCE_KF;
static const int cvpx_frame_is_key = VPX_FRAME_IS_KEY;
