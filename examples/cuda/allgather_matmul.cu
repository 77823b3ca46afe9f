/*
 * allgather_matmul.cu: C = allgather(A) x B, fused in one CUDA kernel: the operator of
 * examples/allgather_matmul as a program for NVIDIA GPUs, the symmetric heap in GPU memory.
 *
 * Built by examples/cuda/CMakeLists.txt (nvcc, against an installed shmem); run as
 *
 *   SHMEM_DEVICE=cuda shmemrun -n 2 ./allgather_matmul_cuda [--m M] [--k K] [--n N]
 *       [--tile-m TM] [--tile-n TN] [--blocks B] [--iters I] [--timeout S]
 *
 * Defaults: M=64 K=32 N=128, chunks of 32 rows, tiles 32 columns wide (the C example's), as
 * many blocks as the cooperative-launch rule allows and there are tiles, 1 launch, a 60 s bound
 * on each. Every PE prints "allgather_matmul_cuda: PE <r>: M=.. K=.. N=.. on <n> PEs (rows
 * a..b here), <b> blocks: matches the host reference within <tol>" when its C is right (else a
 * FAILED line naming the first wrong value, and the exit status is 1); PE 0 then prints the
 * kernel's best time.
 *
 * The algorithm is the C kernel's. A (M x K, row-major) is sharded by rows: PE p holds rows
 * [p * M / npes, (p + 1) * M / npes) of the symmetric `a` (uneven slices when npes does not
 * divide M; a slice may be empty). B (K x N) is each PE's own, and afterwards every PE holds its
 * C = A x B (M x N) in GPU memory. Every PE's slice is cut into chunks of TM rows, the output
 * into tiles of one chunk's rows by TN columns. The blocks push this PE's chunks to every other
 * PE, each with a block-wide put-with-signal (one signal per source PE and chunk, set to the
 * launch's round), and compute the output tiles with the block's tile GEMM as soon as the chunk
 * a tile needs has arrived: this PE's own rows first, then the other slices in the order their
 * pushes reach this PE (the whole slice to the next PE first, then to the one after, ...). A
 * block makes one push before each of its tiles, and more while it waits for rows (thread 0
 * tests the signal, the block follows), so communication overlaps computation. Before each
 * launch every PE fills the other PEs' rows of its `a` with NaN, so a tile computed before its
 * rows arrived fails the check instead of reusing the last launch's rows.
 *
 * The inputs are the C example's (op_input_value of the PE, the matrix and the index); every
 * PE builds the whole A on the host, computes its reference C in double (plain loops) and
 * compares within the C example's tolerance, 1e-5 * K + 1e-6.
 *
 * Launch rule: a block may wait for rows that other PEs' blocks push, so every block of every
 * PE sharing the GPU must be resident at once (the cooperative-launch rule of shmem/arch/cuda.h):
 * the block count is capped by cudaOccupancyMaxActiveBlocksPerMultiprocessor x SMs / PEs per
 * GPU (common.cuh), and --blocks above it is refused. Several PEs on one GPU run at once under
 * CUDA MPS. ctest cuda.compile compiles this file with nvcc for sm_90; it has not run on a GPU.
 */
#include "common.cuh"

#define PROG "allgather_matmul_cuda"

/* One chunk of A: rows [r0, r0 + rows) of the source PE's slice, announced by signal `sig`. */
struct ag_chunk {
    int src, r0, rows, sig;
};

/* The kernel's arguments, passed by value. */
struct ag_args {
    float *a;       /* symmetric M x K: this PE's rows are its input, the rest arrive */
    const float *b; /* GPU memory: K x N */
    float *c;       /* GPU memory: M x N */
    const struct ag_chunk *chunk; /* GPU memory: every chunk, in this PE's compute order */
    int32_t *arrived;             /* symmetric: per chunk (by its sig), the round it landed in */
    int k, n, tn, tiles_n, chunks;
    int my_chunks; /* this PE's own: the first entries of `chunk` */
    int32_t round; /* 1 for the first launch, then 2, ...: the signals never need a reset */
};

/* Push task i of this PE, by the block: its chunk i % my_chunks to PE me + 1 + i / my_chunks. */
static __device__ void ag_push(const ag_args &a, int i, int me, int npes) {
    const ag_chunk ch = a.chunk[i % a.my_chunks];
    int pe = (me + 1 + i / a.my_chunks) % npes;
    float *rows = a.a + (size_t)ch.r0 * (size_t)a.k;
    aclshmemx_putmem_signal_block(rows, rows, (size_t)ch.rows * (size_t)a.k * sizeof(float),
                                  &a.arrived[ch.sig], a.round, ACLSHMEM_SIGNAL_SET, pe);
}

/* C[chunk rows, tile cols] = A[chunk rows, :] x B[:, tile cols], by the block. */
static __device__ void ag_compute_tile(const ag_args &a, int t) {
    const ag_chunk ch = a.chunk[t / a.tiles_n];
    int c0 = t % a.tiles_n * a.tn, cols = a.n - c0 < a.tn ? a.n - c0 : a.tn;
    op_block_gemm(ch.rows, cols, a.k, a.a + (size_t)ch.r0 * (size_t)a.k, (size_t)a.k, a.b + c0,
                  (size_t)a.n, a.c + (size_t)ch.r0 * (size_t)a.n + c0, (size_t)a.n, 0.0f);
}

/* Whether tile t's rows are here: thread 0 tests, the block follows. */
static __device__ int ag_chunk_here(const ag_args &a, int t, int me) {
    int here = 0;
    if (threadIdx.x == 0) {
        const ag_chunk ch = a.chunk[t / a.tiles_n];
        here = ch.src == me || aclshmem_int32_test(&a.arrived[ch.sig], ACLSHMEM_CMP_GE, a.round);
    }
    return op_block_broadcast(here);
}

__global__ void __launch_bounds__(OP_THREADS) allgather_matmul_cuda(const void *job, ag_args a) {
    shmemx_cuda_set_job(job);
    int me = aclshmem_my_pe(), npes = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    int pushes = a.my_chunks * (npes - 1), next = b; /* this block's next push task */
    for (int t = b; t < a.chunks * a.tiles_n; t += nb) {
        if (next < pushes) {
            ag_push(a, next, me, npes);
            next += nb;
        }
        /* Rows not here yet: push on meanwhile, then wait. Pushes never wait, so every push
         * is made and every wait ends. */
        while (!ag_chunk_here(a, t, me)) {
            if (next < pushes) {
                ag_push(a, next, me, npes);
                next += nb;
            } else {
                op_block_wait_ge(&a.arrived[a.chunk[t / a.tiles_n].sig], a.round);
            }
        }
        ag_compute_tile(a, t);
    }
    for (; next < pushes; next += nb) ag_push(a, next, me, npes);
}

static int slice_lo(int m, int npes, int pe) { return (int)((long)m * pe / npes); }

/* Every chunk, in PE me's compute order: its own slice, then PE me - 1's, me - 2's, ... (the
 * order their pushes reach me); a chunk's signal is its index in PE order, the same on every PE.
 * Returns the chunk count (out NULL: only counts). */
static int make_chunks(ag_chunk *out, int m, int tm, int npes, int me) {
    int count = 0;
    for (int s = 0; s < npes; s++) {
        int src = ((me - s) % npes + npes) % npes, sig = 0;
        for (int p = 0; p < src; p++) {
            sig += (slice_lo(m, npes, p + 1) - slice_lo(m, npes, p) + tm - 1) / tm;
        }
        int hi = slice_lo(m, npes, src + 1);
        for (int r0 = slice_lo(m, npes, src); r0 < hi; r0 += tm, count++, sig++) {
            if (out != NULL) out[count] = ag_chunk{src, r0, hi - r0 < tm ? hi - r0 : tm, sig};
        }
    }
    return count;
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
    int chunks = make_chunks(NULL, m, tm, npes, me), tiles_n = (n + tn - 1) / tn;
    /* Tile numbers, and a block's next one, stay ints. */
    long long max_tiles = (1LL << 30);
    if ((long long)chunks * tiles_n > max_tiles) {
        if (me == 0) {
            fprintf(stderr,
                    PROG
                    ": invalid arguments --tile-m=%d --tile-n=%d: %lld tiles, more than "
                    "%lld\n",
                    tm, tn, (long long)chunks * tiles_n, max_tiles);
        }
        shmem_global_exit(2);
    }
    const int nb = op_cuda_blocks(&g, blocks, op_cuda_fit(&g, allgather_matmul_cuda, 0),
                                  (long)chunks * tiles_n);
    int row_lo = slice_lo(m, npes, me), my_rows = slice_lo(m, npes, me + 1) - row_lo;
    size_t mk = (size_t)m * (size_t)k, kn = (size_t)k * (size_t)n, mn = (size_t)m * (size_t)n;
    size_t my_elems = (size_t)my_rows * (size_t)k;

    ag_chunk *chunk = (ag_chunk *)malloc((size_t)chunks * sizeof *chunk);
    float *a_all = (float *)malloc(mk * sizeof(float));
    float *b_host = (float *)malloc(kn * sizeof(float));
    float *out = (float *)malloc(mn * sizeof(float));
    float *want = (float *)malloc(mn * sizeof(float));
    double *ref = (double *)calloc(mn, sizeof(double));
    if (!chunk || !a_all || !b_host || !out || !want || !ref ||
        make_chunks(chunk, m, tm, npes, me) != chunks) {
        fprintf(stderr, PROG ": PE %d: out of host memory for M=%d K=%d N=%d\n", me, m, k, n);
        shmem_global_exit(1);
    }
    int my_chunks = 0;
    while (my_chunks < chunks && chunk[my_chunks].src == me) my_chunks++;

    /* The inputs: every PE's slice of A (the rows it holds, as the C example draws them), this
     * PE's B; the reference from them. */
    for (int p = 0; p < npes; p++) {
        int lo = slice_lo(m, npes, p), hi = slice_lo(m, npes, p + 1);
        for (size_t i = 0; i < (size_t)(hi - lo) * (size_t)k; i++) {
            a_all[(size_t)lo * (size_t)k + i] = op_input_value(p, 0, i);
        }
    }
    for (size_t i = 0; i < kn; i++) b_host[i] = op_input_value(me, 1, i);
    op_host_matmul_add(ref, (size_t)n, a_all, (size_t)k, b_host, (size_t)n, m, k, n);
    for (size_t i = 0; i < mn; i++) want[i] = (float)ref[i];

    float *a_sym = (float *)op_sym_alloc(mk * sizeof(float));
    int32_t *arrived = (int32_t *)op_sym_alloc((size_t)chunks * sizeof(int32_t));
    float *b_gpu = (float *)op_gpu_alloc(kn * sizeof(float));
    float *c_gpu = (float *)op_gpu_alloc(mn * sizeof(float));
    ag_chunk *chunk_gpu = (ag_chunk *)op_gpu_alloc((size_t)chunks * sizeof *chunk);
    op_to_gpu(&g, a_sym + (size_t)row_lo * k, a_all + (size_t)row_lo * k, my_elems * sizeof(float));
    op_to_gpu(&g, b_gpu, b_host, kn * sizeof(float));
    op_to_gpu(&g, chunk_gpu, chunk, (size_t)chunks * sizeof *chunk);
    op_fill_gpu(&g, arrived, 0, (size_t)chunks * sizeof(int32_t));

    ag_args args;
    args.a = a_sym;
    args.b = b_gpu;
    args.c = c_gpu;
    args.chunk = chunk_gpu;
    args.arrived = arrived;
    args.k = k;
    args.n = n;
    args.tn = tn;
    args.tiles_n = tiles_n;
    args.chunks = chunks;
    args.my_chunks = my_chunks;
    args.round = 0;
    double best = 1e30;
    for (int it = 0; it < iters; it++) {
        /* Every PE is done with the last launch: nobody still reads the rows poisoned here. */
        shmem_barrier_all();
        /* The other PEs' rows become NaN (all bits set), so a tile computed before its rows
         * arrived fails the check instead of reusing the last launch's rows. */
        op_fill_gpu(&g, a_sym, 0xFF, (size_t)row_lo * k * sizeof(float));
        op_fill_gpu(&g, a_sym + (size_t)(row_lo + my_rows) * k, 0xFF,
                    (size_t)(m - row_lo - my_rows) * k * sizeof(float));
        /* Nobody pushes rows before every PE has poisoned its copy. */
        shmem_barrier_all();
        args.round = it + 1;
        op_launch_begin(&g);
        allgather_matmul_cuda<<<nb, OP_THREADS, 0, g.stream>>>(g.job, args);
        double ms = op_launch_end(&g);
        best = ms < best ? ms : best;
    }
    op_from_gpu(&g, out, c_gpu, mn * sizeof(float));

    /* Sums of K products of values in [-1, 1], added in another order. */
    double tol = 1e-5 * (double)k + 1e-6;
    int status = op_check_close(PROG, me, out, want, mn, tol, (size_t)n, 0);
    if (status == 0) {
        printf(PROG
               ": PE %d: M=%d K=%d N=%d on %d PEs (rows %d..%d here), %d blocks: matches "
               "the host reference within %g\n",
               me, m, k, n, npes, row_lo, row_lo + my_rows, nb, tol);
    }
    shmem_barrier_all();
    if (me == 0) {
        printf(PROG
               ": kernel %.3f ms (best of %d), %d chunks of %d rows, tiles %d wide, %d "
               "blocks, %d PE(s) on GPU %d\n",
               best, iters, chunks, tm, tn, nb, g.sharing, g.device);
    }
    OP_CUDA(cudaFree(chunk_gpu));
    OP_CUDA(cudaFree(c_gpu));
    OP_CUDA(cudaFree(b_gpu));
    shmem_free(arrived);
    shmem_free(a_sym);
    free(ref);
    free(want);
    free(out);
    free(b_host);
    free(a_all);
    free(chunk);
    op_cuda_stop(&g);
    return status;
}
