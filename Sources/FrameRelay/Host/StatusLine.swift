@preconcurrency import Glibc
import Foundation

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
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// Clears the display before normal output.
    public func clear() {
        guard isEnabled, linesDrawn > 0 else { return }
        var text = "\u{1B}[\(linesDrawn)A"
        for _ in 0..<linesDrawn { text += "\u{1B}[2K\n" }
        text += "\u{1B}[\(linesDrawn)A"
        linesDrawn = 0
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// One share as a line: frames/s, drops, and latency percentiles.
    public static func format(_ s: ShareStats) -> String {
        let ring = s.ring
        let state = s.producerAttaches == 0 ? "waiting for producer" : String(format: "%5.1f fps", s.fps)
        return String(
            format: "%@  %@  taken %llu  dropped %llu  invalid %llu  capture→taken p50 %.2f ms p99 %.2f ms  hand-off p99 %.0f µs",
            s.appGroup, state, s.taken, ring.dropped + s.earlierRings.dropped, s.invalid,
            s.captureToTaken.p50 / 1000, s.captureToTaken.p99 / 1000, s.handoff.p99)
    }
}
