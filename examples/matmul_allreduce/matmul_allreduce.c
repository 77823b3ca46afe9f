/*
 * matmul_allreduce.c: C = sum over PEs of (A_pe x B_pe), fused in one kernel.
 *
 * Every PE holds its own A (M x K) and B (K x N), row-major; afterwards every PE holds
 * C = sum_pe A_pe x B_pe. The output is cut into TM x TN tiles. Block b of every PE takes tiles
 * b, b + blocks, b + 2 * blocks, ...; its g-th tile is owned (reduced) by PE g % npes. A block
 * computes each tile with cblas_sgemm and at once sends it to the tile's owner with a
 * put-with-signal, then goes on with the next tile while the data travels; between tiles it
 * reduces (cblas_saxpy) the owned tiles whose contributions have all arrived and sends the sum
 * to every PE, so communication overlaps computation.
 *
 *   matmul_allreduce_op [--m M] [--k K] [--n N] [--tile-m TM] [--tile-n TN] [--blocks B]
 *                       [--iters I] [--data DIR]
 *
 * With --data, PE r reads DIR/a_pe<r>.bin and DIR/b_pe<r>.bin (float32) and writes
 * DIR/output_pe<r>.bin (M x N float32) for utils/verify_result.py. Either way every PE also
 * compares the fused result with the sequential one (cblas_sgemm, then the host
 * shmem_float_sum_reduce) within a float tolerance, and PE 0 prints both times.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <cblas.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <shmem.h>
#include <shmem/device.h>
#include <shmem/launch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "op_util.h"

#define PROG "matmul_allreduce_op"

struct mm_args {
    const float *a, *b; /* local: M x K and K x N */
    float *stage;       /* symmetric: the owner's slots, one per (owned tile, source PE) */
    float *c;           /* symmetric: the reduced tiles, tile after tile */
    float *scratch;     /* local: one tile per block */
    int32_t *arrived;   /* symmetric: per tile, contributions received by its owner */
    int32_t *reduced;   /* symmetric: per tile, the round whose sum has landed here */
    int m, k, n, tm, tn, tiles_n, tiles;
    int32_t round; /* 1 for the first launch, then 2, ...: the signals never need a reset */
};

static size_t tile_elems(const struct mm_args *a) { return (size_t)a->tm * (size_t)a->tn; }

/* The stage slot of tile t's contribution from PE src, on t's owner. */
static float *stage_slot(const struct mm_args *a, int t, int nb, int npes, int src) {
    int g = t / nb;
    size_t owned = (size_t)(g / npes) * (size_t)nb + (size_t)(t % nb);
    return a->stage + (owned * (size_t)npes + (size_t)src) * tile_elems(a);
}

/* out = A[tile rows, :] x B[:, tile cols], a compact rows x cols tile. */
static void compute_tile(const struct mm_args *a, int t, float *out, int *rows, int *cols) {
    int r0 = t / a->tiles_n * a->tm, c0 = t % a->tiles_n * a->tn;
    *rows = a->m - r0 < a->tm ? a->m - r0 : a->tm;
    *cols = a->n - c0 < a->tn ? a->n - c0 : a->tn;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, *rows, *cols, a->k, 1.0f,
                a->a + (size_t)r0 * (size_t)a->k, a->k, a->b + c0, a->n, 0.0f, out, *cols);
}

/* Sums the contributions of owned tile t (all arrived) into this PE's slot and sends the sum
 * to every PE's C, the next PE first. */
static void reduce_tile(const struct mm_args *a, int t, int nb, int me, int npes) {
    float *sum = stage_slot(a, t, nb, npes, me);
    int n = (int)tile_elems(a);
    for (int src = 0; src < npes; src++) {
        if (src != me) cblas_saxpy(n, 1.0f, stage_slot(a, t, nb, npes, src), 1, sum, 1);
    }
    for (int k = 1; k <= npes; k++) {
        int pe = (me + k) % npes;
        aclshmem_putmem_signal(a->c + (size_t)t * tile_elems(a), sum, tile_elems(a) * sizeof(float),
                               &a->reduced[t], a->round, ACLSHMEM_SIGNAL_SET, pe);
    }
}

static void matmul_allreduce_kernel(void *p) {
    const struct mm_args *a = p;
    int me = aclshmem_my_pe(), npes = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    int32_t want = a->round * (npes - 1);
    float *scratch = a->scratch + (size_t)b * tile_elems(a);
    int next_owned = b + me * nb; /* the next owned tile of this block still to reduce */
    for (int t = b; t < a->tiles; t += nb) {
        int owner = t / nb % npes, rows, cols;
        if (owner == me) {
            compute_tile(a, t, stage_slot(a, t, nb, npes, me), &rows, &cols);
        } else {
            compute_tile(a, t, scratch, &rows, &cols);
            aclshmem_putmem_signal(stage_slot(a, t, nb, npes, me), scratch,
                                   tile_elems(a) * sizeof(float), &a->arrived[t], 1,
                                   ACLSHMEM_SIGNAL_ADD, owner);
        }
        /* Reduce the owned tiles, computed here already, whose contributions are all in. */
        while (next_owned <= t &&
               aclshmem_int32_test(&a->arrived[next_owned], ACLSHMEM_CMP_GE, want)) {
            reduce_tile(a, next_owned, nb, me, npes);
            next_owned += npes * nb;
        }
    }
    for (; next_owned < a->tiles; next_owned += npes * nb) {
        aclshmem_signal_wait_until(&a->arrived[next_owned], ACLSHMEM_CMP_GE, want);
        reduce_tile(a, next_owned, nb, me, npes);
    }
    /* This block's tiles, reduced by their owners, have all landed. */
    for (int t = b; t < a->tiles; t += nb) {
        aclshmem_signal_wait_until(&a->reduced[t], ACLSHMEM_CMP_GE, a->round);
    }
}

/* A deterministic input value in [-1, 1), different per PE, matrix and index. */
static float input_value(int pe, int which, size_t i) {
    uint64_t x = ((uint64_t)pe * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)which << 56) ^ (i + 1);
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    return (float)(x % 2048) / 1024.0f - 1.0f;
}

int main(int argc, char **argv) {
    int m = 64, k = 32, n = 128, tm = 32, tn = 32, blocks = 4, iters = 1;
    const char *data = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (v == NULL) {
            fprintf(stderr, "matmul_allreduce_op: %s needs a value\n", argv[i]);
            return 2;
        } else if (strcmp(argv[i], "--m") == 0) {
            rc = op_parse_int(PROG, "--m", v, 1 << 16, &m);
        } else if (strcmp(argv[i], "--k") == 0) {
            rc = op_parse_int(PROG, "--k", v, 1 << 16, &k);
        } else if (strcmp(argv[i], "--n") == 0) {
            rc = op_parse_int(PROG, "--n", v, 1 << 16, &n);
        } else if (strcmp(argv[i], "--tile-m") == 0) {
            rc = op_parse_int(PROG, "--tile-m", v, 4096, &tm);
        } else if (strcmp(argv[i], "--tile-n") == 0) {
            rc = op_parse_int(PROG, "--tile-n", v, 4096, &tn);
        } else if (strcmp(argv[i], "--blocks") == 0) {
            rc = op_parse_int(PROG, "--blocks", v, SHMEMX_CPU_LAUNCH_MAX_BLOCKS, &blocks);
        } else if (strcmp(argv[i], "--iters") == 0) {
            rc = op_parse_int(PROG, "--iters", v, 1 << 20, &iters);
        } else if (strcmp(argv[i], "--data") == 0) {
            data = v;
        } else {
            fprintf(stderr, "matmul_allreduce_op: unknown option '%s'\n", argv[i]);
            return 2;
        }
        if (rc != 0) return 2;
        i++;
    }
#ifdef OPENBLAS_VERSION
    /* The kernel's blocks are the parallelism; one BLAS thread each. */
    openblas_set_num_threads(1);
#endif

    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int tiles_n = (n + tn - 1) / tn, tiles = (m + tm - 1) / tm * tiles_n;
    size_t te = (size_t)tm * (size_t)tn, mn = (size_t)m * (size_t)n;
    /* Owned slots per PE: ceil(ceil(tiles / blocks) / npes) groups of `blocks` tiles. */
    size_t groups =
        ((size_t)(tiles + blocks - 1) / (size_t)blocks + (size_t)npes - 1) / (size_t)npes;
    float *a_mat = malloc((size_t)m * (size_t)k * sizeof(float));
    float *b_mat = malloc((size_t)k * (size_t)n * sizeof(float));
    float *scratch = malloc((size_t)blocks * te * sizeof(float));
    float *out = malloc(mn * sizeof(float));
    float *stage = shmem_malloc(groups * (size_t)blocks * (size_t)npes * te * sizeof(float));
    float *c_tiles = shmem_malloc((size_t)tiles * te * sizeof(float));
    int32_t *arrived = shmem_calloc((size_t)tiles, sizeof(int32_t));
    int32_t *reduced = shmem_calloc((size_t)tiles, sizeof(int32_t));
    float *seq_part = shmem_malloc(mn * sizeof(float));
    float *seq_sum = shmem_malloc(mn * sizeof(float));
    if (!a_mat || !b_mat || !scratch || !out || !stage || !c_tiles || !arrived || !reduced ||
        !seq_part || !seq_sum) {
        fprintf(stderr, "matmul_allreduce_op: PE %d: out of memory for M=%d K=%d N=%d\n", me, m, k,
                n);
        shmem_global_exit(1);
    }
    if (data != NULL) {
        if (op_file_io(PROG, data, "a", me, a_mat, (size_t)m * (size_t)k * sizeof(float), 0) != 0 ||
            op_file_io(PROG, data, "b", me, b_mat, (size_t)k * (size_t)n * sizeof(float), 0) != 0) {
            shmem_global_exit(1);
        }
    } else {
        for (size_t i = 0; i < (size_t)m * (size_t)k; i++) a_mat[i] = input_value(me, 0, i);
        for (size_t i = 0; i < (size_t)k * (size_t)n; i++) b_mat[i] = input_value(me, 1, i);
    }
    shmem_barrier_all();

    struct mm_args args = {.a = a_mat,
                           .b = b_mat,
                           .stage = stage,
                           .c = c_tiles,
                           .scratch = scratch,
                           .arrived = arrived,
                           .reduced = reduced,
                           .m = m,
                           .k = k,
                           .n = n,
                           .tm = tm,
                           .tn = tn,
                           .tiles_n = tiles_n,
                           .tiles = tiles,
                           .round = 0};
    double fused = 1e30;
    for (int it = 0; it < iters; it++) {
        shmem_barrier_all();
        double t0 = op_now();
        args.round = it + 1;
        if (shmemx_cpu_launch(matmul_allreduce_kernel, &args, blocks) != 0) shmem_global_exit(1);
        double dt = op_now() - t0;
        fused = dt < fused ? dt : fused;
    }
    /* Tiles back to row-major. */
    for (int t = 0; t < tiles; t++) {
        int r0 = t / tiles_n * tm, c0 = t % tiles_n * tn;
        int rows = m - r0 < tm ? m - r0 : tm, cols = n - c0 < tn ? n - c0 : tn;
        for (int r = 0; r < rows; r++) {
            memcpy(out + (size_t)(r0 + r) * (size_t)n + c0,
                   c_tiles + (size_t)t * te + (size_t)r * (size_t)cols,
                   (size_t)cols * sizeof(float));
        }
    }

    /* The sequential reference: the whole matmul, then the host allreduce. */
    shmem_barrier_all();
    double t0 = op_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a_mat, k, b_mat, n, 0.0f,
                seq_part, n);
    if (shmem_float_sum_reduce(SHMEM_TEAM_WORLD, seq_sum, seq_part, mn) != 0) {
        shmem_global_exit(1);
    }
    double sequential = op_now() - t0;

    /* Sums of npes * K products of values in [-1, 1], added in another order. */
    double tol = 1e-5 * (double)k * (double)npes + 1e-6;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < mn; i++) {
        if (!(fabs((double)out[i] - (double)seq_sum[i]) <= tol)) {
            if (bad++ == 0) first = i;
        }
    }
    int status = 0;
    if (bad != 0) {
        printf(
            "matmul_allreduce_op: PE %d: FAILED, %zu of %zu values differ from the sequential "
            "result by more than %g, first at %zu: %g, expected %g\n",
            me, bad, mn, tol, first, (double)out[first], (double)seq_sum[first]);
        status = 1;
    } else {
        printf(
            "matmul_allreduce_op: PE %d: M=%d K=%d N=%d on %d PEs, %d blocks: matches the "
            "sequential result within %g\n",
            me, m, k, n, npes, blocks, tol);
    }
    if (data != NULL && op_file_io(PROG, data, "output", me, out, mn * sizeof(float), 1) != 0)
        status = 1;
    if (me == 0) {
        printf("matmul_allreduce_op: fused %.3f ms (best of %d), sequential %.3f ms\n", fused * 1e3,
               iters, sequential * 1e3);
    }
    shmem_barrier_all();
    shmem_free(seq_sum);
    shmem_free(seq_part);
    shmem_free(reduced);
    shmem_free(arrived);
    shmem_free(c_tiles);
    shmem_free(stage);
    free(out);
    free(scratch);
    free(b_mat);
    free(a_mat);
    shmem_finalize();
    return status;
}
