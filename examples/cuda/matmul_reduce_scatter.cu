/*
 * matmul_reduce_scatter.cu: C = sum over PEs of (A_pe x B_pe), scattered by rows, in one CUDA
 * kernel: the operator of examples/matmul_reduce_scatter as a program for NVIDIA GPUs, the
 * symmetric heap in GPU memory.
 *
 * Built by examples/cuda/CMakeLists.txt (nvcc, against an installed shmem); run as
 *
 *   SHMEM_DEVICE=cuda shmemrun -n 2 ./matmul_reduce_scatter_cuda [--m M] [--k K] [--n N]
 *       [--tile-m TM] [--tile-n TN] [--blocks B] [--iters I] [--timeout S]
 *
 * Defaults: M=64 K=32 N=128, 32 x 32 tiles (the C example's), as many blocks as the
 * cooperative-launch rule allows and there are tiles, 1 launch, a 60 s bound on each. Every PE
 * prints "matmul_reduce_scatter_cuda: PE <r>: M=.. K=.. N=.. on <n> PEs, <b> blocks, rows a..b:
 * matches the host reference within <tol>" when its rows are right (else a FAILED line naming
 * the first wrong value, and the exit status is 1); PE 0 then prints the kernel's best time.
 *
 * The algorithm is the C kernel's. Every PE holds its own A (M x K) and B (K x N) in GPU memory,
 * row-major; afterwards PE p holds rows [p * M / npes, (p + 1) * M / npes) of C in GPU memory.
 * Each PE's row slice is cut into TM x TN tiles, and the tiles of all the slices are numbered
 * with the owners interleaved (row tile 0 of every owner, then row tile 1, ...). Block b of
 * every PE takes tiles b, b + B, ...: it computes each with its tile GEMM (an owned tile
 * straight into its own stage slot) and at once sends another PE's to that owner's stage with
 * a block-wide put-with-signal, then goes on with the next tile while the data travels; between
 * tiles it sums the tiles this PE owns whose contributions have all arrived (thread 0 tests the
 * signal, the block follows) into the output, so communication overlaps computation. What is
 * left is summed at the end, each after a wait. The signals count the launch's contributions
 * (round x (npes - 1)) and are never reset; a host barrier separates launches, which reuse the
 * stage slots.
 *
 * The inputs are the C example's (op_input_value of the PE, the matrix and the index); every
 * PE computes the whole reference on the host (every PE's A x B in double, plain loops) and
 * compares its rows within the C example's tolerance, 1e-5 * K * npes + 1e-6.
 *
 * Launch rule: a block waits for contributions that other PEs' blocks send, so every block of
 * every PE sharing the GPU must be resident at once (the cooperative-launch rule of
 * shmem/arch/cuda.h): the block count is capped by cudaOccupancyMaxActiveBlocksPerMultiprocessor
 * x SMs / PEs per GPU (common.cuh), and --blocks above it is refused. Several PEs on one GPU run
 * at once under CUDA MPS. ctest cuda.compile compiles this file with nvcc for sm_90; it has not
 * run on a GPU.
 */
#include "common.cuh"

#define PROG "matmul_reduce_scatter_cuda"

/* One output tile: rows [r0, r0 + rows) and columns [c0, c0 + cols) of C. */
struct rs_tile {
    int r0, rows, c0, cols;
    int owner; /* the PE whose slice holds the rows */
    int local; /* its index among the owner's tiles: the owner's stage slot */
};

/* The kernel's arguments, passed by value. */
struct rs_args {
    const float *a, *b;         /* GPU memory: M x K and K x N */
    const struct rs_tile *tile; /* GPU memory: the tiles, the same on every PE */
    float *stage;               /* symmetric: the owner's slots, one per (owned tile, source PE) */
    float *out;                 /* GPU memory: this PE's rows of C */
    float *scratch;             /* GPU memory: one tile per block */
    int32_t *arrived;           /* symmetric: per tile, contributions received by its owner */
    int k, n, tm, tn, tiles, row_lo;
    int32_t round; /* 1 for the first launch, then 2, ...: the signals never need a reset */
};

static __device__ inline size_t rs_tile_elems(const rs_args &a) {
    return (size_t)a.tm * (size_t)a.tn;
}

/* The stage slot of tile t's contribution from PE src, on t's owner. */
static __device__ inline float *rs_stage_slot(const rs_args &a, int t, int npes, int src) {
    return a.stage + ((size_t)a.tile[t].local * (size_t)npes + (size_t)src) * rs_tile_elems(a);
}

/* out = A[tile rows, :] x B[:, tile cols], a compact rows x cols tile, by the block. */
static __device__ void rs_compute_tile(const rs_args &a, int t, float *out) {
    const rs_tile tl = a.tile[t];
    op_block_gemm(tl.rows, tl.cols, a.k, a.a + (size_t)tl.r0 * (size_t)a.k, (size_t)a.k,
                  a.b + tl.c0, (size_t)a.n, out, (size_t)tl.cols, 0.0f);
}

/* Sums the contributions of owned tile t (all arrived) into this PE's rows, by the block: each
 * thread sums its elements over the source PEs and stores the sum. */
static __device__ void rs_reduce_tile(const rs_args &a, int t, int me, int npes) {
    const rs_tile tl = a.tile[t];
    const size_t elems = (size_t)tl.rows * (size_t)tl.cols;
    const float *mine = rs_stage_slot(a, t, npes, me);
    for (size_t i = threadIdx.x; i < elems; i += OP_THREADS) {
        float sum = mine[i];
        for (int src = 0; src < npes; src++) {
            if (src != me) sum += rs_stage_slot(a, t, npes, src)[i];
        }
        const size_t r = i / (size_t)tl.cols, col = i % (size_t)tl.cols;
        a.out[(size_t)(tl.r0 - a.row_lo + (int)r) * (size_t)a.n + (size_t)tl.c0 + col] = sum;
    }
}

/* The first tile from t on, in steps of nb, that this PE owns (a.tiles when none). */
static __device__ int rs_next_owned(const rs_args &a, int t, int nb, int me) {
    while (t < a.tiles && a.tile[t].owner != me) t += nb;
    return t < a.tiles ? t : a.tiles;
}

__global__ void __launch_bounds__(OP_THREADS)
    matmul_reduce_scatter_cuda(const void *job, rs_args a) {
    shmemx_cuda_set_job(job);
    int me = aclshmem_my_pe(), npes = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    int32_t want = a.round * (npes - 1);
    float *scratch = a.scratch + (size_t)b * rs_tile_elems(a);
    int next = rs_next_owned(a, b, nb, me); /* the next owned tile of this block still to sum */
    for (int t = b; t < a.tiles; t += nb) {
        const rs_tile tl = a.tile[t];
        if (tl.owner == me) {
            rs_compute_tile(a, t, rs_stage_slot(a, t, npes, me));
        } else {
            rs_compute_tile(a, t, scratch);
            aclshmemx_putmem_signal_block(rs_stage_slot(a, t, npes, me), scratch,
                                          (size_t)tl.rows * (size_t)tl.cols * sizeof(float),
                                          &a.arrived[t], 1, ACLSHMEM_SIGNAL_ADD, tl.owner);
        }
        /* Sum the owned tiles, computed here already, whose contributions are all in. */
        while (next <= t &&
               op_block_broadcast(threadIdx.x == 0 &&
                                  aclshmem_int32_test(&a.arrived[next], ACLSHMEM_CMP_GE, want))) {
            rs_reduce_tile(a, next, me, npes);
            next = rs_next_owned(a, next + nb, nb, me);
        }
    }
    for (; next < a.tiles; next = rs_next_owned(a, next + nb, nb, me)) {
        op_block_wait_ge(&a.arrived[next], want);
        rs_reduce_tile(a, next, me, npes);
    }
}

static int slice_lo(int m, int npes, int pe) { return (int)((long)m * pe / npes); }

/* Numbers the tiles of every PE's row slice, owners interleaved; returns the tile count (out
 * NULL: only counts), or -1 when memory runs out, and sets *max_owned to the most tiles one PE
 * owns. */
static int make_tiles(rs_tile *out, int m, int n, int tm, int tn, int npes, int *max_owned) {
    int tiles_n = (n + tn - 1) / tn, t = 0, max_rt = 0;
    for (int p = 0; p < npes; p++) {
        int rows = slice_lo(m, npes, p + 1) - slice_lo(m, npes, p), rt = (rows + tm - 1) / tm;
        max_rt = rt > max_rt ? rt : max_rt;
    }
    int *owned = (int *)calloc((size_t)npes, sizeof(int));
    if (owned == NULL) return -1;
    for (int g = 0; g < max_rt; g++) {
        for (int p = 0; p < npes; p++) {
            int lo = slice_lo(m, npes, p), hi = slice_lo(m, npes, p + 1), r0 = lo + g * tm;
            if (r0 >= hi) continue;
            for (int j = 0; j < tiles_n; j++) {
                int c0 = j * tn;
                if (out != NULL) {
                    out[t] = rs_tile{r0, hi - r0 < tm ? hi - r0 : tm,
                                     c0, n - c0 < tn ? n - c0 : tn,
                                     p,  owned[p]};
                }
                owned[p]++;
                t++;
            }
        }
    }
    *max_owned = 0;
    for (int p = 0; p < npes; p++) *max_owned = owned[p] > *max_owned ? owned[p] : *max_owned;
    free(owned);
    return t;
}

int main(int argc, char **argv) {
    int m = 64, k = 32, n = 128, tm = 32, tn = 32, blocks = 0, iters = 1, timeout_s = 60;
    const struct op_option options[] = {
        OP_INT("--m", 1 << 16, &m),         OP_INT("--k", 1 << 16, &k),
        OP_INT("--n", 1 << 16, &n),         OP_INT("--tile-m", 4096, &tm),
        OP_INT("--tile-n", 4096, &tn),      OP_INT("--blocks", 1 << 20, &blocks),
        OP_INT("--iters", 1 << 20, &iters), OP_INT("--timeout", 86400, &timeout_s),
    };
    if (op_parse_options(PROG, argc, argv, options, sizeof options / sizeof options[0]) != 0)
        return 2;

    op_gpu g;
    op_cuda_start(&g, PROG, timeout_s);
    const int me = g.me, npes = g.npes;
    int max_owned = 0;
    long long tile_count = (long long)npes * ((m / npes + 1 + tm - 1) / tm) * ((n + tn - 1) / tn);
    if (tile_count > (1LL << 30)) {
        if (me == 0) {
            fprintf(stderr, PROG ": invalid arguments --tile-m=%d --tile-n=%d: about %lld tiles\n",
                    tm, tn, tile_count);
        }
        shmem_global_exit(2);
    }
    int tiles = make_tiles(NULL, m, n, tm, tn, npes, &max_owned);
    int row_lo = slice_lo(m, npes, me), my_rows = slice_lo(m, npes, me + 1) - row_lo;
    size_t te = (size_t)tm * (size_t)tn, mk = (size_t)m * k, kn = (size_t)k * n, mn = (size_t)m * n,
           my_elems = (size_t)my_rows * (size_t)n;
    rs_tile *tile = tiles > 0 ? (rs_tile *)malloc((size_t)tiles * sizeof(rs_tile)) : NULL;
    float *a_host = (float *)malloc(mk * sizeof(float));
    float *b_host = (float *)malloc(kn * sizeof(float));
    float *out = (float *)malloc((my_elems + 1) * sizeof(float));
    float *want = (float *)malloc((my_elems + 1) * sizeof(float));
    double *ref = (double *)calloc(mn, sizeof(double));
    if (tiles < 0 || !tile || !a_host || !b_host || !out || !want || !ref ||
        make_tiles(tile, m, n, tm, tn, npes, &max_owned) != tiles) {
        fprintf(stderr, PROG ": PE %d: out of host memory for M=%d K=%d N=%d\n", me, m, k, n);
        shmem_global_exit(1);
    }
    const int nb =
        op_cuda_blocks(&g, blocks, op_cuda_fit(&g, matmul_reduce_scatter_cuda, 0), tiles);

    float *a_gpu = (float *)op_gpu_alloc(mk * sizeof(float));
    float *b_gpu = (float *)op_gpu_alloc(kn * sizeof(float));
    float *out_gpu = (float *)op_gpu_alloc((my_elems + 1) * sizeof(float));
    float *scratch = (float *)op_gpu_alloc((size_t)nb * te * sizeof(float));
    rs_tile *tile_gpu = (rs_tile *)op_gpu_alloc((size_t)tiles * sizeof(rs_tile));
    float *stage =
        (float *)op_sym_alloc(((size_t)max_owned * (size_t)npes + 1) * te * sizeof(float));
    int32_t *arrived = (int32_t *)op_sym_alloc((size_t)tiles * sizeof(int32_t));
    op_fill_gpu(&g, arrived, 0, (size_t)tiles * sizeof(int32_t));
    op_to_gpu(&g, tile_gpu, tile, (size_t)tiles * sizeof(rs_tile));

    /* The reference: every PE's inputs are known here (op_input_value), so every PE sums all
     * the products itself; its own inputs go to the GPU. */
    for (int pe = 0; pe < npes; pe++) {
        for (size_t i = 0; i < mk; i++) a_host[i] = op_input_value(pe, 0, i);
        for (size_t i = 0; i < kn; i++) b_host[i] = op_input_value(pe, 1, i);
        op_host_matmul_add(ref, (size_t)n, a_host, (size_t)k, b_host, (size_t)n, m, k, n);
        if (pe == me) {
            op_to_gpu(&g, a_gpu, a_host, mk * sizeof(float));
            op_to_gpu(&g, b_gpu, b_host, kn * sizeof(float));
        }
    }
    for (size_t i = 0; i < my_elems; i++) want[i] = (float)ref[(size_t)row_lo * n + i];

    rs_args args;
    args.a = a_gpu;
    args.b = b_gpu;
    args.tile = tile_gpu;
    args.stage = stage;
    args.out = out_gpu;
    args.scratch = scratch;
    args.arrived = arrived;
    args.k = k;
    args.n = n;
    args.tm = tm;
    args.tn = tn;
    args.tiles = tiles;
    args.row_lo = row_lo;
    args.round = 0;
    double best = 1e30;
    for (int it = 0; it < iters; it++) {
        /* No PE sends the next round's tiles into a stage slot still being summed. */
        shmem_barrier_all();
        args.round = it + 1;
        op_launch_begin(&g);
        matmul_reduce_scatter_cuda<<<nb, OP_THREADS, 0, g.stream>>>(g.job, args);
        double ms = op_launch_end(&g);
        best = ms < best ? ms : best;
    }
    op_from_gpu(&g, out, out_gpu, my_elems * sizeof(float));

    /* Sums of npes * K products of values in [-1, 1], added in another order. */
    double tol = 1e-5 * (double)k * (double)npes + 1e-6;
    int status = op_check_close(PROG, me, out, want, my_elems, tol, (size_t)n, (size_t)row_lo);
    if (status == 0) {
        printf(PROG
               ": PE %d: M=%d K=%d N=%d on %d PEs, %d blocks, rows %d..%d: matches the "
               "host reference within %g\n",
               me, m, k, n, npes, nb, row_lo, row_lo + my_rows, tol);
    }
    shmem_barrier_all();
    if (me == 0) {
        printf(PROG
               ": kernel %.3f ms (best of %d), tile %dx%d, %d tiles, %d blocks, %d PE(s) on "
               "GPU %d\n",
               best, iters, tm, tn, tiles, nb, g.sharing, g.device);
    }
    shmem_free(arrived);
    shmem_free(stage);
    OP_CUDA(cudaFree(tile_gpu));
    OP_CUDA(cudaFree(scratch));
    OP_CUDA(cudaFree(out_gpu));
    OP_CUDA(cudaFree(b_gpu));
    OP_CUDA(cudaFree(a_gpu));
    free(ref);
    free(want);
    free(out);
    free(b_host);
    free(a_host);
    free(tile);
    op_cuda_stop(&g);
    return status;
}
