/*
 * allgather.c: the main demo. Every PE owns a block of numbers; a ring of puts passes the
 * blocks along until every PE holds all of them, then every PE checks every value it received.
 *
 *   shmemrun -n 4 ./allgather
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCK 1024 /* longs per PE */

static long value(int pe, int i) { return (long)pe * 1000003L + i; }

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    int next = (me + 1) % npes;

    long *all = shmem_malloc((size_t)npes * BLOCK * sizeof(long));
    if (all == NULL) {
        fprintf(stderr, "PE %d: shmem_malloc failed\n", me);
        shmem_global_exit(1);
    }
    for (int i = 0; i < BLOCK; i++) all[(size_t)me * BLOCK + (size_t)i] = value(me, i);
    shmem_barrier_all();

    /* Step s: forward the block that came from PE (me - s) to the next PE. */
    for (int s = 0; s < npes - 1; s++) {
        int owner = (me - s + npes) % npes;
        long *block = &all[(size_t)owner * BLOCK];
        shmem_putmem(block, block, BLOCK * sizeof(long), next);
        shmem_barrier_all();
    }

    long errors = 0;
    for (int pe = 0; pe < npes; pe++) {
        for (int i = 0; i < BLOCK; i++) {
            if (all[(size_t)pe * BLOCK + (size_t)i] != value(pe, i)) errors++;
        }
    }
    /* Gather every PE's error count on PE 0 with puts, so PE 0 reports for the job. */
    long *counts = shmem_calloc((size_t)npes, sizeof(long));
    shmem_putmem(&counts[me], &errors, sizeof errors, 0);
    shmem_barrier_all();
    int status = 0;
    if (me == 0) {
        long total = 0;
        for (int pe = 0; pe < npes; pe++) total += counts[pe];
        if (total == 0) {
            printf("allgather on %d PEs: verified %d values from every PE on every PE\n", npes,
                   BLOCK);
        } else {
            printf("allgather on %d PEs: FAILED, %ld wrong values\n", npes, total);
            status = 1;
        }
    }
    shmem_free(counts);
    shmem_free(all);
    shmem_finalize();
    return status;
}
