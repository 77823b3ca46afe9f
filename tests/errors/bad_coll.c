/*
 * bad_coll.c CASE: one bad team or collective call per case, made by every PE of a 2-PE job.
 * tests/errors/CMakeLists.txt holds the message each case must produce. Cases whose routine
 * answers with a return value (the splits) exit with status 3 after checking it.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long psync[SHMEM_REDUCE_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];

static int is(const char *name, const char *want) { return strcmp(name, want) == 0; }

/* A split that must fail with a non-zero return and SHMEM_TEAM_INVALID on every PE. */
static void expect_split_failure(int rc, shmem_team_t team) {
    if (rc == 0 || team != SHMEM_TEAM_INVALID) {
        fprintf(stderr, "bad_coll: the split returned %d and %p\n", rc, (void *)team);
        exit(2);
    }
    shmem_barrier_all();
    exit(3);
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    shmem_init();
    int npes = shmem_n_pes();
    long *src = shmem_calloc(64, sizeof(long));
    long *dst = shmem_calloc(64 * npes, sizeof(long));
    long on_stack[8] = {0};
    shmem_team_t team = SHMEM_TEAM_INVALID, other = SHMEM_TEAM_INVALID;

    if (is(c, "destroy_world")) shmem_team_destroy(SHMEM_TEAM_WORLD);
    if (is(c, "destroy_shared")) shmem_team_destroy(SHMEM_TEAM_SHARED);
    if (is(c, "sync_destroyed")) {
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &team);
        shmem_team_destroy(team);
        shmem_team_sync(team);
    }
    if (is(c, "bcast_bad_root")) shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, 8, npes);
    if (is(c, "fcollect_invalid_team")) shmem_long_fcollect(SHMEM_TEAM_INVALID, dst, src, 1);
    if (is(c, "fcollect_stack_source")) shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, on_stack, 1);
    if (is(c, "alltoalls_zero_stride")) shmem_alltoallsmem(SHMEM_TEAM_WORLD, dst, src, 0, 1, 4);
    if (is(c, "reduce_overlap")) shmem_long_sum_reduce(SHMEM_TEAM_WORLD, src + 1, src, 4);
    if (is(c, "to_all_set_too_big")) {
        shmem_long_sum_to_all(dst, src, 4, 0, 0, npes + 1, pwrk, psync);
    }
    if (is(c, "barrier_null_psync")) shmem_barrier(0, 0, npes, NULL);
    if (is(c, "split_past_parent")) {
        expect_split_failure(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, npes, NULL, 0, &team),
                             team);
    }
    if (is(c, "split_stride_zero")) {
        expect_split_failure(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 0, 2, NULL, 0, &team),
                             team);
    }
    if (is(c, "split_2d_zero_xrange")) {
        int rc = shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, NULL, 0, &team, NULL, 0, &other);
        expect_split_failure(rc != 0 && other == SHMEM_TEAM_INVALID ? rc : 0, team);
    }
    if (is(c, "split_bad_config_mask")) {
        shmem_team_config_t config = {1};
        expect_split_failure(
            shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, &config, 0x100, &team), team);
    }
    fprintf(stderr, "bad_coll: unknown case or no failure: %s\n", c);
    return 2;
}
