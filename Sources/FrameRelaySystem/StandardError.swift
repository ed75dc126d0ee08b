@preconcurrency import Glibc

/// Writes text to stderr unbuffered (a status line, a log line); a closed
/// stderr is no reason to fail.
public func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in try? FileDescriptor.writeAll(STDERR_FILENO, UnsafeRawBufferPointer(bytes), name: "stderr") }
}
