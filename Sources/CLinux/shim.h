// Linux calls that Swift cannot make directly (epoll and eventfd are not
// in the Glibc module): futex goes through the
// variadic syscall(2), prctl(2) is variadic, and strerrorname_np(3),
// statfs(2), pipe2(2) and struct ucred are not in the Glibc module.
#pragma once
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

/// Waits while *word == expected, at most timeout_ns. Shared (not private):
/// the word lives in memory mapped by two processes. Returns 0 or -1 + errno.
static inline int clinux_futex_wait(uint32_t *word, uint32_t expected, int64_t timeout_ns) {
    struct timespec ts = { .tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000 };
    return (int)syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, NULL, 0);
}

/// Wakes every waiter on word. Returns the number woken or -1 + errno.
static inline int clinux_futex_wake(uint32_t *word) {
    return (int)syscall(SYS_futex, word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/// Has the kernel send `sig` to this process when the thread that started it
/// exits. Returns 0 or -1 + errno.
static inline int clinux_set_parent_death_signal(int sig) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)sig, 0UL, 0UL, 0UL);
}

/// pipe2(2), which needs _GNU_SOURCE. Returns 0 or -1 + errno.
static inline int clinux_pipe2(int fds[2], int flags) {
    return (int)syscall(SYS_pipe2, fds, flags);
}

/// The pid and uid of the process at the other end of a connected Unix socket
/// (SO_PEERCRED: struct ucred needs _GNU_SOURCE, which the Glibc module lacks). -1 + errno on failure.
/// Through syscall(2): sys/socket.h here would clash with the Glibc module's socket types.
struct clinux_ucred { int32_t pid; uint32_t uid; uint32_t gid; };
static inline int clinux_peer_credentials(int fd, int32_t *pid, uint32_t *uid) {
    struct clinux_ucred credentials;
    uint32_t size = sizeof credentials;
    if (syscall(SYS_getsockopt, fd, 1 /* SOL_SOCKET */, 17 /* SO_PEERCRED */, &credentials, &size) != 0) return -1;
    *pid = credentials.pid;
    *uid = credentials.uid;
    return 0;
}

extern const char *strerrorname_np(int errnum);

/// errno's symbolic name ("ENOSPC"), or NULL for a number glibc does not know.
static inline const char *clinux_errno_name(int code) { return strerrorname_np(code); }

/// The filesystem type (f_type, linux/magic.h) that `path` is on, or -1 + errno.
static inline long clinux_filesystem_type(const char *path) {
    struct statfs info;
    return statfs(path, &info) == 0 ? (long)info.f_type : -1;
}
