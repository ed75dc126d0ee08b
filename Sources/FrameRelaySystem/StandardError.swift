@preconcurrency import Glibc

/// Writes text to stderr unbuffered (a status line, a log line); a closed
/// stderr is no reason to fail.
public func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in try? FileDescriptor.writeAll(STDERR_FILENO, UnsafeRawBufferPointer(bytes), name: "stderr") }
}

/// What stderr is connected to.
public enum StandardError {
    /// Whether stderr is a terminal (a status line redrawn in place) rather than a log or a pipe.
    public static var isTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// The terminal's width in columns (80 when it does not say).
    public static func terminalWidth() -> Int {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }
}
