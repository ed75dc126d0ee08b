@preconcurrency import Glibc

/// The machine's processors and the CPU time threads and processes use.
public enum Processor {
    /// Processors online now (at least 1).
    public static var onlineCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// CPU time the calling thread has used (ns).
    public static func threadCPUNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// CPU seconds (user + system) this process has used.
    public static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// CPU seconds (user + system) process `pid` has used, from /proc; 0
    /// when it cannot be read (the process is gone).
    public static func cpuSeconds(ofProcess pid: Int32) -> Double {
        guard let fields = statFields(pid), fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// This process's id.
    public static var currentPID: Int32 { getpid() }

    /// Lifts this process's soft limit on open descriptors to its hard
    /// limit (one socket a viewer: hundreds of viewers need more than 1,024).
    public static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// Whether a process with this pid exists (it may belong to another user).
    public static func isAlive(_ pid: Int32) -> Bool { processIsAlive(pid) }

    /// Whether process `pid` is stopped (SIGSTOP, SIGTSTP, or a debugger's
    /// trace stop), from /proc; false when it cannot be read.
    public static func isStopped(_ pid: Int32) -> Bool {
        guard let state = statFields(pid)?.first else { return false }
        return state == "T" || state == "t"
    }

    /// The fields of `/proc/PID/stat` after the command name (its state first), or nil.
    private static func statFields(_ pid: Int32) -> [Substring]? {
        guard let file = try? FileDescriptor.open("/proc/\(pid)/stat", O_RDONLY) else { return nil }
        var bytes = [UInt8](repeating: 0, count: 4096)
        guard let count = try? bytes.withUnsafeMutableBytes({ buffer throws(SystemError) in try file.read(into: buffer, at: 0) }) else { return nil }
        let text = String(decoding: bytes.prefix(count), as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }
}
