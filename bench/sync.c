/*
 * sync.c: synchronisation and collectives over all PEs, ns per call on PE 0.
 *
 *   barrier_all   shmem_barrier_all                      (1.4 and 1.5)
 *   sync_all      shmem_sync_all                         (1.4 and 1.5)
 *   malloc_free   shmem_malloc(64) then shmem_free: two barriers over all PEs, each carrying
 *                 the call's arguments, plus the allocator's own work
 *
 *   ---- active-set collectives (1.4, deprecated in 1.5; every library has them) ------------
 *   barrier_as    shmem_barrier(0, 0, npes, pSync)
 *   broadcast64   shmem_broadcast64(..., root 0, 0, 0, npes, pSync)     by --sizes (bytes)
 *   fcollect64    shmem_fcollect64(..., 0, 0, npes, pSync)              by --sizes (per PE)
 *   alltoall64    shmem_alltoall64(..., 0, 0, npes, pSync)              by --sizes (per pair)
 *   sum_to_all    shmem_long_sum_to_all(..., 0, 0, npes, pWrk, pSync)   by --sizes (bytes)
 *   Two pSync arrays alternate, so consecutive calls never share one.
 *
 *   ---- 1.5 team collectives --------------------------------------------------------------
 *   team_sync     shmem_team_sync(SHMEM_TEAM_WORLD)
 *   team_sync_half shmem_team_sync on a split team: the even PEs (PE 0's, reported) while the
 *                 odd PEs sync on theirs at the same time
 *   broadcast     shmem_broadcastmem(SHMEM_TEAM_WORLD, ..., root 0)    by --sizes
 *   fcollect      shmem_fcollectmem(SHMEM_TEAM_WORLD, ...)             by --sizes (per PE)
 *   alltoall      shmem_alltoallmem(SHMEM_TEAM_WORLD, ...)             by --sizes (per pair)
 *   sum_reduce    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, ...)         by --sizes (bytes)
 *   Compiled only with -DBENCH_HAVE_TEAMS=1, which scripts/bench.sh and bench/CMakeLists.txt
 *   set when a probe program using these calls compiles against the library (Open MPI 4.1's
 *   OSHMEM, OpenSHMEM 1.4, has none of them: compare the active-set forms above).
 *   ------------------------------------------------------------------------------------------
 *
 * Every PE runs the same loop; PE 0's time is reported. After the timed trials each operation
 * is checked: for the barriers, every PE puts a counter to its right neighbour, synchronises,
 * and checks the counter its left neighbour put (barrier_all completes the put itself,
 * sync_all after a shmem_quiet); the collectives check every byte they moved. Sweep:
 * sync.sweep (2, 4 and 8 PEs).
 */
#include "common.h"

#ifndef BENCH_HAVE_TEAMS
#define BENCH_HAVE_TEAMS 0
#endif

static bench_opts_t opt;
static int me, npes;
static double samples[BENCH_MAX_TRIALS];
static long counter; /* symmetric: written by the left neighbour in the checks */

static double loop_barrier(int sync_only, long iters) {
    double t0 = bench_now_ns();
    if (sync_only)
        for (long i = 0; i < iters; i++) shmem_sync_all();
    else
        for (long i = 0; i < iters; i++) shmem_barrier_all();
    return (bench_now_ns() - t0) / (double)iters;
}

static void check_barrier(int sync_only) {
    const int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    for (long k = 1; k <= 20; k++) {
        shmem_long_p(&counter, k * 1000 + me, right);
        if (sync_only) {
            shmem_quiet();
            shmem_sync_all();
        } else {
            shmem_barrier_all();
        }
        if (counter != k * 1000 + left)
            bench_die("%s: after round %ld counter is %ld, expected %ld",
                      sync_only ? "sync_all" : "barrier_all", k, counter, k * 1000 + left);
        shmem_barrier_all(); /* nobody overwrites counter before its owner read it */
    }
}

static void emit(const char *name, const char *form, size_t size, long iters, size_t align) {
    if (me != 0) return;
    bench_fig_t f = {"sync", name,  form, "latency", "ns", npes,  size,
                     "heap", align, 0,    0,         0,    iters, opt.trials};
    bench_cg_dump(&f, iters * opt.trials);
    bench_emit(&f, bench_stats(samples, opt.trials));
}

static void run_barrier(const char *name) {
    const int sync_only = !strcmp(name, "sync_all");
    const long iters = opt.iters;
    for (int t = -opt.warmup; t < opt.trials; t++) {
        shmem_barrier_all();
        if (me == 0 && t >= 0) BENCH_CG_TOGGLE();
        double ns = loop_barrier(sync_only, iters);
        if (me == 0 && t >= 0) {
            BENCH_CG_TOGGLE();
            samples[t] = ns;
        }
    }
    check_barrier(sync_only);
    emit(name, sync_only ? "shmem_sync_all" : "shmem_barrier_all", 0, iters, 0);
}

static double loop_malloc_free(long iters) {
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) shmem_free(shmem_malloc(64));
    return (bench_now_ns() - t0) / (double)iters;
}

/* Every PE's block has the same offset: a put to the right neighbour's block lands in it. */
static void check_malloc_free(void) {
    const int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    for (long k = 1; k <= 20; k++) {
        long *b = shmem_malloc(64);
        shmem_long_p(b, k * 1000 + me, right);
        shmem_barrier_all();
        if (*b != k * 1000 + left)
            bench_die("malloc_free: round %ld: block holds %ld, expected %ld", k, *b,
                      k * 1000 + left);
        shmem_free(b);
    }
}

static void run_malloc_free(void) {
    for (int t = -opt.warmup; t < opt.trials; t++) {
        shmem_barrier_all();
        if (me == 0 && t >= 0) BENCH_CG_TOGGLE();
        double ns = loop_malloc_free(opt.iters);
        if (me == 0 && t >= 0) {
            BENCH_CG_TOGGLE();
            samples[t] = ns;
        }
    }
    check_malloc_free();
    emit("malloc_free", "shmem_malloc+shmem_free", 64, opt.iters, 0);
}

/* ---- collectives: active-set forms everywhere, team forms with BENCH_HAVE_TEAMS ----------- */
enum coll {
    AS_BARRIER,
    AS_BROADCAST,
    AS_FCOLLECT,
    AS_ALLTOALL,
    AS_SUM,
    TEAM_SYNC,
    TEAM_SYNC_HALF,
    BROADCAST,
    FCOLLECT,
    ALLTOALL,
    SUM_REDUCE
};

static long psync[2][SHMEM_REDUCE_SYNC_SIZE]; /* >= every SHMEM_*_SYNC_SIZE here */
static long *pwrk;                            /* sum_to_all's work array */
#if BENCH_HAVE_TEAMS
static shmem_team_t half; /* the even or the odd PEs, by this PE's parity */
#endif

static double loop_coll(enum coll c, char *dst, const char *src, size_t n, long iters) {
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) {
        long *ps = psync[i & 1];
        switch (c) {
        case AS_BARRIER: shmem_barrier(0, 0, npes, ps); break;
        case AS_BROADCAST: shmem_broadcast64(dst, src, n / 8, 0, 0, 0, npes, ps); break;
        case AS_FCOLLECT: shmem_fcollect64(dst, src, n / 8, 0, 0, npes, ps); break;
        case AS_ALLTOALL: shmem_alltoall64(dst, src, n / 8, 0, 0, npes, ps); break;
        case AS_SUM:
            shmem_long_sum_to_all((long *)dst, (const long *)src, (int)(n / sizeof(long)), 0, 0,
                                  npes, pwrk, ps);
            break;
#if BENCH_HAVE_TEAMS
        case TEAM_SYNC: shmem_team_sync(SHMEM_TEAM_WORLD); break;
        case TEAM_SYNC_HALF: shmem_team_sync(half); break;
        case BROADCAST: shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, n, 0); break;
        case FCOLLECT: shmem_fcollectmem(SHMEM_TEAM_WORLD, dst, src, n); break;
        case ALLTOALL: shmem_alltoallmem(SHMEM_TEAM_WORLD, dst, src, n); break;
        case SUM_REDUCE:
            shmem_long_sum_reduce(SHMEM_TEAM_WORLD, (long *)dst, (const long *)src,
                                  n / sizeof(long));
            break;
#else
        default: bench_die("built without the 1.5 team collectives");
#endif
        }
    }
    return (bench_now_ns() - t0) / (double)iters;
}

static void check_coll(enum coll c, const char *name, const char *dst, const char *src, size_t n,
                       unsigned seed) {
    switch (c) {
    case AS_BARRIER:
    case TEAM_SYNC:
    case TEAM_SYNC_HALF: break;
    case AS_BROADCAST:
    case BROADCAST:
        /* root 0's source (an active-set broadcast leaves the root's dest alone) */
        if (me != 0) bench_check(dst, n, seed, name);
        break;
    case AS_FCOLLECT:
    case FCOLLECT:
        for (int p = 0; p < npes; p++)
            bench_check(dst + (size_t)p * n, n, seed + (unsigned)p, name);
        break;
    case AS_ALLTOALL:
    case ALLTOALL:
        /* block `me` of PE p's source, which PE p filled with seed + p. */
        for (int p = 0; p < npes; p++)
            for (size_t i = 0; i < n; i++)
                if ((unsigned char)dst[(size_t)p * n + i] !=
                    bench_byte((size_t)me * n + i, seed + (unsigned)p))
                    bench_die("%s: byte %zu from PE %d is wrong", name, i, p);
        break;
    case AS_SUM:
    case SUM_REDUCE: {
        const long *d = (const long *)dst;
        for (size_t i = 0; i < n / sizeof(long); i++) {
            long want = 0;
            for (int p = 0; p < npes; p++) want += (long)(i + 1) * (p + 1);
            if (d[i] != want)
                bench_die("%s: element %zu is %ld, expected %ld", name, i, d[i], want);
        }
        break;
    }
    }
    (void)src;
}

static void run_coll(enum coll c, const char *name, const char *form, size_t n) {
    const int all = c == FCOLLECT || c == ALLTOALL || c == AS_FCOLLECT || c == AS_ALLTOALL;
    const int a2a = c == ALLTOALL || c == AS_ALLTOALL;
    const int sum = c == SUM_REDUCE || c == AS_SUM;
    const size_t dst_bytes = all ? n * (size_t)npes : n;
    const size_t src_bytes = a2a ? n * (size_t)npes : n;
    char *dst = shmem_align(BENCH_PAGE, dst_bytes + 64);
    char *src = shmem_align(BENCH_PAGE, src_bytes + 64);
    if (!dst || !src) bench_die("shmem_align failed for %s %zu", name, n);
    const long iters = bench_iters_for(&opt, dst_bytes);
    const unsigned seed = 4242u + (unsigned)n;
    const size_t wrk = n / sizeof(long) / 2 + 1 > SHMEM_REDUCE_MIN_WRKDATA_SIZE
                           ? n / sizeof(long) / 2 + 1
                           : SHMEM_REDUCE_MIN_WRKDATA_SIZE;
    pwrk = shmem_malloc(wrk * sizeof(long));
    if (!pwrk) bench_die("shmem_malloc failed for pWrk");
    if (sum)
        for (size_t i = 0; i < n / sizeof(long); i++) ((long *)src)[i] = (long)(i + 1) * (me + 1);
    else if (a2a)
        bench_fill(src, src_bytes, seed + (unsigned)me);
    else
        bench_fill(src, n, seed + (unsigned)(c == BROADCAST || c == AS_BROADCAST ? 0 : me));
    for (int t = -opt.warmup; t < opt.trials; t++) {
        shmem_barrier_all();
        if (me == 0 && t >= 0) BENCH_CG_TOGGLE();
        double ns = loop_coll(c, dst, src, n, iters);
        if (me == 0 && t >= 0) {
            BENCH_CG_TOGGLE();
            samples[t] = ns;
        }
        shmem_barrier_all();
        check_coll(c, name, dst, src, n, seed);
    }
    emit(name, form, n, iters, bench_alignment(dst));
    shmem_free(pwrk);
    shmem_free(src);
    shmem_free(dst);
}

int main(int argc, char **argv) {
    me = bench_start();
    npes = shmem_n_pes();
    bench_parse(&opt, argc, argv, "barrier_all,sync_all", "8,1K,64K", 32u << 20);
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[0][i] = psync[1][i] = SHMEM_SYNC_VALUE;
#if BENCH_HAVE_TEAMS
    {
        shmem_team_t even, odd = SHMEM_TEAM_INVALID;
        if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &even) ||
            (npes > 1 && shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, npes / 2, NULL, 0, &odd)))
            bench_die("shmem_team_split_strided failed");
        half = me % 2 ? odd : even;
    }
#endif
    for (int k = 0; k < opt.nops; k++) {
        const char *op = opt.ops[k];
        if (!strcmp(op, "barrier_all") || !strcmp(op, "sync_all")) {
            run_barrier(op);
            continue;
        }
        if (!strcmp(op, "malloc_free")) {
            run_malloc_free();
            continue;
        }
        static const struct {
            const char *name, *form;
            enum coll c;
            int sized, team;
        } colls[] = {
            {"barrier_as", "shmem_barrier", AS_BARRIER, 0, 0},
            {"broadcast64", "shmem_broadcast64", AS_BROADCAST, 1, 0},
            {"fcollect64", "shmem_fcollect64", AS_FCOLLECT, 1, 0},
            {"alltoall64", "shmem_alltoall64", AS_ALLTOALL, 1, 0},
            {"sum_to_all", "shmem_long_sum_to_all", AS_SUM, 1, 0},
            {"team_sync", "shmem_team_sync", TEAM_SYNC, 0, 1},
            {"team_sync_half", "shmem_team_sync", TEAM_SYNC_HALF, 0, 1},
            {"broadcast", "shmem_broadcastmem", BROADCAST, 1, 1},
            {"fcollect", "shmem_fcollectmem", FCOLLECT, 1, 1},
            {"alltoall", "shmem_alltoallmem", ALLTOALL, 1, 1},
            {"sum_reduce", "shmem_long_sum_reduce", SUM_REDUCE, 1, 1},
        };
        int done = 0;
        for (size_t j = 0; j < sizeof colls / sizeof colls[0]; j++) {
            if (strcmp(op, colls[j].name)) continue;
            done = 1;
            if (colls[j].team && !BENCH_HAVE_TEAMS) {
                if (me == 0)
                    fprintf(stderr,
                            "sync: %s skipped: built without BENCH_HAVE_TEAMS (no 1.5 team "
                            "collectives in this library)\n",
                            op);
                break;
            }
            if (!colls[j].sized) {
                run_coll(colls[j].c, op, colls[j].form, 0);
                break;
            }
            for (int s = 0; s < opt.nsizes; s++) {
                size_t n = opt.sizes[s];
                if (n < sizeof(long) || n % sizeof(long))
                    bench_die("%s sizes must be multiples of %zu", op, sizeof(long));
                run_coll(colls[j].c, op, colls[j].form, n);
            }
        }
        if (done) continue;
        bench_die("unknown op '%s'", op);
    }
    shmem_finalize();
    return 0;
}
