@preconcurrency import Glibc
internal import CLinux

/// A failed system call: the call, the object it was made on, and `errno`.
///
/// Its description reads like `shm_open("/fr-3f9a…"): EACCES (Permission denied)`.
public struct SystemError: Error, CustomStringConvertible, Equatable {
    public var call: String
    public var object: String
    public var code: Int32

    public init(_ call: String, _ object: String, code: Int32) {
        self.call = call
        self.object = object
        self.code = code
    }

    public var description: String {
        "\(call)(\(object)): \(Self.errorName(code))"
    }

    /// errno's symbolic name and text, such as `ENOSPC (No space left on device)`.
    public static func errorName(_ code: Int32) -> String { "\(name(of: code)) (\(String(cString: strerror(code))))" }

    /// errno's symbolic name, such as `ENOSPC`.
    static func name(of code: Int32) -> String {
        clinux_errno_name(code).map { String(cString: $0) } ?? "errno \(code)"
    }
}

/// Runs a system call that returns -1 and sets `errno` on failure, retrying
/// `EINTR`, and throws a ``SystemError`` naming the call and its object.
@inline(__always)
func valueOrErrno<T: BinaryInteger>(
    _ call: String, _ object: @autoclosure () -> String, _ body: () -> T
) throws(SystemError) -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        throw SystemError(call, object(), code: code)
    }
}

/// Whether a process with this pid exists (it may belong to another user).
func processIsAlive(_ pid: Int32) -> Bool {
    guard pid > 0 else { return false }
    if kill(pid, 0) == 0 { return true }
    return errno == EPERM
}
