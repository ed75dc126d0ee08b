#!/usr/bin/python3
"""A PipeWire video source the tests control, as a desktop's cast would be:
GStreamer's pipewiresink sending videotestsrc's PATTERN (a moving ball
unless named) in FORMAT at SIZE (320x240 unless named), 30 frames/s,
paused (the stream set inactive, as a compositor pauses a cast while the
screen is locked) from PAUSE to RESUME seconds, ending at END.

    pipewire-source.py FORMAT PAUSE RESUME END [PATTERN [SIZE]]

It prints "source paused" and "source playing" as it goes.
"""
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402

fmt, pause, resume, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
pattern = sys.argv[5] if len(sys.argv) > 5 else "ball"
width, height = (sys.argv[6] if len(sys.argv) > 6 else "320x240").split("x")
Gst.init(None)
pipeline = Gst.parse_launch(
    f"videotestsrc is-live=true pattern={pattern} "
    f"! video/x-raw,format={fmt},width={width},height={height},framerate=30/1 "
    '! pipewiresink mode=provide stream-properties="p,media.class=Video/Source"')
pipeline.set_state(Gst.State.PLAYING)
loop = GLib.MainLoop()


def to(state, word):
    def change():
        print(f"source {word}", flush=True)
        pipeline.set_state(state)
        return False
    return change


GLib.timeout_add(int(pause * 1000), to(Gst.State.PAUSED, "paused"))
GLib.timeout_add(int(resume * 1000), to(Gst.State.PLAYING, "playing"))
GLib.timeout_add(int(end * 1000), loop.quit)
loop.run()
pipeline.set_state(Gst.State.NULL)
