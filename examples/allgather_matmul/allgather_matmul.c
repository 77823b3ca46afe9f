/*
 * allgather_matmul.c: C = allgather(A) x B, fused in one kernel.
 *
 * A (M x K, row-major) is sharded by rows: PE p holds rows [p * M / npes, (p + 1) * M / npes)
 * (uneven slices when npes does not divide M; a slice may be empty). B (K x N) is each PE's own,
 * and afterwards every PE holds its C = A x B (M x N). Every PE's slice is cut into chunks of TM
 * rows, and the output into tiles of one chunk's rows by TN columns. Within one kernel the blocks
 * push this PE's chunks to every other PE, each with a put-with-signal (one signal per source
 * PE and chunk), and compute the output tiles with cblas_sgemm as soon as the chunk they need
 * has arrived: this PE's own rows first, then the other slices in the order their pushes reach
 * this PE. A block makes one push before each of its tiles (more while it waits for rows), so
 * communication overlaps computation.
 *
 *   allgather_matmul_op [--m M] [--k K] [--n N] [--tile-m TM] [--tile-n TN] [--blocks B]
 *                       [--iters I] [--data DIR]
 *
 * With --data, PE r reads DIR/a_pe<r>.bin (its rows of A) and DIR/b_pe<r>.bin (float32) and
 * writes DIR/output_pe<r>.bin (M x N float32) for verify_result.py. Either way every PE also
 * compares the fused result with the sequential one (the host shmem_collectmem of A, then one
 * cblas_sgemm) within a float tolerance, and PE 0 prints both times (best of --iters each).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <shmem.h>
#include <shmem/device.h>
#include <shmem/launch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_util.h"

#define PROG "allgather_matmul_op"

/* One chunk of A: rows [r0, r0 + rows) of the source PE's slice, announced by signal `sig`. */
struct ag_chunk {
    int src, r0, rows, sig;
};

struct ag_args {
    float *a;       /* symmetric M x K: this PE's rows are its input, the rest arrive */
    const float *b; /* local: K x N */
    float *c;       /* local: M x N */
    const struct ag_chunk *chunk; /* every chunk, in this PE's compute order (its own first) */
    int32_t *arrived;             /* symmetric: per chunk (by its sig), the round it landed in */
    int k, n, tn, tiles_n, chunks;
    int my_chunks; /* this PE's own: the first entries of `chunk` */
    int32_t round; /* 1 for the first launch, then 2, ...: the signals never need a reset */
};

/* Push task i of this PE: its chunk i % my_chunks to PE me + 1 + i / my_chunks. The whole
 * slice goes to the next PE first, then to the one after, ...: PE q computes its own rows, then
 * PE q - 1's (pushed to q first), then PE q - 2's (pushed to q second), so each slice is due
 * when its pushes have had a slice's compute time to land. */
static void push(const struct ag_args *a, int i, int me, int npes) {
    const struct ag_chunk *ch = &a->chunk[i % a->my_chunks];
    int pe = (me + 1 + i / a->my_chunks) % npes;
    float *rows = a->a + (size_t)ch->r0 * (size_t)a->k;
    aclshmem_putmem_signal(rows, rows, (size_t)ch->rows * (size_t)a->k * sizeof(float),
                           &a->arrived[ch->sig], a->round, ACLSHMEM_SIGNAL_SET, pe);
}

/* C[chunk rows, tile cols] = A[chunk rows, :] x B[:, tile cols]. */
static void compute_tile(const struct ag_args *a, int t) {
    const struct ag_chunk *ch = &a->chunk[t / a->tiles_n];
    int c0 = t % a->tiles_n * a->tn, cols = a->n - c0 < a->tn ? a->n - c0 : a->tn;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ch->rows, cols, a->k, 1.0f,
                a->a + (size_t)ch->r0 * (size_t)a->k, a->k, a->b + c0, a->n, 0.0f,
                a->c + (size_t)ch->r0 * (size_t)a->n + c0, a->n);
}

static int chunk_here(const struct ag_args *a, int t, int me) {
    const struct ag_chunk *ch = &a->chunk[t / a->tiles_n];
    return ch->src == me || aclshmem_int32_test(&a->arrived[ch->sig], ACLSHMEM_CMP_GE, a->round);
}

static void allgather_matmul_kernel(void *p) {
    const struct ag_args *a = p;
    int me = aclshmem_my_pe(), npes = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    int pushes = a->my_chunks * (npes - 1), next = b; /* this block's next push task */
    for (int t = b; t < a->chunks * a->tiles_n; t += nb) {
        if (next < pushes) {
            push(a, next, me, npes);
            next += nb;
        }
        /* Rows not here yet: push on meanwhile, then wait. Pushes never wait, so every push
         * is made and every wait ends. */
        while (!chunk_here(a, t, me)) {
            if (next < pushes) {
                push(a, next, me, npes);
                next += nb;
            } else {
                aclshmem_signal_wait_until(&a->arrived[a->chunk[t / a->tiles_n].sig],
                                           ACLSHMEM_CMP_GE, a->round);
            }
        }
        compute_tile(a, t);
    }
    for (; next < pushes; next += nb) push(a, next, me, npes);
}

static int slice_lo(int m, int npes, int pe) { return (int)((long)m * pe / npes); }

/* Every chunk, in PE me's compute order: its own slice, then PE me - 1's, me - 2's, ... (the
 * order their pushes reach me); a chunk's signal is its index in PE order, the same on every PE.
 * Returns the chunk count (out NULL: only counts). */
static int make_chunks(struct ag_chunk *out, int m, int tm, int npes, int me) {
    int count = 0;
    for (int s = 0; s < npes; s++) {
        int src = ((me - s) % npes + npes) % npes, sig = 0;
        for (int p = 0; p < src; p++) {
            sig += (slice_lo(m, npes, p + 1) - slice_lo(m, npes, p) + tm - 1) / tm;
        }
        int hi = slice_lo(m, npes, src + 1);
        for (int r0 = slice_lo(m, npes, src); r0 < hi; r0 += tm, count++, sig++) {
            if (out != NULL)
                out[count] = (struct ag_chunk){src, r0, hi - r0 < tm ? hi - r0 : tm, sig};
        }
    }
    return count;
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
    int chunks = make_chunks(NULL, m, tm, npes, me), tiles_n = (n + tn - 1) / tn;
    /* Tile numbers, and a block's next one, stay ints. */
    long long max_tiles = INT_MAX - SHMEMX_CPU_LAUNCH_MAX_BLOCKS;
    if ((long long)chunks * tiles_n > max_tiles) {
        if (me == 0) {
            fprintf(stderr,
                    PROG
                    ": invalid arguments --tile-m=%d --tile-n=%d: %lld tiles, more than %lld\n",
                    tm, tn, (long long)chunks * tiles_n, max_tiles);
        }
        shmem_global_exit(2);
    }
    int row_lo = slice_lo(m, npes, me), my_rows = slice_lo(m, npes, me + 1) - row_lo;
    int max_rows = 0;
    for (int p = 0; p < npes; p++) {
        int rows = slice_lo(m, npes, p + 1) - slice_lo(m, npes, p);
        max_rows = rows > max_rows ? rows : max_rows;
    }
    size_t mk = (size_t)m * (size_t)k, mn = (size_t)m * (size_t)n;
    size_t my_elems = (size_t)my_rows * (size_t)k;
    struct ag_chunk *chunk = malloc((size_t)chunks * sizeof *chunk);
    float *b_mat = malloc((size_t)k * (size_t)n * sizeof(float));
    float *out = malloc(mn * sizeof(float));
    float *seq_c = malloc(mn * sizeof(float));
    float *a_all = shmem_malloc(mk * sizeof(float));
    int32_t *arrived = shmem_calloc((size_t)chunks, sizeof(int32_t));
    float *seq_src = shmem_malloc(((size_t)max_rows * (size_t)k + 1) * sizeof(float));
    float *seq_a = shmem_malloc(mk * sizeof(float));
    if (!chunk || !b_mat || !out || !seq_c || !a_all || !arrived || !seq_src || !seq_a ||
        make_chunks(chunk, m, tm, npes, me) != chunks) {
        fprintf(stderr, PROG ": PE %d: out of memory for M=%d K=%d N=%d\n", me, m, k, n);
        shmem_global_exit(1);
    }
    float *mine = a_all + (size_t)row_lo * (size_t)k;
    if (data != NULL) {
        if (op_file_io(PROG, data, "a", me, mine, my_elems * sizeof(float), 0) != 0 ||
            op_file_io(PROG, data, "b", me, b_mat, (size_t)k * (size_t)n * sizeof(float), 0) != 0) {
            shmem_global_exit(1);
        }
    } else {
        for (size_t i = 0; i < my_elems; i++) mine[i] = op_input_value(me, 0, i);
        for (size_t i = 0; i < (size_t)k * (size_t)n; i++) b_mat[i] = op_input_value(me, 1, i);
    }
    memcpy(seq_src, mine, my_elems * sizeof(float));

    int my_chunks = 0;
    while (my_chunks < chunks && chunk[my_chunks].src == me) my_chunks++;
    struct ag_args args = {.a = a_all,
                           .b = b_mat,
                           .c = out,
                           .chunk = chunk,
                           .arrived = arrived,
                           .k = k,
                           .n = n,
                           .tn = tn,
                           .tiles_n = tiles_n,
                           .chunks = chunks,
                           .my_chunks = my_chunks,
                           .round = 0};
    double fused = 1e30;
    for (int it = 0; it < iters; it++) {
        /* Every PE is done with the last launch: nobody still reads the rows poisoned here. */
        shmem_barrier_all();
        /* The other PEs' rows become NaN, so a tile computed before its rows arrived fails the
         * check below instead of reusing the last launch's rows. */
        for (int r = 0; r < m; r++) {
            if (r >= row_lo && r < row_lo + my_rows) continue;
            for (int j = 0; j < k; j++) a_all[(size_t)r * (size_t)k + (size_t)j] = NAN;
        }
        /* Nobody pushes rows before every PE has poisoned its copy. */
        shmem_barrier_all();
        double t0 = op_now();
        args.round = it + 1;
        if (shmemx_cpu_launch(allgather_matmul_kernel, &args, blocks) != 0) shmem_global_exit(1);
        double dt = op_now() - t0;
        fused = dt < fused ? dt : fused;
    }

    /* The sequential reference: the host collect of A, then the whole matmul. */
    double sequential = 1e30;
    for (int it = 0; it < iters; it++) {
        shmem_barrier_all();
        double t0 = op_now();
        if (shmem_collectmem(SHMEM_TEAM_WORLD, seq_a, seq_src, my_elems * sizeof(float)) != 0) {
            shmem_global_exit(1);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, seq_a, k, b_mat, n,
                    0.0f, seq_c, n);
        double dt = op_now() - t0;
        sequential = dt < sequential ? dt : sequential;
    }

    /* Sums of K products of values in [-1, 1], added in another order. */
    double tol = 1e-5 * (double)k + 1e-6;
    int status = op_check_close(PROG, me, out, seq_c, mn, tol, (size_t)n, 0);
    if (status == 0) {
        printf(PROG
               ": PE %d: M=%d K=%d N=%d on %d PEs (rows %d..%d here), %d blocks: matches "
               "the sequential result within %g\n",
               me, m, k, n, npes, row_lo, row_lo + my_rows, blocks, tol);
    }
    if (data != NULL && op_file_io(PROG, data, "output", me, out, mn * sizeof(float), 1) != 0) {
        status = 1;
    }
    if (me == 0) {
        printf(PROG ": fused %.3f ms, sequential %.3f ms (best of %d each)\n", fused * 1e3,
               sequential * 1e3, iters);
    }
    shmem_barrier_all();
    shmem_free(seq_a);
    shmem_free(seq_src);
    shmem_free(arrived);
    shmem_free(a_all);
    free(seq_c);
    free(out);
    free(b_mat);
    free(chunk);
    shmem_finalize();
    return status;
}
