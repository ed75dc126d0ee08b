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

    public var description: String {
        code == 0 ? "Janus \(url): \(reason)" : "Janus \(url): error \(code): \(reason)"
    }

    /// The streaming plugin's "a stream with the provided ID already exists".
    static let idTaken = 456
    /// The streaming plugin's "no such mountpoint".
    static let noSuchMountpoint = 455
}
