internal import CLinux

/// Wakes every waiter on a futex word in shared memory.
@inline(__always)
package func futexWake(_ word: UnsafeMutablePointer<UInt32>) -> Int32 {
    clinux_futex_wake(word)
}

/// Sleeps while `*word == expected`, at most `timeoutNanoseconds`; returns
/// early on a wake, a changed value, or a signal.
@inline(__always)
package func futexWait(_ word: UnsafeMutablePointer<UInt32>, expected: UInt32, timeoutNanoseconds: Int64) {
    _ = clinux_futex_wait(word, expected, timeoutNanoseconds)
}
