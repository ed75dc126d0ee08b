internal import CPipeWireStream
import FrameRelaySystem
import FrameRelayFrames
import FrameRelayRing

/// Captures a Wayland desktop from a PipeWire screen cast: the node the
/// desktop's portal (``PortalScreenCast``) or a Mutter ScreenCast session
/// (``MutterScreenCast``) names, or one another tool already opened (`--pipewire-node`). PipeWire hands over the
/// compositor's pictures (BGRx or BGRA in shared memory; a node such as a
/// camera's may send I420 or NV12) with its damage
/// (`SPA_META_VideoDamage`): the rectangles it says changed since the
/// picture before become the frame's ``Damage/within(_:)``, and only they
/// are converted into the sample buffer; a frame with no new picture is the
/// picture in hand with ``Damage/none``. A cursor sent beside the picture
/// (``ScreenCastCursor/metadata``: `SPA_META_Cursor`) is drawn over it
/// here, and where it was and where it is are the frame's damage, so a
/// pointer moving over a still desktop changes only its own rectangles. The compositor casts only when
/// something was drawn, so a still desktop costs nothing.
///
/// Memory: when the producer sends the format converted to, upright, each
/// picture is drawn straight into the ring's free slot (``nextDrawing(number:)``):
/// only what changed since the picture that slot holds (``DamageHistory``),
/// converted from PipeWire's buffer a band of rows at a time with only that
/// band mapped. So the producer keeps no picture of its own and none of the
/// compositor's (22 MB each at 2732×2048) stays resident; the picture the
/// host reads is the one converted from the compositor's, with no copy between.
public final class PipeWireCapture: DrawingFrameSource {
    public private(set) var width: Int
    public private(set) var height: Int
    /// Whether the producer draws the pictures straight into the ring's
    /// slots (``nextDrawing(number:)``), keeping none of its own.
    public let drawsInPlace: Bool
    private let stream: OpaquePointer
    /// The format pictures are converted to (I420, NV12 or BGRA).
    private let format: PixelFormat
    /// The pictures taken so far (the newest is `history.newest`; 0: none
    /// yet), and what each of the last few changed.
    private var history = DamageHistory()
    /// The newest picture's layout in PipeWire's buffer: BGRx/BGRA (`.bgra`),
    /// I420 or NV12, and each plane's row stride.
    private var heldFormat = PixelFormat.bgra
    private var heldStrides = (0, 0, 0)
    /// Where fr_pw_stream_rows puts each plane's first row.
    private let rowPlanes: UnsafeMutablePointer<UnsafePointer<UInt8>?> = {
        let planes = UnsafeMutablePointer<UnsafePointer<UInt8>?>.allocate(capacity: 3)
        planes.initialize(repeating: nil, count: 3)
        return planes
    }()
    /// Whether a frame was given out yet (the first says all of it is new).
    private var announced = false
    /// The picture kept for ``nextFrame(number:)``, and which one it holds.
    private var buffer: PixelBuffer?
    private var bufferHolds: UInt64?
    /// Which picture each ring slot holds, at which size (``nextDrawing(number:)``).
    private var slotHolds: [RingSlot: (picture: UInt64, size: (Int, Int))] = [:]
    /// The cursor sent beside the picture: where its image falls in the
    /// picture (partly outside it, maybe), nil when there is none to draw.
    private var cursor: PixelRect?
    /// The cursor's area composed: the picture under it, then the cursor over it.
    private lazy var cursorScratch = try? PixelBuffer(width: Int(FR_PW_MAX_CURSOR) + 2, height: Int(FR_PW_MAX_CURSOR) + 2, format: .bgra)
    /// A black BGRx row, for the empty picture before the first.
    private var black: UnsafeMutableRawPointer?
    private var blackBytes = 0
    /// What the picture taken while starting changed, for the first frame.
    private var first: (damage: Damage, capturedAt: UInt64?)?
    /// The desktop's cast the node belongs to (nil: a node given).
    private let cast: ScreenCastSession?
    /// Why the cast ended, once it did (the source then has no more frames).
    public private(set) var ended: String?
    /// When PipeWire handed over the picture of the frame given out last
    /// (monotonic ns), nil when that frame brought no new picture: the
    /// producer's own part of capture → published starts here.
    public private(set) var delivered: UInt64?

    /// Rows mapped and converted at a time: 350 KB of a 2732-wide picture.
    private static let band = 32

    /// Casts a monitor or a window through `api` (`node` nil; the portal
    /// keeps its restore token in `token`) or reads PipeWire node `node`,
    /// converting pictures to `format` (I420, NV12 or BGRA), drawn into the
    /// ring's slots when `inPlace`, else into a picture of its own.
    public init(node: UInt32? = nil, api: ScreenCastAPI = .auto, surface: ScreenCastSurface = .monitor, cursor: ScreenCastCursor = .embedded,
                token: RestoreToken? = nil, format: PixelFormat = .bgra, inPlace: Bool = false, timeout: Double = 5) throws {
        precondition([.i420, .nv12, .bgra].contains(format), "a screen cast's picture is I420, NV12 or BGRA")
        self.format = format
        drawsInPlace = inPlace
        cast = node == nil ? try api.start(surface: surface, cursor: cursor, token: token) : nil
        let id = node ?? cast!.node
        var text = [CChar](repeating: 0, count: 256)
        guard let stream = fr_pw_stream_open(cast?.takeRemote() ?? -1, id, &text, text.count) else { throw SourceError.screenCast(Self.sentence(text)) }
        self.stream = stream
        var width: Int32 = 0, height: Int32 = 0
        guard fr_pw_stream_wait_format(stream, Int32(timeout * 1000), &width, &height) == 1 else {
            let state = fr_pw_stream_state(stream, &text, text.count)
            fr_pw_stream_close(stream)
            throw SourceError.screenCast(state == FR_PW_FAILED || state == FR_PW_ENDED ? Self.sentence(text)
                                         : "PipeWire node \(id) offered no video format we take (BGRx, BGRA, I420 or NV12) within \(Int(timeout)) s")
        }
        self.width = Int(width)
        self.height = Int(height)
        // The first picture says the size (a window is a crop of its stream): the compositor sends one as the cast starts.
        if fr_pw_stream_wait_picture(stream, 1000) == 1 { first = take() }
    }

    deinit {
        fr_pw_stream_close(stream)
        black?.deallocate()
        rowPlanes.deallocate()
    }

    /// Whether the compositor paused the cast (a locked screen, a
    /// suspended node): the broadcast pauses with it, as ReplayKit pauses
    /// an extension, and resumes when pictures flow again.
    public var isPaused: Bool { fr_pw_stream_state(stream, nil, 0) == FR_PW_PAUSED }

    /// Which desktop API started the cast ("portal", "mutter"), or nil for a node given.
    public var api: String? { cast.map { $0 is PortalScreenCast ? "portal" : "mutter" } }

    /// The C side's NUL-terminated sentence.
    private static func sentence(_ text: [CChar]) -> String {
        String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public func waitForPicture(from start: UInt64, until deadline: UInt64) {
        MonotonicClock.sleep(until: start)
        let now = MonotonicClock.now()
        guard deadline > now else { return }
        _ = fr_pw_stream_wait_picture(stream, Int32(min(1000, (deadline - now + 999_999) / 1_000_000)))
    }

    public func nextFrame(number: UInt64) throws -> SourceFrame? {
        guard let change = try advance() else { return nil }
        if buffer.map({ $0.width != width || $0.height != height }) ?? true {
            buffer = try PixelBuffer(width: width, height: height, format: format)
            bufferHolds = nil
        }
        let picture = buffer!
        guard bufferHolds == history.newest || update(picture, holding: bufferHolds) else {
            // Only partly converted: what is in hand, unknown in part.
            bufferHolds = nil
            return SourceFrame(picture, damage: .unknown)
        }
        bufferHolds = history.newest
        return SourceFrame(picture, damage: change.damage, capturedAt: change.capturedAt)
    }

    public func nextDrawing(number: UInt64) throws -> SourceDrawing? {
        guard let change = try advance() else { return nil }
        return SourceDrawing(width: width, height: height, format: format, damage: change.damage, capturedAt: change.capturedAt) { target, slot in
            // The slot holds the picture last drawn there (when it is of this size): only what changed since is drawn.
            let held = self.slotHolds[slot].flatMap { $0.size == (self.width, self.height) ? $0.picture : nil }
            let drawn = self.update(target, holding: held)
            self.slotHolds[slot] = drawn ? (self.history.newest, (self.width, self.height)) : nil
            return drawn
        }
    }

    /// The cast's state, then the newest picture PipeWire handed over (its
    /// size and what changed, kept in ``history``); nil when the cast ended.
    private func advance() throws -> (damage: Damage, capturedAt: UInt64?)? {
        guard ended == nil else { return nil }
        // The state alone each frame; its sentence only when it ended.
        let state = fr_pw_stream_state(stream, nil, 0)
        if state == FR_PW_FAILED || state == FR_PW_ENDED {
            var text = [CChar](repeating: 0, count: 256)
            _ = fr_pw_stream_state(stream, &text, text.count)
            // A node that went with its session: the desktop's word for why, when it comes with it.
            if let cast, (try? cast.poll(waiting: 0.25)) == true {
                ended = cast.closed
                return nil
            }
            if state == FR_PW_FAILED { throw SourceError.screenCast(Self.sentence(text)) }
            ended = Self.sentence(text)
            return nil
        }
        if let cast, try cast.poll(waiting: 0) {
            ended = cast.closed
            return nil
        }
        if let change = first {
            first = nil
            return change
        }
        return take()
    }

    /// Takes the newest picture PipeWire handed over, if one came: its size,
    /// and what changed since the picture before.
    private func take() -> (damage: Damage, capturedAt: UInt64?) {
        var frame = fr_pw_frame()
        guard fr_pw_stream_take(stream, &frame) == 1 else {
            // Nothing drawn since the last picture (or none yet: the first frame is the empty picture, whole).
            defer { announced = true }
            delivered = nil
            return (announced ? .none : .unknown, nil)
        }
        delivered = frame.delivered > 0 ? UInt64(frame.delivered) : nil
        announced = true
        let cursorBefore = cursor
        cursor = frame.cursor.width > 0 ? PixelRect(x: Int(frame.cursor.x), y: Int(frame.cursor.y), width: Int(frame.cursor.width),
                                                    height: Int(frame.cursor.height)) : nil
        heldFormat = frame.format == FR_PW_FORMAT_I420 ? .i420 : frame.format == FR_PW_FORMAT_NV12 ? .nv12 : .bgra
        heldStrides = (Int(frame.strides.0), Int(frame.strides.1), Int(frame.strides.2))
        var region: PixelRegion?
        if Int(frame.width) != width || Int(frame.height) != height {
            // A new size (a monitor changed mode, a window was resized): a new picture, all of it.
            width = Int(frame.width)
            height = Int(frame.height)
            slotHolds.removeAll()
            bufferHolds = nil
        } else if history.newest > 0, frame.damage_count >= 0 {
            var changed = PixelRegion()
            withUnsafeBytes(of: frame.damage) { raw in
                let rects = raw.bindMemory(to: fr_pw_rect.self)
                for i in 0..<Int(frame.damage_count) {
                    let r = rects[i]
                    // Clipped to the picture, to even edges (the formats the host converts to are 2×2 subsampled).
                    let x = max(0, Int(r.x)), y = max(0, Int(r.y))
                    let rect = PixelRect(x: x, y: y, width: min(width, Int(r.x) + Int(r.width)) - x, height: min(height, Int(r.y) + Int(r.height)) - y)
                    guard !rect.isEmpty else { continue }
                    changed.add(rect.evenEdges(width: width, height: height))
                }
            }
            if frame.cursor_changed != 0 {
                // The pointer moved or changed: where it was and where it is are new.
                if let even = cursorBefore?.evenEdges(width: width, height: height), !even.isEmpty { changed.add(even) }
                if let even = cursor?.evenEdges(width: width, height: height), !even.isEmpty { changed.add(even) }
            }
            region = changed
        }
        history.add(region)
        // The compositor's time for the picture, where it is one of this clock's last second.
        let now = MonotonicClock.now()
        let made = frame.pts > 0 && UInt64(frame.pts) <= now && now - UInt64(frame.pts) < 1_000_000_000 ? UInt64(frame.pts) : nil
        return (region.map(Damage.within) ?? .unknown, made)
    }

    /// Brings `target` (a picture of the current size) from picture
    /// `holding` (nil: unknown) up to the newest: the rectangles that changed
    /// since, or all of it, converted from PipeWire's buffer. False when the
    /// buffer could not be mapped (the stream renegotiated under the take).
    private func update(_ target: PixelBuffer, holding: UInt64?) -> Bool {
        guard history.newest > 0 else {
            // No picture yet: the empty one, black.
            PixelConversion.convert(bgrx: blackRow(width), stride: 0, into: target, at: PixelRect(x: 0, y: 0, width: width, height: height))
            return true
        }
        let needed = history.changed(since: holding)
        if let needed {
            for i in 0..<needed.count where !convert(needed[i], into: target) { return false }
        } else if !convert(PixelRect(x: 0, y: 0, width: width, height: height), into: target) {
            return false
        }
        // The pointer over what was converted under it (it is already there where nothing under it was).
        guard let cursor, needed.map({ region in (0..<region.count).contains { !region[$0].intersection(cursor).isEmpty } }) ?? true else { return true }
        return drawCursor(cursor, into: target)
    }

    /// Draws the cursor over `target`: its area (even edges, within the
    /// picture) converted from the picture under it into a BGRA scratch,
    /// the cursor's image blended over that, and the area converted into
    /// `target`. False when the picture's rows could not be mapped.
    private func drawCursor(_ cursor: PixelRect, into target: PixelBuffer) -> Bool {
        let area = cursor.evenEdges(width: width, height: height)
        guard !area.isEmpty, let scratch = cursorScratch, let image = fr_pw_stream_cursor_image(stream) else { return true }
        guard convert(area, into: scratch, at: (0, 0)) else { return false }
        let shown = cursor.intersection(area)
        PixelConversion.blend(premultiplied: UnsafeRawPointer(image) + ((shown.y - cursor.y) * cursor.width + shown.x - cursor.x) * 4,
                              stride: cursor.width * 4, over: scratch,
                              at: PixelRect(x: shown.x - area.x, y: shown.y - area.y, width: shown.width, height: shown.height))
        PixelConversion.convert(bgrx: scratch.plane(0), stride: scratch.stride(0), into: target, at: area)
        return true
    }

    /// Converts `rect` (even edges) of the picture taken into `target` (at
    /// `origin` there, else where it is in the picture), a band of rows at
    /// a time; false when its rows could not be mapped.
    private func convert(_ rect: PixelRect, into target: PixelBuffer, at origin: (x: Int, y: Int)? = nil) -> Bool {
        let origin = origin ?? (rect.x, rect.y)
        // Bytes before the rectangle's first column in each plane.
        let columns = heldFormat == .bgra ? (rect.x * 4, 0, 0) : heldFormat == .i420 ? (rect.x, rect.x / 2, rect.x / 2) : (rect.x, rect.x, 0)
        var y = rect.y
        while y < rect.y + rect.height {
            let rows = min(Self.band, rect.y + rect.height - y)
            guard fr_pw_stream_rows(stream, Int32(y), Int32(rows), rowPlanes) == 1, let luma = rowPlanes[0] else { return false }
            let planes = (UnsafeRawPointer(luma) + columns.0, rowPlanes[1].map { UnsafeRawPointer($0) + columns.1 },
                          rowPlanes[2].map { UnsafeRawPointer($0) + columns.2 })
            PixelConversion.convert(heldFormat, planes: planes, strides: heldStrides, into: target,
                                    at: PixelRect(x: origin.x, y: origin.y + y - rect.y, width: rect.width, height: rows))
            // A node that shrank its buffer under the read left zeros there, not its picture (and the stream failed).
            guard fr_pw_stream_release_rows(stream) == 1 else { return false }
            y += rows
        }
        return true
    }

    /// A black BGRx row at least `width` pixels long (the empty picture's every row).
    private func blackRow(_ width: Int) -> UnsafeRawPointer {
        if blackBytes < width * 4 {
            black?.deallocate()
            blackBytes = width * 4
            black = UnsafeMutableRawPointer.allocate(byteCount: blackBytes, alignment: 16)
            black!.initializeMemory(as: UInt8.self, repeating: 0, count: blackBytes)
        }
        return UnsafeRawPointer(black!)
    }
}

/// Which desktop API starts a screen cast.
public enum ScreenCastAPI: String, CaseIterable, Sendable {
    /// Mutter's where GNOME's compositor is on the bus (no dialog), else the portal.
    case auto
    /// xdg-desktop-portal: any desktop; its chooser asks once.
    case portal
    /// GNOME's own `org.gnome.Mutter.ScreenCast`.
    case mutter

    func start(surface: ScreenCastSurface, cursor: ScreenCastCursor, token: RestoreToken?) throws -> ScreenCastSession {
        switch self {
        case .portal: return try PortalScreenCast(surface: surface, cursor: cursor, token: token)
        case .mutter: return try MutterScreenCast(surface: surface, cursor: cursor)
        case .auto:
            let onGNOME = try SessionBus().hasOwner(MutterScreenCast.service)
            return try (onGNOME ? ScreenCastAPI.mutter : .portal).start(surface: surface, cursor: cursor, token: token)
        }
    }
}
