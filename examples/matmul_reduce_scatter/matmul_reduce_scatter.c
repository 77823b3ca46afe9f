/*
 * matmul_reduce_scatter.c: C = sum over PEs of (A_pe x B_pe), scattered by rows, in one kernel.
 *
 * Every PE holds its own A (M x K) and B (K x N), row-major; afterwards PE p holds rows
 * [p * M / npes, (p + 1) * M / npes) of C = sum_pe A_pe x B_pe. Each PE's row slice is cut into
 * TM x TN tiles, and the tiles of all the slices are numbered with the owners interleaved (row
 * tile 0 of every owner, then row tile 1, ...). Block b of every PE takes tiles b, b + blocks,
 * ...: it computes each with cblas_sgemm and at once sends it to the tile's owner with a
 * put-with-signal, then goes on with the next tile while the data travels; between tiles it
 * sums (cblas_saxpy) the tiles this PE owns whose contributions have all arrived into the
 * output, so communication overlaps computation.
 *
 *   matmul_reduce_scatter_op [--m M] [--k K] [--n N] [--tile-m TM] [--tile-n TN] [--blocks B]
 *                            [--iters I] [--data DIR]
 *
 * With --data, PE r reads DIR/a_pe<r>.bin and DIR/b_pe<r>.bin (float32) and writes
 * DIR/output_pe<r>.bin (its rows of C, float32) for verify_result.py. Either way every PE
 * also compares its rows with the sequential result (cblas_sgemm, then the host
 * shmem_float_sum_reduce) within a float tolerance, and PE 0 prints both times.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <cblas.h>
#include <errno.h>
#include <limits.h>
#include <shmem.h>
#include <shmem/device.h>
#include <shmem/launch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "op_util.h"

#define PROG "matmul_reduce_scatter_op"

/* One output tile: rows [r0, r0 + rows) and columns [c0, c0 + cols) of C. */
struct rs_tile {
    int r0, rows, c0, cols;
    int owner; /* the PE whose slice holds the rows */
    int local; /* its index among the owner's tiles: the owner's stage slot */
};

struct rs_args {
    const float *a, *b;         /* local: M x K and K x N */
    const struct rs_tile *tile; /* the tiles, the same on every PE */
    float *stage;               /* symmetric: the owner's slots, one per (owned tile, source PE) */
    float *out;                 /* local: this PE's rows of C */
    float *scratch;             /* local: one tile per block */
    int32_t *arrived;           /* symmetric: per tile, contributions received by its owner */
    int k, n, tm, tn, tiles, row_lo;
    int32_t round; /* 1 for the first launch, then 2, ...: the signals never need a reset */
};

static size_t tile_elems(const struct rs_args *a) { return (size_t)a->tm * (size_t)a->tn; }

/* The stage slot of tile t's contribution from PE src, on t's owner. */
static float *stage_slot(const struct rs_args *a, int t, int npes, int src) {
    return a->stage + ((size_t)a->tile[t].local * (size_t)npes + (size_t)src) * tile_elems(a);
}

/* out = A[tile rows, :] x B[:, tile cols], a compact rows x cols tile. */
static void compute_tile(const struct rs_args *a, int t, float *out) {
    const struct rs_tile *tl = &a->tile[t];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tl->rows, tl->cols, a->k, 1.0f,
                a->a + (size_t)tl->r0 * (size_t)a->k, a->k, a->b + tl->c0, a->n, 0.0f, out,
                tl->cols);
}

/* Sums the contributions of owned tile t (all arrived) and places the sum in this PE's rows. */
static void reduce_tile(const struct rs_args *a, int t, int me, int npes) {
    const struct rs_tile *tl = &a->tile[t];
    float *sum = stage_slot(a, t, npes, me);
    for (int src = 0; src < npes; src++) {
        if (src != me) {
            cblas_saxpy(tl->rows * tl->cols, 1.0f, stage_slot(a, t, npes, src), 1, sum, 1);
        }
    }
    for (int r = 0; r < tl->rows; r++) {
        memcpy(a->out + (size_t)(tl->r0 - a->row_lo + r) * (size_t)a->n + tl->c0,
               sum + (size_t)r * (size_t)tl->cols, (size_t)tl->cols * sizeof(float));
    }
}

/* The first tile from t on, in steps of nb, that this PE owns (a->tiles when none). */
static int next_owned(const struct rs_args *a, int t, int nb, int me) {
    while (t < a->tiles && a->tile[t].owner != me) t += nb;
    return t < a->tiles ? t : a->tiles;
}

static void matmul_reduce_scatter_kernel(void *p) {
    const struct rs_args *a = p;
    int me = aclshmem_my_pe(), npes = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    int32_t want = a->round * (npes - 1);
    float *scratch = a->scratch + (size_t)b * tile_elems(a);
    int next = next_owned(a, b, nb, me); /* the next owned tile of this block still to sum */
    for (int t = b; t < a->tiles; t += nb) {
        int owner = a->tile[t].owner;
        if (owner == me) {
            compute_tile(a, t, stage_slot(a, t, npes, me));
        } else {
            compute_tile(a, t, scratch);
            aclshmem_putmem_signal(stage_slot(a, t, npes, me), scratch,
                                   tile_elems(a) * sizeof(float), &a->arrived[t], 1,
                                   ACLSHMEM_SIGNAL_ADD, owner);
        }
        /* Sum the owned tiles, computed here already, whose contributions are all in. */
        while (next <= t && aclshmem_int32_test(&a->arrived[next], ACLSHMEM_CMP_GE, want)) {
            reduce_tile(a, next, me, npes);
            next = next_owned(a, next + nb, nb, me);
        }
    }
    for (; next < a->tiles; next = next_owned(a, next + nb, nb, me)) {
        aclshmem_signal_wait_until(&a->arrived[next], ACLSHMEM_CMP_GE, want);
        reduce_tile(a, next, me, npes);
    }
}

static int slice_lo(int m, int npes, int pe) { return (int)((long)m * pe / npes); }

/* Numbers the tiles of every PE's row slice, owners interleaved; returns the tile count and
 * sets *max_owned to the most tiles one PE owns. */
static int make_tiles(struct rs_tile *out, int m, int n, int tm, int tn, int npes, int *max_owned) {
    int tiles_n = (n + tn - 1) / tn, t = 0, max_rt = 0;
    for (int p = 0; p < npes; p++) {
        int rows = slice_lo(m, npes, p + 1) - slice_lo(m, npes, p), rt = (rows + tm - 1) / tm;
        max_rt = rt > max_rt ? rt : max_rt;
    }
    *max_owned = 0;
    for (int p = 0; p < npes; p++) {
        int lo = slice_lo(m, npes, p), hi = slice_lo(m, npes, p + 1), owned = 0;
        for (int g = 0; g < max_rt; g++) {
            for (int j = 0; j < tiles_n && lo + g * tm < hi; j++) owned++;
        }
        *max_owned = owned > *max_owned ? owned : *max_owned;
    }
    int *owned = calloc((size_t)npes, sizeof(int));
    if (owned == NULL) return -1;
    for (int g = 0; g < max_rt; g++) {
        for (int p = 0; p < npes; p++) {
            int lo = slice_lo(m, npes, p), hi = slice_lo(m, npes, p + 1), r0 = lo + g * tm;
            if (r0 >= hi) continue;
            for (int j = 0; j < tiles_n; j++) {
                int c0 = j * tn;
                if (out != NULL) {
                    out[t] = (struct rs_tile){r0, hi - r0 < tm ? hi - r0 : tm,
                                              c0, n - c0 < tn ? n - c0 : tn,
                                              p,  owned[p]};
                }
                owned[p]++;
                t++;
            }
        }
    }
    free(owned);
    return t;
}

int main(int argc, char **argv) {
    int m = 64, k = 32, n = 128, tm = 32, tn = 32, blocks = 4, iters = 1;
    const char *data = NULL;
    const struct op_option options[] = {
        OP_INT("--m", 1 << 16, &m),
        OP_INT("--k", 1 << 16, &k),
        OP_INT("--n", 1 << 16, &n),
        OP_INT("--tile-m", 4096, &tm),
        OP_INT("--tile-n", 4096, &tn),
        OP_INT("--blocks", SHMEMX_CPU_LAUNCH_MAX_BLOCKS, &blocks),
        OP_INT("--iters", 1 << 20, &iters),
        OP_TEXT("--data", &data),
    };
    if (op_parse_options(PROG, argc, argv, options, sizeof options / sizeof options[0]) != 0)
        return 2;
#ifdef OPENBLAS_VERSION
    /* The kernel's blocks are the parallelism; one BLAS thread each. */
    openblas_set_num_threads(1);
#endif

    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int max_owned = 0, tiles = make_tiles(NULL, m, n, tm, tn, npes, &max_owned);
    int row_lo = slice_lo(m, npes, me), my_rows = slice_lo(m, npes, me + 1) - row_lo;
    size_t te = (size_t)tm * (size_t)tn, mn = (size_t)m * (size_t)n;
    size_t my_elems = (size_t)my_rows * (size_t)n;
    struct rs_tile *tile = malloc((size_t)tiles * sizeof *tile);
    float *a_mat = malloc((size_t)m * (size_t)k * sizeof(float));
    float *b_mat = malloc((size_t)k * (size_t)n * sizeof(float));
    float *scratch = malloc((size_t)blocks * te * sizeof(float));
    float *out = malloc((my_elems + 1) * sizeof(float));
    float *stage = shmem_malloc(((size_t)max_owned * (size_t)npes + 1) * te * sizeof(float));
    int32_t *arrived = shmem_calloc((size_t)tiles, sizeof(int32_t));
    float *seq_part = shmem_malloc(mn * sizeof(float));
    float *seq_sum = shmem_malloc(mn * sizeof(float));
    if (tiles < 0 || !tile || !a_mat || !b_mat || !scratch || !out || !stage || !arrived ||
        !seq_part || !seq_sum || make_tiles(tile, m, n, tm, tn, npes, &max_owned) != tiles) {
        fprintf(stderr, "matmul_reduce_scatter_op: PE %d: out of memory for M=%d K=%d N=%d\n", me,
                m, k, n);
        shmem_global_exit(1);
    }
    if (data != NULL) {
        if (op_file_io(PROG, data, "a", me, a_mat, (size_t)m * (size_t)k * sizeof(float), 0) != 0 ||
            op_file_io(PROG, data, "b", me, b_mat, (size_t)k * (size_t)n * sizeof(float), 0) != 0) {
            shmem_global_exit(1);
        }
    } else {
        for (size_t i = 0; i < (size_t)m * (size_t)k; i++) a_mat[i] = op_input_value(me, 0, i);
        for (size_t i = 0; i < (size_t)k * (size_t)n; i++) b_mat[i] = op_input_value(me, 1, i);
    }
    shmem_barrier_all();

    struct rs_args args = {.a = a_mat,
                           .b = b_mat,
                           .tile = tile,
                           .stage = stage,
                           .out = out,
                           .scratch = scratch,
                           .arrived = arrived,
                           .k = k,
                           .n = n,
                           .tm = tm,
                           .tn = tn,
                           .tiles = tiles,
                           .row_lo = row_lo,
                           .round = 0};
    double fused = 1e30;
    for (int it = 0; it < iters; it++) {
        /* No PE sends the next round's tiles into a stage slot still being summed. */
        shmem_barrier_all();
        double t0 = op_now();
        args.round = it + 1;
        if (shmemx_cpu_launch(matmul_reduce_scatter_kernel, &args, blocks) != 0) {
            shmem_global_exit(1);
        }
        double dt = op_now() - t0;
        fused = dt < fused ? dt : fused;
    }

    /* The sequential reference: the whole matmul, then the host sum over PEs, timed as the fused
     * kernel is: best of --iters. */
    double sequential = 1e30;
    for (int it = 0; it < iters; it++) {
        shmem_barrier_all();
        double t0 = op_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a_mat, k, b_mat, n,
                    0.0f, seq_part, n);
        if (shmem_float_sum_reduce(SHMEM_TEAM_WORLD, seq_sum, seq_part, mn) != 0) {
            shmem_global_exit(1);
        }
        double dt = op_now() - t0;
        sequential = dt < sequential ? dt : sequential;
    }

    /* Sums of npes * K products of values in [-1, 1], added in another order. */
    double tol = 1e-5 * (double)k * (double)npes + 1e-6;
    const float *want = seq_sum + (size_t)row_lo * (size_t)n;
    int status = op_check_close(PROG, me, out, want, my_elems, tol, (size_t)n, (size_t)row_lo);
    if (status == 0) {
        printf(
            "matmul_reduce_scatter_op: PE %d: M=%d K=%d N=%d on %d PEs, %d blocks: rows "
            "%d..%d match the sequential result within %g\n",
            me, m, k, n, npes, blocks, row_lo, row_lo + my_rows, tol);
    }
    if (data != NULL &&
        op_file_io(PROG, data, "output", me, out, my_elems * sizeof(float), 1) != 0) {
        status = 1;
    }
    if (me == 0) {
        printf("matmul_reduce_scatter_op: fused %.3f ms, sequential %.3f ms (best of %d each)\n",
               fused * 1e3, sequential * 1e3, iters);
    }
    shmem_barrier_all();
    shmem_free(seq_sum);
    shmem_free(seq_part);
    shmem_free(arrived);
    shmem_free(stage);
    free(out);
    free(scratch);
    free(b_mat);
    free(a_mat);
    free(tile);
    shmem_finalize();
    return status;
}
