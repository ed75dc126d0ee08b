import FoundationEssentials
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
        let session = try id(of: post(["janus": "create"], to: url.path))
        defer { _ = try? post(["janus": "destroy"], to: "\(url.path)/\(session)") }
        let handle = try id(of: post(["janus": "attach", "plugin": "janus.plugin.streaming"], to: "\(url.path)/\(session)"))
        let reply = try post(["janus": "message", "body": request], to: "\(url.path)/\(session)/\(handle)")
        guard let data = reply["plugindata"]?["data"] else {
            throw JanusError(url: url.description, code: 0, reason: "no answer from the streaming plugin (is libjanus_streaming.so loaded?)")
        }
        if let code = data["error_code"]?.unsigned {
            throw JanusError(url: url.description, code: Int(code), reason: data["error"]?.string ?? "unknown error")
        }
        return data
    }

    private func id(of reply: JSONValue) throws(JanusError) -> UInt64 {
        guard let id = reply["data"]?["id"]?.unsigned else {
            throw JanusError(url: url.description, code: 0, reason: "unexpected answer: \(reply)")
        }
        return id
    }

    /// Posts one message of Janus's API to `path`; throws for no answer or a Janus error.
    private func post(_ message: JSONValue, to path: String) throws(JanusError) -> JSONValue {
        guard case .object(var members) = message else { preconditionFailure("a Janus message is an object") }
        members["transaction"] = .string(String(UInt64.random(in: 1...UInt64.max), radix: 36))
        let body: Data
        do {
            body = try JSONEncoder().encode(JSONValue.object(members))
        } catch {
            throw JanusError(url: url.description, code: 0, reason: "cannot encode \(message)")
        }
        let response: HTTPClient.Response
        do {
            response = try HTTPClient.request("POST", url.with(path: path), body: Array(body))
        } catch {
            throw JanusError(url: url.description, code: 0, reason: error.reason)
        }
        guard response.status == 200 else {
            throw JanusError(url: url.description, code: 0, reason: "HTTP \(response.status) (is this Janus's HTTP API?)")
        }
        guard let reply = try? JSONDecoder().decode(JSONValue.self, from: Data(response.body)) else {
            throw JanusError(url: url.description, code: 0, reason: "not a Janus answer")
        }
        if reply["janus"]?.string == "error", let error = reply["error"] {
            throw JanusError(url: url.description, code: Int(error["code"]?.unsigned ?? 0), reason: error["reason"]?.string ?? "unknown error")
        }
        return reply
    }
}
