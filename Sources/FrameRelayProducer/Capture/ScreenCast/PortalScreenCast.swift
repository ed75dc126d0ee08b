@preconcurrency import Glibc
import FoundationEssentials

/// A screen cast through xdg-desktop-portal, `org.freedesktop.portal.ScreenCast`,
/// as OBS, the browsers and GStreamer's pipewiresrc start one on any Wayland
/// desktop (GNOME, KDE, wlroots): CreateSession; SelectSources (a monitor or
/// a window, the cursor, kept until revoked); Start, where the desktop shows
/// its chooser, once: the restore token it returns is kept
/// (``RestoreToken``) and passed the next time, so the desktop casts the
/// same choice without asking; then OpenPipeWireRemote, a PipeWire
/// connection that sees only the cast. Every step answers with its Request
/// object's Response signal, watched before the call is made.
final class PortalScreenCast: ScreenCastSession {
    static let service = "org.freedesktop.portal.Desktop"
    private static let path = "/org/freedesktop/portal/desktop"
    private static let interface = "org.freedesktop.portal.ScreenCast"

    private(set) var node: UInt32 = 0
    private(set) var closed: String?
    private var remote: Int32
    private let bus: SessionBus
    private var session = ""
    /// This connection's unique name as the portal spells it in request paths (":1.42" → "1_42").
    private let sender: String
    private var requests = 0

    /// Asks the desktop to cast a `surface` with the cursor as `cursor` says,
    /// passing the restore token kept in `token` (nil: none kept) and keeping
    /// the new one; waits up to `chooser` seconds for the user to choose.
    init(surface: ScreenCastSurface, cursor: ScreenCastCursor, token: RestoreToken?, chooser: Double = 300) throws(SourceError) {
        bus = try SessionBus()
        sender = String(bus.uniqueName.dropFirst().map { $0 == "." ? "_" : $0 })
        remote = -1
        let created: [String: SessionBus.Result]
        do {
            created = try request("CreateSession", [], [("session_handle_token", .string("framerelay\(getpid())"))])
        } catch .dbus(let name, _, _) where name == "org.freedesktop.DBus.Error.ServiceUnknown" {
            throw .screenCast("no xdg-desktop-portal on the session bus (\(Self.service)): install xdg-desktop-portal and the desktop's backend, or use --cast mutter on GNOME")
        } catch .dbus(let name, _, _) where name.hasSuffix("UnknownMethod") || name.hasSuffix("UnknownInterface") || name.hasSuffix("UnknownObject") {
            throw .screenCast("the desktop portal offers no ScreenCast: no backend for it is installed (xdg-desktop-portal-gnome, -kde or -wlr)")
        }
        guard case .string(let handle)? = created["session_handle"] else { throw .screenCast("the portal made a session without naming it") }
        session = handle
        // The portal's own signal only: another client of the bus could send a forged close.
        try bus.watch(sender: Self.service, path: session, interface: "org.freedesktop.portal.Session", member: "Closed")
        let options: [(String, SessionBus.Value)] = [
            ("types", .uint32(surface.portalType)), ("multiple", .bool(false)), ("cursor_mode", .uint32(cursor.portalMode)),
            ("persist_mode", .uint32(2)),  // until the user revokes it
        ]
        if let kept = token?.read() {
            do {
                _ = try request("SelectSources", [.objectPath(session)], options + [("restore_token", .string(kept))])
            } catch .dbus(let name, _, _) where name.hasSuffix("InvalidArgument") {
                // A token the portal refuses (a damaged file): forgotten, and the chooser asks again.
                token?.forget()
                _ = try request("SelectSources", [.objectPath(session)], options)
            }
        } else {
            _ = try request("SelectSources", [.objectPath(session)], options)
        }
        let started = try request("Start", [.objectPath(session), .string("")], [], timeout: chooser)
        guard case .streams(let nodes)? = started["streams"], let first = nodes.first else {
            throw .screenCast("the portal started a cast with no stream in it")
        }
        node = first
        if case .string(let next)? = started["restore_token"] { token?.keep(next) }
        remote = try bus.call(Self.service, Self.path, Self.interface, "OpenPipeWireRemote", [.objectPath(session), .options([])])
            .readFileDescriptor()
    }

    deinit {
        if remote >= 0 { close(remote) }
        if !session.isEmpty, closed == nil {
            _ = try? bus.call(Self.service, session, "org.freedesktop.portal.Session", "Close", timeout: 1)
        }
    }

    func takeRemote() -> Int32 {
        defer { remote = -1 }
        return remote
    }

    func poll(waiting timeout: Double = 0) throws(SourceError) -> Bool {
        guard closed == nil else { return true }
        try bus.process(timeout: timeout)
        if bus.takeSignal(path: session, member: "Closed") != nil { closed = "the desktop closed the screen cast session" }
        return closed != nil
    }

    /// Calls `method` with a fresh handle token and waits for its Response:
    /// the results when the user (or the portal) said yes.
    private func request(_ method: String, _ arguments: [SessionBus.Value], _ options: [(String, SessionBus.Value)],
                         timeout: Double = 10) throws(SourceError) -> [String: SessionBus.Result] {
        requests += 1
        let token = "framerelay\(getpid())_\(requests)"
        let expected = "\(Self.path)/request/\(sender)/\(token)"
        try bus.watch(sender: Self.service, path: expected, interface: "org.freedesktop.portal.Request", member: "Response")
        let handle = try bus.call(Self.service, Self.path, Self.interface, method,
                                  arguments + [.options([("handle_token", .string(token))] + options)]).readString("o")
        // The portal may have been started by this very call: its name has an owner only now.
        bus.trust(Self.service)
        // A portal older than 0.9 names the request its own way: its Response comes from there.
        if handle != expected {
            try bus.watch(sender: Self.service, path: handle, interface: "org.freedesktop.portal.Request", member: "Response")
        }
        guard let response = try bus.waitForSignal(path: handle, member: "Response", timeout: timeout) else {
            throw .screenCast(method == "Start" ? "no choice was made in the desktop's screen-cast chooser within \(Int(timeout)) s"
                                                : "the portal did not answer \(method) within \(Int(timeout)) s")
        }
        let code = try response.readUInt32()
        let results = try response.readResults()
        switch code {
        case 0: return results
        case 1: throw .screenCast(method == "Start" ? "the screen cast was cancelled in the desktop's chooser" : "the portal's \(method) was cancelled")
        default: throw .screenCast("the portal ended \(method) without a cast (response \(code))")
        }
    }
}

/// Where a portal's restore token is kept between broadcasts: the chooser
/// appears once, and later casts of the same choice start without it.
/// Each cast returns the next token (a token is good once).
public struct RestoreToken: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// `$XDG_STATE_HOME/frame-relay/screencast-SURFACE.token` (`~/.local/state` when unset).
    public static func standard(for surface: ScreenCastSurface) -> RestoreToken? {
        let state = getenv("XDG_STATE_HOME").map { String(cString: $0) }.flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? getenv("HOME").map { String(cString: $0) + "/.local/state" }
        return state.map { RestoreToken(path: "\($0)/frame-relay/screencast-\(surface.rawValue).token") }
    }

    /// The token kept, if one is: the first word of the file's first 512 bytes (a token is a UUID).
    func read() -> String? {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 512)
        let count = Glibc.read(fd, &bytes, bytes.count)
        guard count > 0 else { return nil }
        let token = String(decoding: bytes[..<count], as: UTF8.self).split(whereSeparator: \.isWhitespace).first.map(String.init) ?? ""
        return token.isEmpty || token.count > 256 || !token.allSatisfy({ $0.isASCII && !$0.isWhitespace }) ? nil : token
    }

    /// Keeps `token` (made readable by this user only from the start); a
    /// token that cannot be kept only means the chooser asks again.
    func keep(_ token: String) {
        guard token.count <= 256 else { return }
        let folder = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = path + ".\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let line = Array((token + "\n").utf8)
        let written = line.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        if written != line.count || rename(temporary, path) != 0 { unlink(temporary) }
    }

    /// Forgets the token kept.
    func forget() { unlink(path) }
}

/// What a screen cast shows.
public enum ScreenCastSurface: String, CaseIterable, Sendable {
    case monitor
    case window

    /// The portal's source `types` bit.
    var portalType: UInt32 { self == .monitor ? 1 : 2 }
}
