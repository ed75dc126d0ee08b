import FrameRelaySystem

/// Why a Janus request failed: the server unreachable, or Janus's own
/// error, with the URL it came from.
public struct JanusError: Error, CustomStringConvertible, Sendable {
    public var url: String
    /// Janus's error code (the core's or the streaming plugin's), 0 when the server did not answer.
    public var code: Int
    public var reason: String

    public init(url: String, code: Int, reason: String) {
        self.url = url
        self.code = code
        self.reason = reason
    }

    /// One line: Janus's words are a peer's, so they are quoted safely.
    public var description: String {
        code == 0 ? "Janus \(url): \(PeerText.quoted(reason))" : "Janus \(url): error \(code): \(PeerText.quoted(reason))"
    }

    /// The streaming plugin's "a stream with the provided ID already exists".
    package static let idTaken = 456
    /// The streaming plugin's "no such mountpoint".
    package static let noSuchMountpoint = 455
}
