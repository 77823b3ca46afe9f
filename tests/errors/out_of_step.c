/*
 * out_of_step.c CASE: PEs whose calls over all PEs differ (an extra allocation, different sizes,
 * different blocks freed, a PE that finalizes while another waits elsewhere). The job must end
 * with status 1 and one line naming both PEs and both calls; no PE may return from the call
 * where the PEs went out of step (one that does exits 2, which fails the test).
 * tests/errors/CMakeLists.txt holds the message each case must produce.
 *
 * "in_step" is the control: barrier_all and sync_all mixed across PEs, allocations that agree;
 * it must end with status 0 after every PE has checked its neighbour's data. "late_finalize" is
 * the other control: a PE that works longer than the control timeout before a collective call is
 * late, not out of step, and is waited for.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int is(const char *name, const char *want) { return strcmp(name, want) == 0; }

/* Reached only if the library let a PE through a call the PEs were out of step in. */
static void returned(int me, const char *what) {
    fprintf(stderr, "out_of_step: PE %d returned from %s\n", me, what);
    exit(2);
}

static int in_step(int me, int npes) {
    const int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    long *x = shmem_malloc(4 * sizeof(long));
    for (int round = 0; round < 6; round++) {
        long v = round * 100 + me;
        shmem_long_p(&x[round % 4], v, right);
        shmem_quiet();
        /* Either routine is a barrier over all PEs: they agree with each other. */
        if ((me + round) % 2 == 0)
            shmem_barrier_all();
        else
            shmem_sync_all();
        if (x[round % 4] != round * 100 + left) {
            fprintf(stderr, "out_of_step: PE %d round %d: got %ld, expected %d\n", me, round,
                    x[round % 4], round * 100 + left);
            return 1;
        }
        shmem_barrier_all();
    }
    /* Allocation routines that ask for the same block agree whichever routine it is. */
    long *y = me % 2 ? shmem_calloc(8, sizeof(long)) : shmem_malloc(8 * sizeof(long));
    long *z = shmem_realloc(y, 64 * sizeof(long));
    shmem_long_p(&z[63], me, right);
    shmem_barrier_all();
    if (z[63] != left) {
        fprintf(stderr, "out_of_step: PE %d: realloc'd block got %ld, expected %d\n", me, z[63],
                left);
        return 1;
    }
    shmem_free(z);
    shmem_free(x);
    if (me == 0) printf("out_of_step: in step on %d PEs\n", npes);
    shmem_finalize();
    return 0;
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();

    if (is(c, "in_step")) return in_step(me, npes);
    if (is(c, "late_finalize")) {
        /* The control: the last PE works past the control timeout before it finalizes, and
         * then allocates; the others wait for it in finalize and in the allocation as long as
         * it takes, since it is not stuck in the library. */
        if (me == npes - 1) sleep(3);
        long *x = shmem_malloc(sizeof(long));
        shmem_free(x);
        if (me == npes - 1) sleep(3);
        shmem_finalize();
        if (me == 0) printf("out_of_step: the late PE was waited for on %d PEs\n", npes);
        return 0;
    }
    if (is(c, "extra_malloc")) {
        /* PE 0 allocates once more than the others, which go on to finalize. */
        (void)shmem_malloc(64);
        if (me == 0) {
            (void)shmem_malloc(64);
            returned(me, "the extra shmem_malloc");
        }
        shmem_finalize();
        returned(me, "shmem_finalize");
    }
    if (is(c, "extra_barrier")) {
        /* PE 0 synchronises once more than the others, which go on to finalize. */
        shmem_barrier_all();
        if (me == 0) {
            shmem_barrier_all();
            returned(me, "the extra shmem_barrier_all");
        }
        shmem_finalize();
        returned(me, "shmem_finalize");
    }
    if (is(c, "malloc_sizes")) {
        /* The lower half of the PEs asks for 64 bytes, the upper half for 128. */
        (void)shmem_malloc(me < npes / 2 ? 64 : 128);
        returned(me, "shmem_malloc");
    }
    if (is(c, "free_different")) {
        /* PE 0 frees its first block, the others their second. */
        char *a = shmem_malloc(64);
        char *b = shmem_malloc(64);
        shmem_free(me == 0 ? a : b);
        returned(me, "shmem_free");
    }
    if (is(c, "finalize_while_team_sync")) {
        /* PE 0 waits in a team barrier the others never enter: they are in shmem_finalize,
         * which gives up after the control timeout. */
        (void)shmem_malloc(64);
        if (me == 0) {
            shmem_team_sync(SHMEM_TEAM_WORLD);
            returned(me, "shmem_team_sync");
        }
        shmem_finalize();
        returned(me, "shmem_finalize");
    }
    fprintf(stderr, "out_of_step: unknown case '%s'\n", c);
    return 4;
}
