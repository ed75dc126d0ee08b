@preconcurrency import Glibc

/// A live status display on a terminal: one line per share, redrawn in
/// place. Silent when stderr is not a terminal.
public final class StatusLine {
    public let isEnabled: Bool
    private var linesDrawn = 0

    public init(enabled: Bool = true) {
        isEnabled = enabled && isatty(STDERR_FILENO) == 1
    }

    /// Redraws the display with these shares.
    public func update(_ shares: [ShareStats]) {
        guard isEnabled else { return }
        var text = linesDrawn > 0 ? "\u{1B}[\(linesDrawn)A" : ""
        for share in shares {
            text += "\u{1B}[2K" + Self.format(share) + "\n"
        }
        linesDrawn = shares.count
        writeStandardError(text)
    }

    /// Clears the display before normal output.
    public func clear() {
        guard isEnabled, linesDrawn > 0 else { return }
        var text = "\u{1B}[\(linesDrawn)A"
        for _ in 0..<linesDrawn { text += "\u{1B}[2K\n" }
        text += "\u{1B}[\(linesDrawn)A"
        linesDrawn = 0
        writeStandardError(text)
    }

    /// One share as a line: frames/s, drops, and latency percentiles.
    public static func format(_ s: ShareStats) -> String {
        let state = s.producerAttaches == 0 ? "waiting for producer" : "\(fixed(s.fps, 1)) fps"
        // Skipped (nothing changed, not encoded) is apart from dropped (replaced in the ring before the host took it).
        let skipped = s.encoded.map { "  skipped \($0.skipped)" } ?? ""
        return "\(s.appGroup)  \(state)  taken \(s.taken)  dropped \(s.totalDropped)\(skipped)  invalid \(s.invalid)"
            + "  capture→taken p50 \(fixed(s.captureToTaken.p50 / 1000, 2)) ms p99 \(fixed(s.captureToTaken.p99 / 1000, 2)) ms"
            + "  hand-off p99 \(fixed(s.handoff.p99, 0)) µs"
    }
}

/// `value` with `digits` decimals, without Foundation's String(format:).
public func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "\(value)" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = Int((abs(value) * scale).rounded())
    let whole = scaled / Int(scale), fraction = scaled % Int(scale)
    let sign = value < 0 && scaled != 0 ? "-" : ""
    guard digits > 0 else { return sign + "\(whole)" }
    let text = String(fraction)
    return sign + "\(whole)." + String(repeating: "0", count: digits - text.count) + text
}

/// Writes text to stderr unbuffered.
public func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let n = write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
            if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
            offset += n
        }
    }
}
