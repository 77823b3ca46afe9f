/*
 * team_out_of_step.c CASE TEAM: members of a team whose team collectives differ (another
 * routine, another count or root). The job must end with status 1 and one line naming both
 * PEs and both calls; no PE may return from the call where the members went out of step (one
 * that does exits 2, which fails the test). TEAM is "world" (SHMEM_TEAM_WORLD), "shared"
 * (SHMEM_TEAM_SHARED), "split" (every PE, listed downwards: team PE i is world PE
 * npes - 1 - i) or "list" (every PE, shmemx_team_create's list 1, 2, ..., npes - 1, 0: team PE
 * i is world PE (i + 1) % npes, a progression only at 2 PEs). tests/errors/CMakeLists.txt
 * holds the message each case must produce.
 *
 * "in_step" is the control: every team collective, with collects whose counts differ between
 * members (which the specification allows); it must end with status 0 after every PE has
 * checked the data its peers contributed.
 */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is(const char *name, const char *want) { return strcmp(name, want) == 0; }

/* Reached only if the library let a PE through a call the members were out of step in. */
static void returned(int me, const char *what) {
    fprintf(stderr, "team_out_of_step: PE %d returned from %s\n", me, what);
    exit(2);
}

static int failures;

static void expect(long got, long want, const char *what, int me, int i) {
    if (got == want) return;
    fprintf(stderr, "team_out_of_step: PE %d: %s[%d] = %ld, expected %ld\n", me, what, i, got,
            want);
    failures++;
}

/* Every team collective on `team` (n members, this PE is member `t`), data checked. */
static void in_step(shmem_team_t team, int me, int t, int n) {
    long *src = shmem_malloc(1024 * sizeof(long));
    long *dst = shmem_malloc(64 * 64 * sizeof(long));
    float *fsrc = shmem_malloc(8 * sizeof(float));
    float *fdst = shmem_malloc(8 * sizeof(float));
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 1024; i++) src[i] = 1000L * round + 100L * t + i;
        shmem_team_sync(team);
        for (int root = 0; root < n; root++) {
            shmem_long_broadcast(team, dst, src, 8, root);
            for (int i = 0; i < 8; i++)
                expect(dst[i], 1000L * round + 100L * root + i, "bcast", me, i);
            shmem_broadcastmem(team, dst, src, 3 * sizeof(long), root);
            for (int i = 0; i < 3; i++)
                expect(dst[i], 1000L * round + 100L * root + i, "bcastmem", me, i);
        }
        /* Member k gives k + 1 elements: counts differ, the call is the same. */
        shmem_long_collect(team, dst, src, (size_t)t + 1);
        int at = 0;
        for (int k = 0; k < n; k++)
            for (int i = 0; i <= k; i++)
                expect(dst[at++], 1000L * round + 100L * k + i, "collect", me, at);
        shmem_long_fcollect(team, dst, src, 2);
        for (int k = 0; k < n; k++)
            for (int i = 0; i < 2; i++)
                expect(dst[2 * k + i], 1000L * round + 100L * k + i, "fcollect", me, i);
        shmem_long_alltoall(team, dst, src, 2);
        for (int k = 0; k < n; k++)
            for (int i = 0; i < 2; i++)
                expect(dst[2 * k + i], 1000L * round + 100L * k + 2 * t + i, "alltoall", me, i);
        shmem_long_alltoalls(team, dst, src, 1, 2, 1);
        for (int k = 0; k < n; k++)
            expect(dst[k], 1000L * round + 100L * k + 2 * t, "alltoalls", me, k);
        shmem_long_sum_reduce(team, dst, src, 4);
        for (int i = 0; i < 4; i++)
            expect(dst[i], n * (1000L * round + i) + 100L * n * (n - 1) / 2, "sum_reduce", me, i);
        for (int i = 0; i < 8; i++) fsrc[i] = (float)(t * 8 + i);
        shmem_float_max_reduce(team, fdst, fsrc, 8);
        for (int i = 0; i < 8; i++) expect((long)fdst[i], (n - 1) * 8L + i, "max_reduce", me, i);
        /* 8 KiB: larger than a block, split by chunk across members. */
        shmem_long_max_reduce(team, dst, src, 1024);
        for (int i = 0; i < 1024; i++)
            expect(dst[i], 1000L * round + 100L * (n - 1) + i, "max_reduce1024", me, i);
    }
    shmem_team_t sub = SHMEM_TEAM_INVALID;
    shmem_team_split_strided(team, 0, 1, n, NULL, 0, &sub);
    if (sub != SHMEM_TEAM_INVALID) {
        shmem_team_sync(sub);
        shmem_team_destroy(sub);
    }
    shmem_free(fdst);
    shmem_free(fsrc);
    shmem_free(dst);
    shmem_free(src);
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    const char *which = argc > 2 ? argv[2] : "world";
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    shmem_team_t team = SHMEM_TEAM_WORLD;
    if (is(which, "shared")) team = SHMEM_TEAM_SHARED;
    if (is(which, "split") &&
        shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, NULL, 0, &team) != 0) {
        fprintf(stderr, "team_out_of_step: the split failed\n");
        return 3;
    }
    if (is(which, "list")) {
        int pes[64];
        for (int i = 0; i < npes && i < 64; i++) pes[i] = (i + 1) % npes;
        if (npes > 64 || shmemx_team_create(pes, npes, NULL, 0, &team) != 0) {
            fprintf(stderr, "team_out_of_step: shmemx_team_create failed\n");
            return 3;
        }
    }
    int t = shmem_team_my_pe(team), n = shmem_team_n_pes(team);
    long *src = shmem_calloc(64, sizeof(long));
    long *dst = shmem_calloc(64 * 64, sizeof(long));
    /* One collective in step first: the calls go out of step at team call #2 or later. */
    shmem_team_sync(team);

    if (is(c, "in_step")) {
        in_step(team, me, t, n);
        if (failures == 0 && me == 0)
            printf("team_out_of_step: in step on %d PEs (%s)\n", npes, which);
        shmem_finalize();
        return failures != 0;
    }
    if (is(c, "reduce_vs_broadcast")) {
        /* Team PE 0 reduces; the others wait for a broadcast from it. */
        if (t == 0)
            shmem_float_sum_reduce(team, (float *)dst, (const float *)src, 4);
        else
            shmem_broadcastmem(team, dst, src, 16, 0);
        returned(me, "the collective");
    }
    if (is(c, "broadcast_vs_reduce")) {
        /* Team PE 0 broadcasts (it is the root) and waits for the others, which reduce. */
        if (t == 0)
            shmem_broadcastmem(team, dst, src, 16, 0);
        else
            shmem_float_sum_reduce(team, (float *)dst, (const float *)src, 4);
        returned(me, "the collective");
    }
    if (is(c, "reduce_counts")) {
        /* The lower half of the members reduces 4 elements, the upper half 8. */
        shmem_int_sum_reduce(team, (int *)dst, (const int *)src, t < n / 2 ? 4 : 8);
        returned(me, "shmem_int_sum_reduce");
    }
    if (is(c, "broadcast_roots")) {
        /* Team PE 0 names team PE 1 the root, the others team PE 0: nobody gets data. */
        shmem_broadcastmem(team, dst, src, 8, t == 0 ? 1 : 0);
        returned(me, "shmem_broadcastmem");
    }
    if (is(c, "broadcast_counts")) {
        /* The root (team PE 0) sends 8 bytes, the others expect 16. */
        shmem_broadcastmem(team, dst, src, t == 0 ? 8 : 16, 0);
        returned(me, "shmem_broadcastmem");
    }
    if (is(c, "sync_vs_fcollect")) {
        /* The last member synchronises while the others fcollect. */
        if (t == n - 1)
            shmem_team_sync(team);
        else
            shmem_long_fcollect(team, dst, src, 2);
        returned(me, "the collective");
    }
    if (is(c, "alltoalls_strides")) {
        /* Team PE 0 reads its peers' sources 2 elements apart, the others 1 apart. */
        shmem_long_alltoalls(team, dst, src, 1, t == 0 ? 2 : 1, 1);
        returned(me, "shmem_long_alltoalls");
    }
    fprintf(stderr, "team_out_of_step: unknown case '%s'\n", c);
    return 4;
}
