/*
 * bench/common.h: what every benchmark program shares -- the timer, trial statistics, the
 * command-line options of a sweep line, pinning, buffer placement and the JSON record.
 *
 * Programs use only the OpenSHMEM API (1.4 common subset; 1.5-only parts under
 * `#if SHMEM_MINOR_VERSION >= 5`), so one source builds against this library and against Open
 * MPI's OSHMEM. A program prints one JSON object per figure on stdout, one per line, and
 * nothing else there; diagnostics go to stderr. It checks the data it moved and exits non-zero
 * on any mismatch. floor.c includes this with BENCH_NO_SHMEM defined (no OpenSHMEM at all).
 *
 * Measurement shape, the same in every program: `warmup` trials that are thrown away, then
 * `trials` trials of `iters` calls each, timed with CLOCK_MONOTONIC around the whole loop; a
 * trial's figure is its time per call (or its bandwidth/rate); a record carries the median,
 * min and max over trials.
 *
 * Never in a timed loop: allocation, printing, data checks, clock reads per call.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef BENCH_NO_SHMEM
#include <shmem.h>
#endif

/* Callgrind markers: with BENCH_CALLGRIND=1 in the environment and the valgrind headers present,
 * collection is switched on around each measured loop only, and each figure is dumped under its
 * own name, so report.py can divide the instructions of exactly that loop by its calls. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_HAVE_CALLGRIND 1
#endif
#endif

#define BENCH_MAX_TRIALS 1001
/* Helpers are static; a program uses only some of them. */
#define BENCH_FN static __attribute__((unused))
#define BENCH_MAX_LIST 64
#define BENCH_PAGE 4096
#define BENCH_NAME_LEN 256 /* SHMEM_MAX_NAME_LEN in both libraries */

/* ---- small utilities ------------------------------------------------------------------------ */

static inline double bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Keeps the compiler from dropping or merging memory operations across this point. */
#define BENCH_CLOBBER() __asm__ __volatile__("" ::: "memory")

BENCH_FN void bench_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* ---- options of one sweep line ------------------------------------------------------------- */

typedef struct {
    size_t src_off, dst_off; /* bytes past a page boundary */
} bench_offsets_t;

typedef struct {
    int trials;    /* recorded trials per figure */
    int warmup;    /* trials thrown away first */
    long iters;    /* calls per trial for small operations */
    size_t budget; /* bytes a trial should move at most (caps iters for big sizes) */
    int window;    /* operations in flight before a quiet (bandwidth) */
    size_t sizes[BENCH_MAX_LIST];
    int nsizes;
    char ops[BENCH_MAX_LIST][32];
    int nops;
    char placements[4][16];
    int nplacements;
    bench_offsets_t offsets[BENCH_MAX_LIST];
    int noffsets;
    char mode[32]; /* program-specific switch (floor.c: pingpong or memcpy) */
} bench_opts_t;

BENCH_FN size_t bench_parse_size(const char *s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) bench_die("bad size '%s'", s);
    switch (*end) {
    case 'k':
    case 'K':
        v <<= 10;
        end++;
        break;
    case 'm':
    case 'M':
        v <<= 20;
        end++;
        break;
    case 'g':
    case 'G':
        v <<= 30;
        end++;
        break;
    default: break;
    }
    if (*end == 'i') end++; /* KiB, MiB */
    if (*end == 'B') end++;
    if (*end) bench_die("bad size '%s'", s);
    return (size_t)v;
}

/* "8,64,4K" or "1-4M" (every power of two from 1 to 4 MiB), mixed freely. */
BENCH_FN void bench_parse_sizes(bench_opts_t *o, const char *arg) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", arg);
    o->nsizes = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(tok, '-');
        size_t lo, hi;
        if (dash) {
            *dash = 0;
            lo = bench_parse_size(tok);
            hi = bench_parse_size(dash + 1);
        } else {
            lo = hi = bench_parse_size(tok);
        }
        if (lo > hi || (lo == 0 && hi != 0)) bench_die("bad size range in '%s'", arg);
        for (size_t s = lo;; s *= 2) {
            if (o->nsizes == BENCH_MAX_LIST) bench_die("too many sizes in '%s'", arg);
            o->sizes[o->nsizes++] = s;
            if (s >= hi || s > SIZE_MAX / 2) break;
        }
    }
}

BENCH_FN int bench_split(const char *arg, char (*out)[32], int max, size_t width) {
    char buf[1024];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (n == max) bench_die("too many items in '%s'", arg);
        if (strlen(tok) >= width) bench_die("item too long: '%s'", tok);
        snprintf(out[n++], width, "%s", tok);
    }
    return n;
}

BENCH_FN void bench_parse_offsets(bench_opts_t *o, const char *arg) {
    char items[BENCH_MAX_LIST][32];
    o->noffsets = bench_split(arg, items, BENCH_MAX_LIST, 32);
    for (int i = 0; i < o->noffsets; i++) {
        char *colon = strchr(items[i], ':');
        if (!colon) bench_die("offset pair '%s' is not SRC:DST", items[i]);
        *colon = 0;
        o->offsets[i].src_off = bench_parse_size(items[i]);
        o->offsets[i].dst_off = bench_parse_size(colon + 1);
        if (o->offsets[i].src_off >= BENCH_PAGE || o->offsets[i].dst_off >= BENCH_PAGE)
            bench_die("page offsets must be below %d", BENCH_PAGE);
    }
}

/* Defaults (the program's ops, sizes and bytes per trial), then the command line: --trials N
 * --warmup N --iters N --budget SIZE --window N
 * --sizes LIST --ops LIST --placement heap,static --offsets S:D,... --mode NAME. */
BENCH_FN void bench_parse(bench_opts_t *o, int argc, char **argv, const char *default_ops,
                          const char *default_sizes, size_t default_budget) {
    memset(o, 0, sizeof *o);
    o->trials = 21;
    o->warmup = 2;
    o->iters = 5000;
    o->budget = default_budget;
    o->window = 64;
    o->nops = bench_split(default_ops, o->ops, BENCH_MAX_LIST, 32);
    bench_parse_sizes(o, default_sizes);
    o->nplacements = 1;
    strcpy(o->placements[0], "heap");
    o->noffsets = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) bench_die("option %s needs a value", a);
        if (!strcmp(a, "--trials"))
            o->trials = atoi(v);
        else if (!strcmp(a, "--warmup"))
            o->warmup = atoi(v);
        else if (!strcmp(a, "--iters"))
            o->iters = atol(v);
        else if (!strcmp(a, "--budget"))
            o->budget = bench_parse_size(v);
        else if (!strcmp(a, "--window"))
            o->window = atoi(v);
        else if (!strcmp(a, "--sizes"))
            bench_parse_sizes(o, v);
        else if (!strcmp(a, "--ops"))
            o->nops = bench_split(v, o->ops, BENCH_MAX_LIST, 32);
        else if (!strcmp(a, "--offsets"))
            bench_parse_offsets(o, v);
        else if (!strcmp(a, "--mode"))
            snprintf(o->mode, sizeof o->mode, "%s", v);
        else if (!strcmp(a, "--placement")) {
            char items[4][32];
            o->nplacements = bench_split(v, items, 4, 16);
            for (int k = 0; k < o->nplacements; k++) {
                if (strcmp(items[k], "heap") && strcmp(items[k], "static"))
                    bench_die("placement '%s' is neither heap nor static", items[k]);
                snprintf(o->placements[k], sizeof o->placements[k], "%s", items[k]);
            }
        } else
            bench_die("unknown option '%s'", a);
        i++;
    }
    if (o->trials < 1 || o->trials > BENCH_MAX_TRIALS)
        bench_die("--trials must be 1..%d", BENCH_MAX_TRIALS);
    if (o->warmup < 0 || o->iters < 1 || o->window < 1)
        bench_die("--warmup, --iters, --window out of range");
}

BENCH_FN int bench_has_op(const bench_opts_t *o, const char *op) {
    for (int i = 0; i < o->nops; i++)
        if (!strcmp(o->ops[i], op)) return 1;
    return 0;
}

/* Calls per trial for an operation moving `bytes` each: `iters`, capped so a trial moves at
 * most `budget` bytes, and at least 2. */
BENCH_FN long bench_iters_for(const bench_opts_t *o, size_t bytes) {
    long n = o->iters;
    if (bytes && (size_t)n * bytes > o->budget) n = (long)(o->budget / bytes);
    return n < 2 ? 2 : n;
}

/* ---- statistics ---------------------------------------------------------------------------- */

typedef struct {
    double median, min, max;
} bench_stat_t;

BENCH_FN int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

BENCH_FN bench_stat_t bench_stats(double *v, int n) {
    bench_stat_t s;
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    s.min = v[0];
    s.max = v[n - 1];
    s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    return s;
}

/* Per-call times (ns) to rates: each entry becomes `scale / t` (GB/s for bytes per call with
 * scale = bytes, Mops/s with scale = 1e3). The order flips, the stats stay right. */
BENCH_FN void bench_to_rate(double *v, int n, double scale) {
    for (int i = 0; i < n; i++) v[i] = scale / v[i];
}

/* Largest power of two dividing `p`, capped at one page: the alignment a record reports. */
BENCH_FN size_t bench_alignment(const void *p) {
    uintptr_t a = (uintptr_t)p;
    size_t al = 1;
    while (al < BENCH_PAGE && !(a & al)) al <<= 1;
    return al;
}

/* ---- one JSON record per figure ------------------------------------------------------------ */

typedef struct {
    const char *bench;  /* program: rma_lat, pingpong, ... */
    const char *name;   /* figure: putmem+quiet, fetch_add, ... */
    const char *form;   /* the OpenSHMEM calls measured, e.g. "shmem_putmem+shmem_quiet" */
    const char *metric; /* latency | bandwidth | rate */
    const char *unit;   /* ns | GB/s | Mops/s */
    int npes;
    size_t size;           /* bytes per call (element size for AMOs) */
    const char *placement; /* heap | static | private | shared-page */
    size_t align;          /* alignment of the target (remote) buffer */
    size_t src_off, dst_off;
    int window; /* operations per quiet; 0 where it does not apply */
    long iters;
    int trials;
} bench_fig_t;

static char bench_lib[BENCH_NAME_LEN + 1];

BENCH_FN void bench_emit(const bench_fig_t *f, bench_stat_t s) {
    printf(
        "{\"bench\":\"%s\",\"name\":\"%s\",\"form\":\"%s\",\"lib\":\"%s\",\"npes\":%d,"
        "\"size\":%zu,\"placement\":\"%s\",\"align\":%zu,\"src_off\":%zu,\"dst_off\":%zu,"
        "\"window\":%d,\"metric\":\"%s\",\"unit\":\"%s\",\"median\":%.6g,\"min\":%.6g,"
        "\"max\":%.6g,\"trials\":%d,\"iters\":%ld,\"cpu\":%d}\n",
        f->bench, f->name, f->form, bench_lib, f->npes, f->size, f->placement, f->align, f->src_off,
        f->dst_off, f->window, f->metric, f->unit, s.median, s.min, s.max, f->trials, f->iters,
        sched_getcpu());
    fflush(stdout);
}

/* ---- pinning ------------------------------------------------------------------------------- */

/* Pins the calling process to CPU `rank % online CPUs` unless BENCH_PIN=none. Both launchers
 * get the same placement this way (oshrun's --bind-to core gives the same map at 2 PEs). */
BENCH_FN void bench_pin(int rank) {
    const char *how = getenv("BENCH_PIN");
    if (how && !strcmp(how, "none")) return;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1) ncpu = 1;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)(rank % ncpu), &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) perror("bench: sched_setaffinity");
}

/* ---- callgrind markers --------------------------------------------------------------------- */

static int bench_cg_on;

BENCH_FN void bench_cg_init(void) {
    const char *e = getenv("BENCH_CALLGRIND");
    bench_cg_on = e && *e == '1';
#ifndef BENCH_HAVE_CALLGRIND
    if (bench_cg_on) bench_die("BENCH_CALLGRIND=1 but built without <valgrind/callgrind.h>");
#endif
}

#ifdef BENCH_HAVE_CALLGRIND
#define BENCH_CG_TOGGLE()                                                                          \
    do {                                                                                           \
        if (bench_cg_on) CALLGRIND_TOGGLE_COLLECT;                                                 \
    } while (0)
/* Dumps the counts gathered since the last dump under "bench|name|size|placement|calls". */
BENCH_FN void bench_cg_dump(const bench_fig_t *f, long calls) {
    if (!bench_cg_on) return;
    char tag[256];
    snprintf(tag, sizeof tag, "%s|%s|%zu|%s|%ld", f->bench, f->name, f->size, f->placement, calls);
    CALLGRIND_DUMP_STATS_AT(tag);
}
#else
#define BENCH_CG_TOGGLE() ((void)0)
BENCH_FN void bench_cg_dump(const bench_fig_t *f, long calls) {
    (void)f;
    (void)calls;
}
#endif

/* ---- errors and data checks ---------------------------------------------------------------- */

static int bench_me = -1;

BENCH_FN void bench_die(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "bench: PE %d: ", bench_me);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(NULL);
#ifndef BENCH_NO_SHMEM
    if (bench_me >= 0) shmem_global_exit(2);
#endif
    exit(2);
}

/* The byte pattern of a buffer in trial `seed`: differs between trials and between offsets,
 * so a stale or shifted copy fails. */
static inline unsigned char bench_byte(size_t i, unsigned seed) {
    return (unsigned char)((i * 131u + seed * 7u + (i >> 8)) ^ 0x5a);
}

BENCH_FN void bench_fill(void *p, size_t n, unsigned seed) {
    unsigned char *c = p;
    for (size_t i = 0; i < n; i++) c[i] = bench_byte(i, seed);
}

BENCH_FN void bench_check(const void *p, size_t n, unsigned seed, const char *what) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != bench_byte(i, seed))
            bench_die("%s: byte %zu of %zu is 0x%02x, expected 0x%02x (trial seed %u)", what, i, n,
                      c[i], bench_byte(i, seed), seed);
}

#ifndef BENCH_NO_SHMEM
/* ---- OpenSHMEM start and placement --------------------------------------------------------- */

/* shmem_init, pinning, callgrind switch, library name. Returns this PE's number. */
BENCH_FN int bench_start(void) {
    shmem_init();
    bench_me = shmem_my_pe();
    bench_pin(bench_me);
    bench_cg_init();
    char name[BENCH_NAME_LEN + 1] = {0};
    shmem_info_get_name(name);
    for (char *c = name; *c; c++)
        if (*c == '"' || *c == '\\' || *c < ' ') *c = '_';
    snprintf(bench_lib, sizeof bench_lib, "%s", name);
    return bench_me;
}

/* A symmetric region of `bytes` (+ one page of slack for offsets), page aligned: from the heap,
 * or a slice of the caller's static array `statics` (which must be page aligned and big
 * enough). Every PE calls it with the same arguments (heap allocation is collective). */
BENCH_FN char *bench_region(const char *placement, size_t bytes, char *statics,
                            size_t statics_len) {
    size_t need = bytes + BENCH_PAGE;
    if (!strcmp(placement, "static")) {
        if (need > statics_len)
            bench_die("static region of %zu bytes is too small for %zu", statics_len, need);
        return statics;
    }
    char *p = shmem_align(BENCH_PAGE, need);
    if (!p) bench_die("shmem_align(%d, %zu) failed", BENCH_PAGE, need);
    return p;
}

BENCH_FN void bench_region_free(const char *placement, char *p) {
    if (strcmp(placement, "static")) shmem_free(p);
}
#endif /* BENCH_NO_SHMEM */

#endif /* BENCH_COMMON_H */
