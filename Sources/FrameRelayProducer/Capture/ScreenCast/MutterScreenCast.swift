/// A screen cast from GNOME's compositor through Mutter's own D-Bus API,
/// `org.gnome.Mutter.ScreenCast` (what gnome-remote-desktop uses, and the
/// GNOME portal behind its dialog): CreateSession, RecordMonitor, Start,
/// then the stream's PipeWireStreamAdded signal names the PipeWire node.
/// No dialog: any client of the user's session bus may cast.
final class MutterScreenCast: ScreenCastSession {
    static let service = "org.gnome.Mutter.ScreenCast"

    /// The PipeWire node the monitor is cast to.
    let node: UInt32
    private let bus: SessionBus
    private let session: String
    /// Why the session ended, once Mutter closed it.
    private(set) var closed: String?

    /// Casts monitor `connector` (nil: the primary one), or the focused
    /// window, with the cursor as `cursor` says.
    init(surface: ScreenCastSurface = .monitor, connector: String? = nil, cursor: ScreenCastCursor) throws(SourceError) {
        bus = try SessionBus()
        do {
            session = try bus.call(Self.service, "/org/gnome/Mutter/ScreenCast", Self.service, "CreateSession", [.options([])]).readString("o")
        } catch .dbus(let name, _, _) where name == "org.freedesktop.DBus.Error.ServiceUnknown" {
            throw .screenCast("no GNOME Mutter on the session bus (\(Self.service)): this is not a GNOME session")
        }
        let properties = SessionBus.Value.options([("cursor-mode", .uint32(cursor.mutterMode))])
        let stream: String
        do {
            stream = try surface == .monitor
                ? bus.call(Self.service, session, Self.service + ".Session", "RecordMonitor", [.string(connector ?? ""), properties]).readString("o")
                : bus.call(Self.service, session, Self.service + ".Session", "RecordWindow", [properties]).readString("o")
        } catch .dbus(_, let call, let message) where surface == .window {
            throw .screenCast("Mutter cannot cast a window (\(call): \(message)): is one focused?")
        }
        // Mutter's signals only: another client of the bus could send ones naming its own node, or a close.
        try bus.watch(sender: Self.service, path: stream, interface: Self.service + ".Stream", member: "PipeWireStreamAdded")
        try bus.watch(sender: Self.service, path: session, interface: Self.service + ".Session", member: "Closed")
        try bus.call(Self.service, session, Self.service + ".Session", "Start")
        guard let added = try bus.waitForSignal(path: stream, member: "PipeWireStreamAdded", timeout: 5) else {
            throw .screenCast("Mutter started the cast but named no PipeWire stream within 5 s: is pipewire running in this session?")
        }
        node = try added.readUInt32()
    }

    deinit {
        if closed == nil { _ = try? bus.call(Self.service, session, Self.service + ".Session", "Stop", timeout: 1) }
    }

    /// Mutter's node is read over the user's own PipeWire connection.
    func takeRemote() -> Int32 { -1 }

    /// Reads what the bus brought; true once Mutter closed the session.
    func poll(waiting timeout: Double = 0) throws(SourceError) -> Bool {
        guard closed == nil else { return true }
        try bus.process(timeout: timeout)
        if bus.takeSignal(path: session, member: "Closed") != nil { closed = "Mutter closed the screen cast session" }
        return closed != nil
    }
}

/// How a screen cast shows the pointer.
public enum ScreenCastCursor: String, CaseIterable, Sendable {
    /// Not at all.
    case hidden
    /// Drawn into the picture by the compositor.
    case embedded
    /// Sent beside the picture (SPA_META_Cursor) and drawn by the producer:
    /// a pointer that moves changes only its own rectangles, with no
    /// picture from the compositor.
    case metadata

    /// Mutter's `cursor-mode` (0 hidden, 1 embedded, 2 metadata).
    var mutterMode: UInt32 {
        switch self {
        case .hidden: 0
        case .embedded: 1
        case .metadata: 2
        }
    }
    /// The portal's `cursor_mode` bit (1 hidden, 2 embedded, 4 metadata).
    var portalMode: UInt32 {
        switch self {
        case .hidden: 1
        case .embedded: 2
        case .metadata: 4
        }
    }
}

/// A screen cast a desktop started for us (Mutter's, or the portal's).
protocol ScreenCastSession: AnyObject {
    /// The PipeWire node the cast is sent to.
    var node: UInt32 { get }
    /// Why the cast ended, once it did.
    var closed: String? { get }
    /// The PipeWire connection to read the node over (the portal's sees only
    /// the cast), or -1 for the user's own; PipeWire owns it once taken.
    func takeRemote() -> Int32
    /// Reads what the bus brought (waiting up to `timeout` seconds for
    /// something); true once the desktop closed the cast.
    func poll(waiting timeout: Double) throws(SourceError) -> Bool
}
