// coll.h: what the collectives share (coll.cpp, coll_reduce.cpp, team.cpp); never installed.
//
// Every member's symmetric buffers are mapped in this process, so a collective moves data with
// plain copies between them: each PE pulls what it needs from its peers' `source` into its own
// `dest` (a reduction also pushes its share of the result into its peers' `dest`). Members
// synchronise on flags: a team's on its area (epochs that only grow, see team.h), an active set
// on its pSync array (words that return to SHMEM_SYNC_VALUE). Waits check their flag inline
// first, then by the library's waiting policy, so 8 PEs on 2 cores make progress. Nothing here
// allocates, locks or logs once the arguments have been checked.
#pragma once

#include <cstdint>

#include "internal.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"
#include "team.h"

namespace shmem::detail {

template <typename T>
inline T load_acquire(const T *p) {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

template <typename T>
inline void store_release(T *p, T v) {
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

// Waits until `done()` holds: a few checks in a row (a peer on another core answers within
// them), then the runtime's policy between checks (spin, yield, bounded naps).
template <typename F>
inline void wait_for(F done) {
    for (int i = 0; i < 32; i++) {
        if (done()) return;
    }
    core::WaitState state{};
    while (!done()) core::wait_snooze(state);
}

// A checked symmetric range: its segment (column of g.mapped_bases) and offset, so a member's copy
// is one addition away.
struct Sym {
    size_t column = 0;
    uintptr_t off = 0;
};

// The symmetric range [addr, addr + n) argument `arg` of `call`; ends the job naming both when it
// is neither in the heap nor in symmetric static data. Zero bytes accept any address.
inline Sym symmetric(const char *call, const char *arg, const void *addr, size_t n) {
    if (n == 0) return {};
    if (SHMEM_UNLIKELY(translate_mapped(addr, n, g.my_pe) == nullptr)) {
        remote_other(call, arg, addr, n, g.my_pe);
    }
    uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    uintptr_t heap_off = a - g.heap_base;
    if (heap_off <= g.heap_size && n <= g.heap_size - heap_off) return {0, heap_off};
    return {1, a - g.data_base};
}

// The range `s` on world PE `pe`, as mapped here.
inline char *at(Sym s, int pe) {
    return reinterpret_cast<char *>(g.mapped_bases[2 * static_cast<size_t>(pe) + s.column] + s.off);
}

// `s` as one word a member publishes for its peers, and back (offsets stay below 2^63).
inline uint64_t sym_word(Sym s) { return (static_cast<uint64_t>(s.off) << 1) | s.column; }
inline Sym sym_of(uint64_t w) {
    return {static_cast<size_t>(w & 1), static_cast<uintptr_t>(w >> 1)};
}

// The PEs a collective runs over: member i is world PE start + i * stride; this PE is `me`.
struct Members {
    int start = 0;
    int stride = 1;
    int size = 1;
    int me = 0;
    int world(int i) const { return start + i * stride; }
};

inline Members members_of(const shmem_team_s *t) {
    return {t->start, t->stride, t->size, t->my_pe};
}

// Two words a member publishes before a barrier and its peers read after it (until the next
// barrier): collect's byte count and where its source is.
struct Published {
    uint64_t value = 0;
    uint64_t value2 = 0;
};

// Synchronisation of a team's collective: its barrier, and the words each member publishes.
class TeamSync {
public:
    explicit TeamSync(shmem_team_s *t) : t_(t) {}
    void barrier() { team_barrier(t_); }
    void publish(Published p) {
        char *mine = t_->areas[t_->my_pe];
        __atomic_store_n(area_word(mine, SHMEM_TEAM_AREA_VALUE), p.value, __ATOMIC_RELAXED);
        __atomic_store_n(area_word(mine, SHMEM_TEAM_AREA_VALUE2), p.value2, __ATOMIC_RELAXED);
    }
    Published published(int i) const {
        return {__atomic_load_n(area_word(t_->areas[i], SHMEM_TEAM_AREA_VALUE), __ATOMIC_RELAXED),
                __atomic_load_n(area_word(t_->areas[i], SHMEM_TEAM_AREA_VALUE2), __ATOMIC_RELAXED)};
    }
    void unpublish() {}

private:
    shmem_team_s *t_;
};

// Words of an active set's pSync array that the collectives use (SHMEM_SYNC_SIZE is larger).
enum PsyncWord : int {
    kPsyncCount = 0,    // arrivals at the barrier (on the set's first PE)
    kPsyncRelease = 1,  // set to 1 by the first PE when the barrier is complete
    kPsyncValue = 2,    // a member's published values (collect's byte count and source)
    kPsyncValue2 = 3,
};
constexpr size_t kPsyncWords = 4;

// Synchronisation of an active-set collective on its pSync array. Every word returns to
// SHMEM_SYNC_VALUE (0) before its owner leaves the collective, so the same pSync may serve the
// next collective at once: the first member resets its counter before releasing anyone, and a
// member resets its release word before it can arrive again.
class PsyncSync {
public:
    PsyncSync(const Members &m, long *psync, Sym psync_sym)
        : m_(m), mine_(psync), sym_(psync_sym) {}
    void barrier() {
        if (m_.size == 1) return;
        if (m_.me == 0) {
            long *count = mine_ + kPsyncCount;
            long want = m_.size - 1;
            wait_for([&] { return load_acquire(count) == want; });
            __atomic_store_n(count, 0L, __ATOMIC_RELAXED);
            for (int i = 1; i < m_.size; i++) {
                store_release(word(i, kPsyncRelease), 1L);
            }
            return;
        }
        __atomic_fetch_add(word(0, kPsyncCount), 1L, __ATOMIC_ACQ_REL);
        long *release = mine_ + kPsyncRelease;
        wait_for([&] { return load_acquire(release) == 1; });
        __atomic_store_n(release, 0L, __ATOMIC_RELAXED);
    }
    void publish(Published p) {
        __atomic_store_n(mine_ + kPsyncValue, static_cast<long>(p.value), __ATOMIC_RELAXED);
        __atomic_store_n(mine_ + kPsyncValue2, static_cast<long>(p.value2), __ATOMIC_RELAXED);
    }
    Published published(int i) const {
        return {static_cast<uint64_t>(__atomic_load_n(word(i, kPsyncValue), __ATOMIC_RELAXED)),
                static_cast<uint64_t>(__atomic_load_n(word(i, kPsyncValue2), __ATOMIC_RELAXED))};
    }
    void unpublish() {
        __atomic_store_n(mine_ + kPsyncValue, 0L, __ATOMIC_RELAXED);
        __atomic_store_n(mine_ + kPsyncValue2, 0L, __ATOMIC_RELAXED);
    }

private:
    long *word(int member, int w) const {
        return reinterpret_cast<long *>(at(sym_, m_.world(member))) + w;
    }
    Members m_;
    long *mine_;
    Sym sym_;
};

// The active set (PE_start, 2^logPE_stride, PE_size) of `call`, which must contain this PE;
// ends the job naming the bad argument otherwise.
Members active_set(const char *call, int PE_start, int logPE_stride, int PE_size);

// The checked pSync argument of `call`: symmetric, aligned, not NULL.
Sym psync_checked(const char *call, const long *pSync);

// The team argument of a team collective (team_check) with `call`'s name.
inline shmem_team_s *coll_team(const char *call, shmem_team_t team) {
    return team_check(call, "team", team);
}

// n * size in bytes, or the job ends naming `arg` when it overflows.
size_t bytes_of(const char *call, const char *arg, size_t n, size_t size);

}  // namespace shmem::detail
