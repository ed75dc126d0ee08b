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
        code == 0 ? "Janus \(url): \(Self.quoted(reason))" : "Janus \(url): error \(code): \(Self.quoted(reason))"
    }

    /// The streaming plugin's "a stream with the provided ID already exists".
    package static let idTaken = 456
    /// The streaming plugin's "no such mountpoint".
    package static let noSuchMountpoint = 455

    /// The most of a peer's words a log line quotes.
    public static let quoteLimit = 200

    /// A peer's words as one safe line: control characters (an escape
    /// sequence, a newline that would forge a log line) written as `\u{…}`,
    /// and no more than ``quoteLimit`` characters, the rest cut with "…".
    public static func quoted(_ text: String) -> String {
        var out = ""
        var count = 0
        for scalar in text.unicodeScalars {
            guard count < quoteLimit else { return out + "…" }
            count += 1
            switch scalar.value {
            case 0..<0x20, 0x7F..<0xA0, 0x2028, 0x2029: out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
