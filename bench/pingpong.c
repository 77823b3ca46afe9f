/*
 * pingpong.c: one-way latency between PE 0 and PE 1 = round-trip time / 2.
 *
 *   p          shmem_long_p(flag, v, peer) + shmem_long_wait_until(flag, EQ, v): the flag is
 *              the whole message (8 B). Compare with floor.c's "line" and "flag+data".
 *   putmem+p   shmem_putmem(data, n bytes) + shmem_fence + shmem_long_p(flag) on one side,
 *              shmem_long_wait_until(flag) + a check of the data's first word on the other:
 *              the flag+data message of --sizes bytes. floor.c's flag+data is the same shape.
 *   putmem_signal  shmem_putmem_signal(data, n bytes, flag, v, SHMEM_SIGNAL_SET) on one side,
 *              shmem_signal_wait_until(flag) + the same check on the other: the flag+data
 *              message in one call (OpenSHMEM 1.5; skipped with a note on an older library).
 *
 * PE 0 sends v, PE 1 waits for v and sends it back; v never repeats, so a stale flag cannot
 * satisfy a wait. The loop shape is floor.c's (same timer, same trials). Each PE's flag is in
 * its own 64-byte line at the start of a page; data starts on the next line. Sweep:
 * pingpong.sweep.
 */
#include "common.h"

#define MAX_BYTES (64u << 10)

static char static_area[MAX_BYTES + 2 * BENCH_PAGE] __attribute__((aligned(BENCH_PAGE)));
static char static_src[MAX_BYTES + BENCH_PAGE] __attribute__((aligned(BENCH_PAGE)));

static bench_opts_t opt;
static int me, npes;
static double samples[BENCH_MAX_TRIALS];
static long seq; /* last value sent; both PEs advance it identically */

/* PE 0's side of `iters` round trips; returns ns per one-way trip. */
static double pinger_p(long *flag, long iters) {
    long v = seq;
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) {
        ++v;
        shmem_long_p(flag, v, 1);
        shmem_long_wait_until(flag, SHMEM_CMP_EQ, v);
    }
    return (bench_now_ns() - t0) / (double)iters / 2.0;
}

static void ponger_p(long *flag, long iters) {
    long v = seq;
    for (long i = 0; i < iters; i++) {
        ++v;
        shmem_long_wait_until(flag, SHMEM_CMP_EQ, v);
        shmem_long_p(flag, v, 0);
    }
}

/* flag+data: `src` is the local payload; its first word carries v. Returns the number of
 * payloads whose first word was wrong at the receiver. */
static long side_putmem(long *flag, char *data, char *src, size_t n, long iters, int peer,
                        int first, double *ns) {
    long v = seq, bad = 0;
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) {
        ++v;
        if (!first) {
            shmem_long_wait_until(flag, SHMEM_CMP_EQ, v);
            long got;
            memcpy(&got, data, sizeof got);
            bad += got != v;
        }
        memcpy(src, &v, sizeof v);
        shmem_putmem(data, src, n, peer);
        shmem_fence();
        shmem_long_p(flag, v, peer);
        if (first) {
            shmem_long_wait_until(flag, SHMEM_CMP_EQ, v);
            long got;
            memcpy(&got, data, sizeof got);
            bad += got != v;
        }
    }
    *ns = (bench_now_ns() - t0) / (double)iters / 2.0;
    return bad;
}

#if SHMEM_MINOR_VERSION >= 5
#define HAVE_PUT_SIGNAL 1
/* As side_putmem, with the payload and the flag in one put-with-signal. */
static long side_signal(uint64_t *sig, char *data, char *src, size_t n, long iters, int peer,
                        int first, double *ns) {
    long v = seq, bad = 0;
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) {
        ++v;
        if (!first) {
            shmem_signal_wait_until(sig, SHMEM_CMP_EQ, (uint64_t)v);
            long got;
            memcpy(&got, data, sizeof got);
            bad += got != v;
        }
        memcpy(src, &v, sizeof v);
        shmem_putmem_signal(data, src, n, sig, (uint64_t)v, SHMEM_SIGNAL_SET, peer);
        if (first) {
            shmem_signal_wait_until(sig, SHMEM_CMP_EQ, (uint64_t)v);
            long got;
            memcpy(&got, data, sizeof got);
            bad += got != v;
        }
    }
    *ns = (bench_now_ns() - t0) / (double)iters / 2.0;
    return bad;
}
#endif

static void run(const char *op, const char *placement, char *area, char *src, size_t n) {
    const int is_p = !strcmp(op, "p");
    long *flag = (long *)area;
    char *data = area + 64;
    const long iters = bench_iters_for(&opt, n);
    *flag = 0;
    seq = 0;
    for (int t = -opt.warmup; t < opt.trials; t++) {
        const unsigned seed = (unsigned)(t + opt.warmup + 1) * 131u + (unsigned)n;
        if (!is_p) bench_fill(src + sizeof(long), n - sizeof(long), seed + (unsigned)me);
        shmem_barrier_all();
        double ns = 0;
        long bad = 0;
        if (me == 0 && t >= 0) BENCH_CG_TOGGLE();
        if (is_p) {
            if (me == 0)
                ns = pinger_p(flag, iters);
            else if (me == 1)
                ponger_p(flag, iters);
        } else if (me < 2 && !strcmp(op, "putmem+p")) {
            bad = side_putmem(flag, data, src, n, iters, 1 - me, me == 0, &ns);
        } else if (me < 2) {
#ifdef HAVE_PUT_SIGNAL
            bad = side_signal((uint64_t *)flag, data, src, n, iters, 1 - me, me == 0, &ns);
#endif
        }
        if (me == 0 && t >= 0) {
            BENCH_CG_TOGGLE();
            samples[t] = ns;
        }
        seq += iters;
        if (bad)
            bench_die("%s %zu B: %ld of %ld payloads had a wrong first word", op, n, bad, iters);
        if (me < 2 && *flag != seq) bench_die("%s: flag holds %ld, expected %ld", op, *flag, seq);
        shmem_barrier_all();
        /* The last payload, whole: the rest of the peer's pattern must have arrived too. */
        if (!is_p && me < 2)
            bench_check(data + sizeof(long), n - sizeof(long), seed + (unsigned)(1 - me), op);
    }
    if (me != 0) return;
    bench_fig_t f = {"pingpong",
                     op,
                     is_p ? "shmem_long_p+shmem_long_wait_until"
                     : strcmp(op, "putmem+p")
                         ? "shmem_putmem_signal+shmem_signal_wait_until"
                         : "shmem_putmem+shmem_fence+shmem_long_p+shmem_long_wait_until",
                     "latency",
                     "ns",
                     npes,
                     is_p ? sizeof(long) : n,
                     placement,
                     bench_alignment(flag),
                     0,
                     0,
                     0,
                     iters,
                     opt.trials};
    bench_cg_dump(&f, iters * opt.trials);
    bench_emit(&f, bench_stats(samples, opt.trials));
}

int main(int argc, char **argv) {
    me = bench_start();
    npes = shmem_n_pes();
    bench_parse(&opt, argc, argv, "p,putmem+p,putmem_signal", "8,64,1K,8K,64K", 1u << 20);
    if (npes < 2) bench_die("needs at least 2 PEs, got %d", npes);
    for (int s = 0; s < opt.nsizes; s++)
        if (opt.sizes[s] > MAX_BYTES || opt.sizes[s] < sizeof(long))
            bench_die("size %zu is outside %zu..%u", opt.sizes[s], sizeof(long), MAX_BYTES);

    for (int pl = 0; pl < opt.nplacements; pl++) {
        const char *placement = opt.placements[pl];
        char *area = bench_region(placement, MAX_BYTES + 64, static_area, sizeof static_area);
        char *src = bench_region(placement, MAX_BYTES, static_src, sizeof static_src);
        for (int k = 0; k < opt.nops; k++) {
            if (!strcmp(opt.ops[k], "p"))
                run("p", placement, area, src, sizeof(long));
            else if (!strcmp(opt.ops[k], "putmem+p"))
                for (int s = 0; s < opt.nsizes; s++)
                    run("putmem+p", placement, area, src, opt.sizes[s]);
            else if (!strcmp(opt.ops[k], "putmem_signal")) {
#ifdef HAVE_PUT_SIGNAL
                for (int s = 0; s < opt.nsizes; s++)
                    run("putmem_signal", placement, area, src, opt.sizes[s]);
#else
                if (me == 0)
                    fprintf(stderr, "pingpong: putmem_signal needs OpenSHMEM 1.5; skipped\n");
#endif
            } else
                bench_die("unknown op '%s'", opt.ops[k]);
        }
        bench_region_free(placement, src);
        bench_region_free(placement, area);
    }
    shmem_finalize();
    return 0;
}
