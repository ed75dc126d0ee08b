#!/usr/bin/env bash
# The producer capturing a real desktop at SIZE, SECONDS at FPS a run, into
# a host that takes every frame. Runs, as KINDS names them:
#   x11         Xvfb showing a moving picture (GStreamer's videotestsrc,
#               SMPTE bars sliding, full screen, ximagesink); host not encoding
#   screencast  the same picture on GNOME's compositor running headless
#               (mutter 43, waylandsink fullscreen), cast through Mutter;
#               host not encoding
#   moving      as screencast, the host encoding
#   still       the same desktop with nothing drawn, the host encoding
#   typing      a black screen where only a clock's digits change (a
#               typing-sized change), the host encoding
# Writes KIND.json (broadcast-sim's --report), KIND.host.json (the host's
# --report), screencast.trace (the host's --trace) and KIND.hostcpu (the host process's
# CPU ticks, user and system, 3 s in (still: 5 s) and just before the end) into OUT. frame-relay-bench
# --filter capture runs it and reads them.
#
#   Benchmarks/capture-cost.sh SIZE SECONDS FPS BIN OUT KINDS
set -euo pipefail
size=$1 seconds=$2 fps=$3 bin=$4 out=$5 kinds=$6
width=${size%x*} height=${size#*x}
caps="video/x-raw,width=$width,height=$height,framerate=$fps/1"

# What each kind shows (nothing for still).
client() {
  case $1 in
    x11|screencast|moving) echo "videotestsrc is-live=true pattern=smpte horizontal-speed=4 ! $caps ! videoconvert" ;;
    typing) echo "videotestsrc is-live=true pattern=black ! $caps ! timeoverlay font-desc=\"Sans 24\" ! videoconvert" ;;
  esac
}

# A process's CPU ticks so far, user and system (nothing once it is gone).
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2> /dev/null || true; }

# Runs a host and the producer (its source options in $@) for one kind.
capture() {
  local kind=$1; shift
  # --exit-with-parent: a producer that fails leaves no host behind (set -e ends this shell).
  local host=(--quiet --exit-when-finished --exit-with-parent --report "$out/$kind.host.json")
  [[ $kind == x11 || $kind == screencast ]] && host+=(--no-encode)
  [[ $kind == screencast ]] && host+=(--trace "$out/$kind.trace")
  "$bin/frame-relay" --app-group "group.bench.framerelay.capture.$kind" "${host[@]}" 2> "$out/$kind.host.log" & local pid=$!
  # The host's CPU from 3 s in (5 s for a still desktop: past the first picture's keyframe and all its
  # refinement, which takes a 1080p picture seconds on 2 cores) to just before the end, from /proc.
  local from=3
  [[ $kind == still ]] && from=5
  (sleep $from; ticks $pid > "$out/$kind.hostcpu"; sleep "$(awk "BEGIN { print $seconds - $from - 0.3 }")"; ticks $pid >> "$out/$kind.hostcpu") &
  local sampler=$!
  "$bin/broadcast-sim" "$@" --app-group "group.bench.framerelay.capture.$kind" --fps "$fps" --duration "$seconds" \
    --report "$out/$kind.json" --quiet
  wait $sampler $pid
}

if [[ ,$kinds, == *,x11,* ]]; then
  for display in $(seq 90 120); do [ -e "/tmp/.X11-unix/X$display" ] || break; done
  shown=
  Xvfb ":$display" -screen 0 "${size}x24" -nolisten tcp > "$out/xvfb.log" 2>&1 & xvfb=$!
  trap 'kill $xvfb $shown 2> /dev/null; wait $xvfb $shown 2> /dev/null' EXIT
  for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X$display" ] && break; sleep 0.1; done
  eval "DISPLAY=:$display exec gst-launch-1.0 -q $(client x11) ! ximagesink" > "$out/x11-client.log" 2>&1 & shown=$!
  sleep 1
  capture x11 --source x11 --display ":$display"
  kill $shown $xvfb; wait $shown $xvfb 2> /dev/null || true
  trap - EXIT
fi

wayland=${kinds//x11/}
if [[ $wayland == *[a-z]* ]]; then
  export -f capture client ticks
  export bin out fps seconds size caps wayland
  dbus-run-session -- bash -c '
    set -euo pipefail
    export XDG_RUNTIME_DIR="$out/run" WAYLAND_DISPLAY=wayland-0 XDG_STATE_HOME="$out/state" XDG_DATA_HOME="$out/data" XDG_CONFIG_HOME="$out/config"
    mkdir -p -m 700 "$XDG_RUNTIME_DIR"
    pipewire > "$out/pipewire.log" 2>&1 & desktop=$!
    for _ in $(seq 50); do [ -S "$XDG_RUNTIME_DIR/pipewire-0" ] && break; sleep 0.1; done
    wireplumber > "$out/wireplumber.log" 2>&1 & desktop="$desktop $!"
    mutter --headless --virtual-monitor "$size" --wayland --no-x11 > "$out/mutter.log" 2>&1 & desktop="$desktop $!"
    shown=
    trap "kill \$shown $desktop 2> /dev/null; wait \$shown $desktop 2> /dev/null" EXIT
    for _ in $(seq 100); do busctl --user status org.gnome.Mutter.ScreenCast > /dev/null 2>&1 && [ -S "$XDG_RUNTIME_DIR/wayland-0" ] && break; sleep 0.1; done
    for kind in ${wayland//,/ }; do
      if [ -n "$(client $kind)" ]; then
        eval "exec gst-launch-1.0 -q $(client $kind) ! waylandsink fullscreen=true" > "$out/$kind-client.log" 2>&1 & shown=$!
      fi
      sleep 1
      capture $kind --source screencast --cast mutter
      if [ -n "$shown" ]; then kill $shown; wait $shown 2> /dev/null || true; shown=; fi
    done
  ' 2> "$out/session.log"
fi
