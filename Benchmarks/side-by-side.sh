#!/usr/bin/env bash
# Side by side, one run, same frames, same settings, same receiver: a plain
# libvpx loop, ffmpeg (raw video -> libvpx -> RTP), GStreamer (shmsink ->
# shmsrc -> vp8enc -> rtpvp8pay -> udpsink) and FrameRelay (ring -> host ->
# RTP), each measured by `frame-relay receive` (decoded frames, glass-to-glass
# latency by the frame number stamped into every picture).
# Usage: Benchmarks/side-by-side.sh [FPS (default 0: as fast as they go)] [FRAMES (300)] [ROUNDS (3)]
#        [PIPELINES (plain,ffmpeg,gstreamer,ours)] [FORMAT (all of i420, nv12, bgra)]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps
swift build -c release >&2
clip=$(mktemp -d)/desktop-720p30.y4m
xz -dc ../shared/clips/desktop-720p30.y4m.xz > "$clip"
trap 'rm -rf "$(dirname "$clip")"' EXIT
.build/release/frame-relay-bench --side-by-side --clip "$clip" --filter "side_by_side${5:+.$5}" \
  --side-fps "${1:-0}" --side-frames "${2:-300}" --side-rounds "${3:-3}" \
  --side-pipelines "${4:-plain,ffmpeg,gstreamer,ours}" --output side-by-side.json
