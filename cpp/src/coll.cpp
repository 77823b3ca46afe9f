// coll.cpp: barriers over teams and active sets, and the data-moving collectives (broadcast,
// collect, fcollect, alltoall, alltoalls) in their team, typed, *mem and active-set forms.
//
// Shapes (data moves through peer.h: copies between mappings, or the transport's gets):
// - team barrier: the runtime's barrier (sync/barrier.rs, the one implementation) on the team's
//   areas, through the bridge (team_barrier, team.cpp);
// - broadcast over a team whose members are all mapped here: the root raises its arrival epoch
//   (its low 32 bits, beside the call's tag, which every other member compares with its own);
//   every other member copies from the root's source and raises its done epoch, which the root
//   waits for before it returns (its source may then be reused). Over a team with a member
//   reached through the transport, where watching a peer's epoch costs a round trip per check,
//   the shape of the others;
// - the others: barrier (every source is ready), each member pulls into its own dest, barrier
//   (nobody reads a source any more). Pulls start at the next member, so members do not all
//   read the same one at once. A member waits only on its own words (the barrier's).
// Every team form first records its call on the team (team_enter): barriers carry its tag, and
// a wait that comes to napping looks for a member at the same call number in another call, so
// members whose calls differ end the job naming both rather than wait for ever.
#include "coll.h"

#include <limits>

using namespace shmem::detail;

namespace shmem::detail {

Members active_set(const char *call, int PE_start, int logPE_stride, int PE_size) {
    require_running(call);
    if (PE_start < 0 || PE_start >= g.n_pes) {
        fail(call, "invalid argument PE_start=%d: not in [0, %d)", PE_start, g.n_pes);
    }
    if (logPE_stride < 0 || logPE_stride > 30) {
        fail(call, "invalid argument logPE_stride=%d: not in [0, 30]", logPE_stride);
    }
    if (PE_size < 1) fail(call, "invalid argument PE_size=%d: not positive", PE_size);
    long stride = 1L << logPE_stride;
    long last = PE_start + (PE_size - 1L) * stride;
    if (last >= g.n_pes) {
        fail(call,
             "invalid argument PE_size=%d: with PE_start=%d and logPE_stride=%d the active set "
             "ends at PE %ld, past the last PE %d",
             PE_size, PE_start, logPE_stride, last, g.n_pes - 1);
    }
    long d = g.my_pe - PE_start;
    if (d < 0 || d % stride != 0 || d / stride >= PE_size) {
        fail(call,
             "this PE (%d) is not in the active set PE_start=%d, logPE_stride=%d, PE_size=%d; "
             "only its members may call",
             g.my_pe, PE_start, logPE_stride, PE_size);
    }
    return {PE_start, static_cast<int>(stride), PE_size, static_cast<int>(d / stride), call};
}

Sym psync_checked(const char *call, const long *pSync) {
    if (pSync == nullptr) fail(call, "invalid argument pSync=NULL");
    if (reinterpret_cast<uintptr_t>(pSync) % alignof(long) != 0) {
        fail(call, "invalid argument pSync=%p: not aligned to long",
             static_cast<const void *>(pSync));
    }
    return symmetric(call, "pSync", pSync, kPsyncWords * sizeof(long));
}

size_t bytes_of(const char *call, const char *arg, size_t n, size_t size) {
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes) || bytes > std::numeric_limits<ptrdiff_t>::max()) {
        fail(call, "invalid argument %s=%zu: %zu-byte elements overflow the address space", arg, n,
             size);
    }
    return bytes;
}

}  // namespace shmem::detail

namespace {

// ---- broadcast --------------------------------------------------------------------------------

template <class Sync>
void broadcast_pull(const Members &m, Sync &sync, void *dest, Sym src, size_t bytes, int root,
                    bool root_too);

// Waits for `done()` on team `t` by the library's waiting policy; once the wait naps, it also
// ends the job if a member turns out to be in another call (team_watch).
template <typename Done>
void team_wait_for(const shmem_team_s *t, Done done) {
    for (int i = 0; i < kInlineChecks; i++) {
        if (done()) return;
    }
    shmem::core::WaitState state{};
    while (!done()) {
        if (state.nap_ns != 0) team_watch(t);
        shmem::core::wait_snooze(state);
    }
}

// Team broadcast of `nelems` elements of `elem` bytes from team PE `root`: the root's dest is
// written too.
int team_broadcast(const char *call, shmem_team_t team, void *dest, const void *source,
                   size_t nelems, size_t elem, int root) {
    shmem_team_s *t = coll_team(call, team);
    if (root < 0 || root >= t->size) {
        fail(call, "invalid argument PE_root=%d: not in [0, %d) (the team's size)", root, t->size);
    }
    size_t bytes = bytes_of(call, "nelems", nelems, elem);
    Sym src = symmetric(call, "source", source, bytes);
    symmetric(call, "dest", dest, bytes);
    uint64_t tag =
        team_enter(t, call, kTeamCheckCount | kTeamCheckRoot, nelems, static_cast<uint64_t>(root));
    uint64_t epoch = ++t->bcast_epoch;
    if (SHMEM_UNLIKELY(t->transport_members != 0)) {
        // Polling a peer's epoch would be a transport round trip per check: barriers instead.
        TeamSync sync(call, t, tag);
        broadcast_pull(members_of(call, t), sync, dest, src, bytes, root, true);
        return 0;
    }
    int root_pe = team_world_pe(t, root);
    Sym arrive = team_word(t->slot, SHMEM_TEAM_AREA_BCAST_ARRIVE);
    Sym done = team_word(t->slot, SHMEM_TEAM_AREA_BCAST_DONE);
    // The arrival word: the epoch's low 32 bits (the root is never a whole broadcast ahead of a
    // member still waiting: it waits for every member's done) and the root's tag above.
    uint64_t low = epoch & 0xffffffffu;
    if (t->my_pe == root) {
        if (t->size > 1) peer_store(call, arrive, root_pe, low | tag << 32);
        if (dest != source && bytes != 0) copy(dest, source, bytes);
        for (int i = 0; i < t->size; i++) {
            if (i == root) continue;
            int pe = team_world_pe(t, i);
            team_wait_for(t, [&] { return peer_load<uint64_t>(call, done, pe) >= epoch; });
        }
        return 0;
    }
    uint64_t arrived = 0;
    team_wait_for(t, [&] {
        arrived = peer_load<uint64_t>(call, arrive, root_pe);
        return (arrived & 0xffffffffu) == low;
    });
    if (SHMEM_UNLIKELY(arrived >> 32 != tag)) team_out_of_step(t);
    if (bytes != 0) peer_get(call, dest, src, root_pe, bytes);
    // A release store: the copy's reads come before the root may reuse its source.
    peer_store(call, done, g.my_pe, epoch);
    return 0;
}

// ---- pull-shaped collectives, for any member set and its synchronisation ---------------------

template <class Sync>
void broadcast_pull(const Members &m, Sync &sync, void *dest, Sym src, size_t bytes, int root,
                    bool root_too) {
    sync.barrier();
    if (m.me != root && bytes != 0) peer_get(m.call, dest, src, m.world(root), bytes);
    if (m.me == root && root_too && bytes != 0) {
        // The root's own source: this PE's memory at the same location (read through peer.h,
        // so a heap the CPU must not touch is read by its device).
        if (local_addr(src) != dest) peer_get(m.call, dest, src, g.my_pe, bytes);
    }
    sync.barrier();
}

template <class Sync>
void fcollect_pull(const Members &m, Sync &sync, char *dest, Sym src, size_t bytes) {
    sync.barrier();
    if (bytes != 0) {
        for (int k = 0; k < m.size; k++) {
            int i = (m.me + k) % m.size;
            peer_get(m.call, dest + static_cast<size_t>(i) * bytes, src, m.world(i), bytes);
        }
    }
    sync.barrier();
}

// collect: every member publishes its byte count and where its source is before the first
// barrier; member i's block starts at the sum of the counts before it. Each block is read
// where its owner said: a member that gives no bytes has no source of its own to go by (it
// may even pass NULL), yet reads everyone else's.
template <class Sync>
void collect_pull(const Members &m, Sync &sync, char *dest, Sym src, size_t bytes) {
    sync.publish({bytes, sym_word(src)});
    sync.barrier();
    size_t total = 0;
    for (int i = 0; i < m.size; i++) total += sync.published(i).value;
    // Checked once the total is known; every member sees the same counts, so either all pass
    // or the job ends here.
    symmetric(m.call, "dest", dest, total);
    size_t off = 0;
    for (int i = 0; i < m.size; i++) {
        Published p = sync.published(i);
        if (p.value != 0) peer_get(m.call, dest + off, sym_of(p.value2), m.world(i), p.value);
        off += p.value;
    }
    sync.barrier();
    sync.unpublish();
}

template <class Sync>
void alltoall_pull(const Members &m, Sync &sync, char *dest, Sym src, size_t bytes) {
    sync.barrier();
    if (bytes != 0) {
        Sym mine = src.plus(static_cast<uint64_t>(m.me) * bytes);
        for (int k = 0; k < m.size; k++) {
            int j = (m.me + k) % m.size;
            peer_get(m.call, dest + static_cast<size_t>(j) * bytes, mine, m.world(j), bytes);
        }
    }
    sync.barrier();
}

template <size_t E>
void strided_copy(char *dest, ptrdiff_t dst, const char *src, ptrdiff_t sst, size_t nelems) {
    for (size_t k = 0; k < nelems; k++) {
        std::memcpy(dest + static_cast<ptrdiff_t>(k) * dst * static_cast<ptrdiff_t>(E),
                    src + static_cast<ptrdiff_t>(k) * sst * static_cast<ptrdiff_t>(E), E);
    }
}

void strided_copy(size_t elem, char *dest, ptrdiff_t dst, const char *src, ptrdiff_t sst,
                  size_t nelems) {
    switch (elem) {
    case 1: strided_copy<1>(dest, dst, src, sst, nelems); return;
    case 2: strided_copy<2>(dest, dst, src, sst, nelems); return;
    case 4: strided_copy<4>(dest, dst, src, sst, nelems); return;
    case 8: strided_copy<8>(dest, dst, src, sst, nelems); return;
    default: strided_copy<16>(dest, dst, src, sst, nelems); return;
    }
}

// `nelems` elements of `elem` bytes, `sst` elements apart from `src` on world PE `pe`, into
// `dest`, `dst` elements apart: copies where `pe` is mapped here, else one get per element.
void strided_pull(const char *call, size_t elem, char *dest, ptrdiff_t dst, Sym src, ptrdiff_t sst,
                  size_t nelems, int pe) {
    if (const char *from = peer_mapped(src, pe)) {
        strided_copy(elem, dest, dst, from, sst, nelems);
        return;
    }
    ptrdiff_t e = static_cast<ptrdiff_t>(elem);
    for (size_t k = 0; k < nelems; k++) {
        ptrdiff_t i = static_cast<ptrdiff_t>(k);
        peer_get(call, dest + i * dst * e, src.plus(static_cast<uint64_t>(i * sst * e)), pe, elem);
    }
}

template <class Sync>
void alltoalls_pull(const Members &m, Sync &sync, char *dest, Sym src, ptrdiff_t dst, ptrdiff_t sst,
                    size_t nelems, size_t elem) {
    sync.barrier();
    if (nelems != 0) {
        ptrdiff_t e = static_cast<ptrdiff_t>(elem);
        ptrdiff_t n = static_cast<ptrdiff_t>(nelems);
        Sym mine = src.plus(static_cast<uint64_t>(sst * m.me * n * e));
        for (int k = 0; k < m.size; k++) {
            int j = (m.me + k) % m.size;
            strided_pull(m.call, elem, dest + dst * j * n * e, dst, mine, sst, nelems, m.world(j));
        }
    }
    sync.barrier();
}

// Bytes spanned by `count` elements of `elem` bytes, `stride` elements apart (count >= 1).
size_t strided_span(const char *call, const char *arg, ptrdiff_t stride, size_t count,
                    size_t elem) {
    if (stride < 1) fail(call, "invalid argument %s=%td: not positive", arg, stride);
    size_t span;
    if (__builtin_mul_overflow(static_cast<size_t>(stride), count - 1, &span) ||
        __builtin_add_overflow(span, size_t{1}, &span)) {
        fail(call, "invalid argument %s=%td: the strided range overflows", arg, stride);
    }
    return bytes_of(call, arg, span, elem);
}

// ---- argument checks shared by the team and active-set forms -------------------------------

struct Plain {
    Sym src;
    size_t bytes;  // per member block
};

// fcollect/alltoall: `source` holds `bytes`, `dest` n_members * `bytes`.
Plain blocks(const char *call, const void *dest, const void *source, size_t nelems, size_t elem,
             int n_members) {
    size_t bytes = bytes_of(call, "nelems", nelems, elem);
    size_t all = bytes_of(call, "nelems", bytes, static_cast<size_t>(n_members));
    Sym src = symmetric(call, "source", source, bytes);
    symmetric(call, "dest", dest, all);
    return {src, bytes};
}

// ---- team forms ------------------------------------------------------------------------------

int team_fcollect(const char *call, shmem_team_t team, void *dest, const void *source,
                  size_t nelems, size_t elem) {
    shmem_team_s *t = coll_team(call, team);
    Plain p = blocks(call, dest, source, nelems, elem, t->size);
    TeamSync sync(call, t, team_enter(t, call, kTeamCheckCount, nelems));
    fcollect_pull(members_of(call, t), sync, static_cast<char *>(dest), p.src, p.bytes);
    return 0;
}

int team_alltoall(const char *call, shmem_team_t team, void *dest, const void *source,
                  size_t nelems, size_t elem) {
    shmem_team_s *t = coll_team(call, team);
    Plain p = blocks(call, dest, source, nelems, elem, t->size);
    TeamSync sync(call, t, team_enter(t, call, kTeamCheckCount, nelems));
    alltoall_pull(members_of(call, t), sync, static_cast<char *>(dest), p.src, p.bytes);
    return 0;
}

int team_collect(const char *call, shmem_team_t team, void *dest, const void *source, size_t nelems,
                 size_t elem) {
    shmem_team_s *t = coll_team(call, team);
    size_t bytes = bytes_of(call, "nelems", nelems, elem);
    Sym src = symmetric(call, "source", source, bytes);
    // Members may give different counts: only the routine is compared.
    TeamSync sync(call, t, team_enter(t, call));
    collect_pull(members_of(call, t), sync, static_cast<char *>(dest), src, bytes);
    return 0;
}

struct Strided {
    Sym src;
    size_t nelems;
};

Strided strided_args(const char *call, const void *dest, const void *source, ptrdiff_t dst,
                     ptrdiff_t sst, size_t nelems, size_t elem, int n_members) {
    if (dst < 1) fail(call, "invalid argument dst=%td: not positive", dst);
    if (sst < 1) fail(call, "invalid argument sst=%td: not positive", sst);
    size_t count = bytes_of(call, "nelems", nelems, static_cast<size_t>(n_members));
    if (count == 0) return {{}, 0};
    Sym src = symmetric(call, "source", source, strided_span(call, "sst", sst, count, elem));
    symmetric(call, "dest", dest, strided_span(call, "dst", dst, count, elem));
    return {src, nelems};
}

int team_alltoalls(const char *call, shmem_team_t team, void *dest, const void *source,
                   ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t elem) {
    shmem_team_s *t = coll_team(call, team);
    Strided s = strided_args(call, dest, source, dst, sst, nelems, elem, t->size);
    // Each member reads its peers' sources with its own sst: theirs must be the same.
    TeamSync sync(
        call, t,
        team_enter(t, call, kTeamCheckCount | kTeamCheckSst, nelems, static_cast<uint64_t>(sst)));
    alltoalls_pull(members_of(call, t), sync, static_cast<char *>(dest), s.src, dst, sst, s.nelems,
                   elem);
    return 0;
}

// ---- active-set forms ------------------------------------------------------------------------

struct ActiveSet {
    Members m;
    PsyncSync sync;
};

ActiveSet active(const char *call, int PE_start, int logPE_stride, int PE_size, long *pSync) {
    Members m = active_set(call, PE_start, logPE_stride, PE_size);
    Sym ps = psync_checked(call, pSync);
    return {m, PsyncSync(m, ps)};
}

void as_broadcast(const char *call, void *dest, const void *source, size_t nelems, size_t elem,
                  int root, int PE_start, int logPE_stride, int PE_size, long *pSync) {
    ActiveSet a = active(call, PE_start, logPE_stride, PE_size, pSync);
    if (root < 0 || root >= PE_size) {
        fail(call, "invalid argument PE_root=%d: not in [0, %d) (PE_size)", root, PE_size);
    }
    size_t bytes = bytes_of(call, "nelems", nelems, elem);
    Sym src = symmetric(call, "source", source, bytes);
    symmetric(call, "dest", dest, bytes);
    broadcast_pull(a.m, a.sync, dest, src, bytes, root, false);
}

void as_fcollect(const char *call, void *dest, const void *source, size_t nelems, size_t elem,
                 int PE_start, int logPE_stride, int PE_size, long *pSync) {
    ActiveSet a = active(call, PE_start, logPE_stride, PE_size, pSync);
    Plain p = blocks(call, dest, source, nelems, elem, PE_size);
    fcollect_pull(a.m, a.sync, static_cast<char *>(dest), p.src, p.bytes);
}

void as_collect(const char *call, void *dest, const void *source, size_t nelems, size_t elem,
                int PE_start, int logPE_stride, int PE_size, long *pSync) {
    ActiveSet a = active(call, PE_start, logPE_stride, PE_size, pSync);
    size_t bytes = bytes_of(call, "nelems", nelems, elem);
    Sym src = symmetric(call, "source", source, bytes);
    collect_pull(a.m, a.sync, static_cast<char *>(dest), src, bytes);
}

void as_alltoall(const char *call, void *dest, const void *source, size_t nelems, size_t elem,
                 int PE_start, int logPE_stride, int PE_size, long *pSync) {
    ActiveSet a = active(call, PE_start, logPE_stride, PE_size, pSync);
    Plain p = blocks(call, dest, source, nelems, elem, PE_size);
    alltoall_pull(a.m, a.sync, static_cast<char *>(dest), p.src, p.bytes);
}

void as_alltoalls(const char *call, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                  size_t nelems, size_t elem, int PE_start, int logPE_stride, int PE_size,
                  long *pSync) {
    ActiveSet a = active(call, PE_start, logPE_stride, PE_size, pSync);
    Strided s = strided_args(call, dest, source, dst, sst, nelems, elem, PE_size);
    alltoalls_pull(a.m, a.sync, static_cast<char *>(dest), s.src, dst, sst, s.nelems, elem);
}

}  // namespace

// ---- barriers -----------------------------------------------------------------------------------

SHMEM_EXPORT int pshmem_team_sync(shmem_team_t team) {
    const char *call = "shmem_team_sync";
    shmem_team_s *t = coll_team(call, team);
    team_barrier(t, team_enter(t, call));
    return 0;
}

SHMEM_EXPORT void pshmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync) {
    ActiveSet a = active("shmem_sync", PE_start, logPE_stride, PE_size, pSync);
    a.sync.barrier();
}

SHMEM_EXPORT void pshmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync) {
    ActiveSet a = active("shmem_barrier", PE_start, logPE_stride, PE_size, pSync);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    a.sync.barrier();
}

SHMEM_WEAK_ALIAS(shmem_team_sync)
SHMEM_WEAK_ALIAS(shmem_sync)
SHMEM_WEAK_ALIAS(shmem_barrier)

// ---- team forms: *mem, then typed ---------------------------------------------------------------

SHMEM_EXPORT int pshmem_broadcastmem(shmem_team_t team, void *dest, const void *source,
                                     size_t nelems, int PE_root) {
    return team_broadcast("shmem_broadcastmem", team, dest, source, nelems, 1, PE_root);
}

SHMEM_EXPORT int pshmem_collectmem(shmem_team_t team, void *dest, const void *source,
                                   size_t nelems) {
    return team_collect("shmem_collectmem", team, dest, source, nelems, 1);
}

SHMEM_EXPORT int pshmem_fcollectmem(shmem_team_t team, void *dest, const void *source,
                                    size_t nelems) {
    return team_fcollect("shmem_fcollectmem", team, dest, source, nelems, 1);
}

SHMEM_EXPORT int pshmem_alltoallmem(shmem_team_t team, void *dest, const void *source,
                                    size_t nelems) {
    return team_alltoall("shmem_alltoallmem", team, dest, source, nelems, 1);
}

SHMEM_EXPORT int pshmem_alltoallsmem(shmem_team_t team, void *dest, const void *source,
                                     ptrdiff_t dst, ptrdiff_t sst, size_t nelems) {
    return team_alltoalls("shmem_alltoallsmem", team, dest, source, dst, sst, nelems, 1);
}

SHMEM_WEAK_ALIAS(shmem_broadcastmem)
SHMEM_WEAK_ALIAS(shmem_collectmem)
SHMEM_WEAK_ALIAS(shmem_fcollectmem)
SHMEM_WEAK_ALIAS(shmem_alltoallmem)
SHMEM_WEAK_ALIAS(shmem_alltoallsmem)

#define SHMEM_DEFINE_COLL(TYPE, NAME)                                                              \
    SHMEM_EXPORT int pshmem_##NAME##_broadcast(shmem_team_t team, TYPE *dest, const TYPE *source,  \
                                               size_t nelems, int PE_root) {                       \
        return team_broadcast("shmem_" #NAME "_broadcast", team, dest, source, nelems,             \
                              sizeof(TYPE), PE_root);                                              \
    }                                                                                              \
    SHMEM_EXPORT int pshmem_##NAME##_collect(shmem_team_t team, TYPE *dest, const TYPE *source,    \
                                             size_t nelems) {                                      \
        return team_collect("shmem_" #NAME "_collect", team, dest, source, nelems, sizeof(TYPE));  \
    }                                                                                              \
    SHMEM_EXPORT int pshmem_##NAME##_fcollect(shmem_team_t team, TYPE *dest, const TYPE *source,   \
                                              size_t nelems) {                                     \
        return team_fcollect("shmem_" #NAME "_fcollect", team, dest, source, nelems,               \
                             sizeof(TYPE));                                                        \
    }                                                                                              \
    SHMEM_EXPORT int pshmem_##NAME##_alltoall(shmem_team_t team, TYPE *dest, const TYPE *source,   \
                                              size_t nelems) {                                     \
        return team_alltoall("shmem_" #NAME "_alltoall", team, dest, source, nelems,               \
                             sizeof(TYPE));                                                        \
    }                                                                                              \
    SHMEM_EXPORT int pshmem_##NAME##_alltoalls(shmem_team_t team, TYPE *dest, const TYPE *source,  \
                                               ptrdiff_t dst, ptrdiff_t sst, size_t nelems) {      \
        return team_alltoalls("shmem_" #NAME "_alltoalls", team, dest, source, dst, sst, nelems,   \
                              sizeof(TYPE));                                                       \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_broadcast)                                                     \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_collect)                                                       \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_fcollect)                                                      \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_alltoall)                                                      \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_alltoalls)
SHMEM_COLL_TYPES(SHMEM_DEFINE_COLL)
#undef SHMEM_DEFINE_COLL

// ---- active-set forms
// ----------------------------------------------------------------------------

#define SHMEM_DEFINE_COLL_SIZED(BITS)                                                              \
    SHMEM_EXPORT void pshmem_broadcast##BITS(void *dest, const void *source, size_t nelems,        \
                                             int PE_root, int PE_start, int logPE_stride,          \
                                             int PE_size, long *pSync) {                           \
        as_broadcast("shmem_broadcast" #BITS, dest, source, nelems, BITS / 8, PE_root, PE_start,   \
                     logPE_stride, PE_size, pSync);                                                \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_collect##BITS(void *dest, const void *source, size_t nelems,          \
                                           int PE_start, int logPE_stride, int PE_size,            \
                                           long *pSync) {                                          \
        as_collect("shmem_collect" #BITS, dest, source, nelems, BITS / 8, PE_start, logPE_stride,  \
                   PE_size, pSync);                                                                \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_fcollect##BITS(void *dest, const void *source, size_t nelems,         \
                                            int PE_start, int logPE_stride, int PE_size,           \
                                            long *pSync) {                                         \
        as_fcollect("shmem_fcollect" #BITS, dest, source, nelems, BITS / 8, PE_start,              \
                    logPE_stride, PE_size, pSync);                                                 \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_alltoall##BITS(void *dest, const void *source, size_t nelems,         \
                                            int PE_start, int logPE_stride, int PE_size,           \
                                            long *pSync) {                                         \
        as_alltoall("shmem_alltoall" #BITS, dest, source, nelems, BITS / 8, PE_start,              \
                    logPE_stride, PE_size, pSync);                                                 \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_alltoalls##BITS(void *dest, const void *source, ptrdiff_t dst,        \
                                             ptrdiff_t sst, size_t nelems, int PE_start,           \
                                             int logPE_stride, int PE_size, long *pSync) {         \
        as_alltoalls("shmem_alltoalls" #BITS, dest, source, dst, sst, nelems, BITS / 8, PE_start,  \
                     logPE_stride, PE_size, pSync);                                                \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_broadcast##BITS)                                                        \
    SHMEM_WEAK_ALIAS(shmem_collect##BITS)                                                          \
    SHMEM_WEAK_ALIAS(shmem_fcollect##BITS)                                                         \
    SHMEM_WEAK_ALIAS(shmem_alltoall##BITS)                                                         \
    SHMEM_WEAK_ALIAS(shmem_alltoalls##BITS)
SHMEM_COLL_SIZES(SHMEM_DEFINE_COLL_SIZED)
#undef SHMEM_DEFINE_COLL_SIZED
