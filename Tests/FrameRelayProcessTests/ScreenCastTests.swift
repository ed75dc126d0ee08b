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

    /// A window cast (Mutter's RecordWindow of the focused window): the
    /// stream is monitor-sized with the window as its crop
    /// (SPA_META_VideoCrop), and the picture sent is the window alone, from
    /// the first frame (one keyframe), each frame decoded by ffmpeg at that size.
    @Test func aWindowCastSendsTheWindowAlone() throws {
        let group = uniqueGroup("castwin")
        let run = inDesktopSession("""
            timeout 6 weston-simple-damage > $D/client.log 2>&1 &
            sleep 1
            $FR --app-group \(group.name) --duration 5 --quiet --record $D/out.ivf --report $D/host.json & H=$!
            $SIM --source screencast --cast mutter --surface window --app-group \(group.name) --duration 3 2> $D/sim.log
            echo "sim exit $?"; wait $H; cat $D/sim.log
            """)
        #expect(run.output.contains("sim exit 0") && run.output.contains("a window cast through Mutter"), "\(run.output.suffix(2000))")
        let share = try #require(try readShareStats(run.directory + "/host.json").first, "\(run.output.suffix(2000))")
        let encoded = try #require(share.encoded)
        // weston-simple-damage's window, not the 1280x720 monitor.
        #expect(encoded.width > 0 && encoded.width < 640 && encoded.height < 480 && encoded.keyframes == 1, "\(encoded)")
        #expect(encoded.frames >= 30 && FFmpeg.frameCount(run.directory + "/out.ivf") == Int(encoded.frames), "\(encoded)")
        #expect(FFmpeg.decodeErrors(run.directory + "/out.ivf").isEmpty)
        #expect(!segmentExists(group))
    }

    /// The source pauses its stream (as a compositor pauses a cast while
    /// the screen is locked): the broadcast pauses with it, the host hears
    /// paused and resumed, and frames flow again after.
    @Test func aPausedCastPausesTheBroadcast() throws {
        let group = uniqueGroup("castpause")
        let run = inDesktopSession("""
            /usr/bin/python3 '\(pipeWireSource)' BGRx 2 4 7 > $D/source.log 2>&1 & G=$!
            video_source
            $FR --app-group \(group.name) --duration 7 --quiet --report $D/host.json & H=$!
            $SIM --source screencast --pipewire-node $NODE --app-group \(group.name) --duration 6 2> $D/sim.log
            echo "sim exit $?"; wait $H; wait $G; cat $D/sim.log $D/source.log
            """, mutter: false)
        #expect(run.output.contains("sim exit 0"), "\(run.output.suffix(2000))")
        let lines = run.output.split(separator: "\n").map(String.init)
        let paused = lines.firstIndex { $0.hasSuffix("paused (the compositor paused the screen cast)") }
        let resumed = lines.firstIndex { $0.hasSuffix("broadcast-sim: resumed") }
        #expect(paused != nil && resumed != nil && paused! < resumed!, "\(run.output.suffix(2000))")
        let share = try #require(try readShareStats(run.directory + "/host.json").first, "\(run.output.suffix(2000))")
        let kinds = share.events.map(\.kind)
        #expect(kinds.contains("paused") && kinds.contains("resumed"), "\(kinds)")
        // Frames came after the resume: under 2 s of the ball before the pause is at most 60 pictures.
        #expect((share.encoded?.frames ?? 0) >= 80, "\(share.encoded.map { "\($0.frames)" } ?? "none")")
        #expect(!segmentExists(group))
    }

    /// A cast with its cursor as metadata (a compositor's `cursor-mode` 2;
    /// Tests/Support/pipewire-cursor-source.c: a still gray desktop sent once
    /// a second, a 16x16 red pointer with hotspot (3, 3) moving beside it in
    /// buffers with no picture for 3 s, then resting at (200, 120)): the producer
    /// draws the pointer, so the last picture ffmpeg decodes has it at
    /// (197, 117) to (212, 132) (± 1 for the encoding's blur at its edges:
    /// without the hotspot it would be 3 px off), and no trail
    /// where it moved; and the moves reach the host as the pointer's own
    /// rectangles (frames located, a few macroblocks each of 300).
    @Test func aCursorSentAsMetadataIsDrawnByTheProducer() throws {
        let group = uniqueGroup("castcursor")
        let run = inDesktopSession("""
            clang -O1 -o $D/cursor-source '\(pipeWireCursorSource)' $(pkg-config --cflags --libs libpipewire-0.3) -lpthread || echo "cannot build the source"
            $D/cursor-source 6 > $D/source.log 2>&1 & G=$!
            video_source
            $FR --app-group \(group.name) --duration 5 --quiet --record $D/out.ivf --report $D/host.json & H=$!
            $SIM --source screencast --pipewire-node $NODE --app-group \(group.name) --duration 4 2> $D/sim.log
            echo "sim exit $?"; wait $H; echo "host exit $?"; wait $G; cat $D/sim.log $D/source.log
            ffmpeg -v error -i $D/out.ivf -fps_mode passthrough -f rawvideo -pix_fmt rgb24 -y $D/out.rgb
            """, mutter: false)
        #expect(run.output.contains("sim exit 0") && run.output.contains("host exit 0"), "\(run.output.suffix(2000))")
        let frame = 320 * 240 * 3
        let decoded = try Data(contentsOf: URL(fileURLWithPath: run.directory + "/out.rgb"))
        try #require(decoded.count >= frame && decoded.count % frame == 0, "\(decoded.count) bytes decoded")
        let last = [UInt8](decoded.suffix(frame))
        // The pointer's red pixels and where they are; everything else the desktop's gray.
        var red: [(x: Int, y: Int)] = [], stray = 0
        for y in 0..<240 {
            for x in 0..<320 {
                let (r, g, b) = (Int(last[(y * 320 + x) * 3]), Int(last[(y * 320 + x) * 3 + 1]), Int(last[(y * 320 + x) * 3 + 2]))
                if r > 180 && g < 90 && b < 90 {
                    red.append((x, y))
                } else if abs(r - 128) > 24 || abs(g - 128) > 24 || abs(b - 128) > 24 {
                    stray += 1
                }
            }
        }
        let box = (red.map(\.x).min() ?? -1, red.map(\.y).min() ?? -1, red.map(\.x).max() ?? -1, red.map(\.y).max() ?? -1)
        #expect(abs(box.0 - 197) <= 1 && abs(box.1 - 117) <= 1 && abs(box.2 - 212) <= 1 && abs(box.3 - 132) <= 1 && red.count >= 230,
                "red pixels \(red.count), from \(box)")
        // Gray everywhere else, but for the pointer's edges softened by the encoding.
        #expect(stray < 80, "\(stray) pixels neither gray nor the pointer's red")
        let encoded = try #require(try readShareStats(run.directory + "/host.json").first?.encoded)
        // The pointer moved for 3 s of the 4 (90 source frames): most of them each a picture of their own.
        #expect(encoded.located >= 50 && encoded.partial >= 50, "\(encoded)")
        #expect(Double(encoded.activeMacroblocks) / Double(max(1, encoded.partial)) <= 12, "\(encoded)")
        #expect(!segmentExists(group))
    }

    /// The node's picture changes size mid-stream (its format renegotiated,
    /// as a monitor changing its mode; the test's source goes from 320x240
    /// to 480x360 a second in): the ring grows, and the host's first frame
    /// of the new size is a keyframe, every frame decoded by ffmpeg.
    @Test func aSizeChangeMidStreamGivesAKeyframeOfTheNewSize() throws {
        let group = uniqueGroup("castresize")
        let run = inDesktopSession("""
            clang -O1 -o $D/cursor-source '\(pipeWireCursorSource)' $(pkg-config --cflags --libs libpipewire-0.3) -lpthread || echo "cannot build the source"
            $D/cursor-source 6 resize > $D/source.log 2>&1 & G=$!
            video_source
            $FR --app-group \(group.name) --duration 5 --quiet --record $D/out.ivf & H=$!
            $SIM --source screencast --pipewire-node $NODE --app-group \(group.name) --duration 4 2> $D/sim.log
            echo "sim exit $?"; wait $H; echo "host exit $?"; wait $G; cat $D/sim.log $D/source.log
            """, mutter: false)
        #expect(run.output.contains("sim exit 0") && run.output.contains("host exit 0"), "\(run.output.suffix(2000))")
        #expect(run.output.contains("the picture grew to 480x360"), "\(run.output.suffix(2000))")
        let frames = FFmpeg.frames(run.directory + "/out.ivf")
        let larger = try #require(frames.firstIndex { $0.width == 480 }, "\(frames.count) frames, none 480 wide")
        #expect(frames[0].key && frames[0].width == 320 && larger >= 10, "\(frames.prefix(3))")
        #expect(frames[larger].key && frames.count - larger >= 20 && frames[larger...].allSatisfy { $0.width == 480 }, "from frame \(larger): \(frames[larger...].prefix(3))")
        #expect(FFmpeg.decodeErrors(run.directory + "/out.ivf").isEmpty)
        #expect(!segmentExists(group))
    }

    /// A node that misbehaves once pictures flow: each picture's chunk
    /// naming a stride twice its row (none fits its buffer), or its memfds
    /// shrunk to nothing and grown back while the producer reads them (a
    /// SIGBUS killed it before the segment guard): one line saying so,
    /// exit 1, not a black or wrong broadcast (or a crash).
    @Test(arguments: [("oversized", "pictures did not fit their buffers"), ("shrinking", "shrank a buffer while we read it")])
    func aNodeThatMisbehavesMidStreamIsOneLine(_ mode: String, reason: String) throws {
        let group = uniqueGroup("castbadnode")
        let run = inDesktopSession("""
            clang -O1 -o $D/cursor-source '\(pipeWireCursorSource)' $(pkg-config --cflags --libs libpipewire-0.3) -lpthread || echo "cannot build the source"
            $D/cursor-source 8 \(mode) > $D/source.log 2>&1 & G=$!
            video_source
            $SIM --source screencast --pipewire-node $NODE --app-group \(group.name) --duration 6 2> $D/sim.log; echo "sim exit $?"
            kill $G; cat $D/sim.log
            """, mutter: false)
        let lines = run.output.split(separator: "\n").filter { $0.hasPrefix("broadcast-sim:") && !$0.contains("started") && !$0.contains("no host") }
        #expect(run.output.contains("sim exit 1") && lines.count == 1 && lines[0].contains(reason), "\(mode): \(run.output.suffix(1500))")
        #expect(!segmentExists(group))
    }

    /// The pointer's image comes once, in a buffer with no picture, before
    /// the first picture (a compositor sends it when it changes): it is
    /// drawn once pictures come (it was lost: the image was taken only with
    /// a picture in hand). The last decoded picture has it at (97, 97).
    @Test func aPointerImageBeforeTheFirstPictureIsDrawn() throws {
        let group = uniqueGroup("castimage")
        let run = inDesktopSession("""
            clang -O1 -o $D/cursor-source '\(pipeWireCursorSource)' $(pkg-config --cflags --libs libpipewire-0.3) -lpthread || echo "cannot build the source"
            $D/cursor-source 6 image-first > $D/source.log 2>&1 & G=$!
            video_source
            $FR --app-group \(group.name) --duration 5 --quiet --record $D/out.ivf & H=$!
            $SIM --source screencast --pipewire-node $NODE --app-group \(group.name) --duration 4 2> $D/sim.log
            echo "sim exit $?"; wait $H; echo "host exit $?"; wait $G; cat $D/sim.log $D/source.log
            ffmpeg -v error -i $D/out.ivf -fps_mode passthrough -f rawvideo -pix_fmt rgb24 -y $D/out.rgb
            """, mutter: false)
        #expect(run.output.contains("sim exit 0") && run.output.contains("host exit 0"), "\(run.output.suffix(2000))")
        let decoded = try Data(contentsOf: URL(fileURLWithPath: run.directory + "/out.rgb"))
        try #require(decoded.count >= 320 * 240 * 3, "\(decoded.count) bytes decoded")
        let last = [UInt8](decoded.suffix(320 * 240 * 3))
        let centre = (104 * 320 + 104) * 3, outside = (104 * 320 + 130) * 3
        #expect(last[centre] > 180 && last[centre + 1] < 90 && last[outside + 1] > 100, "pointer \(last[centre..<centre + 3].map { $0 }), beside it \(last[outside..<outside + 3].map { $0 })")
        #expect(!segmentExists(group))
    }

    /// What can go wrong before a picture comes: one line each naming it,
    /// exit 1, and nothing left in /dev/shm.
    @Test(arguments: [
        ("no Mutter", true, false, "--cast mutter", "no GNOME Mutter on the session bus"),
        ("no portal backend", true, false, "--cast portal", "the desktop portal offers no ScreenCast"),
        ("neither", true, false, "", "the desktop portal offers no ScreenCast"),
        ("no window to cast", true, true, "--cast mutter --surface window", "Mutter cannot cast a window"),
        ("no PipeWire", false, false, "--pipewire-node 40", "cannot connect to PipeWire (no daemon at its socket)"),
        ("an unknown node", true, false, "--pipewire-node 4000", "PipeWire has no node 4000"),
        ("an object that is no node", true, false, "--pipewire-node 0", "PipeWire object 0 is a Core, not a node"),
        ("a node that is no video source", true, false, "--pipewire-node 28", "PipeWire node 28 is not a video source"),
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

    /// A YUV node (GStreamer's pipewiresink sending I420 or NV12, one data
    /// with every plane and no stride: GStreamer's layout, rows padded to 4
    /// bytes) converted into each format the ring carries: 100 % colour bars
    /// at 322x242 (chroma rows of 161 bytes, padded to 164) decoded by ffmpeg
    /// against the same bars made by GStreamer, every plane above 40 dB (a
    /// plane laid out wrong measured 7-9 dB).
    @Test(arguments: [("I420", "i420"), ("I420", "nv12"), ("I420", "bgra"), ("NV12", "i420"), ("NV12", "nv12"), ("NV12", "bgra")])
    func aYUVNodeIsTakenAsItIsLaidOut(_ node: String, ring: String) throws {
        let group = uniqueGroup("castyuv")
        let run = inDesktopSession("""
            /usr/bin/python3 '\(pipeWireSource)' \(node) 100 100 5 smpte100 322x242 > $D/source.log 2>&1 & G=$!
            video_source
            $FR --app-group \(group.name) --duration 4 --quiet --record $D/out.ivf & H=$!
            $SIM --source screencast --pipewire-node $NODE --format \(ring) --app-group \(group.name) --duration 3 2> $D/sim.log
            echo "sim exit $?"; wait $H; echo "host exit $?"; kill $G; cat $D/sim.log
            gst-launch-1.0 -q videotestsrc pattern=smpte100 num-buffers=1 ! video/x-raw,format=RGB,width=322,height=242 ! pngenc ! filesink location=$D/bars.png
            ffmpeg -v error -loop 1 -i $D/bars.png -frames:v 30 -pix_fmt yuv420p -f yuv4mpegpipe $D/bars.y4m
            """, mutter: false)
        #expect(run.output.contains("sim exit 0") && run.output.contains("host exit 0"), "\(run.output.suffix(2000))")
        #expect(run.output.contains("322x242 \(ring)"), "\(run.output.suffix(2000))")
        for plane in ["y", "u", "v"] {
            let psnr = FFmpeg.psnr(run.directory + "/out.ivf", reference: run.directory + "/bars.y4m", width: 322, height: 242, plane: plane)
            #expect((psnr ?? 0) > 40, "\(node) → \(ring), plane \(plane): \(psnr.map { "\($0) dB" } ?? "no PSNR")")
        }
        #expect(!segmentExists(group))
    }

    /// A node that offers only a format we do not take (GStreamer's
    /// pipewiresink sending YUY2): one line naming the formats we take.
    @Test func aNodeOfAFormatWeCannotTakeIsOneLine() throws {
        let group = uniqueGroup("castfmt")
        let run = inDesktopSession("""
            gst-launch-1.0 -q videotestsrc is-live=true ! video/x-raw,format=YUY2,width=320,height=240,framerate=30/1 \\
              ! pipewiresink mode=provide stream-properties="p,media.class=Video/Source" > $D/gst.log 2>&1 & G=$!
            video_source
            $SIM --source screencast --pipewire-node $NODE --app-group \(group.name) --duration 3 2> $D/sim.log; echo "sim exit $?"
            cat $D/sim.log; kill $G
            """, mutter: false)
        let lines = run.output.split(separator: "\n").filter { $0.hasPrefix("broadcast-sim:") }
        #expect(run.output.contains("sim exit 1") && lines.count == 1 && lines[0].contains("offered no video format we take (BGRx, BGRA, I420 or NV12)"), "\(run.output.suffix(1500))")
        #expect(!segmentExists(group))
    }

    /// Through xdg-desktop-portal, as on any desktop: the first cast asks
    /// the chooser and keeps the restore token it returns (this user's
    /// only); the next passes it and starts without the chooser (the
    /// backend now cancels any cast it has to ask for, and casts this one);
    /// with the token gone the chooser asks again, and cancelling it is
    /// one line and exit 1. Every frame encoded is decoded by ffmpeg.
    @Test func aCastThroughThePortalAsksItsChooserOnce() throws {
        let group = uniqueGroup("portal")
        let run = inDesktopSession("""
            cast() {
              $FR --app-group \(group.name) --duration 5 --quiet --record $D/$1.ivf --report $D/$1.json & H=$!
              $SIM --source screencast --cast portal --app-group \(group.name) --duration 3 2> $D/$1.log & S=$!
              (sleep 0.5; timeout 2 weston-simple-damage > /dev/null 2>&1)
              wait $S; echo "$1 sim exit $?"; wait $H; cat $D/$1.log
            }
            cast first
            stat -c 'token mode %a' $D/state/frame-relay/screencast-monitor.token
            portal restore-only
            cast again
            rm $D/state/frame-relay/screencast-monitor.token
            $SIM --source screencast --cast portal --app-group \(group.name) --duration 3 2> $D/cancelled.log; echo "cancelled sim exit $?"
            cat $D/cancelled.log $D/backend.log
            """, portal: "pick")
        #expect(run.output.contains("first sim exit 0") && run.output.contains("again sim exit 0"), "\(run.output.suffix(3000))")
        #expect(run.output.contains("a monitor cast through xdg-desktop-portal"), "\(run.output.suffix(3000))")
        #expect(run.output.contains("token mode 600"), "\(run.output.suffix(3000))")
        // The second cast's SelectSources brought the first one's restore data: the chooser was skipped.
        let selects = run.output.split(separator: "\n").filter { $0.contains("SelectSources") }
        #expect(selects.count == 3 && selects[0].hasSuffix("restored=False") && selects[1].hasSuffix("restored=True")
                && selects[2].hasSuffix("restored=False"), "\(selects)")
        for name in ["first", "again"] {
            let share = try #require(try readShareStats(run.directory + "/\(name).json").first, "\(run.output.suffix(3000))")
            let encoded = try #require(share.encoded)
            #expect(encoded.frames >= 10 && encoded.width == 1280, "\(name): \(encoded)")
            #expect(FFmpeg.frameCount(run.directory + "/\(name).ivf") == Int(encoded.frames))
        }
        let cancelled = try String(contentsOfFile: run.directory + "/cancelled.log", encoding: .utf8).split(separator: "\n")
        #expect(run.output.contains("cancelled sim exit 1") && cancelled.count == 1
                && cancelled[0].contains("the screen cast was cancelled in the desktop's chooser"), "\(cancelled)")
        #expect(!segmentExists(group))
    }

    /// Ctrl-C while the desktop's chooser is open (a portal's Start can wait
    /// minutes for the user) ends the producer at once, in one line.
    @Test func aStopWhileTheChooserIsOpenEndsAtOnce() throws {
        let group = uniqueGroup("portalwait")
        let run = inDesktopSession("""
            $SIM --source screencast --cast portal --app-group \(group.name) --duration 30 2> $D/sim.log & S=$!
            sleep 2
            kill -INT $S
            START=$(date +%s%N)
            wait $S; echo "sim exit $? after $(( ($(date +%s%N) - START) / 1000000 )) ms"
            cat $D/sim.log
            """, portal: "never")
        let ended = run.output.split(separator: "\n").first { $0.contains("sim exit") }.map(String.init) ?? ""
        #expect(ended.hasPrefix("sim exit 1") && (Int(ended.split(separator: " ")[4]) ?? 9999) < 1000, "\(run.output.suffix(1500))")
        let lines = run.output.split(separator: "\n").filter { $0.hasPrefix("broadcast-sim:") }
        #expect(lines.count == 1 && lines[0].contains("stopped by a signal before the desktop started the cast"), "\(lines)")
        #expect(!segmentExists(group))
    }

    /// A restore token file the portal refuses (damaged, not a UUID) is
    /// forgotten: the chooser asks again, the cast starts, a good token is kept.
    @Test func aDamagedRestoreTokenIsForgotten() throws {
        let group = uniqueGroup("portaltoken")
        let run = inDesktopSession("""
            mkdir -p $D/state/frame-relay; echo garbage > $D/state/frame-relay/screencast-monitor.token
            $SIM --source screencast --cast portal --app-group \(group.name) --duration 1 2> $D/sim.log; echo "sim exit $?"
            echo "token $(cat $D/state/frame-relay/screencast-monitor.token)"
            cat $D/sim.log
            """, portal: "pick")
        #expect(run.output.contains("sim exit 0") && run.output.contains("a monitor cast through xdg-desktop-portal"), "\(run.output.suffix(1500))")
        let token = run.output.split(separator: "\n").first { $0.hasPrefix("token ") }.map { String($0.dropFirst(6)) } ?? ""
        #expect(token.count == 36 && token != "garbage", "\(token)")
        #expect(!segmentExists(group))
    }

    /// The user stops sharing from the desktop (the portal closes the
    /// session): the broadcast ends at once with one line, its ring gone.
    @Test func thePortalClosingTheSessionEndsTheBroadcast() throws {
        let group = uniqueGroup("portalend")
        let run = inDesktopSession("""
            START=$(date +%s)
            $SIM --source screencast --cast portal --app-group \(group.name) --duration 30 2> $D/sim.log
            echo "sim exit $? after $(( $(date +%s) - START )) s"
            cat $D/sim.log
            """, portal: "close-after=2")
        let ended = run.output.split(separator: "\n").first { $0.contains("sim exit") }.map(String.init) ?? ""
        #expect(ended.hasPrefix("sim exit 0") && (Int(ended.split(separator: " ")[4]) ?? 99) <= 6, "\(run.output.suffix(1500))")
        #expect(run.output.contains("finished (the desktop closed the screen cast session)"), "\(run.output.suffix(1500))")
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
