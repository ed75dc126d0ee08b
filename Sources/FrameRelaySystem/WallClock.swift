@preconcurrency import Glibc

/// CLOCK_REALTIME, for what goes to peers that compare wall clocks: the
/// NTP time of RTCP Sender Reports.
public enum WallClock {
    /// Now as NTP time (RFC 3550 §4): seconds since 1900 in the high 32 bits, the fraction of a second in the low.
    public static func ntpNow() -> UInt64 {
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let seconds = UInt64(wall.tv_sec) + 2_208_988_800
        return seconds << 32 | (UInt64(wall.tv_nsec) << 32) / 1_000_000_000
    }
}
