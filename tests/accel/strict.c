/* strict.c: the host API over a heap the CPU must not touch. Run with SHMEM_DEVICE=npu over the
 * ACL stand-in in strict mode (ACL_STANDIN_STRICT=1), or SHMEM_DEVICE=cuda over the CUDA driver's
 * (CUDA_STANDIN_STRICT=1), where a CPU load or store of device memory
 * is a SIGSEGV: neither the library nor this program touches the heap, every byte moves through
 * the library's calls (the device's copies), and every PE checks what its peers wrote by getting
 * it into host memory. Families: put/get/p/g (blocking, nbi, strided), AMOs, put-with-signal and
 * signal waits, wait_until/test on a heap word, locks, calloc/realloc, broadcast, collect,
 * fcollect, alltoall, reductions, a split team's sync and reduction. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_check.h"

static int me, npes;

static long get_long(const long *sym, int pe) { return shmem_long_g(sym, pe); }

int main(void) {
    shmem_init();
    me = check_pe = shmem_my_pe();
    npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    enum { K = 64 };

    /* RMA: blocking, nbi, single elements, strided. */
    long *a = shmem_calloc(K, sizeof(long));
    long host[K], back[K];
    for (int i = 0; i < K; i++) host[i] = me * 1000 + i;
    shmem_long_put(a, host, K, right);
    shmem_barrier_all();
    shmem_long_get(back, a, K, me);
    for (int i = 0; i < K; i++) CHECK(back[i] == left * 1000 + i, "a[%d] = %ld", i, back[i]);
    shmem_barrier_all(); /* every PE has read before a neighbour writes again */
    shmem_long_p(&a[0], -me, right);
    shmem_long_put_nbi(&a[1], host, 3, right);
    shmem_quiet();
    shmem_barrier_all();
    CHECK(get_long(&a[0], me) == -left, "p: %ld", get_long(&a[0], me));
    CHECK(get_long(&a[3], me) == left * 1000 + 2, "nbi: %ld", get_long(&a[3], me));
    shmem_long_iput(&a[8], host, 2, 1, 4, right); /* a[8], a[10], a[12], a[14] */
    shmem_barrier_all();
    CHECK(get_long(&a[12], me) == left * 1000 + 2, "iput: %ld", get_long(&a[12], me));

    /* AMOs on a heap word, from every PE to PE 0. */
    long *ctr = shmem_calloc(1, sizeof(long));
    shmem_barrier_all();
    for (int i = 0; i < 10; i++) shmem_long_atomic_fetch_add(ctr, 1, 0);
    shmem_long_atomic_add(ctr, 5, 0);
    shmem_barrier_all();
    CHECK(shmem_long_atomic_fetch(ctr, 0) == 15L * npes, "counter %ld",
          shmem_long_atomic_fetch(ctr, 0));
    shmem_barrier_all(); /* every PE has read the counter before any swaps it */
    long old = shmem_long_atomic_compare_swap(ctr, 15L * npes, -1, 0);
    shmem_barrier_all();
    CHECK(old == 15L * npes || old == -1, "cswap found %ld", old);
    CHECK(shmem_long_atomic_fetch(ctr, 0) == -1, "after cswap %ld",
          shmem_long_atomic_fetch(ctr, 0));

    /* Put with signal, and a signal wait on this PE's device heap. */
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    long *box = shmem_calloc(K, sizeof(long));
    shmem_barrier_all();
    shmem_long_put_signal(box, host, K, sig, 1, SHMEM_SIGNAL_ADD, right);
    CHECK(shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 1) == 1, "signal");
    shmem_long_get(back, box, K, me);
    CHECK(back[K - 1] == left * 1000 + K - 1, "box after its signal: %ld", back[K - 1]);

    /* wait_until / test on a heap word a peer sets. */
    int *flag = shmem_calloc(1, sizeof(int));
    shmem_barrier_all();
    CHECK(shmem_int_test(flag, SHMEM_CMP_NE, 0) == 0, "flag set early");
    shmem_barrier_all(); /* every PE has tested its flag before a neighbour sets it */
    shmem_int_atomic_set(flag, 7, right);
    shmem_int_wait_until(flag, SHMEM_CMP_EQ, 7);

    /* A lock on the heap guards a read-modify-write of PE 0's word. */
    long *lock = shmem_calloc(1, sizeof(long));
    long *shared = shmem_calloc(1, sizeof(long));
    shmem_barrier_all();
    for (int i = 0; i < 5; i++) {
        shmem_set_lock(lock);
        long v = shmem_long_g(shared, 0);
        shmem_long_p(shared, v + 1, 0);
        shmem_quiet();
        shmem_clear_lock(lock);
    }
    shmem_barrier_all();
    CHECK(get_long(shared, 0) == 5L * npes, "locked counter %ld", get_long(shared, 0));

    /* calloc zeroes, realloc keeps the contents. */
    long *z = shmem_calloc(K, sizeof(long));
    shmem_long_get(back, z, K, me);
    for (int i = 0; i < K; i++) CHECK(back[i] == 0, "calloc'd z[%d] = %ld", i, back[i]);
    shmem_long_put(z, host, K, me);
    shmem_barrier_all();
    long *r = shmem_realloc(z, 4 * K * sizeof(long));
    CHECK(r != NULL, "realloc");
    shmem_long_get(back, r, K, me);
    for (int i = 0; i < K; i++) CHECK(back[i] == host[i], "realloc'd r[%d] = %ld", i, back[i]);

    /* Collectives on the world team. */
    long *src = shmem_calloc(K, sizeof(long));
    long *dst = shmem_calloc((size_t)K * npes, sizeof(long));
    shmem_long_put(src, host, K, me);
    shmem_barrier_all();
    CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, K, 0) == 0, "broadcast");
    shmem_long_get(back, dst, K, me);
    for (int i = 0; i < K; i++) CHECK(back[i] == i, "broadcast dst[%d] = %ld", i, back[i]);
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, K) == 0, "fcollect");
    for (int pe = 0; pe < npes; pe++) {
        shmem_long_get(back, dst + (size_t)pe * K, K, me);
        CHECK(back[5] == pe * 1000 + 5, "fcollect block %d: %ld", pe, back[5]);
    }
    CHECK(shmem_long_collect(SHMEM_TEAM_WORLD, dst, src, 2) == 0, "collect");
    shmem_long_get(back, dst, 2 * npes, me);
    CHECK(back[2 * (npes - 1) + 1] == (npes - 1) * 1000 + 1, "collect tail %ld",
          back[2 * (npes - 1) + 1]);
    long *all = shmem_calloc((size_t)npes, sizeof(long));
    long *gathered = shmem_calloc((size_t)npes, sizeof(long));
    long mine[64];
    for (int pe = 0; pe < npes; pe++) mine[pe] = me * 100 + pe;
    shmem_long_put(all, mine, npes, me);
    shmem_barrier_all();
    CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, gathered, all, 1) == 0, "alltoall");
    shmem_long_get(back, gathered, npes, me);
    for (int pe = 0; pe < npes; pe++) CHECK(back[pe] == pe * 100 + me, "alltoall %d", pe);
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, K) == 0, "sum_reduce");
    shmem_long_get(back, dst, K, me);
    long sum_pe = (long)npes * (npes - 1) / 2;
    for (int i = 0; i < K; i++) {
        CHECK(back[i] == 1000 * sum_pe + (long)npes * i, "sum[%d] = %ld", i, back[i]);
    }

    /* A split team: the even PEs. */
    shmem_team_t even = SHMEM_TEAM_INVALID;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &even);
    if (even != SHMEM_TEAM_INVALID) {
        shmem_team_sync(even);
        CHECK(shmem_long_max_reduce(even, dst, src, K) == 0, "team max_reduce");
        shmem_long_get(back, dst, K, me);
        int top = ((npes - 1) / 2) * 2;
        CHECK(back[0] == top * 1000L, "team max %ld, expected %d", back[0], top * 1000);
        shmem_team_destroy(even);
    }

    shmem_barrier_all();
    shmem_free(gathered);
    shmem_free(all);
    shmem_free(dst);
    shmem_free(src);
    shmem_free(r);
    shmem_free(shared);
    shmem_free(lock);
    shmem_free(flag);
    shmem_free(box);
    shmem_free(sig);
    shmem_free(ctr);
    shmem_free(a);
    if (me == 0) printf("strict: %d PEs checked\n", npes);
    shmem_finalize();
    return 0;
}
