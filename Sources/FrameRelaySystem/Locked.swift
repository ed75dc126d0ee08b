@preconcurrency import Glibc

/// Mutable state shared across threads, touched only inside ``withLock(_:)``.
///
/// A pthread mutex rather than Synchronization's `Mutex`: on Linux a
/// contended `Mutex` is handed over by the kernel (a priority-inheriting
/// futex), which ThreadSanitizer cannot see, so it reports races on state
/// that is correctly locked (two threads updating a `Mutex<[Int: Int]>`
/// 200,000 times each are reported here). With this lock a ThreadSanitizer
/// run (`scripts/sanitize thread`) reports only real races.
public final class Locked<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is read and written only while `mutex` is held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock.
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
