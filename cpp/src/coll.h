// coll.h: what the collectives share (coll.cpp, coll_reduce.cpp, team.cpp); never installed.
//
// A collective moves data between members' symmetric buffers through peer.h: a copy where the
// member is mapped here, the transport's get or put where it is not. Each PE pulls what it needs
// from its peers' `source` into its own `dest` (a reduction also pushes its share of the result
// into its peers' `dest`). Members synchronise on flags: a team's on its area (epochs that only
// grow, see team.h), an active set on its pSync array (words that return to SHMEM_SYNC_VALUE).
// Waits check their flag inline first, then by the library's waiting policy (watch.h's wait_for),
// so 8 PEs on 2 cores make progress. Nothing here allocates, locks or logs once the arguments have
// been checked.
#pragma once

#include <cstdint>

#include "internal.h"
#include "peer.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"
#include "team.h"
#include "watch.h"

namespace shmem::detail {

// The symmetric range [addr, addr + n) argument `arg` of `call`, as a location on every member
// (peer.h); ends the job naming both when it is neither in the heap nor in symmetric static
// data. Zero bytes accept any address.
inline Sym symmetric(const char *call, const char *arg, const void *addr, size_t n) {
    if (n == 0) return {};
    if (SHMEM_UNLIKELY(!symmetric_range(addr, n))) remote_other(call, arg, addr, n, g.my_pe);
    return sym_of_addr(addr);
}

// `s` (heap or static data) as one word a member publishes for its peers, and back (offsets
// stay below 2^63).
inline uint64_t sym_word(Sym s) {
    return (s.off << 1) | static_cast<uint64_t>(s.segment == SHMEM_TRANSPORT_SEGMENT_DATA);
}
inline Sym sym_of(uint64_t w) {
    return {(w & 1) ? SHMEM_TRANSPORT_SEGMENT_DATA : SHMEM_TRANSPORT_SEGMENT_HEAP, w >> 1};
}

// The PEs a collective runs over: member i is world PE start + i * stride, or pes[i] for a list
// team's (team.h); this PE is `me`. `call` names the collective in messages of the transport
// path.
struct Members {
    int start = 0;
    int stride = 1;
    int size = 1;
    int me = 0;
    const char *call = "";
    const int *pes = nullptr;
    int world(int i) const { return SHMEM_UNLIKELY(pes != nullptr) ? pes[i] : start + i * stride; }
};

inline Members members_of(const char *call, const shmem_team_s *t) {
    return {t->start, t->stride, t->size,
            t->my_pe, call,      t->listed ? team_lists[t->slot] : nullptr};
}

// Two words a member publishes before a barrier and its peers read after it (until the next
// barrier): collect's byte count and where its source is.
struct Published {
    uint64_t value = 0;
    uint64_t value2 = 0;
};

// Synchronisation of a team's collective: its barrier, and the words each member publishes in
// its own area (one writer each), which its peers read once the barrier has passed. Made once
// per call with the call's tag (team_enter), which every barrier of the call carries.
class TeamSync {
public:
    TeamSync(const char *call, shmem_team_s *t, uint64_t tag) : t_(t), call_(call), tag_(tag) {}
    void barrier() { team_barrier(t_, tag_); }
    void publish(Published p) {
        int me = team_world_pe(t_, t_->my_pe);
        peer_store(call_, team_word(t_->slot, SHMEM_TEAM_AREA_VALUE), me, p.value);
        peer_store(call_, team_word(t_->slot, SHMEM_TEAM_AREA_VALUE2), me, p.value2);
    }
    Published published(int i) const {
        int pe = team_world_pe(t_, i);
        return {peer_load<uint64_t>(call_, team_word(t_->slot, SHMEM_TEAM_AREA_VALUE), pe),
                peer_load<uint64_t>(call_, team_word(t_->slot, SHMEM_TEAM_AREA_VALUE2), pe)};
    }
    void unpublish() {}

private:
    shmem_team_s *t_;
    const char *call_;
    uint64_t tag_;
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
// member resets its release word before it can arrive again. The counter, which every member
// changes, changes only by AMOs (through the transport while one is in use); every other word
// has one writer at a time, and a member waits only on words of its own.
class PsyncSync {
public:
    PsyncSync(const Members &m, Sym psync_sym) : m_(m), sym_(psync_sym) {}
    void barrier() {
        if (m_.size == 1) return;
        int me = m_.world(m_.me);
        if (m_.me == 0) {
            long want = m_.size - 1;
            wait_for([&] { return peer_load<long>(m_.call, word(kPsyncCount), me) == want; });
            peer_amo<long>(m_.call, SHMEM_TRANSPORT_AMO_SET, word(kPsyncCount), me, 0L);
            for (int i = 1; i < m_.size; i++) {
                peer_store(m_.call, word(kPsyncRelease), m_.world(i), 1L);
            }
            return;
        }
        peer_amo<long>(m_.call, SHMEM_TRANSPORT_AMO_FETCH_ADD, word(kPsyncCount), m_.world(0), 1L);
        wait_for([&] { return peer_load<long>(m_.call, word(kPsyncRelease), me) == 1; });
        peer_store(m_.call, word(kPsyncRelease), me, 0L);
    }
    void publish(Published p) {
        int me = m_.world(m_.me);
        peer_store(m_.call, word(kPsyncValue), me, static_cast<long>(p.value));
        peer_store(m_.call, word(kPsyncValue2), me, static_cast<long>(p.value2));
    }
    Published published(int i) const {
        return {static_cast<uint64_t>(peer_load<long>(m_.call, word(kPsyncValue), m_.world(i))),
                static_cast<uint64_t>(peer_load<long>(m_.call, word(kPsyncValue2), m_.world(i)))};
    }
    void unpublish() {
        int me = m_.world(m_.me);
        peer_store(m_.call, word(kPsyncValue), me, 0L);
        peer_store(m_.call, word(kPsyncValue2), me, 0L);
    }

private:
    Sym word(int w) const { return sym_.plus(static_cast<uint64_t>(w) * sizeof(long)); }
    Members m_;
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
