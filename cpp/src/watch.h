// watch.h: watching variables that peers update, shared by the waits on one variable, the
// waits on sets and the locks: the comparisons (SHMEM_CMP_*), the load that sees a peer's
// store, and the loop that waits for a condition by the library's one waiting policy (spin,
// yield, then bounded naps, so 8 PEs on 2 cores make progress). Never installed.
#pragma once

#include <shmem.h>

#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"

namespace shmem::detail {

inline bool valid_cmp(int cmp) { return cmp >= SHMEM_CMP_EQ && cmp <= SHMEM_CMP_LE; }

// Whether `value cmp target` holds; `cmp` has passed valid_cmp.
template <typename T>
inline bool holds(T value, int cmp, T target) {
    switch (cmp) {
    case SHMEM_CMP_EQ: return value == target;
    case SHMEM_CMP_NE: return value != target;
    case SHMEM_CMP_GT: return value > target;
    case SHMEM_CMP_GE: return value >= target;
    case SHMEM_CMP_LT: return value < target;
    default: return value <= target;  // SHMEM_CMP_LE
    }
}

// A peer's put is a plain store into our mapped memory: an acquire load sees a naturally
// aligned element whole and orders what the caller reads next after it.
template <typename T>
inline T load_watched(const T *p) {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

// Checks in a row before the first call into the runtime's policy: a peer on another core
// usually answers within them, and they cost no call.
constexpr int kInlineChecks = 32;

// Returns once `done()` is true, checking it between the steps of the waiting policy.
template <typename Done>
inline void wait_for(Done done) {
    for (int i = 0; i < kInlineChecks; i++) {
        if (done()) return;
    }
    shmem::core::WaitState state{};
    while (!done()) shmem::core::wait_snooze(state);
}

}  // namespace shmem::detail
