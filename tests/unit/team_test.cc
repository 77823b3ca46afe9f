// Team queries on the predefined teams, splits (strided, 2-D), destroy, team_ptr.
#include <gtest/gtest.h>
#include <shmem.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "test_util.h"

TEST(TeamMyPe, PredefinedTeams_Test) {
    EXPECT_EQ(shmem_team_my_pe(SHMEM_TEAM_WORLD), shmem_my_pe());
    EXPECT_EQ(shmem_team_n_pes(SHMEM_TEAM_WORLD), shmem_n_pes());
    // The PEs of this node (every PE of a one-node job).
    auto [first, count] = testutil::node_block(shmem_my_pe());
    EXPECT_EQ(shmem_team_my_pe(SHMEM_TEAM_SHARED), shmem_my_pe() - first);
    EXPECT_EQ(shmem_team_n_pes(SHMEM_TEAM_SHARED), count);
}

TEST(TeamMyPe, InvalidTeam_Test) {
    EXPECT_EQ(shmem_team_my_pe(SHMEM_TEAM_INVALID), -1);
    EXPECT_EQ(shmem_team_n_pes(SHMEM_TEAM_INVALID), -1);
}

TEST(TeamGetConfig, PredefinedAndInvalid_Test) {
    shmem_team_config_t config{};
    config.num_contexts = 99;
    EXPECT_EQ(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &config), 0);
    EXPECT_EQ(config.num_contexts, 0);
    EXPECT_EQ(shmem_team_get_config(SHMEM_TEAM_WORLD, 0, nullptr), 0);
    EXPECT_NE(shmem_team_get_config(SHMEM_TEAM_INVALID, SHMEM_TEAM_NUM_CONTEXTS, &config), 0);
}

TEST(TeamTranslatePe, WorldShared_Test) {
    int n = shmem_n_pes();
    auto [first, count] = testutil::node_block(shmem_my_pe());
    for (int pe = 0; pe < n; pe++) {
        int want = testutil::on_my_node(pe) ? pe - first : -1;
        EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, SHMEM_TEAM_SHARED), want);
        EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_SHARED, pe, SHMEM_TEAM_WORLD),
                  pe < count ? first + pe : -1);
    }
    EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, n, SHMEM_TEAM_WORLD), -1);
    EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, -1, SHMEM_TEAM_WORLD), -1);
    EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD), -1);
    EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, SHMEM_TEAM_INVALID), -1);
}

// ---- splits ------------------------------------------------------------------------------------

namespace {

int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

// Checks that `team` holds world PEs start, start + stride, ... (size of them) as seen from
// this PE: its number, its size, and translations both ways for every world PE.
void expect_team(shmem_team_t team, int start, int stride, int size) {
    int d = me() - start;
    bool member = stride == 0 ? d == 0 : (d % stride == 0 && d / stride >= 0 && d / stride < size);
    if (!member) {
        EXPECT_EQ(team, SHMEM_TEAM_INVALID);
        return;
    }
    ASSERT_NE(team, SHMEM_TEAM_INVALID);
    EXPECT_EQ(shmem_team_n_pes(team), size);
    EXPECT_EQ(shmem_team_my_pe(team), stride == 0 ? 0 : d / stride);
    for (int i = 0; i < size; i++) {
        EXPECT_EQ(shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD), start + i * stride);
    }
    for (int pe = 0; pe < npes(); pe++) {
        int dp = pe - start;
        int want =
            stride == 0
                ? (dp == 0 ? 0 : -1)
                : (dp % stride == 0 && dp / stride >= 0 && dp / stride < size ? dp / stride : -1);
        EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, team), want) << "world PE " << pe;
    }
}

}  // namespace

TEST(TeamSplitStrided, EvenAndOddPes_Test) {
    int n = npes();
    shmem_team_t even = SHMEM_TEAM_INVALID, odd = SHMEM_TEAM_INVALID;
    ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, nullptr, 0, &even), 0);
    expect_team(even, 0, 2, (n + 1) / 2);
    if (n > 1) {
        ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, nullptr, 0, &odd), 0);
        expect_team(odd, 1, 2, n / 2);
        // Translation between the two splits: no PE is in both.
        shmem_team_t mine = me() % 2 == 0 ? even : odd;
        shmem_team_t other = me() % 2 == 0 ? odd : even;
        EXPECT_EQ(shmem_team_translate_pe(mine, 0, other), -1);
        EXPECT_EQ(shmem_team_translate_pe(mine, shmem_team_my_pe(mine), SHMEM_TEAM_SHARED),
                  shmem_team_my_pe(SHMEM_TEAM_SHARED));
        EXPECT_EQ(shmem_team_sync(mine), 0);
    } else {
        EXPECT_EQ(shmem_team_sync(even), 0);
    }
    shmem_team_destroy(even);
    shmem_team_destroy(odd);
}

TEST(TeamSplitStrided, NegativeStrideReversesOrder_Test) {
    int n = npes();
    shmem_team_t rev = SHMEM_TEAM_INVALID;
    ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, nullptr, 0, &rev), 0);
    expect_team(rev, n - 1, -1, n);
    // A split of the reversed team, in its numbering: its PEs 0, 2, 4... are world n-1, n-3...
    shmem_team_t sub = SHMEM_TEAM_INVALID;
    ASSERT_EQ(shmem_team_split_strided(rev, 0, 2, (n + 1) / 2, nullptr, 0, &sub), 0);
    expect_team(sub, n - 1, -2, (n + 1) / 2);
    if (sub != SHMEM_TEAM_INVALID) {
        EXPECT_EQ(shmem_team_translate_pe(sub, shmem_team_my_pe(sub), rev), shmem_team_my_pe(rev));
        EXPECT_EQ(shmem_team_sync(sub), 0);
    }
    shmem_team_destroy(sub);
    shmem_team_destroy(rev);
}

TEST(TeamSplitStrided, StrideZeroMakesOnePeTeam_Test) {
    int last = npes() - 1;
    shmem_team_t one = SHMEM_TEAM_INVALID;
    ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, last, 0, 1, nullptr, 0, &one), 0);
    expect_team(one, last, 0, 1);
    if (one != SHMEM_TEAM_INVALID) EXPECT_EQ(shmem_team_sync(one), 0);
    shmem_team_destroy(one);
}

TEST(TeamSplitStrided, NestedSplitsTranslate_Test) {
    // World -> PEs 1..n-1 -> every other PE of that (world 1, 3, 5, ...).
    int n = npes();
    if (n < 2) GTEST_SKIP() << "needs 2 PEs";
    shmem_team_t tail = SHMEM_TEAM_INVALID, sub = SHMEM_TEAM_INVALID;
    ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, n - 1, nullptr, 0, &tail), 0);
    expect_team(tail, 1, 1, n - 1);
    if (tail != SHMEM_TEAM_INVALID) {
        ASSERT_EQ(shmem_team_split_strided(tail, 0, 2, n / 2, nullptr, 0, &sub), 0);
        expect_team(sub, 1, 2, n / 2);
        if (sub != SHMEM_TEAM_INVALID) {
            for (int i = 0; i < shmem_team_n_pes(sub); i++) {
                EXPECT_EQ(shmem_team_translate_pe(sub, i, tail), 2 * i);
            }
        }
        // PEs outside `sub` meanwhile sync on `tail` only: the world PE 0 is in neither.
        EXPECT_EQ(shmem_team_sync(tail), 0);
        shmem_team_destroy(sub);
        shmem_team_destroy(tail);
    }
    shmem_sync_all();
}

TEST(TeamSplitStrided, ConfigIsKept_Test) {
    shmem_team_config_t config{};
    config.num_contexts = 3;
    shmem_team_t t = SHMEM_TEAM_INVALID;
    ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes(), &config,
                                       SHMEM_TEAM_NUM_CONTEXTS, &t),
              0);
    shmem_team_config_t got{};
    EXPECT_EQ(shmem_team_get_config(t, SHMEM_TEAM_NUM_CONTEXTS, &got), 0);
    EXPECT_EQ(got.num_contexts, 3);
    shmem_team_destroy(t);
}

TEST(TeamSplitStrided, InvalidTripletsFailOnEveryPe_Test) {
    int n = npes();
    struct Case {
        int start, stride, size;
    } cases[] = {
        {0, 1, 0},      // size not positive
        {-1, 1, 1},     // start before the parent
        {n, 1, 1},      // start past the parent
        {0, 1, n + 1},  // range past the parent
        {0, 0, 2},      // stride 0 with more than one PE
        {n - 1, 1, 2},  // runs off the end
        {0, -1, 2},     // runs below 0
    };
    for (const Case &c : cases) {
        shmem_team_t t = SHMEM_TEAM_WORLD;
        EXPECT_NE(
            shmem_team_split_strided(SHMEM_TEAM_WORLD, c.start, c.stride, c.size, nullptr, 0, &t),
            0)
            << c.start << "," << c.stride << "," << c.size;
        EXPECT_EQ(t, SHMEM_TEAM_INVALID);
    }
    shmem_team_t t = SHMEM_TEAM_WORLD;
    EXPECT_NE(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, nullptr, 0, &t), 0);
    EXPECT_EQ(t, SHMEM_TEAM_INVALID);
    // A bad configuration on one PE fails the split on every PE.
    shmem_team_config_t config{};
    config.num_contexts = me() == n - 1 ? -1 : 1;
    EXPECT_NE(
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, &config, SHMEM_TEAM_NUM_CONTEXTS, &t),
        0);
    EXPECT_EQ(t, SHMEM_TEAM_INVALID);
    // The world is still usable.
    EXPECT_EQ(shmem_team_sync(SHMEM_TEAM_WORLD), 0);
}

TEST(TeamSplitStrided, SlotLimitFailsConsistentlyThenRecovers_Test) {
    // Make teams until the split fails: it fails on every PE at once, after the same count.
    std::vector<shmem_team_t> teams;
    for (;;) {
        shmem_team_t t = SHMEM_TEAM_INVALID;
        int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes(), nullptr, 0, &t);
        if (rc != 0) {
            EXPECT_EQ(t, SHMEM_TEAM_INVALID);
            break;
        }
        ASSERT_NE(t, SHMEM_TEAM_INVALID);
        teams.push_back(t);
        ASSERT_LT(teams.size(), 1000u) << "no team limit";
    }
    // 64 slots, two of them for SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED.
    EXPECT_EQ(teams.size(), 62u);
    static long count;  // symmetric: a collective's source
    count = static_cast<long>(teams.size());
    long *counts = static_cast<long *>(shmem_calloc(static_cast<size_t>(npes()), sizeof(long)));
    ASSERT_NE(counts, nullptr);
    shmem_long_fcollect(SHMEM_TEAM_WORLD, counts, &count, 1);
    for (int pe = 0; pe < npes(); pe++) EXPECT_EQ(counts[pe], count) << "PE " << pe;
    shmem_free(counts);
    // Every team still works, the newest and the oldest alike.
    EXPECT_EQ(shmem_team_sync(teams.back()), 0);
    EXPECT_EQ(shmem_team_sync(teams.front()), 0);
    for (shmem_team_t t : teams) shmem_team_destroy(t);
    shmem_team_t t = SHMEM_TEAM_INVALID;
    EXPECT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes(), nullptr, 0, &t), 0);
    shmem_team_destroy(t);
}

TEST(TeamSplitStrided, ManySplitDestroyCyclesReuseSlots_Test) {
    // A reused slot starts from zeroed flags: a stale epoch would let a barrier through early.
    long *box = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    ASSERT_NE(box, nullptr);
    int n = npes();
    for (int cycle = 1; cycle <= 40; cycle++) {
        shmem_team_t t = SHMEM_TEAM_INVALID;
        int size = 1 + cycle % n;
        ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, size, nullptr, 0, &t), 0);
        if (t != SHMEM_TEAM_INVALID) {
            int tn = shmem_team_n_pes(t), tme = shmem_team_my_pe(t);
            for (int k = 0; k < cycle % 3 + 1; k++) {
                long v = cycle * 100 + k;
                shmem_long_p(box, v, shmem_team_translate_pe(t, (tme + 1) % tn, SHMEM_TEAM_WORLD));
                shmem_quiet();
                ASSERT_EQ(shmem_team_sync(t), 0);
                ASSERT_EQ(*box, v);
                ASSERT_EQ(shmem_team_sync(t), 0);
            }
        }
        shmem_team_destroy(t);
    }
    shmem_free(box);
}

TEST(TeamSplit2d, GridCoordinates_Test) {
    int n = npes();
    for (int xrange : {1, 2, 3, n, n + 2}) {
        shmem_team_t xt = SHMEM_TEAM_INVALID, yt = SHMEM_TEAM_INVALID;
        ASSERT_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, xrange, nullptr, 0, &xt, nullptr, 0, &yt),
                  0)
            << "xrange " << xrange;
        int xr = xrange < n ? xrange : n;
        int x = me() % xr, y = me() / xr;
        expect_team(xt, y * xr, 1, std::min(xr, n - y * xr));
        expect_team(yt, x, xr, (n - x + xr - 1) / xr);
        EXPECT_EQ(shmem_team_my_pe(xt), x);
        EXPECT_EQ(shmem_team_my_pe(yt), y);
        EXPECT_EQ(shmem_team_sync(xt), 0);
        EXPECT_EQ(shmem_team_sync(yt), 0);
        shmem_team_destroy(xt);
        shmem_team_destroy(yt);
    }
}

TEST(TeamSplit2d, ConfigsAndBadXrange_Test) {
    shmem_team_config_t xc{}, yc{};
    xc.num_contexts = 2;
    yc.num_contexts = 5;
    shmem_team_t xt = SHMEM_TEAM_INVALID, yt = SHMEM_TEAM_INVALID;
    ASSERT_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, &xc, SHMEM_TEAM_NUM_CONTEXTS, &xt, &yc,
                                  SHMEM_TEAM_NUM_CONTEXTS, &yt),
              0);
    shmem_team_config_t got{};
    EXPECT_EQ(shmem_team_get_config(xt, SHMEM_TEAM_NUM_CONTEXTS, &got), 0);
    EXPECT_EQ(got.num_contexts, 2);
    EXPECT_EQ(shmem_team_get_config(yt, SHMEM_TEAM_NUM_CONTEXTS, &got), 0);
    EXPECT_EQ(got.num_contexts, 5);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
    xt = yt = SHMEM_TEAM_WORLD;
    EXPECT_NE(shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, nullptr, 0, &xt, nullptr, 0, &yt), 0);
    EXPECT_EQ(xt, SHMEM_TEAM_INVALID);
    EXPECT_EQ(yt, SHMEM_TEAM_INVALID);
    xt = yt = SHMEM_TEAM_WORLD;
    EXPECT_NE(shmem_team_split_2d(SHMEM_TEAM_INVALID, 2, nullptr, 0, &xt, nullptr, 0, &yt), 0);
    EXPECT_EQ(xt, SHMEM_TEAM_INVALID);
    EXPECT_EQ(yt, SHMEM_TEAM_INVALID);
}

TEST(TeamDestroy, InvalidTeamIsNoOp_Test) { shmem_team_destroy(SHMEM_TEAM_INVALID); }

TEST(TeamPtr, LoadsAndStoresThroughTeamPointer_Test) {
    int n = npes();
    shmem_team_t rev = SHMEM_TEAM_INVALID;
    ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, nullptr, 0, &rev), 0);
    long *x = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    ASSERT_NE(x, nullptr);
    int tme = shmem_team_my_pe(rev);
    int target = (tme + 1) % n;  // team PE numbers run downwards in world numbers
    auto *p = static_cast<long *>(shmem_team_ptr(rev, x, target));
    int world_target = shmem_team_translate_pe(rev, target, SHMEM_TEAM_WORLD);
    // NULL only for a PE of another node, or one a test transport reaches.
    if (std::getenv("SHMEM_TEST_LOOPBACK") == nullptr && testutil::on_my_node(world_target)) {
        ASSERT_NE(p, nullptr);
    }
    EXPECT_EQ(p, shmem_ptr(x, world_target));
    if (p != nullptr) {
        *p = 1000 + me();
    } else {
        shmem_long_p(x, 1000 + me(), world_target);
        shmem_quiet();  // team_sync orders stores, not puts
    }
    shmem_team_sync(rev);
    int from = shmem_team_translate_pe(rev, (tme + n - 1) % n, SHMEM_TEAM_WORLD);
    EXPECT_EQ(*x, 1000 + from);
    EXPECT_EQ(shmem_team_ptr(SHMEM_TEAM_INVALID, x, 0), nullptr);
    long on_stack = 0;
    EXPECT_EQ(shmem_team_ptr(rev, &on_stack, target), nullptr);
    shmem_team_sync(rev);
    shmem_free(x);
    shmem_team_destroy(rev);
}
