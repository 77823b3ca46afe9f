/*
 * coll_c.c: teams and collectives from C99: shmem_sync with one argument (the team form) and with
 * four (the deprecated active-set form) through the header's macro, the taken address of
 * shmem_sync, complex reductions with C's _Complex types, a split team's broadcast, and the
 * active-set sum with pWrk and pSync. Each PE checks its own data; exits 0 on success.
 */
#include <complex.h>
#include <shmem.h>
#include <stdio.h>

#include "check.h"

static long psync[SHMEM_REDUCE_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long lsrc[4], ldst[4];
static double _Complex zsrc[3], zdst[3];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;

    long *box = shmem_calloc(1, sizeof(long));
    CHECK(box != NULL);
    shmem_long_p(box, 10 + me, (me + 1) % npes);
    shmem_quiet();
    CHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0); /* one argument: shmem_team_sync */
    CHECK(*box == 10 + (me + npes - 1) % npes);
    shmem_sync(0, 0, npes, psync); /* four arguments: the active-set routine */
    void (*as_sync)(int, int, int, long *) = shmem_sync;
    as_sync(0, 0, npes, psync);
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) CHECK(psync[i] == SHMEM_SYNC_VALUE);

    /* Complex sum and product over the world. */
    for (int i = 0; i < 3; i++) zsrc[i] = (double)(me + i) + 1.0 * I;
    CHECK(shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, zdst, zsrc, 3) == 0);
    for (int i = 0; i < 3; i++) {
        double re = 0;
        for (int pe = 0; pe < npes; pe++) re += pe + i;
        CHECK(creal(zdst[i]) == re && cimag(zdst[i]) == npes);
    }
    for (int i = 0; i < 3; i++) zsrc[i] = I;
    CHECK(shmem_complexd_prod_reduce(SHMEM_TEAM_WORLD, zsrc, zsrc, 3) == 0); /* in place */
    double _Complex want = 1;
    for (int pe = 0; pe < npes; pe++) want *= I;
    for (int i = 0; i < 3; i++) CHECK(zsrc[i] == want);

    /* A team of the odd world PEs (or PE 0 alone), broadcast from its last PE. */
    shmem_team_t team;
    int start = npes > 1 ? 1 : 0, size = npes > 1 ? npes / 2 : 1;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, start, 2, size, NULL, 0, &team) == 0);
    if (team != SHMEM_TEAM_INVALID) {
        int tme = shmem_team_my_pe(team), tn = shmem_team_n_pes(team);
        for (int i = 0; i < 4; i++) lsrc[i] = 100 * tme + i;
        CHECK(shmem_long_broadcast(team, ldst, lsrc, 4, tn - 1) == 0);
        for (int i = 0; i < 4; i++) CHECK(ldst[i] == 100 * (tn - 1) + i);
        CHECK(shmem_team_sync(team) == 0);
    } else {
        CHECK(me % 2 == 0);
    }
    shmem_team_destroy(team);

    /* Deprecated active-set sum over the world. */
    for (int i = 0; i < 4; i++) lsrc[i] = me + i;
    shmem_long_sum_to_all(ldst, lsrc, 4, 0, 0, npes, pwrk, psync);
    for (int i = 0; i < 4; i++) CHECK(ldst[i] == (long)npes * (npes - 1) / 2 + (long)npes * i);
    shmem_barrier(0, 0, npes, psync);
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) CHECK(psync[i] == SHMEM_SYNC_VALUE);

    shmem_free(box);
    shmem_finalize();
    return 0;
}
