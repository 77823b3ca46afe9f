/*
 * matmul_allreduce.c: C = sum over PEs of (A_pe x B_pe), fused in one kernel
 * (matmul_allreduce_kernel.h: tiles computed with cblas_sgemm, each sent to the PE that reduces
 * it with a put-with-signal while the next one is computed, the sums sent to every PE).
 *
 *   matmul_allreduce_op [--m M] [--k K] [--n N] [--tile-m TM] [--tile-n TN] [--blocks B]
 *                       [--iters I] [--data DIR] [--puts-only]
 *
 * Defaults: M=64 K=32 N=128, the kernel's tile (1024 x 1024, cut to the matrix), one block per
 * CPU of the PE's share of the machine (online CPUs / PEs, at least 1; each block runs one BLAS
 * thread). With --data, PE r reads DIR/a_pe<r>.bin and DIR/b_pe<r>.bin (float32) and writes
 * DIR/output_pe<r>.bin (M x N float32) for verify_result.py. Either way every PE also
 * compares the fused result with the sequential one (cblas_sgemm, then the host
 * shmem_float_sum_reduce) within a float tolerance, and PE 0 prints both times.
 * --puts-only moves every tile with puts, never through aclshmem_ptr: the path the kernel takes
 * where another PE's memory is not mapped into this one.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <cblas.h>
#include <limits.h>
#include <shmem.h>
#include <shmem/device.h>
#include <shmem/launch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "matmul_allreduce_kernel.h"
#include "op_util.h"

#define PROG "matmul_allreduce_op"

int main(int argc, char **argv) {
    int m = 64, k = 32, n = 128, tm = MM_DEFAULT_TILE_M, tn = MM_DEFAULT_TILE_N, blocks = 0;
    int iters = 1, puts_only = 0;
    const char *data = NULL;
    const struct op_option options[] = {
        OP_INT("--m", 1 << 16, &m),
        OP_INT("--k", 1 << 16, &k),
        OP_INT("--n", 1 << 16, &n),
        OP_INT("--tile-m", 1 << 16, &tm),
        OP_INT("--tile-n", 1 << 16, &tn),
        OP_INT("--blocks", SHMEMX_CPU_LAUNCH_MAX_BLOCKS, &blocks),
        OP_INT("--iters", 1 << 20, &iters),
        OP_TEXT("--data", &data),
        OP_FLAG("--puts-only", &puts_only),
    };
    if (op_parse_options(PROG, argc, argv, options, sizeof options / sizeof options[0]) != 0)
        return 2;
#ifdef OPENBLAS_VERSION
    /* The kernel's blocks are the parallelism; one BLAS thread each. */
    openblas_set_num_threads(1);
#endif

    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    if (blocks == 0) blocks = op_cpus_per_pe(npes);
    size_t mn = (size_t)m * (size_t)n;
    float *a_mat = malloc((size_t)m * (size_t)k * sizeof(float));
    float *b_mat = malloc((size_t)k * (size_t)n * sizeof(float));
    float *seq_part = shmem_malloc(mn * sizeof(float));
    float *seq_sum = shmem_malloc(mn * sizeof(float));
    struct mm_args op;
    if (mm_setup(&op, PROG, a_mat, b_mat, m, k, n, tm, tn, blocks) != 0) shmem_global_exit(1);
    op.puts_only = puts_only;
    if (!a_mat || !b_mat || !seq_part || !seq_sum) {
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
        for (size_t i = 0; i < (size_t)m * (size_t)k; i++) a_mat[i] = op_input_value(me, 0, i);
        for (size_t i = 0; i < (size_t)k * (size_t)n; i++) b_mat[i] = op_input_value(me, 1, i);
    }

    double fused = 1e30;
    for (int it = 0; it < iters; it++) {
        shmem_barrier_all();
        double t0 = op_now();
        if (mm_run(&op) != 0) shmem_global_exit(1);
        double dt = op_now() - t0;
        fused = dt < fused ? dt : fused;
    }
    const float *out = op.c;

    /* The sequential reference: the whole matmul, then the host allreduce, timed as the fused
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
    int status = op_check_close(PROG, me, out, seq_sum, mn, tol, (size_t)n, 0);
    if (status == 0) {
        printf(
            "matmul_allreduce_op: PE %d: M=%d K=%d N=%d on %d PEs, %d blocks: matches the "
            "sequential result within %g\n",
            me, m, k, n, npes, blocks, tol);
    }
    if (data != NULL &&
        op_file_io(PROG, data, "output", me, (void *)out, mn * sizeof(float), 1) != 0)
        status = 1;
    if (me == 0) {
        printf("matmul_allreduce_op: fused %.3f ms, sequential %.3f ms (best of %d each)\n",
               fused * 1e3, sequential * 1e3, iters);
    }
    shmem_barrier_all();
    mm_teardown(&op);
    shmem_free(seq_sum);
    shmem_free(seq_part);
    free(b_mat);
    free(a_mat);
    shmem_finalize();
    return status;
}
