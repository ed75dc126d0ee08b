// A SIGBUS guard for shared-memory mappings that another process can
// shrink. A process that truncates a POSIX shared-memory segment under our
// mapping makes every access past the new end raise SIGBUS, which would kill
// us. Registered mappings are guarded: a SIGBUS inside one replaces the
// mapping from the faulting page to its end with private zero pages, counts
// the fault, and returns, so the access completes (reading zeros) and the
// owner learns from the count that the segment shrank. Wayland compositors
// guard clients' wl_shm pools the same way. A SIGBUS anywhere else goes to
// the handler that was installed before (or the default, which ends the
// process).
#pragma once
#include <stddef.h>
#include <stdint.h>

/// Installs the SIGBUS handler (once per process; later calls do nothing).
/// Returns 0, or -1 with errno set.
int segment_guard_install(void);

/// Guards [base, base + size); returns a handle for the other calls, or -1
/// when every one of the guard's slots is taken.
int segment_guard_register(void *base, size_t size);

/// Stops guarding a mapping (before unmapping it).
void segment_guard_unregister(int handle);

/// How many SIGBUS faults the guard has absorbed in this mapping.
uint32_t segment_guard_faults(int handle);
