internal import CPipeWireStream
import FrameRelaySystem
import FrameRelayFrames

/// Captures a Wayland desktop from a PipeWire screen cast: the node the
/// desktop's portal (``PortalScreenCast``) or a Mutter ScreenCast session
/// (``MutterScreenCast``) names, or one another tool already opened (`--pipewire-node`). PipeWire hands over the
/// compositor's pictures (BGRx or BGRA in shared memory) with its damage
/// (`SPA_META_VideoDamage`): the rectangles it says changed since the
/// picture before become the frame's ``Damage/within(_:)``, and only they
/// are converted into the sample buffer; a frame with no new picture is the
/// picture in hand with ``Damage/none``. The compositor casts only when
/// something was drawn, so a still desktop costs nothing.
///
/// Memory: the sample buffer is kept in the format the producer sends
/// (NV12 or I420 when nothing else is to be done), converted straight from
/// PipeWire's buffer a band of rows at a time, and only that band is mapped:
/// none of the compositor's pictures (22 MB each at 2732×2048) stays resident here.
public final class PipeWireCapture: FrameSource {
    public private(set) var width: Int
    public private(set) var height: Int
    private let stream: OpaquePointer
    /// The picture in the format it is kept in (I420, NV12 or BGRA).
    private var buffer: PixelBuffer
    private let format: PixelFormat
    private var captured = false
    /// The picture taken while starting, for the first frame.
    private var first: SourceFrame?
    /// The desktop's cast the node belongs to (nil: a node given).
    private let cast: ScreenCastSession?
    /// Why the cast ended, once it did (the source then has no more frames).
    public private(set) var ended: String?

    /// Rows mapped and converted at a time: 350 KB of a 2732-wide picture.
    private static let band = 32

    /// Casts a monitor or a window through `api` (`node` nil; the portal
    /// keeps its restore token in `token`) or reads PipeWire node `node`,
    /// keeping the picture in `format` (I420, NV12 or BGRA).
    public init(node: UInt32? = nil, api: ScreenCastAPI = .auto, surface: ScreenCastSurface = .monitor, cursor: ScreenCastCursor = .embedded,
                token: RestoreToken? = nil, format: PixelFormat = .bgra, timeout: Double = 5) throws {
        precondition([.i420, .nv12, .bgra].contains(format), "a screen cast's picture is I420, NV12 or BGRA")
        self.format = format
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
                                         : "PipeWire node \(id) offered no video format we take (BGRx or BGRA) within \(Int(timeout)) s")
        }
        self.width = Int(width)
        self.height = Int(height)
        buffer = try PixelBuffer(width: Int(width), height: Int(height), format: format)
        // The first picture says the size (a window is a crop of its stream): the compositor sends one as the cast starts.
        if fr_pw_stream_wait_picture(stream, 1000) == 1 { first = try take() }
    }

    deinit { fr_pw_stream_close(stream) }

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
        if let picture = first {
            first = nil
            return picture
        }
        return try take()
    }

    /// The newest picture PipeWire handed over, converted where it changed;
    /// the picture in hand when none came.
    private func take() throws -> SourceFrame {
        var frame = fr_pw_frame()
        guard fr_pw_stream_take(stream, &frame) == 1 else {
            // Nothing drawn since the last picture (or none yet: the first frame is the empty picture, whole).
            defer { captured = true }
            return SourceFrame(buffer, damage: captured ? .none : .unknown)
        }
        var whole = !captured || frame.damage_count < 0
        if Int(frame.width) != width || Int(frame.height) != height {
            // A new size (a monitor changed mode, a window was resized): a new picture, whole.
            width = Int(frame.width)
            height = Int(frame.height)
            buffer = try PixelBuffer(width: width, height: height, format: format)
            whole = true
        }
        captured = true
        // The compositor's time for the picture, where it is one of this clock's last second.
        let now = MonotonicClock.now()
        let made = frame.pts > 0 && UInt64(frame.pts) <= now && now - UInt64(frame.pts) < 1_000_000_000 ? UInt64(frame.pts) : nil
        if whole {
            guard convert(PixelRect(x: 0, y: 0, width: width, height: height), stride: Int(frame.stride)) else { return lost() }
            return SourceFrame(buffer, damage: .unknown, capturedAt: made)
        }
        var region = PixelRegion()
        withUnsafeBytes(of: frame.damage) { raw in
            let rects = raw.bindMemory(to: fr_pw_rect.self)
            for i in 0..<Int(frame.damage_count) {
                let r = rects[i]
                // Clipped to the picture, to even edges (the formats the host converts to are 2×2 subsampled).
                let x = max(0, Int(r.x)), y = max(0, Int(r.y))
                let rect = PixelRect(x: x, y: y, width: min(width, Int(r.x) + Int(r.width)) - x, height: min(height, Int(r.y) + Int(r.height)) - y)
                guard !rect.isEmpty else { continue }
                region.add(rect.evenEdges(width: width, height: height))
            }
        }
        for i in 0..<region.count {
            guard convert(region[i], stride: Int(frame.stride)) else { return lost() }
        }
        return SourceFrame(buffer, damage: .within(region), capturedAt: made)
    }

    /// Converts `rect` (even edges) of the picture taken into the sample
    /// buffer, a band of rows at a time; false when its rows could not be
    /// mapped (the stream renegotiated under the take).
    private func convert(_ rect: PixelRect, stride: Int) -> Bool {
        var y = rect.y
        while y < rect.y + rect.height {
            let rows = min(Self.band, rect.y + rect.height - y)
            guard let row = fr_pw_stream_rows(stream, Int32(y), Int32(rows)) else { return false }
            PixelConversion.convert(bgrx: UnsafeRawPointer(row) + rect.x * 4, stride: stride, into: buffer,
                                    at: PixelRect(x: rect.x, y: y, width: rect.width, height: rows))
            y += rows
        }
        return true
    }

    /// A picture only partly converted: what is in hand, unknown in part; the next one is taken whole.
    private func lost() -> SourceFrame {
        captured = false
        return SourceFrame(buffer, damage: .unknown)
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
