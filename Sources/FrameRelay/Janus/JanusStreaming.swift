import Foundation

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

    /// Sends one request to the streaming plugin and returns its answer
    /// (`plugindata.data`); throws Janus's error, or the plugin's.
    func call(_ request: [String: Any]) throws(JanusError) -> [String: Any] {
        let session = try id(of: post(["janus": "create"], to: url.path))
        defer { _ = try? post(["janus": "destroy"], to: "\(url.path)/\(session)") }
        let handle = try id(of: post(["janus": "attach", "plugin": "janus.plugin.streaming"], to: "\(url.path)/\(session)"))
        let reply = try post(["janus": "message", "body": request], to: "\(url.path)/\(session)/\(handle)")
        guard let data = (reply["plugindata"] as? [String: Any])?["data"] as? [String: Any] else {
            throw JanusError(url: url.description, code: 0, reason: "no answer from the streaming plugin (is libjanus_streaming.so loaded?)")
        }
        if let code = Self.integer(data["error_code"]) {
            throw JanusError(url: url.description, code: Int(code), reason: data["error"] as? String ?? "unknown error")
        }
        return data
    }

    private func id(of reply: [String: Any]) throws(JanusError) -> UInt64 {
        guard let id = Self.integer((reply["data"] as? [String: Any])?["id"]) else {
            throw JanusError(url: url.description, code: 0, reason: "unexpected answer: \(reply)")
        }
        return id
    }

    /// Posts one message of Janus's API to `path`; throws for no answer or a Janus error.
    private func post(_ message: [String: Any], to path: String) throws(JanusError) -> [String: Any] {
        var message = message
        message["transaction"] = String(UInt64.random(in: 1...UInt64.max), radix: 36)
        let body: Data
        do {
            body = try JSONSerialization.data(withJSONObject: message)
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
        guard let reply = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] else {
            throw JanusError(url: url.description, code: 0, reason: "not a Janus answer")
        }
        if reply["janus"] as? String == "error", let error = reply["error"] as? [String: Any] {
            throw JanusError(url: url.description, code: Int(Self.integer(error["code"]) ?? 0), reason: error["reason"] as? String ?? "unknown error")
        }
        return reply
    }

    /// A JSON number as Foundation decoded it (Int, UInt64, Double or NSNumber), if it is a whole non-negative one.
    static func integer(_ value: Any?) -> UInt64? {
        switch value {
        case let value as Int: value >= 0 ? UInt64(value) : nil
        case let value as UInt64: value
        case let value as Double: value >= 0 && value < 1.8e19 && value == value.rounded() ? UInt64(value) : nil
        case let value as NSNumber: value.uint64Value
        default: nil
        }
    }
}
