// sync.cpp: ordering and barriers. Puts are plain stores into mapped memory, so fence and
// quiet are CPU fences (a full fence also orders the non-temporal stores a large copy may use);
// the barrier itself runs in the runtime on the control segments' words.
#include <atomic>

#include "internal.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"

using namespace shmem::detail;
namespace core = shmem::core;

namespace {

void sync_all(const char *call, bool barrier_all) {
    require_running(call);
    try {
        core::sync_all(barrier_all);
    } catch (const rust::Error &) {
        fail_logged();
    }
}

}  // namespace

// With a transport in use, fence and quiet also order and complete what went through it on the
// default context.
// The test comes before the CPU fence, so its load does not wait for the fence to drain.
SHMEM_EXPORT void pshmem_fence(void) {
    if (SHMEM_UNLIKELY(g.transport != nullptr)) transport_fence(nullptr);
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

SHMEM_EXPORT void pshmem_quiet(void) {
    if (SHMEM_UNLIKELY(g.transport != nullptr)) transport_quiet(nullptr);
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

SHMEM_EXPORT void pshmem_barrier_all(void) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (SHMEM_UNLIKELY(g.transport != nullptr)) transport_quiet(nullptr);
    sync_all("shmem_barrier_all", true);
}

SHMEM_EXPORT void pshmem_sync_all(void) { sync_all("shmem_sync_all", false); }

SHMEM_WEAK_ALIAS(shmem_fence)
SHMEM_WEAK_ALIAS(shmem_quiet)
SHMEM_WEAK_ALIAS(shmem_barrier_all)
SHMEM_WEAK_ALIAS(shmem_sync_all)
