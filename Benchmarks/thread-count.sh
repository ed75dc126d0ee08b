#!/usr/bin/env bash
# The thread policy's evidence: the host encoding the shared clip (720p NV12,
# 30 frames/s from broadcast-sim, RTP to a local port) with one encoder
# thread and with two, alternating, ROUNDS times; prints each run's encode
# and capture -> sent percentiles from the host's --report.
# Usage: Benchmarks/thread-count.sh [ROUNDS (2)] [FRAMES (450)]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps
swift build -c release >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
xz -dc ../shared/clips/desktop-720p30.y4m.xz > "$work/clip.y4m"
# Something takes the RTP on 127.0.0.1:5600 (and drops it), so the host sends as to a real receiver, not into ECONNREFUSED.
python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 5600))
while True: s.recv(65536)' & sink=$!
trap 'kill $sink 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do ss -Hlun 'sport = :5600' | grep -q . && break; sleep 0.1; done
for round in $(seq "${1:-2}"); do
  for threads in 1 2; do
    group=group.bench.framerelay.threads$threads
    .build/release/frame-relay --app-group "$group" --threads "$threads" --rtp 127.0.0.1:5600 \
      --exit-when-finished --quiet --report "$work/report.json" &
    host=$!
    .build/release/broadcast-sim --app-group "$group" --source file --file "$work/clip.y4m" \
      --format nv12 --fps 30 --frames "${2:-450}" > /dev/null 2>&1
    wait "$host"
    python3 - "$work/report.json" "$threads" "$round" <<'PY'
import json, sys
share = json.load(open(sys.argv[1]))[0]
encode, sent = share["encoded"]["encode"], share["transport"]["captureToSent"]
ms = lambda us: f"{us / 1000:.1f}"
print(f"round {sys.argv[3]}, {sys.argv[2]} thread(s): encode p50 {ms(encode['p50_us'])} ms, p99 {ms(encode['p99_us'])} ms; "
      f"capture -> sent p99 {ms(sent['p99_us'])} ms; host CPU {share['cpuSeconds']:.2f} s")
PY
  done
done
