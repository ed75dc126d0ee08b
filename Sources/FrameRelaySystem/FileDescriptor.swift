@preconcurrency import Glibc

/// An open file descriptor with exactly one owner, which closes it when it
/// goes away: no error path can leak it or close it twice.
///
/// Every read and write retries `EINTR`; writes write everything or throw.
public struct FileDescriptor: ~Copyable {
    public private(set) var rawValue: Int32
    /// Names the descriptor in errors (a path, "udp", "rtcp socket").
    public let name: String

    /// Takes ownership of an open descriptor.
    public init(adopting rawValue: Int32, name: String) {
        self.rawValue = rawValue
        self.name = name
    }

    deinit { if rawValue >= 0 { Glibc.close(rawValue) } }

    /// Gives up ownership without closing (to hand the descriptor to another thread, which adopts it).
    public consuming func release() -> Int32 {
        let raw = rawValue
        rawValue = -1
        return raw
    }

    /// Opens `path` (`open(2)` flags; `O_CLOEXEC` is always added).
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws(SystemError) -> FileDescriptor {
        let fd = try valueOrErrno("open", path) { Glibc.open(path, flags | O_CLOEXEC, mode) }
        return FileDescriptor(adopting: fd, name: path)
    }

    /// `fstat(2)`.
    public func status() throws(SystemError) -> stat {
        var info = stat()
        _ = try valueOrErrno("fstat", name) { fstat(rawValue, &info) }
        return info
    }

    /// Reads from `offset` until `buffer` is full or the file ends; returns the bytes read.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(SystemError) -> Int {
        var done = 0
        while done < buffer.count {
            let n = try valueOrErrno("pread", name) { pread(rawValue, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done)) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Writes all of `bytes` at `offset`, leaving the file position alone.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            done += try valueOrErrno("pwrite", name) { pwrite(rawValue, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done)) }
        }
    }

    /// Writes all of `bytes`.
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        try Self.writeAll(rawValue, bytes, name: name)
    }

    /// Writes all of `first` then `second` (one `writev` when the kernel takes both at once).
    public func writeAll(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) throws(SystemError) {
        let written = try withUnsafeTemporaryAllocation(of: iovec.self, capacity: 2) { vectors throws(SystemError) in
            vectors[0] = iovec(iov_base: UnsafeMutableRawPointer(mutating: first.baseAddress), iov_len: first.count)
            vectors[1] = iovec(iov_base: UnsafeMutableRawPointer(mutating: second.baseAddress), iov_len: second.count)
            return try valueOrErrno("writev", name) { writev(rawValue, vectors.baseAddress, 2) }
        }
        // The rest of a short write, in order.
        if written < first.count {
            try writeAll(UnsafeRawBufferPointer(rebasing: first[written...]))
            try writeAll(second)
        } else if written < first.count + second.count {
            try writeAll(UnsafeRawBufferPointer(rebasing: second[(written - first.count)...]))
        }
    }

    /// Writes all of `bytes` to a descriptor this code does not own (standard
    /// error, a pipe a `FileHandle` owns): the one write-all loop.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, name: String) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            done += try valueOrErrno("write", name) { Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done) }
        }
    }

    /// Cuts (or extends) the file to `length` bytes.
    public func truncate(to length: Int) throws(SystemError) {
        _ = try valueOrErrno("ftruncate", name) { ftruncate(rawValue, off_t(length)) }
    }

    /// Switches `O_NONBLOCK` on or off.
    public func setBlocking(_ blocking: Bool) throws(SystemError) {
        let flags = try valueOrErrno("fcntl", name) { fcntl(rawValue, F_GETFL) }
        _ = try valueOrErrno("fcntl", name) { fcntl(rawValue, F_SETFL, blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK) }
    }

    /// Waits up to `milliseconds` for the descriptor to be readable (or hung
    /// up); false when the time ran out. A signal ends the wait early (true).
    public func waitReadable(milliseconds: Int32) -> Bool {
        var ready = pollfd(fd: rawValue, events: Int16(POLLIN), revents: 0)
        let polled = poll(&ready, 1, milliseconds)
        return polled != 0
    }
}
