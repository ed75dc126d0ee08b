@preconcurrency import Glibc

/// A folder of this process's own under `$TMPDIR` (`/tmp` when unset),
/// made by `mkdtemp(3)`: a name nobody can guess, mode 0700, and never a
/// folder that was already there (a planted one, a symbolic link).
public enum PrivateDirectory {
    /// Makes `$TMPDIR/PREFIX-XXXXXX` and returns its path.
    public static func make(prefix: String) throws(SystemError) -> String {
        let parent = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        let pattern = "\(parent)/\(prefix)-XXXXXX"
        var template = Array(pattern.utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw SystemError("mkdtemp", pattern, code: .current)
        }
        return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
