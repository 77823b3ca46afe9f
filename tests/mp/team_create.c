/*
 * team_create.c: shmemx_team_create, teams their members alone make: disjoint teams made at
 * once (pairs, the even and the odd PEs), overlapping teams made in turn by the PEs they share,
 * a team listed downwards, a team of one PE, create and destroy repeated past the number of
 * slots, and the list errors. On each team a sum reduction, an fcollect, a broadcast and a
 * barrier after puts, every member checking what the others wrote. PEs outside a team never
 * call anything on it. Exits 0 on success.
 */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>

#include "check.h"

static long src[8], dst[8], gathered[64], box[2];
static int slot, slot_max, slot_min;

/* Creates the team of pes[0..n) (this PE among them) and checks its numbering. */
static shmem_team_t create(const int *pes, int n) {
    shmem_team_t team = SHMEM_TEAM_INVALID;
    CHECK(shmemx_team_create(pes, n, NULL, 0, &team) == 0);
    CHECK(team != SHMEM_TEAM_INVALID);
    CHECK(shmem_team_n_pes(team) == n);
    int me = shmem_team_my_pe(team);
    CHECK(me >= 0 && me < n && pes[me] == shmem_my_pe());
    for (int i = 0; i < n; i++) {
        CHECK(shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD) == pes[i]);
    }
    return team;
}

/* Collectives on `team` (world PEs pes[0..n)), each member checking the others' data; `salt`
 * tells one use of a team from the next. */
static void exercise(shmem_team_t team, const int *pes, int n, long salt) {
    int me = shmem_team_my_pe(team);
    long world = shmem_my_pe();
    /* The team's slot: one of the created teams', the same on every member. */
    slot = shmemx_team_index(team);
    CHECK(slot >= 2 && slot < 64);
    CHECK(shmem_int_max_reduce(team, &slot_max, &slot, 1) == 0);
    CHECK(shmem_int_min_reduce(team, &slot_min, &slot, 1) == 0);
    CHECK(slot_max == slot && slot_min == slot);
    for (int i = 0; i < 8; i++) src[i] = world * 100 + i + salt;
    CHECK(shmem_long_sum_reduce(team, dst, src, 8) == 0);
    for (int i = 0; i < 8; i++) {
        long want = 0;
        for (int k = 0; k < n; k++) want += pes[k] * 100L + i + salt;
        CHECK(dst[i] == want);
    }
    CHECK(shmem_long_fcollect(team, gathered, src, 2) == 0);
    for (int k = 0; k < n; k++) {
        CHECK(gathered[2 * k] == pes[k] * 100L + salt);
        CHECK(gathered[2 * k + 1] == pes[k] * 100L + 1 + salt);
    }
    int root = n - 1;
    dst[0] = -1;
    src[0] = 7000 + salt;
    CHECK(shmem_long_broadcast(team, dst, src, 1, root) == 0);
    CHECK(dst[0] == 7000 + salt);
    /* A put to the next member, quiet, then the team's sync: the put is visible. */
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    shmem_long_p(&box[0], world * 10 + salt, pes[next]);
    shmem_quiet();
    CHECK(shmem_team_sync(team) == 0);
    CHECK(box[0] == pes[prev] * 10L + salt);
    CHECK(shmem_team_sync(team) == 0);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int list[64];

    CHECK(shmemx_team_index(SHMEM_TEAM_WORLD) == 0);
    CHECK(shmemx_team_index(SHMEM_TEAM_SHARED) == 1);
    CHECK(shmemx_team_index(SHMEM_TEAM_INVALID) == -1);

    /* Errors, found before any wait: every one returns -1 and SHMEM_TEAM_INVALID. */
    shmem_team_t bad = SHMEM_TEAM_WORLD;
    CHECK(shmemx_team_create(&me, 0, NULL, 0, &bad) == -1 && bad == SHMEM_TEAM_INVALID);
    int outside[2] = {me, npes};
    CHECK(shmemx_team_create(outside, 2, NULL, 0, &bad) == -1 && bad == SHMEM_TEAM_INVALID);
    int twice[2] = {me, me};
    CHECK(shmemx_team_create(twice, 2, NULL, 0, &bad) == -1);
    /* Lists that are not progressions make teams too: team_list.c. */
    if (npes >= 2) {
        int other = (me + 1) % npes;
        CHECK(shmemx_team_create(&other, 1, NULL, 0, &bad) == -1); /* the caller is not listed */
    }
    shmem_team_config_t config = {-1};
    CHECK(shmemx_team_create(&me, 1, &config, SHMEM_TEAM_NUM_CONTEXTS, &bad) == -1);

    /* A team of this PE alone. */
    shmem_team_t solo = create(&me, 1);
    exercise(solo, &me, 1, 1);
    shmem_team_destroy(solo);

    /* Disjoint pairs (2k, 2k+1), the last PE of an odd count alone, made at once. */
    int first = me - me % 2;
    int n = first + 1 < npes ? 2 : 1;
    for (int i = 0; i < n; i++) list[i] = first + i;
    shmem_team_t pair = create(list, n);
    exercise(pair, list, n, 2);

    /* The even PEs and the odd PEs, stride 2, made at once while the pairs live. */
    int parity = me % 2;
    n = 0;
    for (int pe = parity; pe < npes; pe += 2) list[n++] = pe;
    shmem_team_t strided = create(list, n);
    exercise(strided, list, n, 3);
    exercise(pair, (int[]){first, first + 1}, first + 1 < npes ? 2 : 1, 4);

    /* Overlapping teams made in turn: A = PEs 0 .. npes-2, then B = PEs 1 .. npes-1; the PEs
     * in both make A first, then B. */
    if (npes >= 3) {
        int a[64], b[64];
        for (int i = 0; i < npes - 1; i++) a[i] = i, b[i] = i + 1;
        shmem_team_t ta = SHMEM_TEAM_INVALID, tb = SHMEM_TEAM_INVALID;
        if (me <= npes - 2) ta = create(a, npes - 1);
        if (me >= 1) tb = create(b, npes - 1);
        if (ta != SHMEM_TEAM_INVALID) exercise(ta, a, npes - 1, 5);
        if (tb != SHMEM_TEAM_INVALID) exercise(tb, b, npes - 1, 6);
        if (ta != SHMEM_TEAM_INVALID) exercise(ta, a, npes - 1, 7);
        if (ta != SHMEM_TEAM_INVALID) shmem_team_destroy(ta);
        if (tb != SHMEM_TEAM_INVALID) shmem_team_destroy(tb);
    }

    /* Downwards: every PE from the last to the first, team PE i is world PE npes-1-i. */
    for (int i = 0; i < npes; i++) list[i] = npes - 1 - i;
    shmem_team_t down = create(list, npes);
    CHECK(shmem_team_my_pe(down) == npes - 1 - me);
    exercise(down, list, npes, 8);
    shmem_team_destroy(down);
    shmem_team_destroy(strided);
    shmem_team_destroy(pair);

    /* Create and destroy past the number of slots: a destroyed team's slot is free again; the
     * same list again gets a new call key each time. */
    first = me - me % 2;
    n = first + 1 < npes ? 2 : 1;
    for (int i = 0; i < n; i++) list[i] = first + i;
    for (int round = 0; round < 80; round++) {
        shmem_team_t t = create(list, n);
        if (round % 16 == 0) exercise(t, list, n, 100 + round);
        shmem_team_destroy(t);
    }

    shmem_barrier_all();
    if (me == 0) printf("team_create: %d PEs ok\n", npes);
    shmem_finalize();
    return 0;
}
