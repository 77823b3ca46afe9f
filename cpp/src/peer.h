// peer.h: how the facade's collectives, locks and team words reach a word or a range of another
// PE's heap, static data or control segment; never installed.
//
// A location is a symmetric segment and an offset in it (Sym), the same on every PE. Where the
// job state publishes a base for the PE (it is mapped here) a helper is a load, a store, a copy
// or a CPU atomic through the mapping, inline; where it publishes 0 (the PE is reached through a
// transport, its memory is never touched through a mapping) the helper calls the transport
// table, out of line (transport.cpp). AMOs follow the atomicity rule (docs/architecture.md §5):
// while a transport is in use every one goes through it, to mapped PEs and this PE too. Words that
// several PEs change are changed only by AMOs; the others have one writer (a flag, an epoch, a
// published value) and are written by stores or puts.
//
// The per-element data path (rma.h, amo.h) has helpers of its own, which start from the user's
// address rather than from a checked location.
#pragma once

#include <cstdint>

#include "internal.h"

namespace shmem::detail {

// A location in every PE's segment `segment` (SHMEM_TRANSPORT_SEGMENT_*), `off` bytes in.
struct Sym {
    int segment = SHMEM_TRANSPORT_SEGMENT_HEAP;
    uint64_t off = 0;
    // The location `bytes` further on.
    Sym plus(uint64_t bytes) const { return {segment, off + bytes}; }
};

// The location of this PE's address `addr`, which the caller found symmetric (heap or static
// data).
inline Sym sym_of_addr(const void *addr) {
    uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    uintptr_t heap_off = a - g.heap_base;
    if (heap_off < g.heap_size) return {SHMEM_TRANSPORT_SEGMENT_HEAP, heap_off};
    return {SHMEM_TRANSPORT_SEGMENT_DATA, a - g.data_base};
}

// This PE's own address of `s` (heap or static data): its memory, mapped or not.
inline char *local_addr(Sym s) {
    uintptr_t base = s.segment == SHMEM_TRANSPORT_SEGMENT_HEAP ? g.heap_base : g.data_base;
    return reinterpret_cast<char *>(base + s.off);
}

// Word `line` (SHMEM_TEAM_AREA_*) of team slot `slot`'s area, in every PE's control segment.
inline Sym team_word(int slot, int line) {
    return {SHMEM_TRANSPORT_SEGMENT_CONTROL,
            g.control_teams + static_cast<uint64_t>(slot) * g.team_area_size +
                static_cast<uint64_t>(line) * SHMEM_TEAM_AREA_LINE_BYTES};
}

// Where `s` on world PE `pe` is mapped here, or nullptr: the PE is reached through the
// transport (or, for static data, it is not symmetric, which callers have ruled out).
SHMEM_HOT_INLINE char *peer_mapped(Sym s, int pe) {
    size_t p = static_cast<size_t>(pe);
    uintptr_t base = s.segment == SHMEM_TRANSPORT_SEGMENT_CONTROL
                         ? g.control_bases[p]
                         : g.bases[2 * p + static_cast<size_t>(s.segment)];
    return base == 0 ? nullptr : reinterpret_cast<char *>(base + s.off);
}

// The transport's side (transport.cpp): blocking, complete when they return; each ends the job when
// the transport fails (it logged why) or no transport reaches `pe` (naming `call`).
void peer_get_cold(const char *call, void *dest, Sym s, int pe, size_t n)
    __attribute__((cold, noinline));
void peer_put_cold(const char *call, Sym s, int pe, const void *source, size_t n)
    __attribute__((cold, noinline));
uint64_t peer_amo_cold(const char *call, int op, Sym s, int pe, size_t size, uint64_t value,
                       uint64_t compare) __attribute__((cold, noinline));

// n bytes at `s` on `pe` into `dest`.
SHMEM_HOT_INLINE void peer_get(const char *call, void *dest, Sym s, int pe, size_t n) {
    const char *from = peer_mapped(s, pe);
    if (SHMEM_UNLIKELY(from == nullptr)) return peer_get_cold(call, dest, s, pe, n);
    copy(dest, from, n);
}

// n bytes of `source` to `s` on `pe`.
SHMEM_HOT_INLINE void peer_put(const char *call, Sym s, int pe, const void *source, size_t n) {
    char *to = peer_mapped(s, pe);
    if (SHMEM_UNLIKELY(to == nullptr)) return peer_put_cold(call, s, pe, source, n);
    copy(to, source, n);
}

// The word of type T at `s` on `pe`, read with acquire order (a get: complete on return).
template <typename T>
SHMEM_HOT_INLINE T peer_load(const char *call, Sym s, int pe) {
    const T *p = reinterpret_cast<const T *>(peer_mapped(s, pe));
    T v;
    if (SHMEM_UNLIKELY(p == nullptr)) {
        peer_get_cold(call, &v, s, pe, sizeof(T));
        return v;
    }
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

// Stores `v` into the word at `s` on `pe` with release order (a blocking put: what this PE
// wrote before is visible first). For words with one writer only.
template <typename T>
SHMEM_HOT_INLINE void peer_store(const char *call, Sym s, int pe, T v) {
    T *p = reinterpret_cast<T *>(peer_mapped(s, pe));
    if (SHMEM_UNLIKELY(p == nullptr)) return peer_put_cold(call, s, pe, &v, sizeof(T));
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

// The AMO `op` (SHMEM_TRANSPORT_AMO_*) on the word of type T (4 or 8 bytes) at `s` on `pe`;
// returns the old value. A CPU atomic on the mapping when no transport is in use, else the
// transport's, whatever the PE.
template <typename T>
SHMEM_HOT_INLINE T peer_amo(const char *call, int op, Sym s, int pe, T value, T compare = T{}) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "AMO elements are 4 or 8 bytes");
    if (SHMEM_UNLIKELY(g.transport != nullptr)) {
        uint64_t v = 0, c = 0;
        __builtin_memcpy(&v, &value, sizeof(T));
        __builtin_memcpy(&c, &compare, sizeof(T));
        uint64_t old = peer_amo_cold(call, op, s, pe, sizeof(T), v, c);
        T out;
        __builtin_memcpy(&out, &old, sizeof(T));
        return out;
    }
    T *p = reinterpret_cast<T *>(peer_mapped(s, pe));  // no transport: every PE is mapped
    switch (op) {
    case SHMEM_TRANSPORT_AMO_FETCH: return __atomic_load_n(p, __ATOMIC_SEQ_CST);
    case SHMEM_TRANSPORT_AMO_SET: __atomic_store_n(p, value, __ATOMIC_SEQ_CST); return T{};
    case SHMEM_TRANSPORT_AMO_SWAP: return __atomic_exchange_n(p, value, __ATOMIC_SEQ_CST);
    case SHMEM_TRANSPORT_AMO_COMPARE_SWAP:
        __atomic_compare_exchange_n(p, &compare, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return compare;  // the value found, whether or not it matched
    case SHMEM_TRANSPORT_AMO_FETCH_ADD: return __atomic_fetch_add(p, value, __ATOMIC_SEQ_CST);
    case SHMEM_TRANSPORT_AMO_FETCH_AND: return __atomic_fetch_and(p, value, __ATOMIC_SEQ_CST);
    case SHMEM_TRANSPORT_AMO_FETCH_OR: return __atomic_fetch_or(p, value, __ATOMIC_SEQ_CST);
    default: return __atomic_fetch_xor(p, value, __ATOMIC_SEQ_CST);
    }
}

// Whether world PE `pe` is reached through the transport (its memory is not mapped here).
inline bool peer_via_transport(int pe) {
    return g.reach[static_cast<size_t>(pe)] != SHMEM_JOB_REACH_MAPPED;
}

}  // namespace shmem::detail
