// watch.h: watching variables that peers update, shared by the waits on one variable, the
// waits on sets and the locks: the comparisons (SHMEM_CMP_*), the load that sees a peer's
// store, and the loop that waits for a condition by the library's one waiting policy (spin,
// yield, then bounded naps, so 8 PEs on 2 cores make progress). Never installed.
#pragma once

#include <shmem.h>

#include "peer.h"
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

// A watched word of this PE's heap when the heap is device memory the CPU must not touch (the
// npu device): read by the device's copy, through the transport table.
template <typename T>
__attribute__((noinline, cold)) T load_from_device(const T *p) {
    T v;
    peer_get_cold("a wait on the device heap", &v, sym_of_addr(p), g.my_pe, sizeof(T));
    return v;
}

// A peer's put is a plain store into our mapped memory: an acquire load sees a naturally
// aligned element whole and orders what the caller reads next after it (the generic builtin,
// so floating-point elements too). On a device heap, the device's copy reads it.
template <typename T>
inline T load_watched(const T *p) {
    if (SHMEM_UNLIKELY(g.heap_on_device != 0) &&
        reinterpret_cast<uintptr_t>(p) - g.heap_base < g.heap_size) {
        return load_from_device(p);
    }
    T v;
    __atomic_load(p, &v, __ATOMIC_ACQUIRE);
    return v;
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
