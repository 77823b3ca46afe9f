// rma.h: the copies behind every put and get (rma.cpp, ctx_rma.cpp, signal.cpp): a bounds
// check of the remote range, then a copy into or out of the peer's mapping when it is mapped
// here, else the transport's put or get. `pe` is a world PE; `ctx` the context (nullptr: the
// default one) and `nbi` whether the call is non-blocking, both read by the transport only.
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

SHMEM_HOT_INLINE void put(const char *call, void *dest, const void *source, size_t n, int pe,
                          const void *ctx = nullptr, bool nbi = false) {
    char *to = remote(call, dest, n, pe);
    require_buffer(call, "source", source, n);
    if (SHMEM_UNLIKELY(to == nullptr)) {
        return nbi ? transport_put<true>(call, ctx, dest, source, n, pe)
                   : transport_put<false>(call, ctx, dest, source, n, pe);
    }
    copy(to, source, n);
}

SHMEM_HOT_INLINE void get(const char *call, void *dest, const void *source, size_t n, int pe,
                          const void *ctx = nullptr, bool nbi = false) {
    const char *from = remote(call, source, n, pe);
    require_buffer(call, "dest", dest, n);
    if (SHMEM_UNLIKELY(from == nullptr)) {
        return nbi ? transport_get<true>(call, ctx, dest, source, n, pe)
                   : transport_get<false>(call, ctx, dest, source, n, pe);
    }
    copy(dest, from, n);
}

// One element; Size is known at compile time, so the copy is a load and a store.
template <size_t Size>
SHMEM_HOT_INLINE void put_one(const char *call, void *dest, const void *value, int pe,
                              const void *ctx = nullptr) {
    char *to = remote(call, dest, Size, pe);
    if (SHMEM_UNLIKELY(to == nullptr)) {
        if constexpr (Size <= sizeof(uint64_t)) {
            uint64_t bits = 0;
            std::memcpy(&bits, value, Size);
            return transport_put_one<Size>(call, ctx, dest, bits, pe);
        } else {
            return transport_put<false>(call, ctx, dest, value, Size, pe);
        }
    }
    std::memcpy(to, value, Size);
}

template <size_t Size>
SHMEM_HOT_INLINE void get_one(const char *call, void *value, const void *source, int pe,
                              const void *ctx = nullptr) {
    const char *from = remote(call, source, Size, pe);
    if (SHMEM_UNLIKELY(from == nullptr)) {
        if constexpr (Size <= sizeof(uint64_t)) {
            uint64_t bits = transport_get_one<Size>(call, ctx, source, pe);
            std::memcpy(value, &bits, Size);
            return;
        } else {
            return transport_get<false>(call, ctx, value, source, Size, pe);
        }
    }
    std::memcpy(value, from, Size);
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
             ptrdiff_t sst, size_t nelems, int pe, const void *ctx = nullptr) {
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
    const char *mapped;  // the remote range's lowest byte as mapped here; nullptr: transport
    if (is_put) {
        require_buffer(call, "source", source, nelems);
        mapped = remote(call, dlow, dspan, pe);
        d = const_cast<char *>(mapped) + (d - dlow);
    } else {
        require_buffer(call, "dest", dest, nelems);
        mapped = remote(call, slow, sspan, pe);
        s = mapped + (s - slow);
    }
    const ptrdiff_t dstep = dst * static_cast<ptrdiff_t>(Size);
    const ptrdiff_t sstep = sst * static_cast<ptrdiff_t>(Size);
    if (SHMEM_UNLIKELY(mapped == nullptr)) {
        // The whole span is checked first (nothing is written when it is refused), then one
        // element per call at the user's addresses (the transport path locates the symmetric
        // side).
        if (is_put) {
            remote_miss(call, "dest", dlow, dspan, pe, false);
        } else {
            remote_miss(call, "source", slow, sspan, pe, false);
        }
        char *ud = static_cast<char *>(dest);
        const char *us = static_cast<const char *>(source);
        for (size_t i = 0; i < nelems; i++, ud += dstep, us += sstep) {
            if (is_put) {
                transport_put<false>(call, ctx, ud, us, Size, pe);
            } else {
                transport_get<false>(call, ctx, ud, us, Size, pe);
            }
        }
        return;
    }
    for (size_t i = 0; i < nelems; i++, d += dstep, s += sstep) std::memcpy(d, s, Size);
}

}  // namespace shmem::detail
