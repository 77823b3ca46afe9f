/*
 * bench/matmul_common.h: what the two matmul_allreduce benchmark programs share -- matmul.c
 * (this library: the fused kernel, and cblas_sgemm then shmem_float_sum_reduce) and
 * matmul_mpi.c (cblas_sgemm then Open MPI's MPI_Allreduce): the sweep line's options, the
 * inputs, the spot check of a result and the JSON record. Include after common.h.
 *
 *   --shapes MxKxN,...   the problems (default 1024x128x8192)
 *   --trials N           timed trials per figure (default 5), after --warmup N (default 1)
 *   --blocks B           kernel blocks per PE (default: the CPUs the PE may run on: 1 when pinned)
 *   --tile TMxTN         the kernel's output tile (default: the kernel's)
 * matmul_mpi.c accepts --blocks and --tile, so one sweep line serves both, and ignores them.
 *
 * Every figure is the time of one whole operation (C = sum over PEs of A_pe x B_pe, float32,
 * every PE ending with C) from a barrier to a barrier, one BLAS thread per PE in every
 * variant; a record's `size` is K and its `placement` the shape "MxKxN".
 */
#ifndef BENCH_MATMUL_COMMON_H
#define BENCH_MATMUL_COMMON_H

#include <cblas.h>
#include <math.h>

#define MM_MAX_SHAPES 16

typedef struct {
    int m, k, n;
} mm_shape_t;

typedef struct {
    mm_shape_t shapes[MM_MAX_SHAPES];
    int nshapes, trials, warmup, blocks, tm, tn;
} mm_opts_t;

/* An int in [1, max] from option `opt`'s text `s`, or the program dies naming both. */
static int mm_int(const char *opt, const char *s, long max) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > max)
        bench_die("invalid argument %s=%s: not an integer in [1, %ld]", opt, s, max);
    return (int)v;
}

/* "AxB[xC]" into `out` (count items), each in [1, 65536]. */
static void mm_dims(const char *opt, const char *s, int *out, int count) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL, *tok = strtok_r(buf, "x", &save);
    for (int i = 0; i < count; i++) {
        if (!tok)
            bench_die("invalid argument %s=%s: want %s", opt, s, count == 3 ? "MxKxN" : "TMxTN");
        out[i] = mm_int(opt, tok, 1 << 16);
        tok = strtok_r(NULL, "x", &save);
    }
    if (tok) bench_die("invalid argument %s=%s: too many dimensions", opt, s);
}

static void mm_parse(mm_opts_t *o, int argc, char **argv) {
    memset(o, 0, sizeof *o);
    o->shapes[0] = (mm_shape_t){1024, 128, 8192};
    o->nshapes = 1;
    o->trials = 5;
    o->warmup = 1;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) bench_die("option %s needs a value", a);
        if (!strcmp(a, "--shapes")) {
            char items[MM_MAX_SHAPES][32];
            o->nshapes = bench_split(v, items, MM_MAX_SHAPES, 32);
            for (int s = 0; s < o->nshapes; s++) mm_dims("--shapes", items[s], &o->shapes[s].m, 3);
        } else if (!strcmp(a, "--trials")) {
            o->trials = mm_int(a, v, BENCH_MAX_TRIALS);
        } else if (!strcmp(a, "--warmup")) {
            o->warmup = strcmp(v, "0") ? mm_int(a, v, 100) : 0;
        } else if (!strcmp(a, "--blocks")) {
            o->blocks = mm_int(a, v, 4096);
        } else if (!strcmp(a, "--tile")) {
            int d[2];
            mm_dims(a, v, d, 2);
            o->tm = d[0];
            o->tn = d[1];
        } else {
            bench_die("unknown option '%s'", a);
        }
    }
}

/* A deterministic input value in [-1, 1), different per PE, matrix and index: the formula of
 * examples/matmul_allreduce, so any PE can recompute any other PE's inputs. */
static float mm_input(int pe, int which, size_t i) {
    uint64_t x = ((uint64_t)pe * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)which << 56) ^ (i + 1);
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    return (float)(x % 2048) / 1024.0f - 1.0f;
}

static void mm_fill(int pe, const mm_shape_t *s, float *a, float *b) {
    for (size_t i = 0; i < (size_t)s->m * (size_t)s->k; i++) a[i] = mm_input(pe, 0, i);
    for (size_t i = 0; i < (size_t)s->k * (size_t)s->n; i++) b[i] = mm_input(pe, 1, i);
}

/* Checks 97 entries of C (row-major M x N) against the sum over all PEs recomputed in double
 * from the input formula; dies naming the first that is off. */
static void mm_spot_check(const char *what, const mm_shape_t *s, int npes, const float *c) {
    double tol = 1e-5 * (double)s->k * (double)npes + 1e-6;
    for (int j = 0; j < 97; j++) {
        size_t r = ((size_t)j * 7919u) % (size_t)s->m, col = ((size_t)j * 104729u) % (size_t)s->n;
        if (j == 0) r = col = 0;
        if (j == 1) r = (size_t)s->m - 1, col = (size_t)s->n - 1;
        double want = 0;
        for (int pe = 0; pe < npes; pe++)
            for (size_t q = 0; q < (size_t)s->k; q++)
                want += (double)mm_input(pe, 0, r * (size_t)s->k + q) *
                        (double)mm_input(pe, 1, q * (size_t)s->n + col);
        double got = c[r * (size_t)s->n + col];
        if (!(fabs(got - want) <= tol))
            bench_die("%s %dx%dx%d: C[%zu][%zu] = %g, expected %g (tolerance %g)", what, s->m, s->k,
                      s->n, r, col, got, want, tol);
    }
}

/* One record: `t` holds `n` trial times in ns (sorted here). */
static void mm_emit(const char *name, const char *form, int npes, const mm_shape_t *s, double *t,
                    int n) {
    char shape[64];
    snprintf(shape, sizeof shape, "%dx%dx%d", s->m, s->k, s->n);
    bench_fig_t f = {.bench = "matmul",
                     .name = name,
                     .form = form,
                     .metric = "latency",
                     .unit = "ns",
                     .npes = npes,
                     .size = (size_t)s->k,
                     .placement = shape,
                     .iters = 1,
                     .trials = n};
    bench_emit(&f, bench_stats(t, n));
}

#endif /* BENCH_MATMUL_COMMON_H */
