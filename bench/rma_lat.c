/*
 * rma_lat.c: latency of one-sided calls from PE 0 to PE 1, one call at a time.
 *
 *   p+quiet        shmem_long_p + shmem_quiet          8 B
 *   g              shmem_long_g                        8 B
 *   putmem+quiet   shmem_putmem + shmem_quiet          --sizes (1 B .. 4 MiB)
 *   getmem         shmem_getmem                        --sizes
 *   ctx_p+quiet, ctx_g, ctx_putmem+quiet, ctx_getmem
 *                  the same on a context from shmem_ctx_create (SHMEM_TEAM_WORLD), to compare
 *                  the shmem_ctx_ path with the plain one (the context exists only when a
 *                  ctx_ op is asked for: Open MPI 4.1's OSHMEM over spml ucx hangs in
 *                  shmem_ctx_destroy when its PEs are on different nodes)
 *
 * Targets in the symmetric heap (shmem_align, page aligned) or in static arrays (--placement),
 * at the page offsets of --offsets (SRC:DST of the copy). Other PEs only join the barriers
 * between trials. The target PE checks what arrived after every trial (puts); PE 0 checks
 * what it fetched (gets). Sweep: rma_lat.sweep.
 */
#include "common.h"

#define MAX_BYTES (4u << 20)
#define STATIC_BYTES (MAX_BYTES + 2 * BENCH_PAGE)

static char static_src[STATIC_BYTES] __attribute__((aligned(BENCH_PAGE)));
static char static_dst[STATIC_BYTES] __attribute__((aligned(BENCH_PAGE)));
static long static_word[16] __attribute__((aligned(64)));

static bench_opts_t opt;
static int me, npes;
static shmem_ctx_t ctx; /* for the ctx_ ops */
static double samples[BENCH_MAX_TRIALS];

/* One trial loop per operation. Each returns the time per call in ns. */
static double loop_p(long *dst, long base, long iters) {
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) {
        shmem_long_p(dst, base + i, 1);
        shmem_quiet();
    }
    return (bench_now_ns() - t0) / (double)iters;
}

static double loop_g(const long *src, long expect, long iters, long *bad) {
    long b = 0;
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) b += shmem_long_g(src, 1) != expect;
    double t = (bench_now_ns() - t0) / (double)iters;
    *bad += b;
    return t;
}

static double loop_putmem(char *dst, const char *src, size_t n, long iters) {
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) {
        shmem_putmem(dst, src, n, 1);
        shmem_quiet();
    }
    return (bench_now_ns() - t0) / (double)iters;
}

static double loop_ctx_p(long *dst, long base, long iters) {
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) {
        shmem_ctx_long_p(ctx, dst, base + i, 1);
        shmem_ctx_quiet(ctx);
    }
    return (bench_now_ns() - t0) / (double)iters;
}

static double loop_ctx_g(const long *src, long expect, long iters, long *bad) {
    long b = 0;
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) b += shmem_ctx_long_g(ctx, src, 1) != expect;
    double t = (bench_now_ns() - t0) / (double)iters;
    *bad += b;
    return t;
}

static double loop_ctx_putmem(char *dst, const char *src, size_t n, long iters) {
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) {
        shmem_ctx_putmem(ctx, dst, src, n, 1);
        shmem_ctx_quiet(ctx);
    }
    return (bench_now_ns() - t0) / (double)iters;
}

static double loop_ctx_getmem(char *dst, const char *src, size_t n, long iters) {
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) {
        shmem_ctx_getmem(ctx, dst, src, n, 1);
        BENCH_CLOBBER();
    }
    return (bench_now_ns() - t0) / (double)iters;
}

static double loop_getmem(char *dst, const char *src, size_t n, long iters) {
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) {
        shmem_getmem(dst, src, n, 1);
        BENCH_CLOBBER();
    }
    return (bench_now_ns() - t0) / (double)iters;
}

static void run_word(const char *op, const char *placement, long *word) {
    const int on_ctx = !strncmp(op, "ctx_", 4);
    const int is_p = !strcmp(op + (on_ctx ? 4 : 0), "p+quiet");
    const long iters = opt.iters;
    long bad = 0;
    for (int t = -opt.warmup; t < opt.trials; t++) {
        const long base = (long)(t + opt.warmup + 1) << 32;
        if (!is_p && me == 1) *word = base; /* what PE 0 will fetch */
        shmem_barrier_all();
        if (me == 0) {
            if (t >= 0) BENCH_CG_TOGGLE();
            double ns =
                on_ctx
                    ? (is_p ? loop_ctx_p(word, base, iters) : loop_ctx_g(word, base, iters, &bad))
                    : (is_p ? loop_p(word, base, iters) : loop_g(word, base, iters, &bad));
            if (t >= 0) {
                BENCH_CG_TOGGLE();
                samples[t] = ns;
            }
        }
        shmem_barrier_all();
        if (is_p && me == 1 && *word != base + iters - 1)
            bench_die("p: target holds %ld, expected %ld", *word, base + iters - 1);
        if (bad) bench_die("g: %ld of %ld fetched values were wrong", bad, iters);
    }
    if (me != 0) return;
    bench_fig_t f = {"rma_lat",
                     op,
                     on_ctx ? (is_p ? "shmem_ctx_long_p+shmem_ctx_quiet" : "shmem_ctx_long_g")
                            : (is_p ? "shmem_long_p+shmem_quiet" : "shmem_long_g"),
                     "latency",
                     "ns",
                     npes,
                     sizeof(long),
                     placement,
                     bench_alignment(word),
                     0,
                     0,
                     0,
                     iters,
                     opt.trials};
    bench_cg_dump(&f, iters * opt.trials);
    bench_emit(&f, bench_stats(samples, opt.trials));
}

static void run_mem(const char *op, const char *placement, char *src_region, char *dst_region,
                    bench_offsets_t off, size_t n) {
    const int on_ctx = !strncmp(op, "ctx_", 4);
    const int is_put = !strcmp(op + (on_ctx ? 4 : 0), "putmem+quiet");
    const long iters = bench_iters_for(&opt, n);
    /* A put copies PE 0's src to PE 1's dst; a get copies PE 1's src to PE 0's dst. */
    char *src = src_region + off.src_off, *dst = dst_region + off.dst_off;
    const int writer = is_put ? 0 : 1, reader = is_put ? 1 : 0;
    for (int t = -opt.warmup; t < opt.trials; t++) {
        const unsigned seed = (unsigned)(t + opt.warmup + 1) * 977u + (unsigned)n;
        if (me == writer) bench_fill(src, n, seed);
        if (me == reader) memset(dst, 0, n);
        shmem_barrier_all();
        if (me == 0) {
            if (t >= 0) BENCH_CG_TOGGLE();
            double ns = on_ctx ? (is_put ? loop_ctx_putmem(dst, src, n, iters)
                                         : loop_ctx_getmem(dst, src, n, iters))
                               : (is_put ? loop_putmem(dst, src, n, iters)
                                         : loop_getmem(dst, src, n, iters));
            if (t >= 0) {
                BENCH_CG_TOGGLE();
                samples[t] = ns;
            }
        }
        shmem_barrier_all();
        if (me == reader) bench_check(dst, n, seed, op);
    }
    if (me != 0) return;
    const char *api = on_ctx ? (is_put ? "shmem_ctx_putmem+shmem_ctx_quiet" : "shmem_ctx_getmem")
                             : (is_put ? "shmem_putmem+shmem_quiet" : "shmem_getmem");
    bench_fig_t f = {"rma_lat",   op,          api,
                     "latency",   "ns",        npes,
                     n,           placement,   bench_alignment(is_put ? dst : src),
                     off.src_off, off.dst_off, 0,
                     iters,       opt.trials};
    bench_cg_dump(&f, iters * opt.trials);
    bench_emit(&f, bench_stats(samples, opt.trials));
}

/* An op without its "ctx_" prefix. */
static const char *plain_op(const char *op) { return strncmp(op, "ctx_", 4) ? op : op + 4; }
static int is_word_op(const char *op) {
    return !strcmp(plain_op(op), "p+quiet") || !strcmp(plain_op(op), "g");
}
static int is_mem_op(const char *op) {
    return !strcmp(plain_op(op), "putmem+quiet") || !strcmp(plain_op(op), "getmem");
}

int main(int argc, char **argv) {
    me = bench_start();
    npes = shmem_n_pes();
    bench_parse(&opt, argc, argv, "p+quiet,g,putmem+quiet,getmem", "1-4M", 32u << 20);
    if (npes < 2) bench_die("needs at least 2 PEs, got %d", npes);
    for (int k = 0; k < opt.nops; k++)
        if (!is_word_op(opt.ops[k]) && !is_mem_op(opt.ops[k]))
            bench_die("unknown op '%s'", opt.ops[k]);
    int want_ctx = 0;
    for (int k = 0; k < opt.nops; k++) want_ctx |= !strncmp(opt.ops[k], "ctx_", 4);
    if (want_ctx && shmem_ctx_create(0, &ctx) != 0) bench_die("shmem_ctx_create failed");
    for (int s = 0; s < opt.nsizes; s++)
        if (opt.sizes[s] > MAX_BYTES) bench_die("size %zu is above %u", opt.sizes[s], MAX_BYTES);

    for (int pl = 0; pl < opt.nplacements; pl++) {
        const char *placement = opt.placements[pl];
        const int heap = !strcmp(placement, "heap");
        long *word = heap ? shmem_align(64, 64) : static_word;
        if (!word) bench_die("shmem_align(64, 64) failed");
        for (int k = 0; k < opt.nops; k++)
            if (is_word_op(opt.ops[k])) run_word(opt.ops[k], placement, word);
        if (heap) shmem_free(word);

        size_t max = 0;
        for (int s = 0; s < opt.nsizes; s++)
            if (opt.sizes[s] > max) max = opt.sizes[s];
        char *src = bench_region(placement, max, static_src, sizeof static_src);
        char *dst = bench_region(placement, max, static_dst, sizeof static_dst);
        for (int o = 0; o < opt.noffsets; o++)
            for (int k = 0; k < opt.nops; k++)
                if (is_mem_op(opt.ops[k]))
                    for (int s = 0; s < opt.nsizes; s++)
                        run_mem(opt.ops[k], placement, src, dst, opt.offsets[o], opt.sizes[s]);
        bench_region_free(placement, dst);
        bench_region_free(placement, src);
    }
    if (want_ctx) shmem_ctx_destroy(ctx);
    shmem_finalize();
    return 0;
}
