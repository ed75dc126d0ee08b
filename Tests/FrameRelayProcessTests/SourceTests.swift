@preconcurrency import Glibc
import Foundation
import FrameRelayFrames
import FrameRelayProducer
import CXcb
import FrameRelayTestSupport
import Testing

@Suite(.serialized) struct SourceTests {
    @Test func syntheticScreenStampsTheFrameNumber() throws {
        for format in [PixelFormat.i420, .nv12] {
            let screen = try SyntheticScreen(width: 640, height: 360, format: format)
            for n: UInt64 in [0, 1, 77, 123_456] {
                let buffer = try #require(screen.nextFrame(number: n)?.picture)
                let read = buffer.withUnsafeMutablePlane(0) { bytes, stride in
                    FrameStamp.read(luma: UnsafeRawBufferPointer(bytes), stride: stride, width: 640, height: 360)
                }
                #expect(read == n)
            }
        }
    }

    @Test func y4mSourceReadsTheSharedClipAndLoops() throws {
        let source = try Y4MFileSource(path: Paths.clip())
        #expect(source.width == 1280 && source.height == 720 && source.frameRate == 30)
        var checksums: [UInt64] = []
        var n: UInt64 = 0
        while checksums.count < 3, let buffer = try source.nextFrame(number: n)?.picture {
            checksums.append(buffer.withUnsafeBytes { FrameChecksum.of($0) })
            n += 1
        }
        #expect(checksums.count == 3)
        // Reading on past the end wraps to the start rather than stopping.
        for _ in 0..<400 { _ = try #require(try source.nextFrame(number: n)?.picture); n += 1 }
    }

    @Test func clipThroughTheRingBetweenProcesses() throws {
        let group = uniqueGroup("clip")
        let dir = Paths.temporaryDirectory()
        let hostStats = dir.appendingPathComponent("host.json").path
        let h = host([group], ["--exit-when-finished", "--verify", "--report", hostStats])
        // The producer's second of frames starts once the host looks for its ring: a host that came later would never see it finish.
        try #require(h.waitForLog("waiting for frames"), "host: \(h.stderr)")
        let p = producer(group, ["--source", "file", "--file", try Paths.clip(), "--frames", "30", "--fps", "30", "--format", "bgra", "--checksum", "--quiet"])
        #expect(p.wait() == 0, "producer: \(p.stderr)")
        #expect(h.wait() == 0, "host: \(h.stderr)")
        let share = try #require(try readShareStats(hostStats).first)
        #expect(share.geometries.first?.hasPrefix("1280x720 bgra up") == true)
        #expect(share.taken > 0 && share.invalid == 0)
    }

    @Test func x11SourceCapturesWhatAClientDrawsUnderXvfb() throws {
        let display = ":\(90 + Int(getpid() % 50))"
        let xvfb = Spawned("/usr/bin/Xvfb", [display, "-screen", "0", "320x240x24", "-nolisten", "tcp", "-noreset"])
        defer { xvfb.signal(SIGTERM); _ = xvfb.wait(timeout: 5) }
        // Ready when a client can draw: an X client paints the root window.
        var painted = false
        for _ in 0..<100 where !painted {
            painted = run("/usr/bin/xsetroot", ["-display", display, "-solid", "#FF8000"]).status == 0
            if !painted { usleep(50_000) }
        }
        try #require(painted, "Xvfb did not start: \(xvfb.stderr)")
        let capture = try X11Capture(display: display)
        #expect(capture.width == 320 && capture.height == 240)
        let first = try #require(try capture.nextFrame(number: 0))
        let buffer = first.picture
        buffer.withUnsafeMutablePlane(0) { bytes, stride in
            let p = 120 * stride + 160 * 4
            #expect(bytes[p] == 0x00 && bytes[p + 1] == 0x80 && bytes[p + 2] == 0xFF, "B G R = \(bytes[p]) \(bytes[p + 1]) \(bytes[p + 2])")
        }
        #expect(first.damage != .none)
        // DAMAGE: nothing drawn, so the next frames repeat the first; a client drawing makes the next one new.
        #expect(try capture.nextFrame(number: 1)?.damage == Damage.none, "nothing was drawn, yet the frame is called new")
        #expect(run("/usr/bin/xsetroot", ["-display", display, "-solid", "#0040C0"]).status == 0)
        var number: UInt64 = 2
        var redrawn = try #require(try capture.nextFrame(number: number))
        while redrawn.damage == .none, number < 100 {  // the server's event is on its way
            usleep(10_000)
            number += 1
            redrawn = try #require(try capture.nextFrame(number: number))
        }
        #expect(redrawn.damage != .none, "the root was painted and no frame said so")
        // Captured whole (it covers the screen), and still said where: everywhere the root shows.
        let root: PixelRegion? = if case .region(let region) = redrawn.damage { region } else { nil }
        #expect(root.map { r in (0..<r.count).contains { r[$0].x <= 160 && r[$0].y <= 120 && r[$0].x + r[$0].width > 160 && r[$0].y + r[$0].height > 120 } } == true,
                "\(redrawn.damage)")
        redrawn.picture.withUnsafeMutablePlane(0) { bytes, stride in
            let p = 120 * stride + 160 * 4
            #expect(bytes[p] == 0xC0 && bytes[p + 1] == 0x40 && bytes[p + 2] == 0x00, "B G R = \(bytes[p]) \(bytes[p + 1]) \(bytes[p + 2])")
        }
        #expect(try capture.nextFrame(number: number + 1)?.damage == Damage.none)
        // XFIXES: a client's 40×20 window at (101, 51) is drawn there only: the next new frame says so and is captured there only.
        let window = try XWindow(display: display, x: 101, y: 51, width: 40, height: 20, color: 0x00_FF_00)
        func nextNew() throws -> SourceFrame {
            for _ in 0..<100 {
                number += 1
                let frame = try #require(try capture.nextFrame(number: number))
                if frame.damage != .none { return frame }
                usleep(10_000)
            }
            throw SourceError.display("no new frame")
        }
        func pixel(_ frame: PixelBuffer, _ x: Int, _ y: Int) -> UInt32 {
            frame.withUnsafeMutablePlane(0) { bytes, stride in bytes.load(fromByteOffset: y * stride + x * 4, as: UInt32.self) & 0xFF_FF_FF }
        }
        var shown = try nextNew()
        let said: PixelRegion? = if case .region(let region) = shown.damage { region } else { nil }
        let drawn = try #require(said, "a window drawn and no region said where")
        #expect(drawn == PixelRegion([PixelRect(x: 100, y: 50, width: 42, height: 22)]), "\(drawn), to even edges")
        #expect(pixel(shown.picture, 110, 60) == 0x00_FF_00 && pixel(shown.picture, 160, 120) == 0x00_40_C0)
        window.close()
        shown = try nextNew()
        #expect(shown.damage == .region(drawn), "the window's place again when it closes")
        #expect(pixel(shown.picture, 110, 60) == 0x00_40_C0)
        // And the same through broadcast-sim into a host in another process.
        let group = uniqueGroup("x11")
        let dir = Paths.temporaryDirectory()
        let hostStats = dir.appendingPathComponent("host.json").path
        let h = host([group], ["--exit-when-finished", "--report", hostStats, "--quiet"])
        let p = producer(group, ["--source", "x11", "--display", display, "--frames", "10", "--fps", "20", "--format", "i420", "--quiet"])
        #expect(p.wait() == 0)
        #expect(h.wait() == 0)
        let share = try #require(try readShareStats(hostStats).first)
        #expect(share.geometries == ["320x240 i420 up from frame 0"] || share.geometries.first?.hasPrefix("320x240 i420 up") == true)
        #expect(!segmentExists(group))

        // The demo's desktop mode: the X11 desktop through the host to the viewer.
        let demoGroup = uniqueGroup("x11demo")
        let port = freePortPair()
        let demo = Spawned(Paths.executable("frame-relay"), ["demo", "--source", "x11", "--app-group", demoGroup.name, "--http", "\(port)"],
                           environment: ["DISPLAY": display])
        #expect(demo.waitForLog("first-frame"), "\(demo.stderr)")
        let snapshot = run("/usr/bin/curl", ["-s", "-f", "-m", "10", "-o", dir.appendingPathComponent("desk.jpg").path, "http://127.0.0.1:\(port)/snapshot.jpg"])
        #expect(snapshot.status == 0)
        demo.signal(SIGINT)
        #expect(demo.wait(timeout: 20) == 0)
        #expect(!segmentExists(demoGroup))
    }
}

/// A client's window on an X display, filled with one colour, mapped until closed.
private final class XWindow {
    private let connection: OpaquePointer
    private let window: xcb_window_t
    private var open = true

    init(display: String, x: Int16, y: Int16, width: UInt16, height: UInt16, color: UInt32) throws {
        guard let connection = xcb_connect(display, nil), xcb_connection_has_error(connection) == 0 else { throw SourceError.display("cannot connect to \(display)") }
        let screen = xcb_setup_roots_iterator(xcb_get_setup(connection)).data!
        self.connection = connection
        window = xcb_generate_id(connection)
        var values: [UInt32] = [color, 1]  // the background, override-redirect (no window manager places it)
        xcb_create_window(connection, UInt8(XCB_COPY_FROM_PARENT), window, screen.pointee.root, x, y, width, height, 0,
                          UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), screen.pointee.root_visual,
                          XCB_CW_BACK_PIXEL.rawValue | XCB_CW_OVERRIDE_REDIRECT.rawValue, &values)
        xcb_map_window(connection, window)
        xcb_flush(connection)
    }

    func close() {
        guard open else { return }
        open = false
        xcb_destroy_window(connection, window)
        xcb_flush(connection)
        xcb_disconnect(connection)
    }

    deinit { close() }
}
