// coll_reduce.cpp: reductions over teams (shmem_TYPENAME_OP_reduce) and active sets
// (shmem_TYPENAME_OP_to_all), generated from SHMEM_REDUCE_OPS.
//
// Small arrays (up to kBlockBytes): after a barrier every member combines all members' sources
// into a block on its stack, then a second barrier, then writes its own dest; so dest may be the
// source (in place) and no member writes memory another reads.
// Larger arrays are split by chunk across members: after a barrier member k combines chunk k of
// every source, block by block, and writes the result into chunk k of every member's dest; a
// second barrier ends it. In place works here too: chunk k of a source is read by member k
// only, before member k writes it.
// Members combine sources in team PE order, so floating-point results are the same on every PE.
#include <complex>
#include <type_traits>

#include "coll.h"

using namespace shmem::detail;

namespace {

constexpr size_t kBlockBytes = 4096;

// Integer sums and products wrap (done in 64-bit unsigned arithmetic, which has no overflow).
template <typename T>
inline T wrap_add(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    } else {
        return a + b;
    }
}

template <typename T>
inline T wrap_mul(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    } else {
        return a * b;
    }
}

struct OpAnd {
    template <typename T>
    static T apply(T a, T b) {
        return static_cast<T>(a & b);
    }
};
struct OpOr {
    template <typename T>
    static T apply(T a, T b) {
        return static_cast<T>(a | b);
    }
};
struct OpXor {
    template <typename T>
    static T apply(T a, T b) {
        return static_cast<T>(a ^ b);
    }
};
struct OpMax {
    template <typename T>
    static T apply(T a, T b) {
        return b > a ? b : a;
    }
};
struct OpMin {
    template <typename T>
    static T apply(T a, T b) {
        return b < a ? b : a;
    }
};
struct OpSum {
    template <typename T>
    static T apply(T a, T b) {
        return wrap_add(a, b);
    }
};
struct OpProd {
    template <typename T>
    static T apply(T a, T b) {
        return wrap_mul(a, b);
    }
};

// acc[i] = acc[i] op src[i], i < n.
template <typename Op, typename T>
inline void combine(T *__restrict acc, const T *__restrict src, size_t n) {
    for (size_t i = 0; i < n; i++) acc[i] = Op::apply(acc[i], src[i]);
}

// Elements [first, first + n) of `src` on world PE `pe`: where it is mapped here, else fetched
// into `bounce` (n elements).
template <typename T>
inline const T *source_block(const Members &m, Sym src, size_t first, size_t n, int pe, T *bounce) {
    Sym at = src.plus(first * sizeof(T));
    if (const char *mapped = peer_mapped(at, pe)) return reinterpret_cast<const T *>(mapped);
    peer_get(m.call, bounce, at, pe, n * sizeof(T));
    return bounce;
}

// acc[0, n) = elements [first, first + n) combined over every member's source.
template <typename Op, typename T>
inline void reduce_block(const Members &m, Sym src, size_t first, T *acc, size_t n, T *bounce) {
    std::memcpy(acc, source_block(m, src, first, n, m.world(0), bounce), n * sizeof(T));
    for (int i = 1; i < m.size; i++) {
        combine<Op>(acc, source_block(m, src, first, n, m.world(i), bounce), n);
    }
}

template <typename Op, typename T, class Sync>
void reduce(const Members &m, Sync &sync, Sym src, Sym dst, size_t n) {
    constexpr size_t kBlock = kBlockBytes / sizeof(T);
    alignas(64) unsigned char buffer[kBlockBytes];
    alignas(64) unsigned char fetched[kBlockBytes];  // a member's block, when it is not mapped
    T *acc = reinterpret_cast<T *>(buffer);
    T *bounce = reinterpret_cast<T *>(fetched);
    sync.barrier();
    if (n <= kBlock) {
        if (n != 0) reduce_block<Op>(m, src, 0, acc, n, bounce);
        sync.barrier();
        // Through peer.h, so a heap the CPU must not touch is written by its device.
        if (n != 0) peer_put(m.call, dst, g.my_pe, acc, n * sizeof(T));
        return;
    }
    // Chunks are whole cache lines where the type allows, so members never write one line.
    constexpr size_t kLine = sizeof(T) < 64 ? 64 / sizeof(T) : 1;
    size_t chunk = (n + static_cast<size_t>(m.size) - 1) / static_cast<size_t>(m.size);
    chunk = (chunk + kLine - 1) / kLine * kLine;
    size_t lo = std::min(n, chunk * static_cast<size_t>(m.me));
    size_t hi = std::min(n, lo + chunk);
    for (size_t first = lo; first < hi; first += kBlock) {
        size_t len = std::min(kBlock, hi - first);
        reduce_block<Op>(m, src, first, acc, len, bounce);
        for (int k = 0; k < m.size; k++) {
            int j = (m.me + k) % m.size;
            peer_put(m.call, dst.plus(first * sizeof(T)), m.world(j), acc, len * sizeof(T));
        }
    }
    sync.barrier();
}

// dest and source: the same array or disjoint, both symmetric, of `n` elements.
template <typename T>
void reduce_args(const char *call, T *dest, const T *source, size_t n, Sym *src, Sym *dst) {
    size_t bytes = bytes_of(call, "nreduce", n, sizeof(T));
    *src = symmetric(call, "source", source, bytes);
    *dst = symmetric(call, "dest", dest, bytes);
    uintptr_t d = reinterpret_cast<uintptr_t>(dest), s = reinterpret_cast<uintptr_t>(source);
    if (bytes != 0 && d != s && d < s + bytes && s < d + bytes) {
        fail(call,
             "invalid arguments dest=%p and source=%p: %zu-byte arrays that overlap without "
             "being the same",
             static_cast<void *>(dest), static_cast<const void *>(source), bytes);
    }
}

template <typename Op, typename T>
int team_reduce(const char *call, shmem_team_t team, T *dest, const T *source, size_t nreduce) {
    shmem_team_s *t = coll_team(call, team);
    Sym src, dst;
    reduce_args(call, dest, source, nreduce, &src, &dst);
    TeamSync sync(call, t, team_enter(t, call, kTeamCheckCount, nreduce));
    reduce<Op, T>(members_of(call, t), sync, src, dst, nreduce);
    return 0;
}

template <typename Op, typename T>
void to_all(const char *call, T *dest, const T *source, int nreduce, int PE_start, int logPE_stride,
            int PE_size, long *pSync) {
    Members m = active_set(call, PE_start, logPE_stride, PE_size);
    Sym ps = psync_checked(call, pSync);
    if (nreduce < 0) fail(call, "invalid argument nreduce=%d: negative", nreduce);
    Sym src, dst;
    reduce_args(call, dest, source, static_cast<size_t>(nreduce), &src, &dst);
    PsyncSync sync(m, ps);
    reduce<Op, T>(m, sync, src, dst, static_cast<size_t>(nreduce));
}

#define SHMEM_OP_and OpAnd
#define SHMEM_OP_or OpOr
#define SHMEM_OP_xor OpXor
#define SHMEM_OP_max OpMax
#define SHMEM_OP_min OpMin
#define SHMEM_OP_sum OpSum
#define SHMEM_OP_prod OpProd

}  // namespace

#define SHMEM_DEFINE_REDUCE(TYPE, NAME, OP)                                                        \
    SHMEM_EXPORT int pshmem_##NAME##_##OP##_reduce(shmem_team_t team, TYPE *dest,                  \
                                                   const TYPE *source, size_t nreduce) {           \
        return team_reduce<SHMEM_OP_##OP>("shmem_" #NAME "_" #OP "_reduce", team, dest, source,    \
                                          nreduce);                                                \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_##OP##_reduce)
#define SHMEM_DEFINE_TO_ALL(TYPE, NAME, OP)                                                        \
    SHMEM_EXPORT void pshmem_##NAME##_##OP##_to_all(TYPE *dest, const TYPE *source, int nreduce,   \
                                                    int PE_start, int logPE_stride, int PE_size,   \
                                                    TYPE *pWrk, long *pSync) {                     \
        to_all<SHMEM_OP_##OP>("shmem_" #NAME "_" #OP "_to_all", dest, source, nreduce, PE_start,   \
                              logPE_stride, PE_size, pSync);                                       \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_##OP##_to_all)
#define SHMEM_DEFINE_REDUCE_OP(OP, TEAM_TYPES, ACTIVE_SET_TYPES)                                   \
    TEAM_TYPES(SHMEM_DEFINE_REDUCE, OP)                                                            \
    ACTIVE_SET_TYPES(SHMEM_DEFINE_TO_ALL, OP)
SHMEM_REDUCE_OPS(SHMEM_DEFINE_REDUCE_OP)
