@preconcurrency import Glibc
import Synchronization
internal import CLinux

/// Process-wide signal set-up for the executables.
public enum Signals {
    /// Stop signals (SIGINT, SIGTERM, SIGHUP) received so far: the run loops read it.
    public static let stops = Atomic<Int>(0)
    /// SIGUSR1s received so far (broadcast-sim's pause and resume).
    public static let pauseToggles = Atomic<Int>(0)

    /// Counts SIGINT, SIGTERM and SIGHUP into ``stops`` (a closed terminal
    /// ends a run as Ctrl-C does), with `pause`, SIGUSR1 into
    /// ``pauseToggles``, and ignores SIGPIPE (a closed pipe is no reason to
    /// die). The handlers are plain functions of no actor: the kernel runs
    /// a handler on whichever thread it picks, and one isolated to the main
    /// actor (a closure written at a `main.swift`'s top level) traps on any
    /// other with Swift 6's isolation check, as a host did on SIGTERM.
    public static func installHandlers(pause: Bool = false) {
        for stop in [SIGINT, SIGTERM, SIGHUP] { signal(stop, countStop) }
        if pause { signal(SIGUSR1, countPause) }
        signal(SIGPIPE, SIG_IGN)
    }

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

/// The handlers ``Signals/installHandlers(pause:)`` installs: an atomic add, nothing else (async-signal-safe).
private func countStop(_: Int32) { Signals.stops.wrappingAdd(1, ordering: .relaxed) }
private func countPause(_: Int32) { Signals.pauseToggles.wrappingAdd(1, ordering: .relaxed) }
