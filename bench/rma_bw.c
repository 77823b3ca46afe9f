/*
 * rma_bw.c: bandwidth of bulk copies from PE 0 to PE 1 (and back), in GB/s (1e9 B/s).
 *
 *   putmem            `window` x shmem_putmem, then shmem_quiet
 *   putmem_nbi        `window` x shmem_putmem_nbi, then shmem_quiet
 *   getmem            `window` x shmem_getmem
 *   getmem_nbi        `window` x shmem_getmem_nbi, then shmem_quiet
 *   putmem_nbi_bidir  PE 0 and PE 1 both do putmem_nbi's loop at once to each other; the
 *                     figure is the sum of both directions
 *
 * The window is --window operations (default 64), fewer where that would exceed --budget
 * bytes; every operation of a window copies the same source to the same target. Buffers are
 * page aligned plus --offsets SRC:DST (the source and destination of the copy, wherever they
 * live), so (dst - src) mod 4096 is swept: glibc's memcpy on AMD collapses for small distances.
 * The receiving PE checks the bytes after every trial. Sweep: rma_bw.sweep.
 */
#include "common.h"

#define MAX_BYTES (4u << 20)
#define STATIC_BYTES (MAX_BYTES + 2 * BENCH_PAGE)

static char static_src[STATIC_BYTES] __attribute__((aligned(BENCH_PAGE)));
static char static_dst[STATIC_BYTES] __attribute__((aligned(BENCH_PAGE)));

static bench_opts_t opt;
static int me, npes;
static double samples[BENCH_MAX_TRIALS];

enum op { PUT, PUT_NBI, GET, GET_NBI, PUT_NBI_BIDIR };
static const char *const op_names[] = {"putmem", "putmem_nbi", "getmem", "getmem_nbi",
                                       "putmem_nbi_bidir"};
static const char *const op_forms[] = {
    "shmem_putmem*window+shmem_quiet", "shmem_putmem_nbi*window+shmem_quiet", "shmem_getmem*window",
    "shmem_getmem_nbi*window+shmem_quiet", "shmem_putmem_nbi*window+shmem_quiet (both PEs)"};

/* Time (ns) for `iters` windows of `op`. */
static double loop(enum op op, char *dst, const char *src, size_t n, int window, long iters,
                   int peer) {
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) {
        switch (op) {
        case PUT:
            for (int w = 0; w < window; w++) shmem_putmem(dst, src, n, peer);
            shmem_quiet();
            break;
        case PUT_NBI:
        case PUT_NBI_BIDIR:
            for (int w = 0; w < window; w++) shmem_putmem_nbi(dst, src, n, peer);
            shmem_quiet();
            break;
        case GET:
            for (int w = 0; w < window; w++) shmem_getmem(dst, src, n, peer);
            break;
        case GET_NBI:
            for (int w = 0; w < window; w++) shmem_getmem_nbi(dst, src, n, peer);
            shmem_quiet();
            break;
        }
        BENCH_CLOBBER();
    }
    return bench_now_ns() - t0;
}

static void run(enum op op, const char *placement, char *src_region, char *dst_region,
                bench_offsets_t off, size_t n) {
    int window = opt.window;
    if ((size_t)window * n > opt.budget)
        window = (int)(opt.budget / n) < 1 ? 1 : (int)(opt.budget / n);
    const long iters = bench_iters_for(&opt, (size_t)window * n);
    char *src = src_region + off.src_off, *dst = dst_region + off.dst_off;
    const int bidir = op == PUT_NBI_BIDIR, is_get = op == GET || op == GET_NBI;
    /* Who fills the source and who checks the destination. */
    const int writer = is_get ? 1 : 0, reader = is_get ? 0 : 1;
    for (int t = -opt.warmup; t < opt.trials; t++) {
        const unsigned seed = (unsigned)(t + opt.warmup + 1) * 7919u + (unsigned)n + (unsigned)op;
        if (me == writer || (bidir && me < 2)) bench_fill(src, n, seed + (unsigned)me);
        if (me == reader || (bidir && me < 2)) memset(dst, 0, n);
        shmem_barrier_all();
        if (me == 0 || (bidir && me == 1)) {
            if (me == 0 && t >= 0) BENCH_CG_TOGGLE();
            double ns = loop(op, dst, src, n, window, iters, 1 - me);
            if (me == 0 && t >= 0) {
                BENCH_CG_TOGGLE();
                samples[t] = ns;
            }
        }
        shmem_barrier_all();
        if (me == reader || (bidir && me < 2))
            bench_check(dst, n, seed + (unsigned)(bidir ? 1 - me : writer), op_names[op]);
    }
    if (me != 0) return;
    const double bytes = (double)n * window * iters * (bidir ? 2 : 1);
    bench_fig_t f = {"rma_bw",    op_names[op], op_forms[op],
                     "bandwidth", "GB/s",       npes,
                     n,           placement,    bench_alignment(is_get ? src : dst),
                     off.src_off, off.dst_off,  window,
                     iters,       opt.trials};
    bench_cg_dump(&f, iters * window * opt.trials);
    bench_to_rate(samples, opt.trials, bytes); /* bytes per ns = GB/s */
    bench_emit(&f, bench_stats(samples, opt.trials));
}

int main(int argc, char **argv) {
    me = bench_start();
    npes = shmem_n_pes();
    bench_parse(&opt, argc, argv, "putmem,putmem_nbi,getmem,getmem_nbi,putmem_nbi_bidir", "4K-4M",
                16u << 20);
    if (npes < 2) bench_die("needs at least 2 PEs, got %d", npes);
    int ops[5], nops = 0;
    for (int k = 0; k < opt.nops; k++) {
        int found = -1;
        for (int j = 0; j < 5; j++)
            if (!strcmp(opt.ops[k], op_names[j])) found = j;
        if (found < 0) bench_die("unknown op '%s'", opt.ops[k]);
        ops[nops++] = found;
    }
    size_t max = 0;
    for (int s = 0; s < opt.nsizes; s++) {
        if (opt.sizes[s] > MAX_BYTES) bench_die("size %zu is above %u", opt.sizes[s], MAX_BYTES);
        if (opt.sizes[s] > max) max = opt.sizes[s];
    }
    for (int pl = 0; pl < opt.nplacements; pl++) {
        const char *placement = opt.placements[pl];
        char *src = bench_region(placement, max, static_src, sizeof static_src);
        char *dst = bench_region(placement, max, static_dst, sizeof static_dst);
        for (int o = 0; o < opt.noffsets; o++)
            for (int k = 0; k < nops; k++)
                for (int s = 0; s < opt.nsizes; s++)
                    run((enum op)ops[k], placement, src, dst, opt.offsets[o], opt.sizes[s]);
        bench_region_free(placement, dst);
        bench_region_free(placement, src);
    }
    shmem_finalize();
    return 0;
}
