// coll_test.cc: broadcast, collect, fcollect, alltoall, alltoalls (typed, *mem, active-set) and
// the team and active-set barriers. Every case runs on the world team and on a strided team
// listed downwards (world PEs n-1, n-3, ...), so team and world numbers differ; PEs outside a
// team meanwhile do nothing with it. Every PE checks its own dest.
#include <gtest/gtest.h>
#include <shmem.h>

#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"

using namespace testutil;

namespace {

// A team made by a split, destroyed at scope end (a no-op on PEs outside it).
class Split {
public:
    Split(shmem_team_t parent, int start, int stride, int size) {
        EXPECT_EQ(shmem_team_split_strided(parent, start, stride, size, nullptr, 0, &team_), 0);
    }
    ~Split() { shmem_team_destroy(team_); }
    shmem_team_t get() const { return team_; }

private:
    shmem_team_t team_ = SHMEM_TEAM_INVALID;
};

// World PEs n-1, n-3, ... (every PE of a 1-PE job; one PE of a 2-PE job).
Split downward() { return Split(SHMEM_TEAM_WORLD, npes() - 1, -2, (npes() + 1) / 2); }

// The value team PE `pe` contributes at element `i` in round `round`: never 0 (the sentinel).
template <typename T>
T val(int pe, size_t i, int round) {
    return static_cast<T>((pe * 37 + static_cast<int>(i) * 11 + round * 5) % 97 + 1);
}

template <typename T>
bool same(T a, T b) {
    return std::memcmp(&a, &b, sizeof(T)) == 0 || a == b;
}

// Symmetric scratch for one type: `src` of `n` elements, `dst` of `n * npes` (* stride room).
template <typename T>
struct Buffers {
    explicit Buffers(size_t n)
        : n(n),
          src(static_cast<T *>(shmem_calloc(n * 3 * static_cast<size_t>(npes()), sizeof(T)))),
          dst(static_cast<T *>(shmem_calloc(n * 2 * static_cast<size_t>(npes()), sizeof(T)))) {}
    ~Buffers() {
        shmem_free(dst);
        shmem_free(src);
    }
    void clear_dst() const { std::memset(static_cast<void *>(dst), 0, n * 2 * npes() * sizeof(T)); }
    size_t n;
    T *src;
    T *dst;
};

template <typename T>
void check_typed(const char *name, int (*bcast)(shmem_team_t, T *, const T *, size_t, int),
                 int (*collect)(shmem_team_t, T *, const T *, size_t),
                 int (*fcollect)(shmem_team_t, T *, const T *, size_t),
                 int (*alltoall)(shmem_team_t, T *, const T *, size_t),
                 int (*alltoalls)(shmem_team_t, T *, const T *, ptrdiff_t, ptrdiff_t, size_t)) {
    SCOPED_TRACE(name);
    const size_t k = 5;
    Buffers<T> b(k + 8);
    Split down = downward();
    for (shmem_team_t team : {SHMEM_TEAM_WORLD, down.get()}) {
        if (team == SHMEM_TEAM_INVALID) continue;
        int tn = shmem_team_n_pes(team), tme = shmem_team_my_pe(team);
        for (int round = 0; round < 2; round++) {
            // broadcast from the first and the last team PE; the root's dest is written too.
            for (int root : {0, tn - 1}) {
                for (size_t i = 0; i < k; i++) b.src[i] = val<T>(tme, i, round);
                b.clear_dst();
                ASSERT_EQ(bcast(team, b.dst, b.src, k, root), 0);
                for (size_t i = 0; i < k; i++) ASSERT_TRUE(same(b.dst[i], val<T>(root, i, round)));
                ASSERT_TRUE(same(b.dst[k], T{}));
            }
            // collect: team PE p gives p + 1 elements.
            b.clear_dst();
            for (size_t i = 0; i <= static_cast<size_t>(tme); i++) b.src[i] = val<T>(tme, i, round);
            ASSERT_EQ(collect(team, b.dst, b.src, static_cast<size_t>(tme) + 1), 0);
            size_t off = 0;
            for (int p = 0; p < tn; p++) {
                for (size_t i = 0; i <= static_cast<size_t>(p); i++) {
                    ASSERT_TRUE(same(b.dst[off++], val<T>(p, i, round))) << "from " << p;
                }
            }
            ASSERT_TRUE(same(b.dst[off], T{}));
            // fcollect
            b.clear_dst();
            for (size_t i = 0; i < k; i++) b.src[i] = val<T>(tme, i, round);
            ASSERT_EQ(fcollect(team, b.dst, b.src, k), 0);
            for (int p = 0; p < tn; p++) {
                for (size_t i = 0; i < k; i++) {
                    ASSERT_TRUE(same(b.dst[p * k + i], val<T>(p, i, round))) << "from " << p;
                }
            }
            // alltoall: block j of PE p's source is meant for team PE j.
            b.clear_dst();
            for (int j = 0; j < tn; j++) {
                for (size_t i = 0; i < 2; i++) b.src[j * 2 + i] = val<T>(tme * tn + j, i, round);
            }
            ASSERT_EQ(alltoall(team, b.dst, b.src, 2), 0);
            for (int p = 0; p < tn; p++) {
                for (size_t i = 0; i < 2; i++) {
                    ASSERT_TRUE(same(b.dst[p * 2 + i], val<T>(p * tn + tme, i, round)));
                }
            }
            // alltoalls with dst 2, sst 3: the elements between stay untouched.
            b.clear_dst();
            for (int j = 0; j < tn; j++) {
                for (size_t i = 0; i < 2; i++) {
                    b.src[3 * (j * 2 + i)] = val<T>(tme * tn + j, i, round + 1);
                }
            }
            ASSERT_EQ(alltoalls(team, b.dst, b.src, 2, 3, 2), 0);
            for (int p = 0; p < tn; p++) {
                for (size_t i = 0; i < 2; i++) {
                    ASSERT_TRUE(same(b.dst[2 * (p * 2 + i)], val<T>(p * tn + tme, i, round + 1)));
                    ASSERT_TRUE(same(b.dst[2 * (p * 2 + i) + 1], T{}));
                }
            }
        }
    }
}

}  // namespace

TEST(CollTyped, EveryTypeEveryCollective_Test) {
#define CHECK_TYPE(TYPE, NAME)                                                                     \
    check_typed<TYPE>(#NAME, shmem_##NAME##_broadcast, shmem_##NAME##_collect,                     \
                      shmem_##NAME##_fcollect, shmem_##NAME##_alltoall, shmem_##NAME##_alltoalls);
    SHMEM_COLL_TYPES(CHECK_TYPE)
#undef CHECK_TYPE
}

TEST(CollMem, BroadcastSizesAndRepeats_Test) {
    // Sizes across the copy routine's paths; many rounds reuse the broadcast epochs.
    const size_t sizes[] = {0, 1, 7, 64, 4096, 100000};
    Buffers<unsigned char> b(100000);
    Split down = downward();
    for (shmem_team_t team : {SHMEM_TEAM_WORLD, down.get()}) {
        if (team == SHMEM_TEAM_INVALID) continue;
        int tn = shmem_team_n_pes(team), tme = shmem_team_my_pe(team);
        int round = 0;
        for (size_t n : sizes) {
            for (int rep = 0; rep < 5; rep++, round++) {
                int root = round % tn;
                for (size_t i = 0; i < n; i++) b.src[i] = pattern(tme, i, round);
                b.dst[n] = 0xEE;
                ASSERT_EQ(shmem_broadcastmem(team, b.dst, b.src, n, root), 0);
                for (size_t i = 0; i < n; i++) ASSERT_EQ(b.dst[i], pattern(root, i, round)) << i;
                ASSERT_EQ(b.dst[n], 0xEE);
            }
        }
    }
}

TEST(CollMem, CollectFcollectAlltoallBytes_Test) {
    const size_t n = 3000;  // odd-sized blocks
    Buffers<unsigned char> b(n);
    Split down = downward();
    for (shmem_team_t team : {SHMEM_TEAM_WORLD, down.get()}) {
        if (team == SHMEM_TEAM_INVALID) continue;
        int tn = shmem_team_n_pes(team), tme = shmem_team_my_pe(team);
        for (size_t i = 0; i < n; i++) b.src[i] = pattern(tme, i, 1);
        ASSERT_EQ(shmem_fcollectmem(team, b.dst, b.src, n), 0);
        for (int p = 0; p < tn; p++) {
            for (size_t i = 0; i < n; i++) ASSERT_EQ(b.dst[p * n + i], pattern(p, i, 1));
        }
        // collect: PE p gives n - 100 * p bytes.
        size_t mine = n - 100 * static_cast<size_t>(tme);
        ASSERT_EQ(shmem_collectmem(team, b.dst, b.src, mine), 0);
        size_t off = 0;
        for (int p = 0; p < tn; p++) {
            for (size_t i = 0; i < n - 100 * static_cast<size_t>(p); i++) {
                ASSERT_EQ(b.dst[off++], pattern(p, i, 1));
            }
        }
        size_t blk = n / static_cast<size_t>(tn);
        for (int j = 0; j < tn; j++) {
            for (size_t i = 0; i < blk; i++) b.src[j * blk + i] = pattern(tme * 16 + j, i, 2);
        }
        ASSERT_EQ(shmem_alltoallmem(team, b.dst, b.src, blk), 0);
        for (int p = 0; p < tn; p++) {
            for (size_t i = 0; i < blk; i++)
                ASSERT_EQ(b.dst[p * blk + i], pattern(p * 16 + tme, i, 2));
        }
        b.clear_dst();
        for (int j = 0; j < tn; j++) {
            for (size_t i = 0; i < 4; i++) b.src[2 * (j * 4 + i)] = pattern(tme * 16 + j, i, 3);
        }
        ASSERT_EQ(shmem_alltoallsmem(team, b.dst, b.src, 3, 2, 4), 0);
        for (int p = 0; p < tn; p++) {
            for (size_t i = 0; i < 4; i++) {
                ASSERT_EQ(b.dst[3 * (p * 4 + i)], pattern(p * 16 + tme, i, 3));
                ASSERT_EQ(b.dst[3 * (p * 4 + i) + 1], 0);
            }
        }
        // Empty collectives still synchronise and leave dest alone.
        ASSERT_EQ(shmem_fcollectmem(team, b.dst, b.src, 0), 0);
        ASSERT_EQ(shmem_collectmem(team, b.dst, b.src, 0), 0);
        ASSERT_EQ(shmem_alltoallmem(team, b.dst, b.src, 0), 0);
    }
}

// collect with contributions of zero elements: on PE 0, on a middle PE, on the last PE, on
// every PE. The source sits past the heap's first block, so a source resolved on an empty PE
// alone (where it has no bytes) would read the peers' heaps from the wrong place. An empty PE
// may also pass NULL as its source.
TEST(CollZeroLength, EmptyContributionsInEveryForm_Test) {
    const int n = npes();
    const size_t most = 6;
    // The first block keeps `src` away from the heap's start.
    void *pad = shmem_malloc(256);
    ASSERT_NE(pad, nullptr);
    Buffers<uint64_t> b(most);
    static long psync[SHMEM_COLLECT_SYNC_SIZE];
    for (long &w : psync) w = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    struct Case {
        const char *name;
        bool (*empty)(int pe, int n);
    };
    const Case cases[] = {
        {"PE 0", [](int pe, int) { return pe == 0; }},
        {"a middle PE", [](int pe, int n) { return pe == n / 2; }},
        {"the last PE", [](int pe, int n) { return pe == n - 1; }},
        {"every PE", [](int, int) { return true; }},
    };
    // Elements PE `pe` gives (0 for an empty one), each `elem` bytes.
    auto count = [&](const Case &c, int pe) -> size_t {
        return c.empty(pe, n) ? 0 : static_cast<size_t>(pe % 3) + 1;
    };
    for (const Case &c : cases) {
        for (int form = 0; form < 4; form++) {
            for (bool null_source : {false, true}) {
                SCOPED_TRACE(std::string("empty on ") + c.name + ", form " + std::to_string(form) +
                             (null_source ? ", NULL source" : ""));
                size_t elem = form == 2 ? 4 : 8;  // collect32 moves 4-byte elements
                size_t mine = count(c, me());
                unsigned char *src = reinterpret_cast<unsigned char *>(b.src);
                unsigned char *dst = reinterpret_cast<unsigned char *>(b.dst);
                for (size_t i = 0; i < mine * elem; i++) src[i] = pattern(me(), i, form + 1);
                std::memset(dst, 0xEE, most * n * elem);
                const void *from = (mine == 0 && null_source) ? nullptr : b.src;
                switch (form) {
                case 0:
                    ASSERT_EQ(shmem_uint64_collect(SHMEM_TEAM_WORLD, b.dst,
                                                   static_cast<const uint64_t *>(from), mine),
                              0);
                    break;
                case 1:
                    ASSERT_EQ(shmem_collectmem(SHMEM_TEAM_WORLD, dst, from, mine * 8), 0);
                    break;
                case 2: shmem_collect32(dst, from, mine, 0, 0, n, psync); break;
                default: shmem_collect64(dst, from, mine, 0, 0, n, psync); break;
                }
                size_t off = 0;
                for (int p = 0; p < n; p++) {
                    for (size_t i = 0; i < count(c, p) * elem; i++, off++) {
                        ASSERT_EQ(dst[off], pattern(p, i, form + 1))
                            << "byte " << i << " from PE " << p;
                    }
                }
                // Nothing past the collected bytes is written.
                for (size_t i = off; i < most * n * elem; i++) ASSERT_EQ(dst[i], 0xEE) << i;
            }
        }
    }
    for (long w : psync) ASSERT_EQ(w, SHMEM_SYNC_VALUE);
    shmem_free(pad);
}

// Global (static) arrays as source and dest.
static long g_src[16];
static long g_dst[16 * 8];

TEST(CollMem, StaticTargets_Test) {
    if (npes() > 8) GTEST_SKIP() << "the static dest holds 8 PEs";
    for (int i = 0; i < 16; i++) g_src[i] = me() * 1000 + i;
    ASSERT_EQ(shmem_long_fcollect(SHMEM_TEAM_WORLD, g_dst, g_src, 16), 0);
    for (int p = 0; p < npes(); p++) {
        for (int i = 0; i < 16; i++) ASSERT_EQ(g_dst[p * 16 + i], p * 1000 + i);
    }
    ASSERT_EQ(shmem_long_broadcast(SHMEM_TEAM_WORLD, g_dst, g_src, 16, npes() - 1), 0);
    for (int i = 0; i < 16; i++) ASSERT_EQ(g_dst[i], (npes() - 1) * 1000 + i);
}

TEST(CollTeams, DisjointTeamsRunDifferentCollectivesAtOnce_Test) {
    // Even PEs fcollect on their team while odd PEs broadcast on theirs, many times over.
    int n = npes();
    Split even(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2);
    Split odd(SHMEM_TEAM_WORLD, n > 1 ? 1 : 0, 2, n > 1 ? n / 2 : 1);
    Buffers<int> b(64);
    bool is_even = me() % 2 == 0;
    shmem_team_t team = is_even ? even.get() : odd.get();
    ASSERT_NE(team, SHMEM_TEAM_INVALID);
    int tn = shmem_team_n_pes(team), tme = shmem_team_my_pe(team);
    for (int round = 0; round < 50; round++) {
        for (size_t i = 0; i < 8; i++) b.src[i] = val<int>(tme, i, round);
        if (is_even) {
            ASSERT_EQ(shmem_int_fcollect(team, b.dst, b.src, 8), 0);
            for (int p = 0; p < tn; p++) {
                for (size_t i = 0; i < 8; i++) ASSERT_EQ(b.dst[p * 8 + i], val<int>(p, i, round));
            }
        } else {
            int root = round % tn;
            ASSERT_EQ(shmem_int_broadcast(team, b.dst, b.src, 8, root), 0);
            for (size_t i = 0; i < 8; i++) ASSERT_EQ(b.dst[i], val<int>(root, i, round));
        }
    }
    shmem_sync_all();
}

TEST(CollTeams, TwoDimensionalTeams_Test) {
    // Rows then columns of a grid 3 PEs wide: a row fcollect, then a column broadcast of it.
    shmem_team_t xt, yt;
    ASSERT_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, 3, nullptr, 0, &xt, nullptr, 0, &yt), 0);
    Buffers<long> b(64);
    static long one;
    one = me();
    ASSERT_EQ(shmem_long_fcollect(xt, b.src, &one, 1), 0);
    int xn = shmem_team_n_pes(xt);
    for (int p = 0; p < xn; p++)
        ASSERT_EQ(b.src[p], shmem_team_translate_pe(xt, p, SHMEM_TEAM_WORLD));
    ASSERT_EQ(shmem_long_broadcast(yt, b.dst, b.src, 1, 0), 0);
    // Team PE 0 of my column is world PE x (first row), whose row starts at world PE 0.
    ASSERT_EQ(b.dst[0], 0);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
}

// ---- barriers -------------------------------------------------------------------------------

TEST(CollSync, TeamSyncOrdersPuts_Test) {
    Split down = downward();
    long *box = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    ASSERT_NE(box, nullptr);
    for (shmem_team_t team : {SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED, down.get()}) {
        // The teams share `box`, and across nodes SHMEM_TEAM_SHARED is one team per node: the
        // next team's puts must wait until every team is done with the last.
        shmem_barrier_all();
        if (team == SHMEM_TEAM_INVALID) continue;
        int tn = shmem_team_n_pes(team), tme = shmem_team_my_pe(team);
        int to = shmem_team_translate_pe(team, (tme + 1) % tn, SHMEM_TEAM_WORLD);
        int from = shmem_team_translate_pe(team, (tme + tn - 1) % tn, SHMEM_TEAM_WORLD);
        for (long r = 1; r <= 100; r++) {
            shmem_long_p(box, r * 100 + me(), to);
            shmem_quiet();
            ASSERT_EQ(shmem_sync(team), 0);  // the C++ overload of the team form
            ASSERT_EQ(*box, r * 100 + from);
            ASSERT_EQ(shmem_team_sync(team), 0);
        }
    }
    shmem_free(box);
}

static long g_psync[SHMEM_BARRIER_SYNC_SIZE];

TEST(CollSync, ActiveSetBarrierAndSyncReusePsync_Test) {
    for (long &w : g_psync) w = SHMEM_SYNC_VALUE;
    long *box = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    ASSERT_NE(box, nullptr);
    for (const ActiveSet &s : active_sets()) {
        // The sets overlap and share pSync and buffers: one set at a time.
        shmem_barrier_all();
        int i = s.index();
        if (i < 0) continue;
        int to = s.pe((i + 1) % s.size);
        int from = s.pe((i + s.size - 1) % s.size);
        for (long r = 1; r <= 60; r++) {
            shmem_long_p(box, r * 100 + me(), to);
            if (r % 2) {
                shmem_barrier(s.start, s.log, s.size, g_psync);
            } else {
                shmem_quiet();
                shmem_sync(s.start, s.log, s.size, g_psync);
            }
            ASSERT_EQ(*box, r * 100 + from);
            shmem_sync(s.start, s.log, s.size, g_psync);
        }
        for (long w : g_psync) ASSERT_EQ(w, SHMEM_SYNC_VALUE);
    }
    shmem_barrier_all();
    shmem_free(box);
}

// ---- active-set data collectives ----------------------------------------------------------

static long g_psync_coll[SHMEM_COLLECT_SYNC_SIZE];

TEST(CollActiveSet, SizedFormsReusePsync_Test) {
    for (long &w : g_psync_coll) w = SHMEM_SYNC_VALUE;
    Buffers<uint64_t> b64(16);
    Buffers<uint32_t> b32(16);
    for (const ActiveSet &s : active_sets()) {
        // The sets overlap and share pSync and buffers: one set at a time.
        shmem_barrier_all();
        int i = s.index();
        if (i < 0) continue;
        for (int round = 0; round < 10; round++) {
            // broadcast: the root's dest stays as it was.
            int root = round % s.size;
            for (size_t e = 0; e < 4; e++) b64.src[e] = val<uint64_t>(i, e, round);
            b64.clear_dst();
            shmem_broadcast64(b64.dst, b64.src, 4, root, s.start, s.log, s.size, g_psync_coll);
            for (size_t e = 0; e < 4; e++) {
                ASSERT_EQ(b64.dst[e], i == root ? 0 : val<uint64_t>(root, e, round));
            }
            for (size_t e = 0; e < 4; e++) b32.src[e] = val<uint32_t>(i, e, round);
            b32.clear_dst();
            shmem_broadcast32(b32.dst, b32.src, 4, root, s.start, s.log, s.size, g_psync_coll);
            for (size_t e = 0; e < 4; e++) {
                ASSERT_EQ(b32.dst[e], i == root ? 0u : val<uint32_t>(root, e, round));
            }
            // collect: member m gives m % 3 + 1 elements.
            size_t mine = static_cast<size_t>(i % 3 + 1);
            for (size_t e = 0; e < mine; e++) b32.src[e] = val<uint32_t>(i, e, round);
            shmem_collect32(b32.dst, b32.src, mine, s.start, s.log, s.size, g_psync_coll);
            size_t off = 0;
            for (int m = 0; m < s.size; m++) {
                for (size_t e = 0; e < static_cast<size_t>(m % 3 + 1); e++) {
                    ASSERT_EQ(b32.dst[off++], val<uint32_t>(m, e, round));
                }
            }
            for (size_t e = 0; e < 3; e++) b64.src[e] = val<uint64_t>(i, e, round);
            shmem_collect64(b64.dst, b64.src, 3, s.start, s.log, s.size, g_psync_coll);
            shmem_fcollect64(b64.dst + 3 * s.size, b64.src, 3, s.start, s.log, s.size,
                             g_psync_coll);
            for (int m = 0; m < s.size; m++) {
                for (size_t e = 0; e < 3; e++) {
                    ASSERT_EQ(b64.dst[m * 3 + e], val<uint64_t>(m, e, round));
                    ASSERT_EQ(b64.dst[3 * s.size + m * 3 + e], val<uint64_t>(m, e, round));
                }
            }
            shmem_fcollect32(b32.dst, b32.src, 1, s.start, s.log, s.size, g_psync_coll);
            for (int m = 0; m < s.size; m++) ASSERT_EQ(b32.dst[m], val<uint32_t>(m, 0, round));
            // alltoall and alltoalls
            for (int j = 0; j < s.size; j++) b64.src[j] = val<uint64_t>(i * 16 + j, 0, round);
            shmem_alltoall64(b64.dst, b64.src, 1, s.start, s.log, s.size, g_psync_coll);
            for (int m = 0; m < s.size; m++) {
                ASSERT_EQ(b64.dst[m], val<uint64_t>(m * 16 + i, 0, round));
            }
            for (int j = 0; j < s.size; j++) b32.src[2 * j] = val<uint32_t>(i * 16 + j, 1, round);
            b32.clear_dst();
            shmem_alltoalls32(b32.dst, b32.src, 3, 2, 1, s.start, s.log, s.size, g_psync_coll);
            for (int m = 0; m < s.size; m++) {
                ASSERT_EQ(b32.dst[3 * m], val<uint32_t>(m * 16 + i, 1, round));
                ASSERT_EQ(b32.dst[3 * m + 1], 0u);
            }
            for (int j = 0; j < s.size; j++) b32.src[j] = val<uint32_t>(i * 16 + j, 2, round);
            shmem_alltoall32(b32.dst, b32.src, 1, s.start, s.log, s.size, g_psync_coll);
            for (int m = 0; m < s.size; m++) {
                ASSERT_EQ(b32.dst[m], val<uint32_t>(m * 16 + i, 2, round));
            }
            for (int j = 0; j < s.size; j++) b64.src[j] = val<uint64_t>(i * 16 + j, 3, round);
            shmem_alltoalls64(b64.dst, b64.src, 1, 1, 1, s.start, s.log, s.size, g_psync_coll);
            for (int m = 0; m < s.size; m++) {
                ASSERT_EQ(b64.dst[m], val<uint64_t>(m * 16 + i, 3, round));
            }
        }
        for (long w : g_psync_coll) ASSERT_EQ(w, SHMEM_SYNC_VALUE);
    }
    shmem_barrier_all();
}
