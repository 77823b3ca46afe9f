/*
 * floor.c: the physical floor the OpenSHMEM figures are compared with, measured in the same
 * run, with no OpenSHMEM library at all.
 *
 *   --mode pingpong   two processes (fork), pinned to CPUs 0 and 1, on one shared page
 *                     (mmap MAP_SHARED): one-way latency = round-trip / 2, same timer and loop
 *                     shape as pingpong.c. --sizes 0 is "line": both processes store and load
 *                     one 64-byte line (ping word and pong word in it); a size n > 0 is
 *                     "flag+data": per direction a flag line and n bytes of data on the lines
 *                     after it, sent as memcpy + release store of the flag, received as acquire
 *                     loads of the flag + a check of the data's first word -- the layout
 *                     pingpong.c's putmem+p uses in the symmetric heap.
 *   --mode memcpy     one process pinned to CPU 0: glibc memcpy of --sizes bytes (up to 1 GiB)
 *                     between two page-aligned shared mappings at --offsets SRC:DST, `window`
 *                     copies per iteration like rma_bw.c; reported as ns per copy and as GB/s.
 *
 * Atomics are the compiler's __atomic builtins (plain loads/stores on x86-64), spinning
 * without pause: the fastest a flag can go. Sweep: floor.sweep.
 */
#define BENCH_NO_SHMEM
#include "common.h"

#include <sys/mman.h>
#include <sys/wait.h>

#define MAX_PING_BYTES (64u << 10)
#define MAX_COPY_BYTES (1u << 30)

static bench_opts_t opt;
static double samples[BENCH_MAX_TRIALS];

static void *shared_map(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) bench_die("mmap of %zu bytes failed: %s", bytes, strerror(errno));
    return p;
}

/* ---- ping-pong ------------------------------------------------------------------------------ */

/* Each direction's inbox: flag at +0 (its own line), data from +64. Inbox of process r at
 * r * inbox_stride; the line mode uses words 0 (ping) and 1 (pong) of the first line. */
typedef struct {
    char *page;
    size_t stride;
} inboxes_t;

static inline long *flag_of(inboxes_t b, int r) { return (long *)(b.page + (size_t)r * b.stride); }
static inline char *data_of(inboxes_t b, int r) { return b.page + (size_t)r * b.stride + 64; }

/* `iters` round trips from side `me` (0 pings first); returns ns per one-way trip. */
static double pingpong_line(long *line, int me, long v, long iters) {
    long *mine = &line[me], *theirs = &line[1 - me];
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) {
        ++v;
        if (me == 0) {
            __atomic_store_n(theirs, v, __ATOMIC_RELEASE);
            while (__atomic_load_n(mine, __ATOMIC_ACQUIRE) != v) {
            }
        } else {
            while (__atomic_load_n(mine, __ATOMIC_ACQUIRE) != v) {
            }
            __atomic_store_n(theirs, v, __ATOMIC_RELEASE);
        }
    }
    return (bench_now_ns() - t0) / (double)iters / 2.0;
}

static double pingpong_data(inboxes_t b, int me, char *src, size_t n, long v, long iters,
                            long *bad) {
    long *my_flag = flag_of(b, me), *their_flag = flag_of(b, 1 - me);
    char *my_data = data_of(b, me), *their_data = data_of(b, 1 - me);
    long nbad = 0;
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) {
        ++v;
        if (me == 1) {
            while (__atomic_load_n(my_flag, __ATOMIC_ACQUIRE) != v) {
            }
            long got;
            memcpy(&got, my_data, sizeof got);
            nbad += got != v;
        }
        memcpy(src, &v, sizeof v);
        memcpy(their_data, src, n);
        __atomic_store_n(their_flag, v, __ATOMIC_RELEASE);
        if (me == 0) {
            while (__atomic_load_n(my_flag, __ATOMIC_ACQUIRE) != v) {
            }
            long got;
            memcpy(&got, my_data, sizeof got);
            nbad += got != v;
        }
    }
    *bad += nbad;
    return (bench_now_ns() - t0) / (double)iters / 2.0;
}

static void pin_cpu(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        bench_die("sched_setaffinity(%d): %s", cpu, strerror(errno));
}

/* Both processes run every trial (warm-up included) for every size, in the same order, so
 * they stay in step with no other synchronisation; only process 0 keeps times. */
static void run_pingpong(void) {
    const size_t stride = 2 * BENCH_PAGE + MAX_PING_BYTES; /* inboxes far apart: no false sharing */
    char *page = shared_map(2 * stride);
    char *srcs = shared_map(2 * (MAX_PING_BYTES + BENCH_PAGE));
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 2) fprintf(stderr, "floor: only %ld CPU online; both sides share it\n", ncpu);
    pid_t child = fork();
    if (child < 0) bench_die("fork failed: %s", strerror(errno));
    const int me = child == 0 ? 1 : 0;
    bench_me = me;
    pin_cpu(ncpu < 2 ? 0 : me);
    inboxes_t b = {page, stride};
    char *src = srcs + (size_t)me * (MAX_PING_BYTES + BENCH_PAGE);
    long v = 0, bad = 0;
    for (int s = 0; s < opt.nsizes; s++) {
        const size_t n = opt.sizes[s];
        const long iters = bench_iters_for(&opt, n);
        for (int t = -opt.warmup; t < opt.trials; t++) {
            bench_fill(src + sizeof(long), n > sizeof(long) ? n - sizeof(long) : 0,
                       (unsigned)(t + opt.warmup + 1) + (unsigned)me * 7u);
            double ns = n == 0 ? pingpong_line((long *)page, me, v, iters)
                               : pingpong_data(b, me, src, n, v, iters, &bad);
            v += iters;
            if (t >= 0) samples[t] = ns;
        }
        if (bad) bench_die("flag+data %zu B: %ld payloads had a wrong first word", n, bad);
        /* The final payload, whole (both sides have finished writing once both saw v). */
        if (n > sizeof(long))
            bench_check(data_of(b, me) + sizeof(long), n - sizeof(long),
                        (unsigned)(opt.trials + opt.warmup) + (unsigned)(1 - me) * 7u, "flag+data");
        if (me == 0) {
            bench_fig_t f = {"floor",
                             n ? "flag+data" : "line",
                             n ? "memcpy+atomic_store_release/atomic_load_acquire spin"
                               : "atomic_store_release/atomic_load_acquire spin, one line",
                             "latency",
                             "ns",
                             2,
                             n ? n : sizeof(long),
                             "shared-page",
                             BENCH_PAGE,
                             0,
                             0,
                             0,
                             iters,
                             opt.trials};
            bench_emit(&f, bench_stats(samples, opt.trials));
        }
    }
    if (me == 1) _exit(0);
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
        bench_die("the ping-pong partner failed (status %#x)", status);
}

/* ---- memcpy --------------------------------------------------------------------------------- */

static void run_memcpy(void) {
    pin_cpu(0);
    size_t max_n = 0; /* the regions fit the largest size (mf_bm_copy.sweep goes to 64 MiB) */
    for (int s = 0; s < opt.nsizes; s++) {
        if (opt.sizes[s] > MAX_COPY_BYTES)
            bench_die("size %zu is above %u", opt.sizes[s], MAX_COPY_BYTES);
        if (opt.sizes[s] > max_n) max_n = opt.sizes[s];
    }
    char *src_region = shared_map(max_n + 2 * BENCH_PAGE);
    char *dst_region = shared_map(max_n + 2 * BENCH_PAGE);
    void *(*volatile copy)(void *, const void *, size_t) = memcpy; /* glibc's, never inlined */
    for (int o = 0; o < opt.noffsets; o++) {
        const bench_offsets_t off = opt.offsets[o];
        char *src = src_region + off.src_off, *dst = dst_region + off.dst_off;
        for (int s = 0; s < opt.nsizes; s++) {
            const size_t n = opt.sizes[s];
            int window = opt.window;
            if ((size_t)window * n > opt.budget)
                window = n >= opt.budget ? 1 : (int)(opt.budget / n);
            const long iters = bench_iters_for(&opt, (size_t)window * n);
            void *(*fn)(void *, const void *, size_t) = copy;
            for (int t = -opt.warmup; t < opt.trials; t++) {
                const unsigned seed = (unsigned)(t + opt.warmup + 1) * 7919u + (unsigned)n;
                bench_fill(src, n, seed);
                memset(dst, 0, n);
                double t0 = bench_now_ns();
                for (long i = 0; i < iters; i++) {
                    for (int w = 0; w < window; w++) fn(dst, src, n);
                    BENCH_CLOBBER();
                }
                double ns = bench_now_ns() - t0;
                if (t >= 0) samples[t] = ns / (double)iters / window;
                bench_check(dst, n, seed, "memcpy");
            }
            bench_fig_t f = {
                "floor", "memcpy",      "glibc memcpy",       "latency",   "ns",        1,
                n,       "shared-page", bench_alignment(dst), off.src_off, off.dst_off, window,
                iters,   opt.trials};
            double bw[BENCH_MAX_TRIALS];
            for (int t = 0; t < opt.trials; t++) bw[t] = (double)n / samples[t];
            bench_emit(&f, bench_stats(samples, opt.trials));
            f.metric = "bandwidth";
            f.unit = "GB/s";
            bench_emit(&f, bench_stats(bw, opt.trials));
        }
    }
}

int main(int argc, char **argv) {
    bench_parse(&opt, argc, argv, "-", "0,8", 0);
    snprintf(bench_lib, sizeof bench_lib, "none");
    if (!strcmp(opt.mode, "pingpong")) {
        if (!opt.budget) opt.budget = 1u << 20; /* as pingpong.c */
        for (int s = 0; s < opt.nsizes; s++)
            if (opt.sizes[s] > MAX_PING_BYTES || (opt.sizes[s] && opt.sizes[s] < sizeof(long)))
                bench_die("ping-pong size %zu: 0 (line) or %zu..%u", opt.sizes[s], sizeof(long),
                          MAX_PING_BYTES);
        run_pingpong();
    } else if (!strcmp(opt.mode, "memcpy")) {
        if (!opt.budget) opt.budget = 16u << 20; /* as rma_bw.c */
        run_memcpy();
    } else {
        bench_die("--mode must be pingpong or memcpy");
    }
    return 0;
}
