// rma.cpp: byte puts and gets. On this device every peer's heap is mapped here, so a put is a
// copy into the peer's mapping and completes at once; the non-blocking forms are the same copy.
#include <cstring>

#include "internal.h"

using namespace shmem::detail;

namespace shmem::detail {

void copy(void *dst, const void *src, size_t n) { std::memcpy(dst, src, n); }

}  // namespace shmem::detail

namespace {

inline void put(const char *call, void *dest, const void *source, size_t n, int pe) {
    char *to = remote(call, "dest", dest, n, pe);
    require_buffer(call, "source", source, n);
    copy(to, source, n);
}

inline void get(const char *call, void *dest, const void *source, size_t n, int pe) {
    const char *from = remote(call, "source", source, n, pe);
    require_buffer(call, "dest", dest, n);
    copy(dest, from, n);
}

}  // namespace

SHMEM_EXPORT void pshmem_putmem(void *dest, const void *source, size_t nelems, int pe) {
    put("shmem_putmem", dest, source, nelems, pe);
}

SHMEM_EXPORT void pshmem_getmem(void *dest, const void *source, size_t nelems, int pe) {
    get("shmem_getmem", dest, source, nelems, pe);
}

SHMEM_EXPORT void pshmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
    put("shmem_putmem_nbi", dest, source, nelems, pe);
}

SHMEM_EXPORT void pshmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
    get("shmem_getmem_nbi", dest, source, nelems, pe);
}

SHMEM_WEAK_ALIAS(shmem_putmem)
SHMEM_WEAK_ALIAS(shmem_getmem)
SHMEM_WEAK_ALIAS(shmem_putmem_nbi)
SHMEM_WEAK_ALIAS(shmem_getmem_nbi)
