// rma.h: the copies behind every put and get (rma.cpp, ctx_rma.cpp, signal.cpp): a bounds
// check of the remote range and a copy into or out of the peer's mapping. `pe` is a world PE.
#pragma once

#include <cstring>

#include "internal.h"

namespace shmem::detail {

// Bytes in `nelems` elements of `size`, or a clear error on overflow.
inline size_t extent(const char *call, size_t nelems, size_t size) {
    size_t bytes;
    if (SHMEM_UNLIKELY(__builtin_mul_overflow(nelems, size, &bytes))) {
        fail(call, "invalid argument nelems=%zu: %zu-byte elements overflow size_t", nelems, size);
    }
    return bytes;
}

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

// One element; Size is known at compile time, so the copy is a load and a store.
template <size_t Size>
inline void put_one(const char *call, void *dest, const void *value, int pe) {
    std::memcpy(remote(call, "dest", dest, Size, pe), value, Size);
}

template <size_t Size>
inline void get_one(const char *call, void *value, const void *source, int pe) {
    std::memcpy(value, remote(call, "source", source, Size, pe), Size);
}

// Lowest byte and byte span of `nelems` elements `stride` apart starting at `base`.
inline const char *strided_span(const char *call, const char *arg, const void *base,
                                ptrdiff_t stride, size_t nelems, size_t size, size_t *span) {
    const char *first = static_cast<const char *>(base);
    ptrdiff_t step;
    ptrdiff_t reach;
    if (SHMEM_UNLIKELY(nelems > static_cast<size_t>(PTRDIFF_MAX) ||
                       __builtin_mul_overflow(stride, static_cast<ptrdiff_t>(size), &step) ||
                       __builtin_mul_overflow(step, static_cast<ptrdiff_t>(nelems - 1), &reach))) {
        fail(call, "invalid arguments %s stride=%td nelems=%zu: the range overflows", arg, stride,
             nelems);
    }
    *span = static_cast<size_t>(reach < 0 ? -reach : reach) + size;
    return reach < 0 ? first + reach : first;
}

// Strided copy of `nelems` elements of Size bytes, `dst` and `sst` elements apart.
template <size_t Size>
void strided(const char *call, bool is_put, void *dest, const void *source, ptrdiff_t dst,
             ptrdiff_t sst, size_t nelems, int pe) {
    if (nelems == 0) {
        if (SHMEM_UNLIKELY(static_cast<unsigned>(pe) >= static_cast<unsigned>(g.n_pes))) {
            fail_pe(call, pe);
        }
        return;
    }
    size_t dspan, sspan;
    const char *dlow = strided_span(call, "dst", dest, dst, nelems, Size, &dspan);
    const char *slow = strided_span(call, "sst", source, sst, nelems, Size, &sspan);
    char *d = static_cast<char *>(dest);
    const char *s = static_cast<const char *>(source);
    if (is_put) {
        require_buffer(call, "source", source, nelems);
        d = remote(call, "dest", dlow, dspan, pe) + (d - dlow);
    } else {
        require_buffer(call, "dest", dest, nelems);
        s = remote(call, "source", slow, sspan, pe) + (s - slow);
    }
    const ptrdiff_t dstep = dst * static_cast<ptrdiff_t>(Size);
    const ptrdiff_t sstep = sst * static_cast<ptrdiff_t>(Size);
    for (size_t i = 0; i < nelems; i++, d += dstep, s += sstep) std::memcpy(d, s, Size);
}

}  // namespace shmem::detail
