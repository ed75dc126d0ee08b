import Foundation
import FrameRelayHost
import FrameRelayRing
import FrameRelayTestSupport
import Testing

/// `broadcast-sim --source screencast` on a real Wayland desktop: GNOME's
/// compositor (mutter 43) running headless in a D-Bus session of its own
/// with PipeWire and WirePlumber, cast through Mutter's ScreenCast API, and
/// a Wayland client (weston-simple-damage) drawing on it. Serialized: each
/// test runs a compositor.
@Suite(.serialized) struct ScreenCastTests {
    /// A window drawing for 3 s reaches the host, whose every encoded frame
    /// ffmpeg decodes; before and after it the desktop is still, and a still
    /// desktop sends no picture (Mutter casts on damage): those frames are
    /// repeats the host skips without a compare.
    @Test func aWindowDrawnOnAHeadlessGNOMEDesktopReachesTheHost() throws {
        let group = uniqueGroup("cast")
        let run = inDesktopSession("""
            $FR --app-group \(group.name) --duration 10 --quiet --record $D/out.ivf --report $D/host.json & H=$!
            $SIM --source screencast --app-group \(group.name) --duration 9 --report $D/sim.json 2> $D/sim.log & S=$!
            sleep 2
            timeout 3 weston-simple-damage > $D/client.log 2>&1
            wait $S; echo "sim exit $?"; wait $H; echo "host exit $?"
            cat $D/sim.log
            """)
        #expect(run.output.contains("sim exit 0") && run.output.contains("host exit 0"), "\(run.output.suffix(2000))")
        #expect(run.output.contains("1280x720") && run.output.contains("from screencast"), "\(run.output.suffix(2000))")
        let share = try #require(try readShareStats(run.directory + "/host.json").first, "\(run.output.suffix(2000))")
        let encoded = try #require(share.encoded)
        // 3 s of a client drawing at up to 60 frames/s, cast at 30: pictures, each decoded.
        #expect(encoded.frames >= 30 && encoded.width == 1280 && encoded.height == 720, "\(encoded)")
        #expect(FFmpeg.frameCount(run.directory + "/out.ivf") == Int(encoded.frames))
        #expect(FFmpeg.decodeErrors(run.directory + "/out.ivf").isEmpty)
        // The other 6 s, no picture came: repeats, not compared.
        #expect(encoded.repeated >= 90, "\(encoded)")
        #expect(!segmentExists(group))
    }

    /// What can go wrong before a picture comes: one line each naming it,
    /// exit 1, and nothing left in /dev/shm.
    @Test(arguments: [
        ("no Mutter", true, false, "", "no GNOME Mutter on the session bus"),
        ("no PipeWire", false, false, "--pipewire-node 40", "cannot connect to PipeWire"),
        ("an unknown node", true, false, "--pipewire-node 4000", "PipeWire has no node 4000"),
        ("a node that is no video source", true, false, "--pipewire-node 0", "PipeWire has no node 0"),
    ])
    func aCastThatCannotStartSaysWhyInOneLine(_ case: String, pipewire: Bool, mutter: Bool, option: String, reason: String) throws {
        let group = uniqueGroup("castbad")
        let run = inDesktopSession("""
            $SIM --source screencast \(option) --app-group \(group.name) --duration 5 2> $D/sim.log; echo "sim exit $?"
            cat $D/sim.log
            """, pipewire: pipewire, mutter: mutter)
        let lines = run.output.split(separator: "\n").filter { $0.hasPrefix("broadcast-sim:") }
        #expect(run.output.contains("sim exit 1") && lines.count == 1 && lines[0].contains(reason), "\(`case`): \(run.output.suffix(1500))")
        #expect(!segmentExists(group))
    }

    /// A node that offers only a format we do not take (GStreamer's
    /// pipewiresink sending I420): one line naming the formats we take.
    @Test func aNodeOfAFormatWeCannotTakeIsOneLine() throws {
        let group = uniqueGroup("castfmt")
        let run = inDesktopSession("""
            gst-launch-1.0 -q videotestsrc is-live=true ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 \\
              ! pipewiresink mode=provide stream-properties="p,media.class=Video/Source" > $D/gst.log 2>&1 & G=$!
            for i in $(seq 50); do
              NODE=$(pw-dump 2>/dev/null | python3 -c 'import json, sys; print(*[o["id"] for o in json.load(sys.stdin) if o.get("info", {}).get("props", {}).get("media.class") == "Video/Source"])')
              [ -n "$NODE" ] && break; sleep 0.1
            done
            $SIM --source screencast --pipewire-node $NODE --app-group \(group.name) --duration 3 2> $D/sim.log; echo "sim exit $?"
            cat $D/sim.log; kill $G
            """, mutter: false)
        let lines = run.output.split(separator: "\n").filter { $0.hasPrefix("broadcast-sim:") }
        #expect(run.output.contains("sim exit 1") && lines.count == 1 && lines[0].contains("offered no video format we take (BGRx or BGRA)"), "\(run.output.suffix(1500))")
        #expect(!segmentExists(group))
    }

    /// No session bus at all: one line, exit 1.
    @Test func noSessionBusIsOneLine() throws {
        let result = run("/usr/bin/env", ["-u", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR=/nonexistent", Paths.executable("broadcast-sim"),
                                          "--source", "screencast", "--duration", "2"])
        #expect(result.status == 1 && result.stderr.contains("cannot connect to the session D-Bus"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }

    /// The compositor goes away mid-stream (the session closed): the
    /// broadcast ends at once with one line saying so, and its ring is gone.
    @Test func theCastEndingMidStreamEndsTheBroadcast() throws {
        let group = uniqueGroup("castend")
        let run = inDesktopSession("""
            $SIM --source screencast --app-group \(group.name) --duration 30 2> $D/sim.log & S=$!
            sleep 2
            kill $(pgrep -x mutter)
            START=$(date +%s)
            wait $S; echo "sim exit $? after $(( $(date +%s) - START )) s"
            cat $D/sim.log
            """)
        #expect(run.output.contains("from screencast"), "\(run.output.suffix(1500))")
        let ended = run.output.split(separator: "\n").first { $0.contains("sim exit") }.map(String.init) ?? ""
        // Within a few seconds of the compositor's going, not at --duration.
        #expect(ended.hasPrefix("sim exit") && (Int(ended.split(separator: " ")[4]) ?? 99) <= 5, "\(run.output.suffix(1500))")
        #expect(run.output.contains("screen cast") || run.output.contains("PipeWire"), "\(run.output.suffix(1500))")
        #expect(!segmentExists(group))
    }
}
