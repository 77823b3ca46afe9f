/* cann_team.c: CANN's host teams and barriers at N PEs (under shmemrun): the world handle, a
 * strided split of the even PEs, a 2-D split, translation, configuration, barrier and sync over
 * a team and over all PEs (each checked by data a neighbour put before it), destroy, and the
 * refusals (bad handles, NULL outputs, an invalid triplet, the world team's destroy, the
 * on-stream forms), which must return without ending the job. Prints "PE x of n: CANN teams
 * checked" at the end. */
#include <aclshmem.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"

int main(void) {
    CHECK(aclshmem_team_my_pe(ACLSHMEM_TEAM_WORLD) == -1); /* not started yet */
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();

    /* The world team and bad handles. */
    CHECK(aclshmem_team_my_pe(ACLSHMEM_TEAM_WORLD) == me);
    CHECK(aclshmem_team_n_pes(ACLSHMEM_TEAM_WORLD) == npes);
    CHECK(aclshmem_team_my_pe(ACLSHMEM_TEAM_INVALID) == -1);
    CHECK(aclshmem_team_n_pes(7) == -1);
    CHECK(aclshmem_team_n_pes(ACLSHMEM_MAX_TEAMS + 3) == -1);
    CHECK(aclshmem_team_translate_pe(ACLSHMEM_TEAM_WORLD, 0, 9) == -1);
    aclshmem_team_config_t cfg;
    CHECK(aclshmem_team_get_config(ACLSHMEM_TEAM_WORLD, &cfg) == ACLSHMEM_SUCCESS);
    CHECK(cfg.uniqueid == 0 && cfg.version == 0);
    CHECK(aclshmem_team_get_config(ACLSHMEM_TEAM_WORLD, NULL) == ACLSHMEM_INVALID_PARAM);
    CHECK(aclshmem_team_get_config(5, &cfg) == ACLSHMEM_INVALID_PARAM);

    /* Refused splits, on every PE alike. */
    aclshmem_team_t t = 123;
    CHECK(aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 0, 1, npes + 1, &t) ==
          ACLSHMEM_INVALID_PARAM);
    CHECK(t == ACLSHMEM_TEAM_INVALID);
    CHECK(aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 0, 1, npes, NULL) ==
          ACLSHMEM_INVALID_PARAM);
    t = 123;
    CHECK(aclshmem_team_split_strided(42, 0, 1, 1, &t) == ACLSHMEM_INVALID_PARAM);
    CHECK(t == ACLSHMEM_TEAM_INVALID);
    aclshmem_team_t x = 5, y = 5;
    CHECK(aclshmem_team_split_2d(ACLSHMEM_TEAM_WORLD, 0, &x, &y) == ACLSHMEM_INVALID_PARAM);
    CHECK(x == ACLSHMEM_TEAM_INVALID && y == ACLSHMEM_TEAM_INVALID);
    CHECK(aclshmem_team_split_2d(ACLSHMEM_TEAM_WORLD, 1, &x, NULL) == ACLSHMEM_INVALID_PARAM);

    /* The even PEs. */
    int n_even = (npes + 1) / 2;
    aclshmem_team_t even = 123;
    CHECK(aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 0, 2, n_even, &even) == 0);
    long *word = (long *)aclshmem_calloc(2, sizeof(long));
    CHECK(word != NULL);
    if (me % 2 == 0) {
        CHECK(even > 0);
        CHECK(aclshmem_team_my_pe(even) == me / 2);
        CHECK(aclshmem_team_n_pes(even) == n_even);
        for (int k = 0; k < n_even; k++) {
            CHECK(aclshmem_team_translate_pe(even, k, ACLSHMEM_TEAM_WORLD) == 2 * k);
        }
        CHECK(aclshmem_team_translate_pe(ACLSHMEM_TEAM_WORLD, me, even) == me / 2);
        if (npes > 1) CHECK(aclshmem_team_translate_pe(ACLSHMEM_TEAM_WORLD, 1, even) == -1);
        CHECK(aclshmem_team_get_config(even, &cfg) == 0 && cfg.uniqueid == (uint64_t)even);
        /* Barrier over the team: the put to the next even PE is complete after it. */
        int to = aclshmem_team_translate_pe(even, (me / 2 + 1) % n_even, ACLSHMEM_TEAM_WORLD);
        int from =
            aclshmem_team_translate_pe(even, (me / 2 + n_even - 1) % n_even, ACLSHMEM_TEAM_WORLD);
        shmem_long_put_nbi(word, (long[]){100 + me}, 1, to);
        aclshmem_barrier(even);
        CHECK(word[0] == 100 + from);
        /* Sync over the team: the stores before it are seen after it. */
        long *peer = (long *)shmem_ptr(word + 1, to);
        if (peer != NULL) {
            *peer = 200 + me;
            aclshmem_sync(even);
            CHECK(word[1] == 200 + from);
        } else {
            aclshmem_sync(even);
        }
        aclshmem_sync(even);
    } else {
        CHECK(even == ACLSHMEM_TEAM_INVALID);
        CHECK(aclshmem_team_my_pe(even) == -1);
    }

    /* Barrier and sync over all PEs. */
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    aclshmem_barrier_all();
    shmem_long_put_nbi(word, (long[]){300 + me}, 1, next);
    aclshmem_barrier_all();
    CHECK(word[0] == 300 + prev);
    aclshmem_sync_all();
    shmem_long_p(word + 1, 400 + me, next);
    shmem_quiet();
    aclshmem_sync_all();
    CHECK(word[1] == 400 + prev);
    aclshmem_barrier(ACLSHMEM_TEAM_WORLD);
    aclshmem_sync(ACLSHMEM_TEAM_WORLD);
    aclshmem_barrier(77); /* refused: returns */
    aclshmem_sync(-5);
    /* Without the npu device, refused: return (tests/accel covers them on streams). */
    if (!on_accelerator()) {
        aclshmemx_barrier_on_stream(ACLSHMEM_TEAM_WORLD, NULL);
        aclshmemx_barrier_all_on_stream(NULL);
    }

    /* A 2-D split, two PEs wide: row me / 2 (x = me % 2), column me % 2 (y = me / 2). */
    CHECK(aclshmem_team_split_2d(ACLSHMEM_TEAM_WORLD, 2, &x, &y) == 0);
    CHECK(x > 0 && y > 0 && x != y && x != even && y != even);
    CHECK(aclshmem_team_my_pe(x) == me % 2);
    CHECK(aclshmem_team_n_pes(x) == (me / 2 * 2 + 1 < npes ? 2 : 1));
    CHECK(aclshmem_team_my_pe(y) == me / 2);
    CHECK(aclshmem_team_n_pes(y) == (npes - me % 2 + 1) / 2);
    CHECK(aclshmem_team_translate_pe(y, 0, ACLSHMEM_TEAM_WORLD) == me % 2);
    CHECK(aclshmem_team_translate_pe(x, 0, ACLSHMEM_TEAM_WORLD) == me / 2 * 2);
    aclshmem_barrier(x);
    aclshmem_barrier(y);

    /* Destroy: the handles name no team afterwards; the world team is refused. */
    aclshmem_team_destroy(y);
    aclshmem_team_destroy(x);
    CHECK(aclshmem_team_n_pes(x) == -1 && aclshmem_team_n_pes(y) == -1);
    if (even != ACLSHMEM_TEAM_INVALID) {
        aclshmem_team_destroy(even);
        CHECK(aclshmem_team_my_pe(even) == -1);
    }
    aclshmem_team_destroy(ACLSHMEM_TEAM_WORLD);
    aclshmem_team_destroy(ACLSHMEM_TEAM_INVALID);
    CHECK(aclshmem_team_n_pes(ACLSHMEM_TEAM_WORLD) == npes);
    aclshmem_barrier_all();

    /* Handles are reused after destroy. */
    aclshmem_team_t again = ACLSHMEM_TEAM_INVALID;
    CHECK(aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 0, 1, npes, &again) == 0);
    CHECK(again > 0 && aclshmem_team_n_pes(again) == npes);
    aclshmem_team_destroy(again);

    aclshmem_free(word);
    printf("PE %d of %d: CANN teams checked\n", me, npes);
    fflush(stdout);
    shmem_finalize();
    return 0;
}
