// deprecated.cpp: the setup, memory and cache routines OpenSHMEM 1.5 lists as deprecated
// (<shmem/deprecated.h>). Each is the routine that replaced it; errors name the old call where
// it checks something itself. The deprecated AMO and wait names are in amo.cpp and wait.cpp.
#include <pshmem.h>

#include "internal.h"

using namespace shmem::detail;

SHMEM_EXPORT void pstart_pes(int npes) {
    (void)npes;  // the number of PEs comes from the launcher; the argument was always ignored
    pshmem_init();
    // Programs of the start_pes era end without shmem_finalize.
    finalize_at_exit("start_pes");
}

SHMEM_EXPORT int p_my_pe(void) {
    require_running("_my_pe");
    return g.my_pe;
}

SHMEM_EXPORT int p_num_pes(void) {
    require_running("_num_pes");
    return g.n_pes;
}

SHMEM_EXPORT void *pshmalloc(size_t size) { return pshmem_malloc(size); }
SHMEM_EXPORT void pshfree(void *ptr) { pshmem_free(ptr); }
SHMEM_EXPORT void *pshrealloc(void *ptr, size_t size) { return pshmem_realloc(ptr, size); }
SHMEM_EXPORT void *pshmemalign(size_t alignment, size_t size) {
    return pshmem_align(alignment, size);
}

// Cache management: every PE's memory is cache-coherent with the other PEs' stores (they are
// processes on one machine sharing its coherent memory), so there is nothing to invalidate or
// flush; the specification makes these no-ops on such systems.
SHMEM_EXPORT void pshmem_clear_cache_inv(void) {}
SHMEM_EXPORT void pshmem_set_cache_inv(void) {}
SHMEM_EXPORT void pshmem_clear_cache_line_inv(void *dest) { (void)dest; }
SHMEM_EXPORT void pshmem_set_cache_line_inv(void *dest) { (void)dest; }
SHMEM_EXPORT void pshmem_udcflush(void) {}
SHMEM_EXPORT void pshmem_udcflush_line(void *dest) { (void)dest; }

SHMEM_WEAK_ALIAS(start_pes)
SHMEM_WEAK_ALIAS(_my_pe)
SHMEM_WEAK_ALIAS(_num_pes)
SHMEM_WEAK_ALIAS(shmalloc)
SHMEM_WEAK_ALIAS(shfree)
SHMEM_WEAK_ALIAS(shrealloc)
SHMEM_WEAK_ALIAS(shmemalign)
SHMEM_WEAK_ALIAS(shmem_clear_cache_inv)
SHMEM_WEAK_ALIAS(shmem_set_cache_inv)
SHMEM_WEAK_ALIAS(shmem_clear_cache_line_inv)
SHMEM_WEAK_ALIAS(shmem_set_cache_line_inv)
SHMEM_WEAK_ALIAS(shmem_udcflush)
SHMEM_WEAK_ALIAS(shmem_udcflush_line)
