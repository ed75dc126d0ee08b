import FrameRelaySystem
import FrameRelayHTTP

/// One subscriber's side of Janus's API: a session, a handle on the
/// streaming plugin, `watch` (Janus's SDP offer), `start` (our answer),
/// keepalives, and `destroy`. Each subscriber has a session of its own, so
/// the events polled for it are its own.
package struct JanusViewer: Sendable {
    package let api: JanusAPI
    let session: UInt64
    let handle: UInt64
    private var sessionPath: String { "\(api.url.path)/\(session)" }
    private var handlePath: String { "\(sessionPath)/\(handle)" }

    /// Creates a session and attaches to the streaming plugin.
    package init(api: JanusAPI) throws(JanusError) {
        self.api = api
        session = try api.id(of: api.post(["janus": "create"], to: api.url.path))
        do {
            handle = try api.id(of: api.post(["janus": "attach", "plugin": "janus.plugin.streaming"], to: "\(api.url.path)/\(session)"))
        } catch {
            _ = try? api.post(["janus": "destroy"], to: "\(api.url.path)/\(session)")
            throw error
        }
    }

    /// Asks to watch `mountpoint` (on simulcast `layer`, when given) and
    /// returns Janus's SDP offer; throws the plugin's error (no such
    /// mountpoint) or no offer within `timeout` s.
    package func watch(_ mountpoint: UInt64, layer: (substream: Int, temporal: Int)? = nil, timeout: Double = 10) throws(JanusError) -> String {
        var body: [String: JSONValue] = ["request": "watch", "id": try id(mountpoint)]
        if let layer {
            body["substream"] = .integer(Int64(layer.substream))
            body["temporal"] = .integer(Int64(layer.temporal))
            body["fallback"] = .integer(Int64(Self.fallback))
        }
        let reply = try api.post(["janus": "message", "body": .object(body)], to: handlePath)
        if let offer = try Self.offer(in: reply, api: api) { return offer }
        let deadline = MonotonicClock.now() + UInt64(timeout * 1e9)
        while MonotonicClock.now() < deadline {
            let polled = MonotonicClock.now()
            let events = try api.events(session: session, timeout: max(0.5, Double(deadline - min(deadline, polled)) / 1e9))
            for event in events {
                if let offer = try Self.offer(in: event, api: api) { return offer }
            }
            // A Janus that answers a long poll at once with nothing is asked again no sooner than 100 ms later.
            let elapsed = MonotonicClock.now() - polled
            if events.isEmpty, elapsed < Self.minimumPoll { MonotonicClock.sleep(nanoseconds: Self.minimumPoll - elapsed) }
        }
        throw JanusError(url: api.url.description, code: 0, reason: "no SDP offer for mountpoint \(mountpoint) within \(Int(timeout)) s")
    }

    static let minimumPoll: UInt64 = 100_000_000
    /// How long (µs) Janus waits for a packet on the substream a viewer
    /// watches before dropping it to a lower one on its own: longer than a
    /// still screen's silence (a frame each half second on every layer).
    package static let fallback = 3_000_000

    /// Moves the viewer to simulcast `substream` and `temporal` layer (Janus
    /// switches substream at the next keyframe on it).
    package func configure(substream: Int, temporal: Int, timeout: Double = 3) throws(JanusError) {
        let reply = try api.post(["janus": "message", "body": ["request": "configure", "substream": .integer(Int64(substream)),
                                                               "temporal": .integer(Int64(temporal))]], to: handlePath, timeout: timeout)
        if let data = reply["plugindata"]?["data"], let code = data["error_code"]?.unsigned {
            throw JanusError(url: api.url.description, code: Int(code), reason: data["error"]?.string ?? "unknown error")
        }
    }

    /// How many simulcast layers `mountpoint` has, and their bitrates (kbit/s), as its description names them (``JanusMountpoint/layers(inDescription:)``).
    package func layers(of mountpoint: UInt64, timeout: Double = 3) throws(JanusError) -> (count: Int, bitrates: [Int]?) {
        let reply = try api.post(["janus": "message", "body": ["request": "info", "id": try id(mountpoint)]], to: handlePath, timeout: timeout)
        if let data = reply["plugindata"]?["data"], let code = data["error_code"]?.unsigned {
            throw JanusError(url: api.url.description, code: Int(code), reason: data["error"]?.string ?? "unknown error")
        }
        let described = JanusMountpoint.layers(inDescription: reply["plugindata"]?["data"]?["info"]?["description"]?.string ?? "")
        return (described.layers, described.bitrates)
    }

    /// A mountpoint id as Janus's JSON takes it (a signed 64-bit integer).
    private func id(_ mountpoint: UInt64) throws(JanusError) -> JSONValue {
        guard let id = Int64(exactly: mountpoint) else {
            throw JanusError(url: api.url.description, code: 0, reason: "mountpoint \(mountpoint) is over Janus's largest id, \(Int64.max)")
        }
        return .integer(id)
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
    package func start(answer sdp: String) throws(JanusError) {
        let reply = try api.post(["janus": "message", "body": ["request": "start"], "jsep": ["type": "answer", "sdp": .string(sdp)]], to: handlePath)
        if let data = reply["plugindata"]?["data"], let code = data["error_code"]?.unsigned {
            throw JanusError(url: api.url.description, code: Int(code), reason: data["error"]?.string ?? "unknown error")
        }
    }

    /// Keeps the session alive (Janus ends one silent for a minute).
    package func keepalive(timeout: Double = 3) throws(JanusError) {
        _ = try api.post(["janus": "keepalive"], to: sessionPath, timeout: timeout)
    }

    /// Whether `mountpoint` still exists (asked on this handle).
    package func mountpointExists(_ mountpoint: UInt64, timeout: Double = 3) -> Bool? {
        do {
            let reply = try api.post(["janus": "message", "body": ["request": "info", "id": try id(mountpoint)]], to: handlePath, timeout: timeout)
            return reply["plugindata"]?["data"]?["error_code"]?.unsigned == nil
        } catch {
            return nil
        }
    }

    /// Ends the session: Janus hangs up the PeerConnection.
    package func destroy(timeout: Double = 2) {
        _ = try? api.post(["janus": "destroy"], to: sessionPath, timeout: timeout)
    }
}
