@preconcurrency import Glibc
internal import CLinux

extension FileDescriptor {
    /// Opens a pipe, both ends close-on-exec (a child handed an end as a
    /// standard stream gets its copy without the flag, and no other child
    /// gets one). The caller adopts both ends (a ``FileDescriptor``, a `FileHandle`).
    public static func pipe(name: String) throws(SystemError) -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        _ = try valueOrErrno("pipe2", name) { clinux_pipe2(&ends, O_CLOEXEC) }
        return (ends[0], ends[1])
    }
}
