@preconcurrency import Glibc
internal import CLinux

/// A file the user named for output (a report, a trace, an SDP, a
/// recording): checked before the run starts, so that a bad path fails up
/// front in one line, and written in place, so that a symlink's target or a
/// device is written, never replaced, and a FIFO that nobody reads fails
/// instead of blocking.
public enum OutputFile {
    /// `statfs` filesystem types of /proc and /sys (linux/magic.h).
    package static let procfsMagic = 0x9FA0
    package static let sysfsMagic = 0x6265_6572

    /// Whether `path` holds a regular file now: writing it replaces what
    /// was there (a line that names it then says so: ``named(_:replacing:)``).
    public static func isFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// Removes `path` when it is a regular file (never what a symbolic link
    /// points to, nor a device or FIFO); whether it did.
    public static func removeIfFile(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
        return unlink(path) == 0
    }

    /// `path` as a line names a file written, saying when an earlier one of that name was replaced.
    public static func named(_ path: String, replacing: Bool) -> String {
        replacing ? "\(path) (replacing the one there)" : path
    }

    /// Throws a one-line ``OutputFileError`` naming `--option` when `path`
    /// cannot be written now: its directory is missing, it is a directory, it
    /// is a FIFO nobody reads, or it may not be written. Creates nothing.
    public static func check(_ path: String, option: String) throws(OutputFileError) {
        func fail(_ why: String) -> OutputFileError { OutputFileError(path: path, option: option, reason: why) }
        var info = stat()
        if stat(path, &info) == 0 {
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                throw fail("it is a directory")
            case S_IFIFO:
                do {
                    _ = try FileDescriptor.open(path, O_WRONLY | O_NONBLOCK)
                } catch {
                    throw fail(error.code == .noSuchDevice ? "no process is reading this FIFO" : error.code.description)
                }
            case S_IFCHR:
                // A terminal or /dev/null takes output; another device (/dev/zero, a disk, a serial line) is no place for it.
                let terminal: Bool
                do {
                    terminal = isatty(try FileDescriptor.open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY).rawValue) == 1
                } catch {
                    throw fail(error.code.description)
                }
                var null = stat()
                guard terminal || (stat("/dev/null", &null) == 0 && null.st_rdev == info.st_rdev) else {
                    throw fail("it is a device, not a file (only a terminal or /dev/null takes output)")
                }
            case S_IFREG:
                if [Self.procfsMagic, Self.sysfsMagic].contains(clinux_filesystem_type(path)) {
                    throw fail("it is a kernel file in /proc or /sys, not a file to write output to")
                }
                guard access(path, W_OK) == 0 else { throw fail(Errno.current.description) }
            default:
                throw fail("it is neither a file, a FIFO nor a terminal")
            }
            return
        }
        guard errno == ENOENT else { throw fail(Errno.current.description) }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        guard stat(directory, &info) == 0 else { throw fail("no directory \(directory)") }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw fail("\(directory) is not a directory") }
        guard ![Self.procfsMagic, Self.sysfsMagic].contains(clinux_filesystem_type(directory)) else {
            throw fail("\(directory) is in /proc or /sys, not a place for output files")
        }
        guard access(directory, W_OK | X_OK) == 0 else { throw fail("cannot create files in \(directory): \(Errno.current.description)") }
    }

    /// Opens `path` for writing from the start (created 0644 if missing,
    /// truncated) and holds an exclusive lock on it (`flock`) while the
    /// descriptor lives: a file another process of ours is writing (a live
    /// host's recording) is refused with `EWOULDBLOCK` and never truncated.
    /// A FIFO with no reader fails with `ENXIO`.
    public static func open(_ path: String) throws(SystemError) -> FileDescriptor {
        let file = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_NONBLOCK, mode: 0o644)
        _ = try valueOrErrno("flock", path) { flock(file.rawValue, LOCK_EX | LOCK_NB) }
        // Truncated only once it is ours; a FIFO or a device has nothing to truncate.
        if try file.status().st_mode & S_IFMT == S_IFREG { try file.truncate(to: 0) }
        // Blocking from here on: a FIFO's reader may be slower than we are.
        try file.setBlocking(true)
        return file
    }

    /// Replaces the contents of `path` with `text`.
    public static func write(_ text: String, to path: String) throws(SystemError) {
        let file = try open(path)
        var text = text
        do {
            try text.withUTF8 { bytes in Result { () throws(SystemError) in try file.writeAll(UnsafeRawBufferPointer(bytes)) } }.get()
        } catch {
            // Cut short (a full disk): no half a report is left to be read as a whole one.
            _ = removeIfFile(path)
            throw error
        }
    }

}
