@preconcurrency import Glibc
internal import CXcb
import FrameRelaySystem
import FrameRelayFrames

/// Captures an X11 screen (a real desktop, or Xvfb) through MIT-SHM with
/// libxcb: the X server writes the root window straight into shared memory,
/// which is then the BGRA picture (the 4th byte is padding, set opaque).
///
/// With the DAMAGE extension the server says when anything was drawn: a
/// frame with nothing drawn since the last capture is the picture in hand,
/// not captured again, and its ``Damage/none`` says so, for the host to
/// skip it without a compare. With XFIXES too it says where
/// (``Damage/region(_:)``: up to ``PixelRegion/maxRects`` rectangles, to even
/// edges), for the host to convert and compare only there, and only those
/// rectangles are captured again while they cover under half the screen.
/// Without DAMAGE every frame is captured whole.
public final class X11Capture: FrameSource {
    public let width: Int
    public let height: Int
    private let connection: OpaquePointer
    private let root: xcb_window_t
    private let segment: xcb_shm_seg_t
    private let shmId: Int32
    private let shmAddress: UnsafeMutableRawPointer
    private let buffer: PixelBuffer
    /// The DAMAGE object on the root window and its event code; 0 without the extension.
    private var damage: xcb_damage_damage_t = 0
    private var damageNotify: UInt8 = 0
    private var captured = false
    /// The request number (low 16 bits, as events carry it) of the last emptying of the damage.
    private var emptied: UInt16 = 0
    /// An XFIXES region the damage is emptied into, to learn where it was; 0 without XFIXES.
    private var parts: xcb_xfixes_region_t = 0

    /// Connects to `display` (nil: `$DISPLAY`) and prepares a capture of its
    /// first screen; throws a ``SourceError`` saying what is missing.
    public init(display: String? = nil) throws {
        var screenNumber: Int32 = 0
        guard let connection = xcb_connect(display, &screenNumber), xcb_connection_has_error(connection) == 0 else {
            throw SourceError.display("cannot connect to display \(display ?? getenv("DISPLAY").map { String(cString: $0) } ?? "(DISPLAY unset)")")
        }
        var iterator = xcb_setup_roots_iterator(xcb_get_setup(connection))
        for _ in 0..<screenNumber { xcb_screen_next(&iterator) }
        guard let screen = iterator.data else {
            xcb_disconnect(connection)
            throw SourceError.display("no screen \(screenNumber)")
        }
        guard screen.pointee.root_depth == 24 || screen.pointee.root_depth == 32 else {
            xcb_disconnect(connection)
            throw SourceError.display("root depth \(screen.pointee.root_depth), need 24 or 32")
        }
        let reply = xcb_shm_query_version_reply(connection, xcb_shm_query_version(connection), nil)
        guard reply != nil else {
            xcb_disconnect(connection)
            throw SourceError.display("the X server has no MIT-SHM extension")
        }
        free(reply)
        let width = Int(screen.pointee.width_in_pixels), height = Int(screen.pointee.height_in_pixels)
        let bytes = width * height * 4
        // A SysV segment, as MIT-SHM requires; removed at once so it cannot outlive us.
        let shmId = shmget(IPC_PRIVATE, bytes, IPC_CREAT | 0o600)
        guard shmId >= 0, let address = shmat(shmId, nil, 0), address != UnsafeMutableRawPointer(bitPattern: -1) else {
            xcb_disconnect(connection)
            throw SourceError.display("shmget/shmat of \(bytes) bytes failed: \(Errno.current)")
        }
        let segment = xcb_generate_id(connection)
        let attach = xcb_shm_attach_checked(connection, segment, UInt32(shmId), 0)
        if let error = xcb_request_check(connection, attach) {
            free(error)
            shmdt(address)
            shmctl(shmId, IPC_RMID, nil)
            xcb_disconnect(connection)
            throw SourceError.display("the X server could not attach our shared memory")
        }
        shmctl(shmId, IPC_RMID, nil)
        self.connection = connection
        self.root = screen.pointee.root
        self.width = width
        self.height = height
        self.segment = segment
        self.shmId = shmId
        self.shmAddress = address
        self.buffer = try PixelBuffer(width: width, height: height, format: .bgra, rowAlignment: 4)
        // One event each time the damage goes from empty to not (REPORT_LEVEL_NON_EMPTY): a capture empties it.
        if let damageExtension = cxcb_damage_extension(connection), damageExtension.pointee.present != 0,
            let version = xcb_damage_query_version_reply(connection, xcb_damage_query_version(connection, 1, 1), nil)
        {
            free(version)
            damage = xcb_generate_id(connection)
            xcb_damage_create(connection, damage, root, UInt8(XCB_DAMAGE_REPORT_LEVEL_NON_EMPTY.rawValue))
            damageNotify = damageExtension.pointee.first_event &+ UInt8(XCB_DAMAGE_NOTIFY)
            if let fixes = cxcb_xfixes_extension(connection), fixes.pointee.present != 0,
                let version = xcb_xfixes_query_version_reply(connection, xcb_xfixes_query_version(connection, 2, 0), nil)
            {
                free(version)
                parts = xcb_generate_id(connection)
                xcb_xfixes_create_region(connection, parts, 0, nil)
            }
        }
    }

    deinit {
        if damage != 0 { xcb_damage_destroy(connection, damage) }
        if parts != 0 { xcb_xfixes_destroy_region(connection, parts) }
        xcb_shm_detach(connection, segment)
        xcb_flush(connection)
        shmdt(shmAddress)
        xcb_disconnect(connection)
    }

    public func nextFrame(number: UInt64) throws -> SourceFrame? {
        var changed = Damage.unknown
        if damage != 0 {
            var drawn = !captured
            while let event = xcb_poll_for_event(connection) {
                // An event carries the number of the last request of ours the server had done: one from
                // before the last emptying is about drawing that capture already holds.
                if event.pointee.response_type & 0x7F == damageNotify, Int16(bitPattern: event.pointee.sequence &- emptied) >= 0 { drawn = true }
                free(event)
            }
            guard xcb_connection_has_error(connection) == 0 else { throw SourceError.display("the display closed") }
            if !drawn { return SourceFrame(buffer, damage: .none) }
            // Emptied before the capture: whatever is drawn during it is reported for the next frame.
            emptied = UInt16(truncatingIfNeeded: xcb_damage_subtract(connection, damage, 0, parts).sequence)
            if parts != 0, captured {
                let region = try drawnRegion()
                // Nothing was drawn elsewhere since the last capture, whether this one takes the screen whole or not.
                changed = .within(region)
                var area = 0
                for i in 0..<region.count { area += region[i].width * region[i].height }
                if area * 2 < width * height {
                    // Drawn only there (nothing at all: what was drawn, the last capture already holds).
                    for i in 0..<region.count { try capture(region[i]) }
                    return SourceFrame(buffer, damage: changed)
                }
            }
        }
        try capture(PixelRect(x: 0, y: 0, width: width, height: height))
        captured = true
        return SourceFrame(buffer, damage: changed)
    }

    /// Where the damage emptied into ``parts`` lay, to even edges, on the screen.
    private func drawnRegion() throws -> PixelRegion {
        var error: UnsafeMutablePointer<xcb_generic_error_t>?
        guard let reply = xcb_xfixes_fetch_region_reply(connection, xcb_xfixes_fetch_region(connection, parts), &error) else {
            free(error)
            throw SourceError.display("FetchRegion failed (display closed?)")
        }
        defer { free(reply) }
        var region = PixelRegion()
        let rectangles = xcb_xfixes_fetch_region_rectangles(reply)!
        for i in 0..<Int(xcb_xfixes_fetch_region_rectangles_length(reply)) {
            let r = rectangles[i]
            region.add(PixelRect(x: Int(r.x), y: Int(r.y), width: Int(r.width), height: Int(r.height)).evenEdges(width: width, height: height))
        }
        return region
    }

    /// Captures `rect` of the screen into the sample buffer, forcing alpha opaque (X leaves it undefined).
    private func capture(_ rect: PixelRect) throws {
        guard !rect.isEmpty else { return }
        let cookie = xcb_shm_get_image(connection, root, Int16(rect.x), Int16(rect.y), UInt16(rect.width), UInt16(rect.height), ~0,
                                       UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), segment, 0)
        var error: UnsafeMutablePointer<xcb_generic_error_t>?
        guard let reply = xcb_shm_get_image_reply(connection, cookie, &error) else {
            free(error)
            throw SourceError.display("GetImage failed (display closed?)")
        }
        free(reply)
        buffer.copyOpaque(from: shmAddress, stride: rect.width * 4, into: rect)
    }
}

