// mem.cpp: symmetric allocation (collective, decided by the runtime) and address queries.
#include <cstdint>
#include <cstdio>

#include "internal.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"

using namespace shmem::detail;
namespace core = shmem::core;

namespace {

// Every allocation routine ends here; the runtime logs why a request failed.
void *allocate(const char *call, size_t size, size_t align, bool zero) {
    require_running(call);
    if (size == 0) return nullptr;
    try {
        return reinterpret_cast<void *>(core::heap_alloc(call, size, align, zero));
    } catch (const rust::Error &) {
        return nullptr;
    }
}

}  // namespace

SHMEM_EXPORT void *pshmem_malloc(size_t size) { return allocate("shmem_malloc", size, 64, false); }

SHMEM_EXPORT void *pshmem_malloc_with_hints(size_t size, long hints) {
    // Hints only describe intended use: every block on this device already serves remote
    // atomics and signals at full speed, and the specification lets unknown bits be ignored.
    (void)hints;
    return allocate("shmem_malloc_with_hints", size, 64, false);
}

SHMEM_EXPORT void *pshmem_calloc(size_t count, size_t size) {
    size_t total = 0;
    if (__builtin_mul_overflow(count, size, &total)) {
        require_running("shmem_calloc");
        char msg[160];
        std::snprintf(msg, sizeof msg,
                      "shmem_calloc: invalid arguments count=%zu size=%zu: product overflows",
                      count, size);
        core::log_error(msg);
        return nullptr;
    }
    return allocate("shmem_calloc", total, 64, true);
}

SHMEM_EXPORT void *pshmem_align(size_t alignment, size_t size) {
    require_running("shmem_align");
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        char msg[128];
        std::snprintf(msg, sizeof msg,
                      "shmem_align: invalid argument alignment=%zu: not a power of two", alignment);
        core::log_error(msg);
        return nullptr;
    }
    return allocate("shmem_align", size, alignment, false);
}

SHMEM_EXPORT void *pshmem_realloc(void *ptr, size_t size) {
    require_running("shmem_realloc");
    if (ptr == nullptr) return allocate("shmem_realloc", size, 64, false);
    try {
        if (size == 0) {
            core::heap_free("shmem_realloc", reinterpret_cast<uintptr_t>(ptr));
            return nullptr;
        }
        return reinterpret_cast<void *>(
            core::heap_realloc("shmem_realloc", reinterpret_cast<uintptr_t>(ptr), size));
    } catch (const rust::Error &) {
        return nullptr;
    }
}

SHMEM_EXPORT void pshmem_free(void *ptr) {
    require_running("shmem_free");
    if (ptr == nullptr) return;
    try {
        core::heap_free("shmem_free", reinterpret_cast<uintptr_t>(ptr));
    } catch (const rust::Error &) {
        fail_logged();
    }
}

SHMEM_EXPORT void *pshmem_ptr(const void *dest, int pe) {
    require_running("shmem_ptr");
    if (static_cast<unsigned>(pe) >= static_cast<unsigned>(g.n_pes)) fail_pe("shmem_ptr", pe);
    return load_store_ptr(dest, pe);
}

SHMEM_EXPORT int pshmem_pe_accessible(int pe) {
    require_running("shmem_pe_accessible");
    return static_cast<unsigned>(pe) < static_cast<unsigned>(g.n_pes) ? 1 : 0;
}

SHMEM_EXPORT int pshmem_addr_accessible(const void *addr, int pe) {
    require_running("shmem_addr_accessible");
    if (static_cast<unsigned>(pe) >= static_cast<unsigned>(g.n_pes)) return 0;
    return symmetric_range(addr, 1) && g.reach[pe] != SHMEM_JOB_REACH_NONE ? 1 : 0;
}

SHMEM_WEAK_ALIAS(shmem_malloc)
SHMEM_WEAK_ALIAS(shmem_malloc_with_hints)
SHMEM_WEAK_ALIAS(shmem_calloc)
SHMEM_WEAK_ALIAS(shmem_align)
SHMEM_WEAK_ALIAS(shmem_realloc)
SHMEM_WEAK_ALIAS(shmem_free)
SHMEM_WEAK_ALIAS(shmem_ptr)
SHMEM_WEAK_ALIAS(shmem_pe_accessible)
SHMEM_WEAK_ALIAS(shmem_addr_accessible)
