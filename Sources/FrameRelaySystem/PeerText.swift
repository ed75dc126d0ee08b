/// Words that came from a peer (Janus's answers and errors, a producer's
/// setup text or last line, an App Group read from shared memory) as one
/// safe piece of a log line: control characters (an escape sequence, a
/// newline that would forge a log line of its own) and the marks that turn
/// text around (the bidirectional overrides, isolates and marks: a name
/// that would read backwards) written as `\u{…}`, and
/// no more than ``limit`` characters, the rest cut with "…".
public enum PeerText {
    /// The most of a peer's words a log line quotes.
    public static let limit = 200

    public static func quoted(_ text: some StringProtocol, limit: Int = limit) -> String {
        var out = ""
        var count = 0
        for scalar in text.unicodeScalars {
            guard count < limit else { return out + "…" }
            count += 1
            switch scalar.value {
            case 0..<0x20, 0x7F..<0xA0, 0x2028, 0x2029, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:
                out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
