/*
 * common.cuh: what the CUDA programs of the fused operators (matmul_allreduce.cu,
 * allgather_matmul.cu, matmul_reduce_scatter.cu, moe_dispatch_combine.cu) share: start-up on
 * the PE's GPU, the block count the cooperative-launch rule allows, CUDA error checks, copies
 * to and from the GPU, a bounded wait for a launch and its time, and, kernel-side, a block's
 * tile GEMM and the block-wide forms of waiting and signalling the four kernels use. The
 * command-line parser, the inputs' values and the result check are the C examples' own
 * (examples/common/op_util.h), so a CUDA program and its C twin compute the same numbers.
 *
 * Every kernel here runs with OP_THREADS threads per block (a 1-D block); every function below
 * whose name starts with op_block_ is called by all of a block's threads with the same
 * arguments, as the kernel-side API's _block forms are.
 *
 * The cooperative-launch rule (shmem/arch/cuda.h): a block that waits for other PEs' blocks
 * must not keep one of them from running, so every block of every PE sharing the GPU must be
 * resident at once. op_cuda_fit() is that bound: the blocks one SM holds
 * (cudaOccupancyMaxActiveBlocksPerMultiprocessor for the kernel, its threads and its shared
 * memory) times the SMs, divided among the PEs that share the GPU (the PEs of this node per
 * GPU, rounded up). It holds for PEs that run at once, one PE per GPU or several under CUDA MPS;
 * without MPS the GPU time-slices between the processes, and a kernel that waits for another
 * process's kernel then advances at the slices' pace.
 */
#ifndef SHMEM_EXAMPLES_CUDA_COMMON_CUH
#define SHMEM_EXAMPLES_CUDA_COMMON_CUH

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include <shmem.h>
#include <shmem/device.h>
#include <shmem/launch.h>

#include "../common/op_util.h"

/* Threads of every block of these kernels; the tile GEMM below is written for this count. */
#define OP_THREADS 256

/* ---- Host side ------------------------------------------------------------------------------ */

/* The program's name, for the messages of the calls below (set by op_cuda_start). */
static const char *op_prog = "op";

/* Ends the job with one line naming the CUDA call and its error. */
static inline void op_cuda_fail(const char *call, cudaError_t err, int line) {
    fprintf(stderr, "%s: PE %d: %s (line %d) failed: %s (%s)\n", op_prog, shmem_my_pe(), call, line,
            cudaGetErrorName(err), cudaGetErrorString(err));
    shmem_global_exit(1);
}
#define OP_CUDA(call)                                                                              \
    do {                                                                                           \
        cudaError_t op_err_ = (call);                                                              \
        if (op_err_ != cudaSuccess) op_cuda_fail(#call, op_err_, __LINE__);                        \
    } while (0)

/* One PE on its GPU: the job, the stream the kernels run on, the events that time them. */
struct op_gpu {
    int me, npes;
    int device;      /* the GPU of this PE's heap */
    int sms;         /* its multiprocessors */
    int sharing;     /* PEs of this node per GPU, rounded up: they divide the GPU's blocks */
    const void *job; /* shmemx_job_state_device(): every kernel's first argument */
    cudaStream_t stream;
    cudaEvent_t start, stop;
    int timeout_s; /* how long a launch may take before the job ends */
};

/* shmem_init, then the GPU of this PE's heap made the current device, a non-blocking stream and
 * two events. Ends the job with a message when the heap is not in GPU memory (the program must
 * run under shmemrun with SHMEM_DEVICE=cuda). */
static inline void op_cuda_start(op_gpu *g, const char *prog, int timeout_s) {
    op_prog = prog;
    shmem_init();
    memset(g, 0, sizeof *g);
    g->me = shmem_my_pe();
    g->npes = shmem_n_pes();
    g->timeout_s = timeout_s;
    g->job = shmemx_job_state_device();
    if (g->job == NULL) {
        fprintf(stderr,
                "%s: PE %d: the symmetric heap is not in GPU memory: run under shmemrun with "
                "SHMEM_DEVICE=cuda\n",
                prog, g->me);
        shmem_global_exit(2);
    }
    /* The library chose the GPU (the context current at shmem_init, else the local rank modulo
     * the GPUs); the heap's pointer says which, and the runtime's calls below go there. Should
     * the query not answer for this memory, the library's rule (the rank among the node's PEs
     * modulo the GPUs) names the same GPU. */
    int gpus = 0;
    OP_CUDA(cudaGetDeviceCount(&gpus));
    void *probe = shmem_malloc(64);
    if (probe == NULL) {
        fprintf(stderr, "%s: PE %d: shmem_malloc(64) failed\n", prog, g->me);
        shmem_global_exit(1);
    }
    cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, probe) == cudaSuccess &&
        attr.type == cudaMemoryTypeDevice) {
        g->device = attr.device;
    } else {
        (void)cudaGetLastError(); /* the query's error is not the program's */
        int local = shmem_team_my_pe(SHMEM_TEAM_SHARED);
        g->device = (local < 0 ? 0 : local) % (gpus > 0 ? gpus : 1);
    }
    shmem_free(probe);
    OP_CUDA(cudaSetDevice(g->device));
    OP_CUDA(cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, g->device));
    int node_pes = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    if (node_pes < 1) node_pes = 1;
    g->sharing = gpus > 0 ? (node_pes + gpus - 1) / gpus : node_pes;
    OP_CUDA(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    OP_CUDA(cudaEventCreate(&g->start));
    OP_CUDA(cudaEventCreate(&g->stop));
}

/* The reverse of op_cuda_start: the events, the stream, then shmem_finalize. */
static inline void op_cuda_stop(op_gpu *g) {
    OP_CUDA(cudaEventDestroy(g->stop));
    OP_CUDA(cudaEventDestroy(g->start));
    OP_CUDA(cudaStreamDestroy(g->stream));
    shmem_finalize();
}

/* The most blocks of `kernel` (OP_THREADS threads, `smem` bytes of dynamic shared memory) this PE
 * may launch under the cooperative-launch rule (see the top of this file); at least 1. */
template <typename Kernel>
static inline int op_cuda_fit(const op_gpu *g, Kernel kernel, size_t smem) {
    int per_sm = 0;
    OP_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, OP_THREADS, smem));
    int fit = per_sm * g->sms / g->sharing;
    if (fit < 1) {
        fprintf(stderr,
                "%s: PE %d: no block of %d threads fits on GPU %d (%d per SM, %d SMs, %d PEs "
                "sharing it)\n",
                op_prog, g->me, OP_THREADS, g->device, per_sm, g->sms, g->sharing);
        shmem_global_exit(2);
    }
    return fit;
}

/* The block count: `requested` (--blocks; 0 when not given), else as many as fit and have work
 * (`work` units, at least 1 block). Ends the job when `requested` passes `fit`. Every PE must
 * launch the same count: the default is, where the PEs' GPUs are alike. */
static inline int op_cuda_blocks(const op_gpu *g, int requested, int fit, long work) {
    if (requested > fit) {
        fprintf(stderr,
                "%s: PE %d: invalid argument --blocks=%d: more than the %d blocks that are "
                "resident at once on GPU %d for %d PE(s) sharing it (the cooperative-launch "
                "rule)\n",
                op_prog, g->me, requested, fit, g->device, g->sharing);
        shmem_global_exit(2);
    }
    if (requested > 0) return requested;
    long n = work < fit ? work : fit;
    return n < 1 ? 1 : (int)n;
}

/* Waits, at most the launch timeout, until everything enqueued on the stream is done. */
static inline void op_cuda_sync(const op_gpu *g, const char *what) {
    double deadline = op_now() + g->timeout_s;
    cudaError_t err;
    while ((err = cudaStreamQuery(g->stream)) == cudaErrorNotReady) {
        if (op_now() > deadline) {
            fprintf(stderr,
                    "%s: PE %d: %s did not finish within %d s (--timeout): a PE that never "
                    "signalled, or blocks that were not all resident at once\n",
                    op_prog, g->me, what, g->timeout_s);
            shmem_global_exit(1);
        }
        struct timespec nap = {0, 100000};
        nanosleep(&nap, NULL);
    }
    if (err != cudaSuccess) op_cuda_fail(what, err, __LINE__);
}

/* Copies between the host and GPU memory (local or symmetric), and fills GPU memory with a
 * byte, on the stream; each returns when done. */
static inline void op_to_gpu(const op_gpu *g, void *dst, const void *src, size_t bytes) {
    OP_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g->stream));
    op_cuda_sync(g, "a copy to the GPU");
}
static inline void op_from_gpu(const op_gpu *g, void *dst, const void *src, size_t bytes) {
    OP_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g->stream));
    op_cuda_sync(g, "a copy from the GPU");
}
static inline void op_fill_gpu(const op_gpu *g, void *dst, int byte, size_t bytes) {
    OP_CUDA(cudaMemsetAsync(dst, byte, bytes, g->stream));
    op_cuda_sync(g, "a fill of GPU memory");
}

/* GPU memory for `bytes` (at least 1): local (cudaMalloc) or symmetric (shmem_malloc,
 * collective); ends the job when there is none. */
static inline void *op_gpu_alloc(size_t bytes) {
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, bytes ? bytes : 1);
    if (err != cudaSuccess) {
        fprintf(stderr, "%s: PE %d: cudaMalloc(%zu) failed: %s\n", op_prog, shmem_my_pe(), bytes,
                cudaGetErrorString(err));
        shmem_global_exit(1);
    }
    return p;
}
static inline void *op_sym_alloc(size_t bytes) {
    void *p = shmem_malloc(bytes ? bytes : 1);
    if (p == NULL) {
        fprintf(stderr, "%s: PE %d: shmem_malloc(%zu) failed: raise SHMEM_SYMMETRIC_SIZE\n",
                op_prog, shmem_my_pe(), bytes);
        shmem_global_exit(1);
    }
    return p;
}

/* Timing one launch: op_launch_begin before the kernel's <<<>>> on g->stream, op_launch_end
 * after it; the latter waits for the kernel (at most the timeout) and returns its time in ms
 * (CUDA events). */
static inline void op_launch_begin(const op_gpu *g) {
    OP_CUDA(cudaEventRecord(g->start, g->stream));
}
static inline double op_launch_end(const op_gpu *g) {
    OP_CUDA(cudaGetLastError()); /* the launch itself (its configuration) */
    OP_CUDA(cudaEventRecord(g->stop, g->stream));
    op_cuda_sync(g, "the kernel");
    float ms = 0;
    OP_CUDA(cudaEventElapsedTime(&ms, g->start, g->stop));
    return (double)ms;
}

/* c (m x n, ldc) += a (m x k, lda) x b (k x n, ldb) in double: the host reference. Plain loops,
 * row by row, in an order the compiler vectorises. */
static inline void op_host_matmul_add(double *c, size_t ldc, const float *a, size_t lda,
                                      const float *b, size_t ldb, int m, int k, int n) {
    for (int i = 0; i < m; i++) {
        double *ci = c + (size_t)i * ldc;
        for (int q = 0; q < k; q++) {
            const double aq = (double)a[(size_t)i * lda + (size_t)q];
            const float *bq = b + (size_t)q * ldb;
            for (int j = 0; j < n; j++) ci[j] += aq * (double)bq[j];
        }
    }
}

/* ---- Kernel side ---------------------------------------------------------------------------- */

/* The block's tile of the GEMM: OP_GEMM_BM x OP_GEMM_BN outputs, OP_GEMM_BK terms of the inner
 * dimension at a time through shared memory; each of the 256 threads computes 4 x 4 outputs,
 * rows ty, ty + 16, ... and columns tx, tx + 16, ... of the tile. */
#define OP_GEMM_BM 64
#define OP_GEMM_BN 64
#define OP_GEMM_BK 16
static_assert(OP_THREADS == 256, "the tile GEMM is written for 256 threads (16 x 16, 4 x 4 each)");

/* c = a x b + beta * c, a rows x k (leading dimension lda), b k x cols (ldb), c rows x cols
 * (ldc), row-major, float: by all of the block's threads, the tiles one after the other. With
 * beta == 0, c is only written (what it held, NaN too, does not matter). c may be another PE's
 * memory mapped here (aclshmem_ptr). Returns after a __syncthreads: c is complete for the whole
 * block. */
static inline __device__ void op_block_gemm(int rows, int cols, int k, const float *a, size_t lda,
                                            const float *b, size_t ldb, float *c, size_t ldc,
                                            float beta) {
    /* A's tile is kept transposed (k-major) so that a step reads one row of each; the pad keeps
     * the threads' stores of a column on different banks. */
    __shared__ float as[OP_GEMM_BK][OP_GEMM_BM + 4];
    __shared__ float bs[OP_GEMM_BK][OP_GEMM_BN];
    const int tid = (int)threadIdx.x, tx = tid % 16, ty = tid / 16;
    for (int r0 = 0; r0 < rows; r0 += OP_GEMM_BM) {
        for (int c0 = 0; c0 < cols; c0 += OP_GEMM_BN) {
            float acc[4][4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
            }
            for (int k0 = 0; k0 < k; k0 += OP_GEMM_BK) {
                /* 64 x 16 of A and 16 x 64 of B, 4 elements per thread, neighbouring threads on
                 * neighbouring elements of a row (coalesced); zeros past the edges. */
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int e = tid + i * OP_THREADS;
                    const int ar = e / OP_GEMM_BK, aq = e % OP_GEMM_BK;
                    const int gr = r0 + ar, gq = k0 + aq;
                    as[aq][ar] = gr < rows && gq < k ? a[(size_t)gr * lda + (size_t)gq] : 0.0f;
                    const int bq = e / OP_GEMM_BN, bc = e % OP_GEMM_BN;
                    const int hq = k0 + bq, hc = c0 + bc;
                    bs[bq][bc] = hq < k && hc < cols ? b[(size_t)hq * ldb + (size_t)hc] : 0.0f;
                }
                __syncthreads();
#pragma unroll
                for (int q = 0; q < OP_GEMM_BK; q++) {
                    float av[4], bv[4];
#pragma unroll
                    for (int i = 0; i < 4; i++) av[i] = as[q][ty + 16 * i];
#pragma unroll
                    for (int j = 0; j < 4; j++) bv[j] = bs[q][tx + 16 * j];
#pragma unroll
                    for (int i = 0; i < 4; i++) {
#pragma unroll
                        for (int j = 0; j < 4; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
                    }
                }
                __syncthreads();
            }
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int r = r0 + ty + 16 * i;
                if (r >= rows) continue;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int col = c0 + tx + 16 * j;
                    if (col >= cols) continue;
                    float *p = c + (size_t)r * ldc + (size_t)col;
                    *p = beta == 0.0f ? acc[i][j] : fmaf(beta, *p, acc[i][j]);
                }
            }
        }
    }
    __syncthreads();
}

/* Thread 0's `value`, seen by every thread of the block (thread 0 decides, e.g. from a test of
 * a signal, and the block follows). */
static inline __device__ int op_block_broadcast(int value) {
    __shared__ int shared;
    if (threadIdx.x == 0) shared = value;
    __syncthreads();
    const int v = shared;
    __syncthreads(); /* nobody reads it after thread 0 writes the next one */
    return v;
}

/* Waits until the local signal `sig` is >= `value`: thread 0 waits, the block meets after, so
 * every thread reads what was put before the signal. */
static inline __device__ void op_block_wait_ge(int32_t *sig, int32_t value) {
    if (threadIdx.x == 0) aclshmem_signal_wait_until(sig, ACLSHMEM_CMP_GE, value);
    __syncthreads();
}

/* Updates `sig` on `pe` after every thread's earlier stores and puts are visible to every PE:
 * each thread fences, the block meets, thread 0 signals (the order of
 * aclshmemx_putmem_signal_block, for data that the block stored itself). */
static inline __device__ void op_block_signal(int32_t *sig, int32_t value, int sig_op, int pe) {
    aclshmem_fence();
    __syncthreads();
    if (threadIdx.x == 0) aclshmemx_signal_op(sig, value, sig_op, pe);
}

/* Copies rows x cols floats (leading dimensions ldd, lds) to symmetric `dst` on `pe`: with the
 * block's plain stores where `pe`'s memory is mapped here (aclshmem_ptr), else, or with
 * `puts_only`, with block-wide puts (one per row, one for a contiguous span). `src` must be
 * complete for the whole block already (as after op_block_gemm, which ends with a meeting);
 * follow with op_block_signal, whose fences and meeting complete the stores. */
static inline __device__ void op_block_put_rows(float *dst, size_t ldd, const float *src,
                                                size_t lds, int rows, int cols, int pe,
                                                int puts_only) {
    float *direct = puts_only ? NULL : (float *)aclshmem_ptr(dst, pe);
    if (direct != NULL) {
        const size_t total = (size_t)rows * (size_t)cols;
        for (size_t i = threadIdx.x; i < total; i += OP_THREADS) {
            const size_t r = i / (size_t)cols, col = i % (size_t)cols;
            direct[r * ldd + col] = src[r * lds + col];
        }
        return;
    }
    if (ldd == (size_t)cols && lds == (size_t)cols) {
        aclshmemx_putmem_block(dst, src, (size_t)rows * (size_t)cols * sizeof(float), pe);
        return;
    }
    for (int r = 0; r < rows; r++) {
        aclshmemx_putmem_block(dst + (size_t)r * ldd, src + (size_t)r * lds,
                               (size_t)cols * sizeof(float), pe);
    }
}

#endif /* SHMEM_EXAMPLES_CUDA_COMMON_CUH */
