// Two simulcast layers as two libvpx encoders (as the host codes them) and
// as one multi-resolution encoder (vpx_codec_enc_init_multi: the small
// layer is coded first and the top reuses its motion), beside one layer
// (today's stream), fed the same 720p frames interleaved frame by frame.
// Plain libvpx with the host's settings (Sources/CVpx/shim.h): the top at
// cpu-used -6 and 2,500 kbit/s, the half-size layer at -16 and 625, each
// with two temporal layers; every frame coded whole.
//
// Usage: multi-res CLIP.y4m [FRAMES (300)] [SCROLL rows a frame, even (0)] [EVERY (1)] [STEP (0)]
// EVERY n: the small layer codes one frame in n, as it does gathering
// typing; the multi-resolution encoder can leave a layer out of a frame
// only at a target bitrate of 0, set before the frame and put back after.
// STEP 1: the small layer's temporal layers a frame out of step with the
// top's (a layer reuses the motion of the one below only where both last
// updated their reference on the same frame).
// Benchmarks/multi-res.sh builds and runs it.
#include "../Sources/CVpx/shim.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { W = 1280, H = 720, TOP = 2500, SMALL = 625, MODES = 3 };
static const char *names[MODES] = { "separate", "multi-res", "one layer" };
static double bytes[MODES][2], sse[MODES][2], coded[MODES][2];
static unsigned long long cpu[MODES];

static unsigned long long cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000ull + t.tv_nsec;
}

static void fail(const char *what, vpx_codec_ctx_t *ctx) {
    if (ctx) fprintf(stderr, "multi-res: %s: %s\n", what, vpx_codec_error(ctx));
    else fprintf(stderr, "multi-res: %s\n", what);
    exit(1);
}

// The half-size picture, each pixel the mean of its 2x2 (as the host scales).
static void half(const vpx_image_t *s, vpx_image_t *d) {
    for (int p = 0; p < 3; p++) {
        int w = (p ? W / 2 : W) / 2, h = (p ? H / 2 : H) / 2;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                const unsigned char *a = s->planes[p] + 2 * y * s->stride[p] + 2 * x;
                d->planes[p][y * d->stride[p] + x] = (a[0] + a[1] + a[s->stride[p]] + a[s->stride[p] + 1] + 2) / 4;
            }
    }
}

static void drain(vpx_codec_ctx_t *ctx, int mode, int level) {
    vpx_codec_iter_t it = NULL;
    const vpx_codec_cx_pkt_t *p;
    while ((p = vpx_codec_get_cx_data(ctx, &it))) {
        if (p->kind == VPX_CODEC_CX_FRAME_PKT) bytes[mode][level] += p->data.frame.sz, coded[mode][level] += 1;
        if (p->kind == VPX_CODEC_PSNR_PKT) sse[mode][level] += p->data.psnr.sse[1];
    }
}

int main(int argc, char **argv) {
    if (argc < 2) fail("usage: multi-res CLIP.y4m [FRAMES] [SCROLL] [EVERY] [STEP]", NULL);
    int frames = argc > 2 ? atoi(argv[2]) : 300, scroll = argc > 3 ? atoi(argv[3]) : 0, every = argc > 4 ? atoi(argv[4]) : 1;
    int step = argc > 5 ? atoi(argv[5]) : 0;
    if (frames < 10 || scroll < 0 || scroll % 2 || every < 1 || step < 0 || step > 1) fail("FRAMES at least 10, SCROLL an even number of rows, EVERY at least 1, STEP 0 or 1", NULL);
    FILE *file = fopen(argv[1], "rb");
    char line[512];
    if (!file || !fgets(line, sizeof line, file) || !strstr(line, " W1280 H720")) fail("the clip is not a 1280x720 Y4M file", NULL);
    size_t size = W * H * 3 / 2;
    unsigned char *clip = NULL;
    int count = 0;
    while (fgets(line, sizeof line, file)) {
        unsigned char *grown = realloc(clip, (count + 1) * size);
        if (!grown) fail("out of memory for the clip", NULL);
        clip = grown;
        if (fread(clip + count * size, 1, size, file) != size) break;
        count++;
    }
    if (count == 0) fail("the clip has no frame", NULL);

    // Level 0 is the top, level 1 the small layer (libvpx's multi-resolution order).
    vpx_codec_enc_cfg_t cfg[2], one_cfg;
    vpx_codec_ctx_t separate[2], multi[2], one;
    unsigned kbps[2] = { TOP, SMALL };
    for (int i = 0; i < 2; i++) {
        if (cvpx_screen_share_config(&cfg[i], W >> i, H >> i, 1, kbps[i])) fail("config", NULL);
        cvpx_temporal_layers(&cfg[i], kbps[i], 60);
        if (vpx_codec_enc_init(&separate[i], vpx_codec_vp8_cx(), &cfg[i], VPX_CODEC_USE_PSNR)) fail("init", &separate[i]);
    }
    vpx_rational_t factors[2] = { { 2, 1 }, { 1, 1 } };
    if (vpx_codec_enc_init_multi(&multi[0], vpx_codec_vp8_cx(), cfg, 2, VPX_CODEC_USE_PSNR, factors)) fail("init_multi", &multi[0]);
    // Today's stream: one layer, no temporal layers, screen-content mode 2.
    if (cvpx_screen_share_config(&one_cfg, W, H, 1, TOP)) fail("config", NULL);
    if (vpx_codec_enc_init(&one, vpx_codec_vp8_cx(), &one_cfg, VPX_CODEC_USE_PSNR)) fail("init", &one);
    for (int i = 0; i < 2; i++) {
        if (cvpx_screen_share_controls(&separate[i], i ? -16 : -6, 1, 300)) fail("controls", &separate[i]);
        if (cvpx_screen_share_controls(&multi[i], i ? -16 : -6, 1, 300)) fail("controls", &multi[i]);
    }
    if (cvpx_screen_share_controls(&one, -6, 2, 300)) fail("controls", &one);

    vpx_image_t *top = vpx_img_alloc(NULL, VPX_IMG_FMT_I420, W, H, 16), *small = vpx_img_alloc(NULL, VPX_IMG_FMT_I420, W / 2, H / 2, 16);
    if (!top || !small) fail("out of memory for the pictures", NULL);
    for (int n = 0; n < frames; n++) {
        const unsigned char *source = clip + (size_t)(n % count) * size;
        int dy = n * scroll % H;  // a scroll: the picture moves up `scroll` rows a frame
        for (int y = 0; y < H; y++) memcpy(top->planes[0] + y * top->stride[0], source + (size_t)((y + dy) % H) * W, W);
        for (int p = 1; p < 3; p++)
            for (int y = 0; y < H / 2; y++)
                memcpy(top->planes[p] + y * top->stride[p], source + W * H + (p - 1) * W * H / 4 + (size_t)((y + dy / 2) % (H / 2)) * (W / 2), W / 2);
        half(top, small);
        int layer = n % 2, skip = n % every != 0;
        vpx_image_t pictures[2] = { *top, *small };
        // Each goes first in turn: the first of a frame meets its picture out of the cache.
        for (int turn = 0; turn < MODES; turn++) {
            int mode = (n + turn) % MODES;
            unsigned long long start = cpu_ns();
            vpx_enc_frame_flags_t kf = n == 0 ? VPX_EFLAG_FORCE_KF : 0, flags[2] = { kf, kf };
            if (mode == 2) {
                if (vpx_codec_encode(&one, top, n * 3000, 3000, kf, VPX_DL_REALTIME)) fail("encode", &one);
                drain(&one, 2, 0);
            } else {
                vpx_codec_ctx_t *ctx = mode ? multi : separate;
                for (int i = 0; i < 2; i++)
                    if (cvpx_temporal_flags(&ctx[i], n == 0 ? 0 : i == 1 && step ? (n + 1) % 2 : layer, &flags[i])) fail("temporal layer", &ctx[i]);
                if (mode == 0) {
                    for (int i = 0; i < 2; i++) {
                        if (i == 1 && skip) continue;
                        if (vpx_codec_encode(&ctx[i], &pictures[i], n * 3000, 3000, flags[i], VPX_DL_REALTIME)) fail("encode", &ctx[i]);
                        drain(&ctx[i], 0, i);
                    }
                } else {
                    for (int i = 0; i < 2; i++)
                        if (vpx_codec_control_(&ctx[i], VP8E_SET_FRAME_FLAGS, (int)flags[i])) fail("frame flags", &ctx[i]);
                    if (skip && cvpx_set_bitrate(&ctx[1], &cfg[1], 0, 60, 0)) fail("bitrate 0", &ctx[1]);
                    if (vpx_codec_encode(&ctx[0], pictures, n * 3000, 3000, 0, VPX_DL_REALTIME)) fail("encode", &ctx[0]);
                    if (skip && cvpx_set_bitrate(&ctx[1], &cfg[1], SMALL, 60, 0)) fail("bitrate", &ctx[1]);
                    // A level left out returns before clearing its packets: they are the last frame's.
                    for (int i = 0; i < 2; i++)
                        if (!(i == 1 && skip)) drain(&ctx[i], 1, i);
                }
            }
            if (n >= 5) cpu[mode] += cpu_ns() - start;  // not the first keyframes
        }
    }
    for (int mode = 0; mode < MODES; mode++) {
        printf("%-9s %5.0f us a frame (%.3fx one layer)", names[mode], cpu[mode] / 1000.0 / (frames - 5), (double)cpu[mode] / cpu[2]);
        for (int i = 0; i < (mode == 2 ? 1 : 2); i++)
            printf("; %s %4.0f kbit/s, %.0f frames, Y %.2f dB", i ? "small" : "top", bytes[mode][i] * 8 * 30 / frames / 1000, coded[mode][i],
                   10 * log10(255.0 * 255 * (W >> i) * (H >> i) * coded[mode][i] / sse[mode][i]));
        printf("\n");
    }
    return 0;
}
