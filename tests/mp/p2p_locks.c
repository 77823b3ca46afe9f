/*
 * p2p_locks.c: the point-to-point synchronisation sets and the locks used from C the way
 * OpenSHMEM 1.5 programs use them: an all-to-all sum where each PE consumes whichever
 * contribution arrives first (wait_until_any, then wait_until_some, excluding what it has
 * consumed through the status mask), and a counter on one PE updated under a lock with a get
 * and a put. Exits 0 on success; prints the first failure and exits 1.
 */
#include <shmem.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

static long lock;
static int counter;

/* Every PE sends `base + pe` to slot `pe` of every PE and raises that slot's flag; each PE adds
 * up the values as their flags come up. `some` picks wait_until_some over wait_until_any. */
static void all_to_all_sum(int some, long base) {
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *data = shmem_calloc((size_t)npes, sizeof(long));
    int *flags = shmem_calloc((size_t)npes, sizeof(int));
    int *status = calloc((size_t)npes, sizeof(int));
    size_t *indices = malloc((size_t)npes * sizeof(size_t));
    CHECK(data && flags && status && indices);

    for (int i = 1; i <= npes; i++) {
        int pe = (me + i) % npes;
        shmem_long_p(&data[me], base + me, pe);
        shmem_fence(); /* the value lands before its flag */
        shmem_int_atomic_set(&flags[me], 1, pe);
    }
    long sum = 0;
    int consumed = 0;
    while (consumed < npes) {
        size_t n = 1;
        if (some) {
            n = shmem_int_wait_until_some(flags, (size_t)npes, indices, status, SHMEM_CMP_NE, 0);
        } else {
            indices[0] = shmem_int_wait_until_any(flags, (size_t)npes, status, SHMEM_CMP_NE, 0);
        }
        CHECK(n >= 1);
        for (size_t k = 0; k < n; k++) {
            size_t i = indices[k];
            CHECK(i < (size_t)npes && status[i] == 0);
            sum += data[i];
            status[i] = 1;
            consumed++;
        }
    }
    /* Everything is excluded now: the set is empty. */
    CHECK(shmem_int_wait_until_any(flags, (size_t)npes, status, SHMEM_CMP_NE, 0) == SIZE_MAX);
    CHECK(shmem_int_test_all(flags, (size_t)npes, NULL, SHMEM_CMP_EQ, 1) == 1);
    CHECK(sum == base * npes + (long)npes * (npes - 1) / 2);
    shmem_barrier_all();
    free(indices);
    free(status);
    shmem_free(flags);
    shmem_free(data);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();

    all_to_all_sum(0, 1000);
    all_to_all_sum(1, 2000);

    const int rounds = 50;
    for (int k = 0; k < rounds; k++) {
        shmem_set_lock(&lock);
        int v = shmem_int_g(&counter, 0);
        shmem_int_p(&counter, v + 1, 0);
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
    CHECK(shmem_int_g(&counter, 0) == rounds * npes);
    CHECK(lock == 0); /* free and nobody waiting: every PE's word is 0 again */
    shmem_barrier_all();

    /* test_lock: held by one PE, refused to everyone. */
    if (me == 0) CHECK(shmem_test_lock(&lock) == 0);
    shmem_barrier_all();
    CHECK(shmem_test_lock(&lock) == 1);
    shmem_barrier_all();
    if (me == 0) shmem_clear_lock(&lock);
    shmem_finalize();
    return 0;
}
