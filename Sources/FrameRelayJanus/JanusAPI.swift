import FoundationEssentials
import FrameRelayHTTP
import FrameRelaySystem

/// Janus's JSON API over HTTP (its `janus.transport.http`): one message
/// posted to the API root, a session or a handle, and the asynchronous
/// events of a session by long poll. Janus's errors become ``JanusError``s
/// whose words are quoted safely (``PeerText``).
public struct JanusAPI: Sendable {
    public let url: HTTPClient.URL

    public init(url: HTTPClient.URL) { self.url = url }

    /// Posts `message` (a transaction id is added) to `path` and returns
    /// Janus's reply; throws for no answer, an answer that is not Janus's,
    /// or Janus's own error.
    public func post(_ message: JSONValue, to path: String, timeout: Double = 5) throws(JanusError) -> JSONValue {
        guard case .object(var members) = message else { preconditionFailure("a Janus message is an object") }
        members["transaction"] = .string(String(UInt64.random(in: 1...UInt64.max), radix: 36))
        let body: Data
        do {
            body = try JSONEncoder().encode(JSONValue.object(members))
        } catch {
            throw fail("cannot encode \(message)")
        }
        return try reply(to: "POST", path: path, body: Array(body), timeout: timeout)
    }

    /// The next events of `session` (at most `max`), waiting at most about
    /// `timeout` seconds for the first; empty when none came (Janus answers
    /// a poll with nothing to say with a keepalive after 30 s, or at once).
    public func events(session: UInt64, max: Int = 10, timeout: Double = 10) throws(JanusError) -> [JSONValue] {
        let reply = try reply(to: "GET", path: "\(url.path)/\(session)?maxev=\(max)&rid=\(UInt32.random(in: 0...UInt32.max))", body: nil, timeout: timeout)
        let events = reply.array ?? [reply]
        return events.filter { $0["janus"]?.string != "keepalive" }
    }

    /// The `data.id` of a reply to `create` or `attach`.
    public func id(of reply: JSONValue) throws(JanusError) -> UInt64 {
        guard let id = reply["data"]?["id"]?.unsigned else { throw fail("unexpected answer: \(PeerText.quoted(reply.description))") }
        return id
    }

    private func reply(to method: String, path: String, body: [UInt8]?, timeout: Double) throws(JanusError) -> JSONValue {
        let response: HTTPClient.Response
        do {
            response = try HTTPClient.request(method, url.with(path: path), body: body, timeout: timeout)
        } catch {
            throw fail(error.reason)
        }
        guard response.status == 200 else { throw fail("HTTP \(response.status) (is this Janus's HTTP API?)") }
        guard let reply = try? JSONDecoder().decode(JSONValue.self, from: Data(response.body)) else { throw fail("not a Janus answer") }
        if reply["janus"]?.string == "error", let error = reply["error"] {
            throw JanusError(url: url.description, code: Int(error["code"]?.unsigned ?? 0), reason: error["reason"]?.string ?? "unknown error")
        }
        return reply
    }

    private func fail(_ reason: String) -> JanusError { JanusError(url: url.description, code: 0, reason: reason) }
}
