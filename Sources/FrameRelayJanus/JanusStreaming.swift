import FrameRelayHTTP

/// Janus's streaming plugin through its HTTP API. Each call makes a
/// session and a handle and destroys them after it, so there is nothing to
/// keep alive between calls (Janus ends idle sessions after a minute).
public struct JanusStreaming: Sendable {
    public let url: HTTPClient.URL
    /// The streaming plugin's `admin_key`, where Janus is configured with one (needed to create mountpoints).
    public var adminKey: String?

    public init(url: HTTPClient.URL, adminKey: String? = nil) {
        self.url = url
        self.adminKey = adminKey
    }

    /// Whether Janus answers, with its streaming plugin loaded.
    public func ping() throws(JanusError) {
        _ = try call(["request": "list"])
    }

    /// Sends one request to the streaming plugin and returns its answer
    /// (`plugindata.data`); throws Janus's error, or the plugin's.
    func call(_ request: JSONValue) throws(JanusError) -> JSONValue {
        let api = JanusAPI(url: url)
        let session = try api.id(of: api.post(["janus": "create"], to: url.path))
        defer { _ = try? api.post(["janus": "destroy"], to: "\(url.path)/\(session)") }
        let handle = try api.id(of: api.post(["janus": "attach", "plugin": "janus.plugin.streaming"], to: "\(url.path)/\(session)"))
        let reply = try api.post(["janus": "message", "body": request], to: "\(url.path)/\(session)/\(handle)")
        guard let data = reply["plugindata"]?["data"] else {
            throw JanusError(url: url.description, code: 0, reason: "no answer from the streaming plugin (is libjanus_streaming.so loaded?)")
        }
        if let code = data["error_code"]?.unsigned {
            throw JanusError(url: url.description, code: Int(code), reason: data["error"]?.string ?? "unknown error")
        }
        return data
    }
}
