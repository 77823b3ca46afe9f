// amo.h: the atomics behind every AMO (amo.cpp, ctx_amo.cpp) and signal update (signal.cpp):
// one CPU atomic on the peer's mapped element, or, while any PE of the job is reached through a
// transport, the transport's atomic, to mapped PEs too (CPU atomics and a transport's atomics
// on one word are not atomic together; docs/architecture.md). `pe` is a world PE; `ctx` the
// context (nullptr: the default one), read by the transport only.
#pragma once

#include <cstdint>
#include <cstring>

#include "internal.h"

namespace shmem::detail {

constexpr int kOrder = __ATOMIC_SEQ_CST;

// The target element on `pe`: symmetric and naturally aligned (a misaligned atomic would be a
// split lock, or not atomic at all). nullptr: a transport is in use and the AMO goes through it.
template <typename T>
SHMEM_HOT_INLINE T *target(const char *call, const char *arg, const void *dest, int pe) {
    if (SHMEM_UNLIKELY(reinterpret_cast<uintptr_t>(dest) % sizeof(T) != 0)) {
        fail(call, "invalid argument %s=%p: not aligned to its %zu-byte type", arg, dest,
             sizeof(T));
    }
    return reinterpret_cast<T *>(amo_remote(call, dest, sizeof(T), pe));
}

template <typename T>
inline T *fetch_buffer(const char *call, T *fetch) {
    if (SHMEM_UNLIKELY(fetch == nullptr)) fail(call, "invalid argument fetch=NULL");
    return fetch;
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the transport table carries an element in the low bytes of a uint64_t");

// The transport's AMO `op` on the element at `dest` of type T, values as T (the cold path of a
// miss of target(): transport_amo first checks `dest`, naming it as `arg`).
template <typename T>
__attribute__((cold, noinline)) T amo_via(const char *call, const void *ctx, int op,
                                          const void *dest, T value, T compare, int pe) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "AMO elements are 4 or 8 bytes");
    uint64_t v = 0, c = 0;
    std::memcpy(&v, &value, sizeof(T));
    std::memcpy(&c, &compare, sizeof(T));
    const char *arg = op == SHMEM_TRANSPORT_AMO_FETCH ? "source" : "dest";
    uint64_t old = transport_amo(call, arg, ctx, op, dest, sizeof(T), v, c, pe);
    T out;
    std::memcpy(&out, &old, sizeof(T));
    return out;
}

template <typename T>
SHMEM_HOT_INLINE T fetch(const char *call, const T *source, int pe, const void *ctx = nullptr) {
    T *p = target<T>(call, "source", source, pe);
    if (SHMEM_UNLIKELY(p == nullptr)) {
        return amo_via<T>(call, ctx, SHMEM_TRANSPORT_AMO_FETCH, source, T{}, T{}, pe);
    }
    T out;
    __atomic_load(p, &out, kOrder);
    return out;
}

template <typename T>
SHMEM_HOT_INLINE void set(const char *call, T *dest, T value, int pe, const void *ctx = nullptr) {
    T *p = target<T>(call, "dest", dest, pe);
    if (SHMEM_UNLIKELY(p == nullptr)) {
        amo_via<T>(call, ctx, SHMEM_TRANSPORT_AMO_SET, dest, value, T{}, pe);
        return;
    }
    __atomic_store(p, &value, kOrder);
}

template <typename T>
SHMEM_HOT_INLINE T swap(const char *call, T *dest, T value, int pe, const void *ctx = nullptr) {
    T *p = target<T>(call, "dest", dest, pe);
    if (SHMEM_UNLIKELY(p == nullptr)) {
        return amo_via<T>(call, ctx, SHMEM_TRANSPORT_AMO_SWAP, dest, value, T{}, pe);
    }
    T out;
    __atomic_exchange(p, &value, &out, kOrder);
    return out;
}

template <typename T>
SHMEM_HOT_INLINE T compare_swap(const char *call, T *dest, T cond, T value, int pe,
                                const void *ctx = nullptr) {
    T *p = target<T>(call, "dest", dest, pe);
    if (SHMEM_UNLIKELY(p == nullptr)) {
        return amo_via<T>(call, ctx, SHMEM_TRANSPORT_AMO_COMPARE_SWAP, dest, value, cond, pe);
    }
    __atomic_compare_exchange_n(p, &cond, value, false, kOrder, kOrder);
    return cond;  // the value found, whether or not it matched
}

#define SHMEM_AMO_FETCH_OP(NAME, OP)                                                               \
    template <typename T>                                                                          \
    SHMEM_HOT_INLINE T fetch_##NAME(const char *call, T *dest, T value, int pe,                    \
                                    const void *ctx = nullptr) {                                   \
        T *p = target<T>(call, "dest", dest, pe);                                                  \
        if (SHMEM_UNLIKELY(p == nullptr)) {                                                        \
            return amo_via<T>(call, ctx, OP, dest, value, T{}, pe);                                \
        }                                                                                          \
        return __atomic_fetch_##NAME(p, value, kOrder);                                            \
    }
SHMEM_AMO_FETCH_OP(add, SHMEM_TRANSPORT_AMO_FETCH_ADD)
SHMEM_AMO_FETCH_OP(and, SHMEM_TRANSPORT_AMO_FETCH_AND)
SHMEM_AMO_FETCH_OP(or, SHMEM_TRANSPORT_AMO_FETCH_OR)
SHMEM_AMO_FETCH_OP(xor, SHMEM_TRANSPORT_AMO_FETCH_XOR)
#undef SHMEM_AMO_FETCH_OP

}  // namespace shmem::detail
