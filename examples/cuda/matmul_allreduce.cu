/*
 * matmul_allreduce.cu: C = sum over PEs of (A_pe x B_pe), fused in one CUDA kernel: the
 * operator of examples/matmul_allreduce (its kernel, matmul_allreduce_kernel.h) as a program
 * for NVIDIA GPUs, the symmetric heap in GPU memory.
 *
 * Built by examples/cuda/CMakeLists.txt (nvcc, against an installed shmem); run as
 *
 *   SHMEM_DEVICE=cuda shmemrun -n 2 ./matmul_allreduce_cuda [--m M] [--k K] [--n N]
 *       [--tile-m TM] [--tile-n TN] [--blocks B] [--iters I] [--puts-only] [--timeout S]
 *
 * Defaults: M=64 K=32 N=128, 128 x 128 tiles (cut to the matrix), as many blocks as the
 * cooperative-launch rule allows and there are tiles, 1 launch, a 60 s bound on each. Every PE
 * prints "matmul_allreduce_cuda: PE <r>: M=.. K=.. N=.. on <n> PEs, <b> blocks: matches the host
 * reference within <tol>" when its C is right (else a FAILED line naming the first wrong value,
 * and the exit status is 1); PE 0 then prints the kernel's best time.
 *
 * The algorithm is the C kernel's. Every PE holds its own A (M x K) and B (K x N) in GPU memory,
 * row-major; afterwards every PE's symmetric `c` holds C. The output is cut into TM x TN tiles;
 * block b of every PE takes tiles b, b + B, ...; its g-th tile is owned (reduced) by PE
 * g % npes. A block computes each tile another PE owns with its tile GEMM and sends it to the
 * owner at once with a signal: the first other PE's product lands in the owner's C tile
 * itself, each further PE's in a staging slot. Where the owner's memory is mapped here
 * (aclshmem_ptr: the PEs of one node) the GEMM stores straight into it, so the product is the
 * put; otherwise (and with --puts-only) it goes through a scratch tile and block-wide puts.
 * The block works through its tiles in groups of npes, one owned by each PE, and finishes its
 * own tile of a group one group late: it waits for the other PEs' products of it (one thread
 * waits, the block meets), adds the staged ones and its own product on top (the GEMM with
 * beta = 1), and sends the finished tile to every other PE's C with its `reduced` signal. So
 * the tiles travel while the next group is computed. The signals carry the launch's round (1,
 * 2, ...) and are never reset; a host barrier separates launches, which reuse `c` and the
 * staging slots.
 *
 * The inputs are the C example's (op_input_value of the PE, the matrix and the index); every
 * PE computes the whole reference on the host (every PE's A x B in double, plain loops) and
 * compares its C within the C example's tolerance, 1e-5 * K * npes + 1e-6 (sums of npes * K
 * products of values in [-1, 1], added in another order).
 *
 * Launch rule: a block waits for the same block of the other PEs, so every block of every PE
 * sharing the GPU must be resident at once (the cooperative-launch rule of shmem/arch/cuda.h):
 * the block count is capped by cudaOccupancyMaxActiveBlocksPerMultiprocessor x SMs / PEs per
 * GPU (common.cuh), and --blocks above it is refused. Several PEs on one GPU run at once under
 * CUDA MPS. ctest cuda.compile compiles this file with nvcc for sm_90; it has not run on a GPU.
 */
#include "common.cuh"

#define PROG "matmul_allreduce_cuda"

/* The kernel's arguments, passed by value. */
struct mm_args {
    const float *a, *b; /* GPU memory: M x K and K x N */
    float *c;           /* symmetric: the result, M x N row-major */
    float *stage;       /* symmetric: per owned tile, a slot for each other PE but the first */
    float *scratch;     /* GPU memory: one tile per block */
    int32_t *arrived;   /* symmetric: per tile, contributions received by its owner */
    int32_t *reduced;   /* symmetric: per tile, the round whose sum has landed here */
    int m, k, n, tm, tn, tiles_n, tiles;
    int puts_only; /* nonzero: never store through aclshmem_ptr (the path of unmapped PEs) */
    int32_t round; /* 1 for the first launch, then 2, ...: the signals never need a reset */
};

static __host__ __device__ inline size_t mm_tile_elems(const mm_args &a) {
    return (size_t)a.tm * (size_t)a.tn;
}

/* Tile t's first row and column, and its extent (edge tiles are smaller). */
static __device__ inline void mm_tile_box(const mm_args &a, int t, int *r0, int *c0, int *rows,
                                          int *cols) {
    *r0 = t / a.tiles_n * a.tm;
    *c0 = t % a.tiles_n * a.tn;
    *rows = a.m - *r0 < a.tm ? a.m - *r0 : a.tm;
    *cols = a.n - *c0 < a.tn ? a.n - *c0 : a.tn;
}

/* Where tile t's contribution from PE src lands on its owner, and that buffer's leading
 * dimension: the first other PE (owner + 1) writes the owner's C tile itself, each further PE
 * a compact slot in `stage`. */
static __device__ inline float *mm_landing(const mm_args &a, int t, int owner, int npes, int src,
                                           int nb, int *ld) {
    int r0, c0, rows, cols;
    mm_tile_box(a, t, &r0, &c0, &rows, &cols);
    int peer = (src - owner - 1 + npes) % npes;
    if (peer == 0) {
        *ld = a.n;
        return a.c + (size_t)r0 * (size_t)a.n + (size_t)c0;
    }
    int g = t / nb;
    size_t owned = (size_t)(g / npes) * (size_t)nb + (size_t)(t % nb);
    *ld = cols;
    return a.stage + (owned * (size_t)(npes - 2) + (size_t)(peer - 1)) * mm_tile_elems(a);
}

/* out (leading dimension ldo) = beta * out + A[tile rows, :] x B[:, tile cols], by the block. */
static __device__ inline void mm_tile_gemm(const mm_args &a, int t, float beta, float *out,
                                           int ldo) {
    int r0, c0, rows, cols;
    mm_tile_box(a, t, &r0, &c0, &rows, &cols);
    op_block_gemm(rows, cols, a.k, a.a + (size_t)r0 * (size_t)a.k, (size_t)a.k, a.b + c0,
                  (size_t)a.n, out, (size_t)ldo, beta);
}

/* A tile owned by another PE: its product goes to its landing place on the owner, then the
 * owner's `arrived` counter is raised. */
static __device__ void mm_send_tile(const mm_args &a, int t, int owner, int me, int npes, int nb,
                                    float *scratch) {
    int r0, c0, rows, cols, ld;
    mm_tile_box(a, t, &r0, &c0, &rows, &cols);
    float *land = mm_landing(a, t, owner, npes, me, nb, &ld);
    float *direct = a.puts_only ? NULL : (float *)aclshmem_ptr(land, owner);
    if (direct != NULL) {
        mm_tile_gemm(a, t, 0.0f, direct, ld);
    } else {
        mm_tile_gemm(a, t, 0.0f, scratch, cols);
        op_block_put_rows(land, (size_t)ld, scratch, (size_t)cols, rows, cols, owner, 1);
    }
    op_block_signal(&a.arrived[t], 1, ACLSHMEM_SIGNAL_ADD, owner);
}

/* Owned tile t, every other PE's contribution in: its C tile holds the first one; the block
 * adds the others, then this PE's product on top, and sends the finished tile to every other
 * PE's C (the next PE first) with its `reduced` signal. */
static __device__ void mm_finish_owned(const mm_args &a, int t, int me, int npes, int nb) {
    int r0, c0, rows, cols;
    mm_tile_box(a, t, &r0, &c0, &rows, &cols);
    float *ct = a.c + (size_t)r0 * (size_t)a.n + (size_t)c0;
    const size_t elems = (size_t)rows * (size_t)cols;
    for (int k = 2; k < npes; k++) {
        int ld;
        const float *s = mm_landing(a, t, me, npes, (me + k) % npes, nb, &ld);
        /* Each thread adds the same elements in every pass: no meeting between passes. */
        for (size_t i = threadIdx.x; i < elems; i += OP_THREADS) {
            const size_t r = i / (size_t)cols, col = i % (size_t)cols;
            ct[r * (size_t)a.n + col] += s[r * (size_t)ld + col];
        }
    }
    __syncthreads();
    mm_tile_gemm(a, t, npes > 1 ? 1.0f : 0.0f, ct, a.n);
    for (int k = 1; k < npes; k++) {
        int pe = (me + k) % npes;
        op_block_put_rows(ct, (size_t)a.n, ct, (size_t)a.n, rows, cols, pe, a.puts_only);
        op_block_signal(&a.reduced[t], a.round, ACLSHMEM_SIGNAL_SET, pe);
    }
}

/* Finishes this block's owned tile of group j, if the group has one, once the other PEs'
 * products of it are in. */
static __device__ void mm_finish_group(const mm_args &a, int j, int b, int nb, int me, int npes,
                                       int32_t want) {
    int t = b + nb * (j * npes + me);
    if (t >= a.tiles) return;
    op_block_wait_ge(&a.arrived[t], want);
    mm_finish_owned(a, t, me, npes, nb);
}

/* The kernel: one launch computes C on every PE (see the top of this file). */
__global__ void __launch_bounds__(OP_THREADS) matmul_allreduce_cuda(const void *job, mm_args a) {
    shmemx_cuda_set_job(job);
    int me = aclshmem_my_pe(), npes = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    int32_t want = a.round * (npes - 1);
    float *scratch = a.scratch + (size_t)b * mm_tile_elems(a);
    int mine = (a.tiles - b + nb - 1) / nb; /* this block's tiles */
    int groups = (mine + npes - 1) / npes;
    for (int j = 0; j < groups; j++) {
        for (int k = 1; k < npes; k++) {
            int owner = (me + k) % npes, t = b + nb * (j * npes + owner);
            if (t < a.tiles) mm_send_tile(a, t, owner, me, npes, nb, scratch);
        }
        if (j > 0) mm_finish_group(a, j - 1, b, nb, me, npes, want);
    }
    if (groups > 0) mm_finish_group(a, groups - 1, b, nb, me, npes, want);
    /* This block's tiles owned by other PEs have all landed here. */
    if (threadIdx.x == 0) {
        for (int t = b; t < a.tiles; t += nb) {
            if (t / nb % npes != me)
                aclshmem_signal_wait_until(&a.reduced[t], ACLSHMEM_CMP_GE, a.round);
        }
    }
    __syncthreads();
}

int main(int argc, char **argv) {
    int m = 64, k = 32, n = 128, tm = 128, tn = 128, blocks = 0, iters = 1, puts_only = 0;
    int timeout_s = 60;
    const struct op_option options[] = {
        OP_INT("--m", 1 << 16, &m),
        OP_INT("--k", 1 << 16, &k),
        OP_INT("--n", 1 << 16, &n),
        OP_INT("--tile-m", 1 << 16, &tm),
        OP_INT("--tile-n", 1 << 16, &tn),
        OP_INT("--blocks", 1 << 20, &blocks),
        OP_INT("--iters", 1 << 20, &iters),
        OP_FLAG("--puts-only", &puts_only),
        OP_INT("--timeout", 86400, &timeout_s),
    };
    if (op_parse_options(PROG, argc, argv, options, sizeof options / sizeof options[0]) != 0)
        return 2;

    op_gpu g;
    op_cuda_start(&g, PROG, timeout_s);
    const int me = g.me, npes = g.npes;
    mm_args a;
    memset(&a, 0, sizeof a);
    a.m = m;
    a.k = k;
    a.n = n;
    a.tm = tm < m ? tm : m;
    a.tn = tn < n ? tn : n;
    a.tiles_n = (n + a.tn - 1) / a.tn;
    long tiles = (long)((m + a.tm - 1) / a.tm) * a.tiles_n;
    if (tiles > (1L << 30)) {
        fprintf(stderr, PROG ": invalid arguments --tile-m=%d --tile-n=%d: %ld tiles\n", tm, tn,
                tiles);
        shmem_global_exit(2);
    }
    a.tiles = (int)tiles;
    a.puts_only = puts_only;
    const int nb = op_cuda_blocks(&g, blocks, op_cuda_fit(&g, matmul_allreduce_cuda, 0), a.tiles);
    const size_t te = mm_tile_elems(a), mk = (size_t)m * k, kn = (size_t)k * n, mn = (size_t)m * n;
    /* Owned tiles per PE: ceil(ceil(tiles / blocks) / npes) groups of `blocks` tiles. */
    size_t groups = ((size_t)(a.tiles + nb - 1) / (size_t)nb + (size_t)npes - 1) / (size_t)npes;
    size_t slots = npes > 2 ? groups * (size_t)nb * (size_t)(npes - 2) : 0;

    float *a_host = (float *)malloc(mk * sizeof(float));
    float *b_host = (float *)malloc(kn * sizeof(float));
    float *out = (float *)malloc(mn * sizeof(float));
    float *want = (float *)malloc(mn * sizeof(float));
    double *ref = (double *)calloc(mn, sizeof(double));
    if (!a_host || !b_host || !out || !want || !ref) {
        fprintf(stderr, PROG ": PE %d: out of host memory for M=%d K=%d N=%d\n", me, m, k, n);
        shmem_global_exit(1);
    }
    float *a_gpu = (float *)op_gpu_alloc(mk * sizeof(float));
    float *b_gpu = (float *)op_gpu_alloc(kn * sizeof(float));
    a.scratch = (float *)op_gpu_alloc((size_t)nb * te * sizeof(float));
    a.stage = (float *)op_sym_alloc(slots * te * sizeof(float));
    a.c = (float *)op_sym_alloc(mn * sizeof(float));
    a.arrived = (int32_t *)op_sym_alloc((size_t)a.tiles * sizeof(int32_t));
    a.reduced = (int32_t *)op_sym_alloc((size_t)a.tiles * sizeof(int32_t));
    a.a = a_gpu;
    a.b = b_gpu;
    op_fill_gpu(&g, a.arrived, 0, (size_t)a.tiles * sizeof(int32_t));
    op_fill_gpu(&g, a.reduced, 0, (size_t)a.tiles * sizeof(int32_t));

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
    for (size_t i = 0; i < mn; i++) want[i] = (float)ref[i];

    double best = 1e30;
    for (int it = 0; it < iters; it++) {
        /* Every PE is done with the last launch (the zeroed signals, at first): `c` and the
         * staging slots are free again. */
        shmem_barrier_all();
        a.round = it + 1;
        op_launch_begin(&g);
        matmul_allreduce_cuda<<<nb, OP_THREADS, 0, g.stream>>>(g.job, a);
        double ms = op_launch_end(&g);
        best = ms < best ? ms : best;
    }
    op_from_gpu(&g, out, a.c, mn * sizeof(float));

    double tol = 1e-5 * (double)k * (double)npes + 1e-6;
    int status = op_check_close(PROG, me, out, want, mn, tol, (size_t)n, 0);
    if (status == 0) {
        printf(PROG
               ": PE %d: M=%d K=%d N=%d on %d PEs, %d blocks: matches the host reference "
               "within %g\n",
               me, m, k, n, npes, nb, tol);
    }
    shmem_barrier_all();
    if (me == 0) {
        printf(PROG
               ": kernel %.3f ms (best of %d), tile %dx%d, %d tiles, %d blocks, %d PE(s) on "
               "GPU %d\n",
               best, iters, a.tm, a.tn, a.tiles, nb, g.sharing, g.device);
    }
    shmem_free(a.reduced);
    shmem_free(a.arrived);
    shmem_free(a.c);
    shmem_free(a.stage);
    OP_CUDA(cudaFree(a.scratch));
    OP_CUDA(cudaFree(b_gpu));
    OP_CUDA(cudaFree(a_gpu));
    free(ref);
    free(want);
    free(out);
    free(b_host);
    free(a_host);
    op_cuda_stop(&g);
    return status;
}
