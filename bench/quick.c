/*
 * quick.c: first figures for the host data path, using only the OpenSHMEM API.
 * Reports the median over repeated trials of: 8-byte putmem + quiet, 8-byte getmem, and
 * barrier_all, each PE 0 to PE 1 (other PEs only join the barriers).
 *
 *   shmemrun -n 2 ./quick [iterations-per-trial]
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TRIALS 21

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v) {
    qsort(v, TRIALS, sizeof *v, cmp);
    return v[TRIALS / 2];
}

int main(int argc, char **argv) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long iters = argc > 1 ? atol(argv[1]) : 100000;
    long *target = shmem_malloc(64);
    long value = 42, sink = 0;
    double put[TRIALS], get[TRIALS], bar[TRIALS];
    int peer = npes > 1 ? 1 : 0;

    for (int t = 0; t < TRIALS; t++) {
        shmem_barrier_all();
        if (me == 0) {
            double t0 = now_ns();
            for (long i = 0; i < iters; i++) {
                shmem_putmem(target, &value, sizeof value, peer);
                shmem_quiet();
            }
            double t1 = now_ns();
            for (long i = 0; i < iters; i++) shmem_getmem(&sink, target, sizeof sink, peer);
            double t2 = now_ns();
            put[t] = (t1 - t0) / (double)iters;
            get[t] = (t2 - t1) / (double)iters;
        }
        shmem_barrier_all();
        long bars = iters / 10 + 1;
        double t3 = now_ns();
        for (long i = 0; i < bars; i++) shmem_barrier_all();
        bar[t] = (now_ns() - t3) / (double)bars;
    }
    if (me == 0) {
        printf("PEs %d, %ld iterations x %d trials, medians:\n", npes, iters, TRIALS);
        printf("  putmem 8 B + quiet  %8.1f ns\n", median(put));
        printf("  getmem 8 B          %8.1f ns\n", median(get));
        printf("  barrier_all         %8.1f ns\n", median(bar));
    }
    shmem_free(target);
    shmem_finalize();
    return (int)(sink != 42 && me == 0 && npes > 1);
}
