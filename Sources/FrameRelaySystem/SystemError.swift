@preconcurrency import Glibc

/// A failed system call: the call, the object it was made on, and `errno`.
///
/// Its description reads like `shm_open("/fr-3f9a…"): EACCES (Permission denied)`.
public struct SystemError: Error, CustomStringConvertible, Equatable {
    public var call: String
    public var object: String
    public var code: Errno

    public init(_ call: String, _ object: String, code: Errno) {
        self.call = call
        self.object = object
        self.code = code
    }

    /// The call's failure with the calling thread's `errno` now.
    package static func current(_ call: String, _ object: String) -> SystemError { SystemError(call, object, code: .current) }

    public var description: String {
        // The lock OutputFile takes: say who holds it, not the errno.
        if call == "flock", code == .wouldBlock { return "\(object): another process is writing it (it holds the file's lock)" }
        return "\(call)(\(object)): \(code)"
    }
}

/// Runs a system call that returns -1 and sets `errno` on failure, retrying
/// `EINTR`, and throws a ``SystemError`` naming the call and its object.
@inline(__always)
package func valueOrErrno<T: BinaryInteger>(
    _ call: String, _ object: @autoclosure () -> String, _ body: () -> T
) throws(SystemError) -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = Errno.current
        if code == .interrupted { continue }
        throw SystemError(call, object(), code: code)
    }
}

/// Like ``valueOrErrno(_:_:_:)``, but `EAGAIN` (nothing now on a
/// non-blocking descriptor) is the value `nil`, not an error.
@inline(__always)
package func valueOrWouldBlock<T: BinaryInteger>(
    _ call: String, _ object: @autoclosure () -> String, _ body: () -> T
) throws(SystemError) -> T? {
    do {
        return try valueOrErrno(call, object(), body)
    } catch where error.code == .wouldBlock {
        return nil
    }
}

/// Whether a process with this pid exists (it may belong to another user).
package func processIsAlive(_ pid: Int32) -> Bool {
    guard pid > 0 else { return false }
    if kill(pid, 0) == 0 { return true }
    return errno == EPERM
}
