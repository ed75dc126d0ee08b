@preconcurrency import Glibc

/// CLOCK_MONOTONIC in nanoseconds: the one clock that both processes and every
/// timing stage share.
public enum MonotonicClock {
    /// Nanoseconds since an arbitrary, fixed point (boot).
    @inline(__always)
    public static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// Sleeps until the monotonic clock reaches `deadline` (ns); returns at once if past.
    public static func sleep(until deadline: UInt64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }

    /// Sleeps for a number of nanoseconds.
    public static func sleep(nanoseconds: UInt64) {
        sleep(until: now() &+ nanoseconds)
    }
}
