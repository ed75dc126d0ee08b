@preconcurrency import Glibc
internal import CLinux

/// An `errno` value: a failed call's reason. `wouldBlock` (EAGAIN) is how a
/// non-blocking call says "nothing now", so the calls that can return it
/// give it back as a value (`nil`) rather than throwing it.
public struct Errno: RawRepresentable, Equatable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno` now.
    public static var current: Errno { Errno(errno) }

    public static let noSuchFile = Errno(ENOENT)
    public static let interrupted = Errno(EINTR)
    public static let ioError = Errno(EIO)
    public static let noSuchDevice = Errno(ENXIO)
    public static let wouldBlock = Errno(EAGAIN)
    public static let fileExists = Errno(EEXIST)
    public static let invalidArgument = Errno(EINVAL)
    public static let noSpace = Errno(ENOSPC)
    public static let addressInUse = Errno(EADDRINUSE)
    public static let noBufferSpace = Errno(ENOBUFS)
    public static let connectionRefused = Errno(ECONNREFUSED)

    /// The symbolic name, such as `ENOSPC` (`errno 1234` when unknown).
    public var name: String { clinux_errno_name(rawValue).map { String(cString: $0) } ?? "errno \(rawValue)" }

    /// Name and text, such as `ENOSPC (No space left on device)`.
    public var description: String { "\(name) (\(String(cString: strerror(rawValue))))" }
}
