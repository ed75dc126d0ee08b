@preconcurrency import Glibc
internal import CLinux

/// An epoll instance with one owner: descriptors registered with a tag,
/// and a wait that hands back the tags of those ready to read.
public struct EventPoll: ~Copyable {
    package let descriptor: FileDescriptor
    private let ready: UnsafeMutablePointer<epoll_event>
    package static let batch = 256

    package init() throws(SystemError) {
        descriptor = FileDescriptor(adopting: try valueOrErrno("epoll_create1", "epoll") { epoll_create1(Int32(EPOLL_CLOEXEC)) }, name: "epoll")
        ready = .allocate(capacity: Self.batch)
    }

    deinit { ready.deallocate() }

    /// Watches `fd` for input, reported with `tag`.
    package func add(_ fd: Int32, tag: UInt64) throws(SystemError) {
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: tag))
        _ = try valueOrErrno("epoll_ctl", "fd \(fd)") { epoll_ctl(descriptor.rawValue, EPOLL_CTL_ADD, fd, &event) }
    }

    /// Stops watching `fd` (closing it does so too).
    package func remove(_ fd: Int32) {
        _ = epoll_ctl(descriptor.rawValue, EPOLL_CTL_DEL, fd, nil)
    }

    /// Waits up to `milliseconds` (-1: no limit) and calls `body` with the tag
    /// of each descriptor ready to read.
    package func wait(milliseconds: Int32, _ body: (UInt64) -> Void) throws(SystemError) {
        let count = try valueOrErrno("epoll_wait", "epoll") { epoll_wait(descriptor.rawValue, ready, Int32(Self.batch), milliseconds) }
        for index in 0..<Int(count) { body(ready[index].data.u64) }
    }
}

/// An eventfd: one thread signals, the thread waiting on it in an
/// ``EventPoll`` wakes and drains it.
public struct EventSignal: ~Copyable {
    package let descriptor: FileDescriptor

    package init() throws(SystemError) {
        descriptor = FileDescriptor(adopting: try valueOrErrno("eventfd", "eventfd") { eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)) }, name: "eventfd")
    }

    /// Wakes the waiter (signals add up until drained).
    package func signal() {
        var one: UInt64 = 1
        _ = Glibc.write(descriptor.rawValue, &one, 8)
    }

    /// Takes every signal given so far.
    package func drain() {
        var count: UInt64 = 0
        _ = Glibc.read(descriptor.rawValue, &count, 8)
    }
}
