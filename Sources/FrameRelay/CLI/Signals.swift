@preconcurrency import Glibc

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
}
