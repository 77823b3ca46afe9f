/*
 * team_list.c: teams whose members are any list of world PEs (shmemx_team_create), in the
 * order given: {0, 1, 3}, {3, 0, 2} (unsorted), {1, 3}, every PE shuffled, and their splits. On
 * each: numbering and translate_pe both ways (to and from the world and another list team),
 * get_config, team_ptr, every kind of collective (sync after puts, broadcast from a non-zero
 * root, collect, fcollect, alltoall, alltoalls, reductions of several types and ops, a
 * reduction of many blocks), a context on the team (put, get and an atomic through it). Teams
 * live at once overlapping (made in turn by the PEs they share) and disjoint; split_strided and
 * split_2d of a list team give teams of its list's PEs. Every member checks data the others
 * wrote; PEs outside a team never call anything on it. Exits 0 on success.
 */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define MAXN 64
#define BIG 3000 /* longs: a reduction over several 4 KiB blocks */

static long src[MAXN * 4], dst[MAXN * 4], box[4];
static long big_src[BIG], big_dst[BIG];
static int isrc[8], idst[8];
static double dsrc[4], ddst[4];
static size_t nelems;

/* Creates the team of pes[0..n) (this PE among them) and checks its numbering both ways. */
static shmem_team_t create(const int *pes, int n, int num_contexts) {
    shmem_team_t team = SHMEM_TEAM_INVALID;
    shmem_team_config_t config = {num_contexts};
    CHECK(shmemx_team_create(pes, n, &config, SHMEM_TEAM_NUM_CONTEXTS, &team) == 0);
    CHECK(team != SHMEM_TEAM_INVALID);
    return team;
}

/* Checks that `team` numbers world PEs pes[0..n) as team PEs 0..n-1. */
static void check_numbering(shmem_team_t team, const int *pes, int n) {
    int world = shmem_my_pe(), npes = shmem_n_pes();
    CHECK(shmem_team_n_pes(team) == n);
    int me = shmem_team_my_pe(team);
    CHECK(me >= 0 && me < n && pes[me] == world);
    for (int i = 0; i < n; i++) {
        CHECK(shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD) == pes[i]);
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, pes[i], team) == i);
        CHECK(shmem_team_translate_pe(team, i, team) == i);
    }
    CHECK(shmem_team_translate_pe(team, n, SHMEM_TEAM_WORLD) == -1);
    CHECK(shmem_team_translate_pe(team, -1, SHMEM_TEAM_WORLD) == -1);
    for (int pe = 0; pe < npes; pe++) {
        int want = -1;
        for (int i = 0; i < n; i++) {
            if (pes[i] == pe) want = i;
        }
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, team) == want);
    }
}

/* Every kind of collective on `team` (world PEs pes[0..n)), each member checking what the
 * others wrote; `salt` tells one use of a team from the next. */
static void exercise(shmem_team_t team, const int *pes, int n, long salt) {
    int me = shmem_team_my_pe(team);
    long world = shmem_my_pe();

    shmem_team_config_t got = {-7};
    CHECK(shmem_team_get_config(team, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0);
    CHECK(got.num_contexts == 2);
    for (int i = 0; i < n; i++) {
        CHECK(shmem_team_ptr(team, box, i) == shmem_ptr(box, pes[i]));
    }

    /* A put to the next member, quiet, then the team's sync: the put is visible. */
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    box[0] = -1;
    CHECK(shmem_team_sync(team) == 0);
    shmem_long_p(&box[0], world * 10 + salt, pes[next]);
    shmem_quiet();
    CHECK(shmem_team_sync(team) == 0);
    CHECK(box[0] == pes[prev] * 10L + salt);
    CHECK(shmem_team_sync(team) == 0);

    /* Broadcast from team PE 1 (0 in a team of one). */
    int root = n > 1 ? 1 : 0;
    for (int i = 0; i < 4; i++) src[i] = world * 1000 + i + salt, dst[i] = -1;
    CHECK(shmem_long_broadcast(team, dst, src, 4, root) == 0);
    for (int i = 0; i < 4; i++) CHECK(dst[i] == pes[root] * 1000L + i + salt);

    /* fcollect: two elements per member, in team PE order. */
    for (int i = 0; i < 2; i++) src[i] = world * 100 + i + salt;
    CHECK(shmem_long_fcollect(team, dst, src, 2) == 0);
    for (int k = 0; k < n; k++) {
        CHECK(dst[2 * k] == pes[k] * 100L + salt);
        CHECK(dst[2 * k + 1] == pes[k] * 100L + 1 + salt);
    }

    /* collect: team PE k gives k % 3 + 1 elements. */
    nelems = (size_t)(me % 3 + 1);
    for (size_t i = 0; i < nelems; i++) src[i] = world * 100 + (long)i + salt;
    CHECK(shmem_long_collect(team, dst, src, nelems) == 0);
    size_t at = 0;
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < k % 3 + 1; i++) CHECK(dst[at++] == pes[k] * 100L + i + salt);
    }

    /* alltoall: block j of member k goes to member j. */
    for (int j = 0; j < n; j++) {
        src[2 * j] = world * 1000 + j + salt;
        src[2 * j + 1] = -(world * 1000 + j + salt);
    }
    CHECK(shmem_long_alltoall(team, dst, src, 2) == 0);
    for (int k = 0; k < n; k++) {
        CHECK(dst[2 * k] == pes[k] * 1000L + me + salt);
        CHECK(dst[2 * k + 1] == -(pes[k] * 1000L + me + salt));
    }

    /* alltoalls: one element per member, source stride 2, dest stride 3. */
    memset(dst, 0, sizeof dst);
    for (int j = 0; j < n; j++) src[2 * j] = world * 1000 + 500 + j + salt;
    CHECK(shmem_long_alltoalls(team, dst, src, 3, 2, 1) == 0);
    for (int k = 0; k < n; k++) CHECK(dst[3 * k] == pes[k] * 1000L + 500 + me + salt);

    /* Reductions: several ops and types. */
    for (int i = 0; i < 8; i++) isrc[i] = (int)(world * 8 + i + salt);
    CHECK(shmem_int_sum_reduce(team, idst, isrc, 8) == 0);
    for (int i = 0; i < 8; i++) {
        int want = 0;
        for (int k = 0; k < n; k++) want += (int)(pes[k] * 8 + i + salt);
        CHECK(idst[i] == want);
    }
    CHECK(shmem_int_max_reduce(team, idst, isrc, 8) == 0);
    CHECK(shmem_int_min_reduce(team, idst + 4, isrc + 4, 4) == 0);
    {
        int hi = pes[0], lo = pes[0];
        for (int k = 1; k < n; k++) hi = pes[k] > hi ? pes[k] : hi, lo = pes[k] < lo ? pes[k] : lo;
        CHECK(idst[0] == (int)(hi * 8 + salt));
        CHECK(idst[4] == (int)(lo * 8 + 4 + salt));
    }
    for (int i = 0; i < 4; i++) isrc[i] = 1 << (world % 24);
    CHECK(shmem_int32_or_reduce(team, idst, isrc, 4) == 0);
    {
        int want = 0;
        for (int k = 0; k < n; k++) want |= 1 << (pes[k] % 24);
        CHECK(idst[0] == want && idst[3] == want);
    }
    CHECK(shmem_int32_xor_reduce(team, idst, isrc, 4) == 0);
    {
        int want = 0;
        for (int k = 0; k < n; k++) want ^= 1 << (pes[k] % 24);
        CHECK(idst[1] == want);
    }
    CHECK(shmem_int32_and_reduce(team, idst, isrc, 4) == 0);
    CHECK(idst[2] == (n == 1 ? isrc[0] : 0));
    for (int i = 0; i < 4; i++) dsrc[i] = 1.0 + world + i;
    CHECK(shmem_double_prod_reduce(team, ddst, dsrc, 4) == 0);
    for (int i = 0; i < 4; i++) {
        double want = 1.0;
        for (int k = 0; k < n; k++) want *= 1.0 + pes[k] + i;
        CHECK(ddst[i] == want);
    }
    for (int i = 0; i < BIG; i++) big_src[i] = world * 7 + i + salt;
    CHECK(shmem_long_sum_reduce(team, big_dst, big_src, BIG) == 0);
    for (int i = 0; i < BIG; i++) {
        long want = 0;
        for (int k = 0; k < n; k++) want += pes[k] * 7L + i + salt;
        CHECK(big_dst[i] == want);
    }

    /* A context on the team: its PE numbers are the team's. */
    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    CHECK(shmem_team_create_ctx(team, 0, &ctx) == 0);
    box[1] = -1;
    box[2] = 0;
    CHECK(shmem_team_sync(team) == 0);
    shmem_ctx_long_p(ctx, &box[1], world * 10 + 3 + salt, next);
    shmem_ctx_long_atomic_add(ctx, &box[2], world + 1, next);
    shmem_ctx_quiet(ctx);
    CHECK(shmem_team_sync(team) == 0);
    CHECK(box[1] == pes[prev] * 10L + 3 + salt);
    CHECK(box[2] == pes[prev] + 1L);
    CHECK(shmem_ctx_long_g(ctx, &box[1], next) == world * 10 + 3 + salt);
    CHECK(shmem_ctx_long_atomic_fetch(ctx, &box[2], prev) == pes[(prev + n - 1) % n] + 1L);
    CHECK(shmem_team_sync(team) == 0);
    shmem_ctx_destroy(ctx);
}

/* Whether this PE is in pes[0..n). */
static int member(const int *pes, int n) {
    for (int i = 0; i < n; i++) {
        if (pes[i] == shmem_my_pe()) return 1;
    }
    return 0;
}

/* Makes, checks and exercises the team of pes[0..n) on its members; returns it (invalid on the
 * others). */
static shmem_team_t list_team(const int *pes, int n, long salt) {
    if (!member(pes, n)) return SHMEM_TEAM_INVALID;
    shmem_team_t t = create(pes, n, 2);
    check_numbering(t, pes, n);
    exercise(t, pes, n, salt);
    return t;
}

/* Splits of `parent` (world PEs pes[0..n), a list team): the parent PEs 1, 3, 5, ... and a
 * grid two wide; each new team's members are the parent's as world PEs. */
static void splits(shmem_team_t parent, const int *pes, int n, long salt) {
    int pme = shmem_team_my_pe(parent);
    int odd[MAXN], no = 0;
    for (int i = 1; i < n; i += 2) odd[no++] = pes[i];
    shmem_team_config_t config = {2};
    if (no > 0) {
        shmem_team_t t = SHMEM_TEAM_INVALID;
        CHECK(shmem_team_split_strided(parent, 1, 2, no, &config, SHMEM_TEAM_NUM_CONTEXTS, &t) ==
              0);
        CHECK((t != SHMEM_TEAM_INVALID) == (pme % 2 == 1));
        if (t != SHMEM_TEAM_INVALID) {
            check_numbering(t, odd, no);
            CHECK(shmem_team_translate_pe(t, shmem_team_my_pe(t), parent) == pme);
            exercise(t, odd, no, salt);
            shmem_team_destroy(t);
        }
    }
    /* Downwards over the whole parent: team PE i is parent PE n-1-i. */
    int down[MAXN];
    for (int i = 0; i < n; i++) down[i] = pes[n - 1 - i];
    shmem_team_t d = SHMEM_TEAM_INVALID;
    CHECK(shmem_team_split_strided(parent, n - 1, -1, n, &config, SHMEM_TEAM_NUM_CONTEXTS, &d) ==
          0);
    check_numbering(d, down, n);
    exercise(d, down, n, salt + 1);
    shmem_team_destroy(d);

    shmem_team_t x = SHMEM_TEAM_INVALID, y = SHMEM_TEAM_INVALID;
    CHECK(shmem_team_split_2d(parent, 2, &config, SHMEM_TEAM_NUM_CONTEXTS, &x, &config,
                              SHMEM_TEAM_NUM_CONTEXTS, &y) == 0);
    int row[2], nr = 0, col[MAXN], nc = 0;
    for (int i = pme - pme % 2; i < n && nr < 2; i++) row[nr++] = pes[i];
    for (int i = pme % 2; i < n; i += 2) col[nc++] = pes[i];
    check_numbering(x, row, nr);
    check_numbering(y, col, nc);
    exercise(x, row, nr, salt + 2);
    exercise(y, col, nc, salt + 3);
    shmem_team_destroy(x);
    shmem_team_destroy(y);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    CHECK(npes <= MAXN);

    /* Every PE, shuffled: the odd PEs upwards, then the even PEs downwards (a progression only
     * below 3 PEs). */
    int all[MAXN], na = 0;
    for (int pe = 1; pe < npes; pe += 2) all[na++] = pe;
    for (int pe = (npes - 1) / 2 * 2; pe >= 0; pe -= 2) all[na++] = pe;
    CHECK(na == npes);
    shmem_team_t everyone = list_team(all, na, 1);
    CHECK(shmem_team_my_pe(everyone) ==
          (me % 2 ? me / 2 : npes / 2 + ((npes - 1) / 2 * 2 - me) / 2));

    /* Lists whose PEs the job has. Overlapping: the PEs in several make them in this order. */
    static const int a[] = {0, 1, 3}, b[] = {3, 0, 2}, c[] = {1, 3}, d[] = {4, 1, 0, 3};
    shmem_team_t ta = SHMEM_TEAM_INVALID, tb = SHMEM_TEAM_INVALID, tc = SHMEM_TEAM_INVALID,
                 td = SHMEM_TEAM_INVALID;
    if (npes >= 4) {
        ta = list_team(a, 3, 10);
        tb = list_team(b, 3, 20);
        tc = list_team(c, 2, 30);
        /* Translation between two list teams: b's PE i is a's PE of world b[i]. */
        if (ta != SHMEM_TEAM_INVALID && tb != SHMEM_TEAM_INVALID) {
            for (int i = 0; i < 3; i++) {
                int want = -1;
                for (int k = 0; k < 3; k++) {
                    if (a[k] == b[i]) want = k;
                }
                CHECK(shmem_team_translate_pe(tb, i, ta) == want);
            }
        }
        /* All three at once again, after each other's collectives. */
        if (ta != SHMEM_TEAM_INVALID) exercise(ta, a, 3, 11);
        if (tb != SHMEM_TEAM_INVALID) exercise(tb, b, 3, 21);
        if (tc != SHMEM_TEAM_INVALID) exercise(tc, c, 2, 31);
    }
    if (npes >= 5) td = list_team(d, 4, 40);
    if (npes >= 6) {
        /* Disjoint list teams made at once. */
        static const int e[] = {0, 1, 3}, f[] = {5, 2, 4};
        shmem_team_t te = list_team(e, 3, 50), tf = list_team(f, 3, 60);
        if (te != SHMEM_TEAM_INVALID) shmem_team_destroy(te);
        if (tf != SHMEM_TEAM_INVALID) shmem_team_destroy(tf);
    }

    /* Splits of list teams. */
    splits(everyone, all, na, 100);
    if (ta != SHMEM_TEAM_INVALID) splits(ta, a, 3, 200);
    if (tb != SHMEM_TEAM_INVALID) splits(tb, b, 3, 300);

    if (td != SHMEM_TEAM_INVALID) shmem_team_destroy(td);
    if (tc != SHMEM_TEAM_INVALID) shmem_team_destroy(tc);
    if (tb != SHMEM_TEAM_INVALID) shmem_team_destroy(tb);
    if (ta != SHMEM_TEAM_INVALID) shmem_team_destroy(ta);

    /* A context outlives nothing: destroying the team ends the contexts made from it. */
    shmem_team_t t = create(all, na, 2);
    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    CHECK(shmem_team_create_ctx(t, 0, &ctx) == 0);
    shmem_team_destroy(t);

    /* Create and destroy list teams past the number of slots. */
    for (int round = 0; round < 70; round++) {
        shmem_team_t r = create(all, na, 2);
        if (round % 23 == 0) exercise(r, all, na, 1000 + round);
        shmem_team_destroy(r);
    }

    /* Errors: a PE twice, out of range, the caller not listed; each returns -1. */
    shmem_team_t bad = SHMEM_TEAM_WORLD;
    int twice[3] = {me, (me + 1) % npes, me};
    CHECK(shmemx_team_create(twice, 3, NULL, 0, &bad) == -1 && bad == SHMEM_TEAM_INVALID);
    int outside[3] = {me, -1, npes};
    CHECK(shmemx_team_create(outside, 3, NULL, 0, &bad) == -1 && bad == SHMEM_TEAM_INVALID);
    if (npes >= 3) {
        int others[2] = {(me + 2) % npes, (me + 1) % npes};
        CHECK(shmemx_team_create(others, 2, NULL, 0, &bad) == -1 && bad == SHMEM_TEAM_INVALID);
    }

    shmem_team_destroy(everyone);
    shmem_barrier_all();
    if (me == 0) printf("team_list: %d PEs ok\n", npes);
    shmem_finalize();
    return 0;
}
