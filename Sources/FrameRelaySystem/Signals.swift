@preconcurrency import Glibc
internal import CLinux

/// Process-wide signal set-up for the executables.
public enum Signals {
    /// Clears the inherited signal mask and ignored dispositions: a parent
    /// (a test runner, a shell, a service manager) may have blocked SIGINT,
    /// SIGTERM or SIGUSR1, and our stop and pause signals must arrive.
    public static func resetInherited() {
        var empty = sigset_t()
        sigemptyset(&empty)
        pthread_sigmask(SIG_SETMASK, &empty, nil)
        for signal in [SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGHUP] { Glibc.signal(signal, SIG_DFL) }
    }

    /// Has the kernel send this process SIGTERM when the process (the
    /// thread) that started it exits, so that a child of a killed parent
    /// stops as on Ctrl-C rather than running on alone. False when the
    /// parent is already gone.
    public static func stopWithParent() throws(SystemError) -> Bool {
        let parent = getppid()
        _ = try valueOrErrno("prctl", "PR_SET_PDEATHSIG") { clinux_set_parent_death_signal(SIGTERM) }
        return getppid() == parent
    }
}
