import FrameRelayHTTP
import FrameRelaySystem

/// One subscriber's side of Janus's API: a session, a handle on the
/// streaming plugin, `watch` (Janus's SDP offer), `start` (our answer),
/// keepalives, and `destroy`. Each subscriber has a session of its own, so
/// the events polled for it are its own.
struct JanusViewer: Sendable {
    let api: JanusAPI
    let session: UInt64
    let handle: UInt64
    private var sessionPath: String { "\(api.url.path)/\(session)" }
    private var handlePath: String { "\(sessionPath)/\(handle)" }

    /// Creates a session and attaches to the streaming plugin.
    init(api: JanusAPI) throws(JanusError) {
        self.api = api
        session = try api.id(of: api.post(["janus": "create"], to: api.url.path))
        do {
            handle = try api.id(of: api.post(["janus": "attach", "plugin": "janus.plugin.streaming"], to: "\(api.url.path)/\(session)"))
        } catch {
            _ = try? api.post(["janus": "destroy"], to: "\(api.url.path)/\(session)")
            throw error
        }
    }

    /// Asks to watch `mountpoint` and returns Janus's SDP offer; throws the
    /// plugin's error (no such mountpoint) or no offer within `timeout` s.
    func watch(_ mountpoint: UInt64, timeout: Double = 10) throws(JanusError) -> String {
        let reply = try api.post(["janus": "message", "body": ["request": "watch", "id": .integer(Int64(mountpoint))]], to: handlePath)
        if let offer = try Self.offer(in: reply, api: api) { return offer }
        let deadline = MonotonicClock.now() + UInt64(timeout * 1e9)
        while MonotonicClock.now() < deadline {
            for event in try api.events(session: session, timeout: max(0.5, Double(deadline - min(deadline, MonotonicClock.now())) / 1e9)) {
                if let offer = try Self.offer(in: event, api: api) { return offer }
            }
        }
        throw JanusError(url: api.url.description, code: 0, reason: "no SDP offer for mountpoint \(mountpoint) within \(Int(timeout)) s")
    }

    /// The offer's SDP in a reply or event, the plugin's error, or nil.
    private static func offer(in message: JSONValue, api: JanusAPI) throws(JanusError) -> String? {
        if let data = message["plugindata"]?["data"], let code = data["error_code"]?.unsigned {
            throw JanusError(url: api.url.description, code: Int(code), reason: data["error"]?.string ?? "unknown error")
        }
        guard let jsep = message["jsep"], jsep["type"]?.string == "offer" else { return nil }
        return jsep["sdp"]?.string
    }

    /// Sends our answer: Janus starts the stream once ICE and DTLS are up.
    func start(answer sdp: String) throws(JanusError) {
        let reply = try api.post(["janus": "message", "body": ["request": "start"], "jsep": ["type": "answer", "sdp": .string(sdp)]], to: handlePath)
        if let data = reply["plugindata"]?["data"], let code = data["error_code"]?.unsigned {
            throw JanusError(url: api.url.description, code: Int(code), reason: data["error"]?.string ?? "unknown error")
        }
    }

    /// Keeps the session alive (Janus ends one silent for a minute).
    func keepalive() throws(JanusError) {
        _ = try api.post(["janus": "keepalive"], to: sessionPath, timeout: 3)
    }

    /// Whether `mountpoint` still exists (asked on this handle).
    func mountpointExists(_ mountpoint: UInt64) -> Bool? {
        do {
            let reply = try api.post(["janus": "message", "body": ["request": "info", "id": .integer(Int64(mountpoint))]], to: handlePath, timeout: 3)
            return reply["plugindata"]?["data"]?["error_code"]?.unsigned == nil
        } catch {
            return nil
        }
    }

    /// Ends the session: Janus hangs up the PeerConnection.
    func destroy() {
        _ = try? api.post(["janus": "destroy"], to: sessionPath, timeout: 2)
    }
}
