// amo.h: the atomics behind every AMO (amo.cpp, ctx_amo.cpp) and signal update (signal.cpp):
// one CPU atomic on the peer's mapped element. `pe` is a world PE.
#pragma once

#include <cstdint>

#include "internal.h"

namespace shmem::detail {

constexpr int kOrder = __ATOMIC_SEQ_CST;

// The target element on `pe`: symmetric and naturally aligned (a misaligned atomic would be a
// split lock, or not atomic at all).
template <typename T>
inline T *target(const char *call, const char *arg, const void *dest, int pe) {
    if (SHMEM_UNLIKELY(reinterpret_cast<uintptr_t>(dest) % sizeof(T) != 0)) {
        fail(call, "invalid argument %s=%p: not aligned to its %zu-byte type", arg, dest,
             sizeof(T));
    }
    return reinterpret_cast<T *>(remote(call, arg, dest, sizeof(T), pe));
}

template <typename T>
inline T *fetch_buffer(const char *call, T *fetch) {
    if (SHMEM_UNLIKELY(fetch == nullptr)) fail(call, "invalid argument fetch=NULL");
    return fetch;
}

template <typename T>
inline T fetch(const char *call, const T *source, int pe) {
    T out;
    __atomic_load(target<T>(call, "source", source, pe), &out, kOrder);
    return out;
}

template <typename T>
inline void set(const char *call, T *dest, T value, int pe) {
    __atomic_store(target<T>(call, "dest", dest, pe), &value, kOrder);
}

template <typename T>
inline T swap(const char *call, T *dest, T value, int pe) {
    T out;
    __atomic_exchange(target<T>(call, "dest", dest, pe), &value, &out, kOrder);
    return out;
}

template <typename T>
inline T compare_swap(const char *call, T *dest, T cond, T value, int pe) {
    __atomic_compare_exchange_n(target<T>(call, "dest", dest, pe), &cond, value, false, kOrder,
                                kOrder);
    return cond;  // the value found, whether or not it matched
}

template <typename T>
inline T fetch_add(const char *call, T *dest, T value, int pe) {
    return __atomic_fetch_add(target<T>(call, "dest", dest, pe), value, kOrder);
}

template <typename T>
inline T fetch_and(const char *call, T *dest, T value, int pe) {
    return __atomic_fetch_and(target<T>(call, "dest", dest, pe), value, kOrder);
}

template <typename T>
inline T fetch_or(const char *call, T *dest, T value, int pe) {
    return __atomic_fetch_or(target<T>(call, "dest", dest, pe), value, kOrder);
}

template <typename T>
inline T fetch_xor(const char *call, T *dest, T value, int pe) {
    return __atomic_fetch_xor(target<T>(call, "dest", dest, pe), value, kOrder);
}

}  // namespace shmem::detail
