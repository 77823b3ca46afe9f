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
 * DIR/output_pe<r>.bin (M x N float32) for utils/verify_result.py. Either way every PE also
 * compares the fused result with the sequential one (cblas_sgemm, then the host
 * shmem_float_sum_reduce) within a float tolerance, and PE 0 prints both times.
 * --puts-only moves every tile with puts, never through aclshmem_ptr: the path the kernel takes
 * where another PE's memory is not mapped into this one.
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

#include "matmul_allreduce_kernel.h"
#include "op_util.h"

#define PROG "matmul_allreduce_op"

/* A deterministic input value in [-1, 1), different per PE, matrix and index. */
static float input_value(int pe, int which, size_t i) {
    uint64_t x = ((uint64_t)pe * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)which << 56) ^ (i + 1);
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    return (float)(x % 2048) / 1024.0f - 1.0f;
}

int main(int argc, char **argv) {
    int m = 64, k = 32, n = 128, tm = MM_DEFAULT_TILE_M, tn = MM_DEFAULT_TILE_N, blocks = 0;
    int iters = 1, puts_only = 0;
    const char *data = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (strcmp(argv[i], "--puts-only") == 0) {
            puts_only = 1;
            continue;
        } else if (v == NULL) {
            fprintf(stderr, "matmul_allreduce_op: %s needs a value\n", argv[i]);
            return 2;
        } else if (strcmp(argv[i], "--m") == 0) {
            rc = op_parse_int(PROG, "--m", v, 1 << 16, &m);
        } else if (strcmp(argv[i], "--k") == 0) {
            rc = op_parse_int(PROG, "--k", v, 1 << 16, &k);
        } else if (strcmp(argv[i], "--n") == 0) {
            rc = op_parse_int(PROG, "--n", v, 1 << 16, &n);
        } else if (strcmp(argv[i], "--tile-m") == 0) {
            rc = op_parse_int(PROG, "--tile-m", v, 1 << 16, &tm);
        } else if (strcmp(argv[i], "--tile-n") == 0) {
            rc = op_parse_int(PROG, "--tile-n", v, 1 << 16, &tn);
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
        for (size_t i = 0; i < (size_t)m * (size_t)k; i++) a_mat[i] = input_value(me, 0, i);
        for (size_t i = 0; i < (size_t)k * (size_t)n; i++) b_mat[i] = input_value(me, 1, i);
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
    if (data != NULL &&
        op_file_io(PROG, data, "output", me, (void *)out, mn * sizeof(float), 1) != 0)
        status = 1;
    if (me == 0) {
        printf("matmul_allreduce_op: fused %.3f ms (best of %d), sequential %.3f ms\n", fused * 1e3,
               iters, sequential * 1e3);
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
