/*
 * kernel.c: the kernel-side API (shmem/device.h, run by shmemx_cpu_launch) against the host API,
 * the same operation in the same run, PE 0 to PE 1. Each op gives a host_ record and a kernel_
 * record (one per --blocks count where blocks apply):
 *
 *   p             shmem_long_p+shmem_quiet        | aclshmem_int64_p+aclshmem_quiet      8 B
 *   g             shmem_long_g                    | aclshmem_int64_g                     8 B
 *   putmem        shmem_putmem+shmem_quiet        | aclshmem_putmem+aclshmem_quiet   --sizes
 *   getmem        shmem_getmem                    | aclshmem_getmem                  --sizes
 *   putmem_bw     shmem_putmem_nbi, quiet per --window  | the same kernel-side, the message
 *   getmem_bw     shmem_getmem_nbi, quiet per --window  | split over the blocks      --sizes
 *   barrier_all   shmem_barrier_all on every PE   | aclshmem_barrier_all in every block of
 *                                                   every PE
 *   launch        (kernel only) an empty kernel: shmemx_cpu_launch's own cost per call
 *
 * Latency ops run 1 block; bandwidth, barrier and launch run each count of --blocks LIST
 * (default 1,4), named kernel_OP for 1 block and kernel_OP_<B>blk for B blocks; with B blocks
 * each message is split over the blocks, which meet (a barrier of the launch's blocks) after
 * every message, so a figure is the whole message's, as the host's. The kernel
 * figures are timed inside the kernel (block 0, between two barriers of the launch's blocks),
 * so they hold the calls, not the launch; "launch" gives that apart. Targets in the symmetric
 * heap only. The target PE checks what arrived after every trial (puts), PE 0 what it fetched
 * (gets). This library only: OpenSHMEM has no kernel-side API (scripts/bench.sh skips it for
 * the other variant). Sweep: kernel.sweep.
 */
#include "common.h"

#include <shmem/device.h>
#include <shmem/launch.h>

#define MAX_BYTES (4u << 20)
#define MAX_BLOCKS 64

static bench_opts_t opt;
static int me, npes;
static double samples[BENCH_MAX_TRIALS];
static int blocks_list[BENCH_MAX_LIST];
static int nblocks = 0;

enum kop { K_P, K_G, K_PUTMEM, K_GETMEM, K_PUTMEM_BW, K_GETMEM_BW, K_BARRIER, K_EMPTY };

/* What a launch does; every block reads it, block 0 writes the time. */
struct kargs {
    enum kop op;
    int64_t *word;
    int64_t base; /* p: values base..base+iters-1; g: the value expected */
    char *dst;
    const char *src;
    size_t bytes;
    long iters;
    int window;
    long bad[MAX_BLOCKS]; /* g: wrong values per block */
    double ns;            /* block 0: time per call */
};

/* This block's slice [lo, hi) of `n` bytes, cut at 64-byte lines. */
static void slice(size_t n, size_t *lo, size_t *hi) {
    size_t b = (size_t)aclshmemx_block_idx(), nb = (size_t)aclshmemx_block_num();
    size_t lines = (n + 63) / 64;
    *lo = lines * b / nb * 64;
    *hi = lines * (b + 1) / nb * 64;
    if (*lo > n) *lo = n;
    if (*hi > n) *hi = n;
}

static void bench_kernel(void *p) {
    struct kargs *a = p;
    const int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    size_t lo = 0, hi = 0;
    slice(a->bytes, &lo, &hi);
    long bad = 0;
    shmem_arch_block_barrier();
    double t0 = bench_now_ns();
    switch (a->op) {
    case K_P:
        for (long i = 0; i < a->iters; i++) {
            aclshmem_int64_p(a->word, a->base + i, 1);
            aclshmem_quiet();
            BENCH_CLOBBER();
        }
        break;
    case K_G:
        for (long i = 0; i < a->iters; i++) {
            bad += aclshmem_int64_g(a->word, 1) != a->base;
            BENCH_CLOBBER();
        }
        break;
    case K_PUTMEM:
        for (long i = 0; i < a->iters; i++) {
            aclshmem_putmem(a->dst, a->src, a->bytes, 1);
            aclshmem_quiet();
            BENCH_CLOBBER();
        }
        break;
    case K_GETMEM:
        for (long i = 0; i < a->iters; i++) {
            aclshmem_getmem(a->dst, a->src, a->bytes, 1);
            BENCH_CLOBBER();
        }
        break;
    case K_PUTMEM_BW:
    case K_GETMEM_BW:
        for (long i = 0; i < a->iters; i++) {
            if (a->op == K_PUTMEM_BW)
                aclshmem_putmem_nbi(a->dst + lo, a->src + lo, hi - lo, 1);
            else
                aclshmem_getmem_nbi(a->dst + lo, a->src + lo, hi - lo, 1);
            if ((i + 1) % a->window == 0) aclshmem_quiet();
            /* Every block finishes message i before any starts message i + 1: without it, blocks
             * sharing a CPU would each repeat their slice alone, a smaller working set than the
             * host's whole message. */
            if (nb > 1) shmem_arch_block_barrier();
        }
        aclshmem_quiet();
        break;
    case K_BARRIER:
        for (long i = 0; i < a->iters; i++) aclshmem_barrier_all();
        break;
    case K_EMPTY: break;
    }
    shmem_arch_block_barrier();
    if (b == 0) a->ns = (bench_now_ns() - t0) / (double)a->iters;
    a->bad[b] = bad;
}

static void empty_kernel(void *p) { (void)p; }

/* Launches `a` as `blocks` blocks and returns block 0's time per call. */
static double launch(struct kargs *a, int blocks) {
    memset(a->bad, 0, sizeof a->bad);
    if (shmemx_cpu_launch(bench_kernel, a, blocks) != 0)
        bench_die("shmemx_cpu_launch(%d blocks) failed", blocks);
    long bad = 0;
    for (int b = 0; b < blocks; b++) bad += a->bad[b];
    if (bad) bench_die("kernel g: %ld of %ld fetched values were wrong", bad, a->iters);
    return a->ns;
}

static void emit(const char *name, const char *form, const char *metric, size_t size,
                 const void *target, int window, long iters) {
    bench_fig_t f = {"kernel",
                     name,
                     form,
                     metric,
                     strcmp(metric, "bandwidth") ? "ns" : "GB/s",
                     npes,
                     size,
                     "heap",
                     target ? bench_alignment(target) : 0,
                     0,
                     0,
                     window,
                     iters,
                     opt.trials};
    bench_emit(&f, bench_stats(samples, opt.trials));
}

/* kernel_OP or kernel_OP_<B>blk. */
static const char *kname(char *buf, size_t len, const char *op, int blocks) {
    if (blocks == 1)
        snprintf(buf, len, "kernel_%s", op);
    else
        snprintf(buf, len, "kernel_%s_%dblk", op, blocks);
    return buf;
}

/* p and g: host then kernel, 1 block. */
static void run_word(int is_p, int64_t *word) {
    struct kargs a = {.op = is_p ? K_P : K_G, .word = word, .iters = opt.iters};
    for (int kernel = 0; kernel < 2; kernel++) {
        for (int t = -opt.warmup; t < opt.trials; t++) {
            const int64_t base = ((int64_t)(t + opt.warmup + 1) << 32) + kernel;
            if (!is_p && me == 1) *word = base;
            shmem_barrier_all();
            if (me == 0) {
                double ns;
                if (kernel) {
                    a.base = base;
                    ns = launch(&a, 1);
                } else {
                    long bad = 0;
                    double t0 = bench_now_ns();
                    if (is_p)
                        for (long i = 0; i < opt.iters; i++) {
                            shmem_long_p((long *)word, base + i, 1);
                            shmem_quiet();
                        }
                    else
                        for (long i = 0; i < opt.iters; i++)
                            bad += shmem_long_g((long *)word, 1) != base;
                    ns = (bench_now_ns() - t0) / (double)opt.iters;
                    if (bad)
                        bench_die("host g: %ld of %ld fetched values were wrong", bad, opt.iters);
                }
                if (t >= 0) samples[t] = ns;
            }
            shmem_barrier_all();
            if (is_p && me == 1 && *word != base + opt.iters - 1)
                bench_die("%s p: target holds %ld, expected %ld", kernel ? "kernel" : "host",
                          (long)*word, (long)(base + opt.iters - 1));
        }
        if (me == 0) {
            const char *op = is_p ? "p" : "g";
            char name[64];
            if (kernel)
                emit(kname(name, sizeof name, op, 1),
                     is_p ? "aclshmem_int64_p+aclshmem_quiet" : "aclshmem_int64_g", "latency", 8,
                     word, 0, opt.iters);
            else {
                snprintf(name, sizeof name, "host_%s", op);
                emit(name, is_p ? "shmem_long_p+shmem_quiet" : "shmem_long_g", "latency", 8, word,
                     0, opt.iters);
            }
        }
    }
}

/* putmem/getmem latency (bw = 0, 1 block) or bandwidth (bw = 1, each --blocks count). */
static void run_mem(int is_put, int bw, char *src_region, char *dst_region, size_t n) {
    const long iters = bench_iters_for(&opt, n);
    char *src = src_region, *dst = dst_region;
    const int writer = is_put ? 0 : 1, reader = is_put ? 1 : 0;
    const int window = bw ? opt.window : 0;
    /* Variant 0 is the host; 1 + k runs blocks_list[k] blocks (latency: only 1 block). */
    const int nvariants = bw ? 1 + nblocks : 2;
    for (int v = 0; v < nvariants; v++) {
        const int blocks = v == 0 ? 0 : (bw ? blocks_list[v - 1] : 1);
        struct kargs a = {
            .op = bw ? (is_put ? K_PUTMEM_BW : K_GETMEM_BW) : (is_put ? K_PUTMEM : K_GETMEM),
            .dst = dst,
            .src = src,
            .bytes = n,
            .iters = iters,
            .window = opt.window};
        for (int t = -opt.warmup; t < opt.trials; t++) {
            const unsigned seed = (unsigned)(t + opt.warmup + 1) * 977u + (unsigned)n + 31u * v;
            if (me == writer) bench_fill(src, n, seed);
            if (me == reader) memset(dst, 0, n);
            shmem_barrier_all();
            if (me == 0) {
                double ns;
                if (blocks) {
                    ns = launch(&a, blocks);
                } else {
                    double t0 = bench_now_ns();
                    for (long i = 0; i < iters; i++) {
                        if (bw) {
                            if (is_put)
                                shmem_putmem_nbi(dst, src, n, 1);
                            else
                                shmem_getmem_nbi(dst, src, n, 1);
                            if ((i + 1) % opt.window == 0) shmem_quiet();
                        } else if (is_put) {
                            shmem_putmem(dst, src, n, 1);
                            shmem_quiet();
                        } else {
                            shmem_getmem(dst, src, n, 1);
                        }
                        BENCH_CLOBBER();
                    }
                    if (bw) shmem_quiet();
                    ns = (bench_now_ns() - t0) / (double)iters;
                }
                if (t >= 0) samples[t] = ns;
            }
            shmem_barrier_all();
            if (me == reader) bench_check(dst, n, seed, is_put ? "putmem" : "getmem");
        }
        if (me != 0) continue;
        char op[32], name[64], form[128];
        snprintf(op, sizeof op, "%s%s", is_put ? "putmem" : "getmem", bw ? "_bw" : "");
        if (blocks) {
            kname(name, sizeof name, op, blocks);
            snprintf(form, sizeof form, "%s%s, %d block%s",
                     is_put ? (bw ? "aclshmem_putmem_nbi" : "aclshmem_putmem")
                            : (bw ? "aclshmem_getmem_nbi" : "aclshmem_getmem"),
                     bw ? "+aclshmem_quiet per window" : (is_put ? "+aclshmem_quiet" : ""), blocks,
                     blocks == 1 ? "" : "s");
        } else {
            snprintf(name, sizeof name, "host_%s", op);
            snprintf(form, sizeof form, "%s%s",
                     is_put ? (bw ? "shmem_putmem_nbi" : "shmem_putmem")
                            : (bw ? "shmem_getmem_nbi" : "shmem_getmem"),
                     bw ? "+shmem_quiet per window" : (is_put ? "+shmem_quiet" : ""));
        }
        if (bw) bench_to_rate(samples, opt.trials, (double)n);
        emit(name, form, bw ? "bandwidth" : "latency", n, is_put ? dst : src, window, iters);
    }
}

/* barrier_all on every PE: host, then kernel-side with each --blocks count. */
static void run_barrier(void) {
    for (int v = 0; v <= nblocks; v++) {
        const int blocks = v == 0 ? 0 : blocks_list[v - 1];
        struct kargs a = {.op = K_BARRIER, .iters = opt.iters};
        for (int t = -opt.warmup; t < opt.trials; t++) {
            shmem_barrier_all();
            double ns;
            if (blocks) {
                ns = launch(&a, blocks);
            } else {
                double t0 = bench_now_ns();
                for (long i = 0; i < opt.iters; i++) shmem_barrier_all();
                ns = (bench_now_ns() - t0) / (double)opt.iters;
            }
            if (t >= 0) samples[t] = ns;
        }
        shmem_barrier_all();
        if (me != 0) continue;
        char name[64], form[64];
        if (blocks) {
            kname(name, sizeof name, "barrier_all", blocks);
            snprintf(form, sizeof form, "aclshmem_barrier_all, %d block%s", blocks,
                     blocks == 1 ? "" : "s");
        } else {
            snprintf(name, sizeof name, "host_barrier_all");
            snprintf(form, sizeof form, "shmem_barrier_all");
        }
        emit(name, form, "latency", 0, NULL, 0, opt.iters);
    }
}

/* The launch itself: an empty kernel, each --blocks count, PE 0 only. */
static void run_launch(void) {
    for (int k = 0; k < nblocks; k++) {
        const int blocks = blocks_list[k];
        for (int t = -opt.warmup; t < opt.trials; t++) {
            if (me != 0) continue;
            double t0 = bench_now_ns();
            for (long i = 0; i < opt.iters; i++)
                if (shmemx_cpu_launch(empty_kernel, NULL, blocks) != 0)
                    bench_die("shmemx_cpu_launch(%d blocks) failed", blocks);
            if (t >= 0) samples[t] = (bench_now_ns() - t0) / (double)opt.iters;
        }
        if (me != 0) continue;
        char name[64], form[64];
        kname(name, sizeof name, "launch", blocks);
        snprintf(form, sizeof form, "shmemx_cpu_launch(empty kernel), %d block%s", blocks,
                 blocks == 1 ? "" : "s");
        emit(name, form, "latency", 0, NULL, 0, opt.iters);
    }
    shmem_barrier_all();
}

/* Takes --blocks LIST out of argv (common.h does not know it). */
static int take_blocks(int argc, char **argv) {
    int out = 1;
    const char *list = "1,4";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--blocks") && i + 1 < argc) {
            list = argv[++i];
            continue;
        }
        argv[out++] = argv[i];
    }
    char items[BENCH_MAX_LIST][32];
    nblocks = bench_split(list, items, BENCH_MAX_LIST, 32);
    for (int k = 0; k < nblocks; k++) {
        char *end;
        long v = strtol(items[k], &end, 10);
        if (*end || v < 1 || v > MAX_BLOCKS)
            bench_die("--blocks: '%s' is not a count in [1, %d]", items[k], MAX_BLOCKS);
        blocks_list[k] = (int)v;
    }
    return out;
}

int main(int argc, char **argv) {
    me = bench_start();
    npes = shmem_n_pes();
    argc = take_blocks(argc, argv);
    bench_parse(&opt, argc, argv, "p,g,putmem,getmem,putmem_bw,getmem_bw,barrier_all,launch",
                "8,64,4K,64K,1M", 32u << 20);
    if (npes < 2) bench_die("needs at least 2 PEs, got %d", npes);
    static const char *known[] = {"p",         "g",         "putmem",      "getmem",
                                  "putmem_bw", "getmem_bw", "barrier_all", "launch"};
    for (int k = 0; k < opt.nops; k++) {
        int ok = 0;
        for (size_t j = 0; j < sizeof known / sizeof *known; j++)
            ok |= !strcmp(opt.ops[k], known[j]);
        if (!ok) bench_die("unknown op '%s'", opt.ops[k]);
    }
    for (int pl = 0; pl < opt.nplacements; pl++)
        if (strcmp(opt.placements[pl], "heap"))
            bench_die("--placement %s: kernel.c measures the heap only", opt.placements[pl]);
    size_t max = 0;
    for (int s = 0; s < opt.nsizes; s++) {
        if (opt.sizes[s] > MAX_BYTES) bench_die("size %zu is above %u", opt.sizes[s], MAX_BYTES);
        if (opt.sizes[s] > max) max = opt.sizes[s];
    }

    int64_t *word = shmem_align(64, 64);
    if (!word) bench_die("shmem_align(64, 64) failed");
    char *src = bench_region("heap", max, NULL, 0);
    char *dst = bench_region("heap", max, NULL, 0);
    for (int k = 0; k < opt.nops; k++) {
        const char *op = opt.ops[k];
        if (!strcmp(op, "p") || !strcmp(op, "g")) run_word(!strcmp(op, "p"), word);
        if (!strcmp(op, "putmem") || !strcmp(op, "getmem") || !strcmp(op, "putmem_bw") ||
            !strcmp(op, "getmem_bw"))
            for (int s = 0; s < opt.nsizes; s++)
                run_mem(op[0] == 'p', strstr(op, "_bw") != NULL, src, dst, opt.sizes[s]);
        if (!strcmp(op, "barrier_all")) run_barrier();
        if (!strcmp(op, "launch")) run_launch();
    }
    bench_region_free("heap", dst);
    bench_region_free("heap", src);
    shmem_free(word);
    shmem_finalize();
    return 0;
}
