#!/usr/bin/env bash
# Why a share's simulcast layers are separate libvpx encoders, not libvpx's
# multi-resolution encoder (vpx_codec_enc_init_multi, as libwebrtc codes
# VP8 simulcast): plain libvpx with the host's settings (Benchmarks/multi-res.c),
# two layers coded both ways beside one layer, fed the shared desktop clip
# interleaved frame by frame, in four cases. The figures and what they mean
# for the host are in docs/STREAMING.md ("Layers as one multi-resolution encoder").
# Usage: Benchmarks/multi-res.sh [FRAMES (300)]
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
xz -dc ../shared/clips/desktop-720p30.y4m.xz > "$work/clip.y4m"
cc -O2 -o "$work/multi-res" Benchmarks/multi-res.c $(pkg-config --cflags --libs vpx) -lm
frames=${1:-300}
echo "== the clip, every frame coded on both layers"
"$work/multi-res" "$work/clip.y4m" "$frames" 0 1
echo "== scrolling 4 px a frame"
"$work/multi-res" "$work/clip.y4m" "$frames" 4 1
echo "== scrolling, the small layer's temporal layers a frame out of step with the top's"
"$work/multi-res" "$work/clip.y4m" "$frames" 4 1 1
echo "== the small layer coding one frame in six (as it gathers typing)"
"$work/multi-res" "$work/clip.y4m" "$frames" 0 6
