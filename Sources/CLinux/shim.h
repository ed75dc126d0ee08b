// Linux calls that Swift cannot make directly: futex goes through the
// variadic syscall(2).
#pragma once
#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
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
