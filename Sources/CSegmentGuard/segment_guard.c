#define _GNU_SOURCE
#include "segment_guard.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// A fixed table, so that the handler needs neither locks nor allocation:
// each share of a host maps one ring, and a process maps a few at most.
#define SLOTS 256
#define CLAIMED ((uintptr_t)1)

static _Atomic(uintptr_t) slot_base[SLOTS];
static _Atomic(size_t) slot_size[SLOTS];
static _Atomic(uint32_t) slot_faults[SLOTS];
static struct sigaction previous;
static pthread_once_t installed = PTHREAD_ONCE_INIT;
static int install_status;
static int install_errno;

static void forward(int sig, siginfo_t *info, void *context) {
    if (previous.sa_flags & SA_SIGINFO) {
        previous.sa_sigaction(sig, info, context);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
    } else {
        // Return with the default action restored: the access faults again and ends the process.
        signal(sig, SIG_DFL);
    }
}

static void on_sigbus(int sig, siginfo_t *info, void *context) {
    uintptr_t address = (uintptr_t)info->si_addr;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t base = atomic_load_explicit(&slot_base[i], memory_order_acquire);
        size_t size = atomic_load_explicit(&slot_size[i], memory_order_acquire);
        if (base <= CLAIMED || address < base || address >= base + size) continue;
        int saved = errno;
        uintptr_t page = address & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
        void *replaced = mmap((void *)page, base + size - page, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        errno = saved;
        if (replaced == MAP_FAILED) break;
        atomic_fetch_add_explicit(&slot_faults[i], 1, memory_order_release);
        return;
    }
    forward(sig, info, context);
}

static void install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    install_status = sigaction(SIGBUS, &action, &previous);
    install_errno = errno;
}

int segment_guard_install(void) {
    // Once per process; every caller, on any thread, gets the one outcome after it is known.
    pthread_once(&installed, install);
    if (install_status != 0) errno = install_errno;
    return install_status;
}

int segment_guard_register(void *base, size_t size) {
    for (int i = 0; i < SLOTS; i++) {
        // Claim the slot with a marker the handler skips, fill it, then make it live.
        uintptr_t expected = 0;
        if (!atomic_compare_exchange_strong_explicit(&slot_base[i], &expected, CLAIMED,
                                                     memory_order_acquire, memory_order_relaxed)) {
            continue;
        }
        atomic_store_explicit(&slot_size[i], size, memory_order_relaxed);
        atomic_store_explicit(&slot_faults[i], 0, memory_order_relaxed);
        atomic_store_explicit(&slot_base[i], (uintptr_t)base, memory_order_release);
        return i;
    }
    return -1;
}

void segment_guard_unregister(int handle) {
    if (handle < 0 || handle >= SLOTS) return;
    atomic_store_explicit(&slot_base[handle], 0, memory_order_release);
}

uint32_t segment_guard_faults(int handle) {
    if (handle < 0 || handle >= SLOTS) return 0;
    return atomic_load_explicit(&slot_faults[handle], memory_order_acquire);
}
