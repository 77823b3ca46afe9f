/* kernels.cu: the kernel-side API (shmem/device.h, CUDA architecture) on a GPU, under shmemrun
 * with SHMEM_DEVICE=cuda: the heap is GPU memory from shmem_malloc, every PE's heap is mapped
 * into every PE's GPU address space, and CUDA kernels reach their peers with loads and stores.
 * Each kernel gets shmemx_job_state_device() and hands it to shmemx_cuda_set_job first; every
 * PE checks its own data, in the kernel (gpu_check.h's GPU_CHECK: the first failure's line,
 * block, thread and values) or on the host after a cudaMemcpy. Cases, in order:
 *   rma.<scope>   put, get and their _nbi forms (with quiet), typed forms, at the thread's, a
 *                 warp's and a block's scope, on spans of odd lengths and offsets (the copies'
 *                 head and tail), the bytes around each span untouched; p and g of int64, float
 *                 and uint16
 *   signals       put-with-signal SET and ADD at the three scopes, int32 and uint64 signals,
 *                 signal_op, the _nbi form with quiet; the data is there once the signal is
 *   amos          fetch_add from every thread of every PE onto one counter on PE 0 (each value
 *                 fetched once), inc, compare_swap (one winner), swap (a permutation),
 *                 fetch_or/xor/and, set and fetch
 *   order         fence between a p and its flag, quiet between a put_nbi and its flag: the
 *                 receiver never sees a flag before its data (a sender and a receiver warp)
 *   barrier_all   rounds of p to the right neighbour and aclshmem_barrier_all (sync_all after
 *                 quiet on odd rounds) in a kernel of several blocks
 *   teams         a split team's queries in the kernel equal the host's; its barrier and sync
 *                 inside a kernel, for a team of every PE and one of the even PEs
 * With the argument `misuse`, instead: a kernel names a PE outside the job, which must end it
 * with the kernel-side API's one line (device printf, then a trap) and the launch failing.
 * Kernels are launched with cudaLaunchCooperativeKernel where the GPU can: every block resident
 * at once, the rule of shmem/arch/cuda.h for kernels that wait for another block or PE.
 * Several PEs share the one GPU; without MPS their kernels take turns (time slices), so a wait
 * for a peer lasts at least a slice: the kernels here wait a few hundred times in all. */
#include <shmem.h>
#include <shmem/device.h>
#include <shmem/launch.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "gpu_check.h"

#define BLOCKS 4
#define THREADS 128
#define T_ALL (BLOCKS * THREADS) /* threads of a launch */
#define WARPS (T_ALL / 32)

enum { THREAD = 0, WARP = 1, BLOCK = 2 };
static const char *const scope_names[] = {"thread", "warp", "block"};

/* A PE's byte pattern: differs between PEs and along the buffer. */
static __host__ __device__ unsigned char pat(int pe, size_t i) {
    return (unsigned char)((pe + 1) * 37 + i * 11 + (i >> 8) * 3);
}
static __device__ int64_t wval(int pe, int t) { return (int64_t)pe * 1000003 + t * 7 + 1; }

static bool coop = false;

/* The type itself, in a context where a template argument is not deduced. */
template <typename T>
struct same_ {
    typedef T type;
};
/* Launches `kernel` on `s` as `blocks` x `threads`, cooperatively where the GPU can. */
template <typename... A>
static void launch(void (*kernel)(A...), int blocks, int threads, cudaStream_t s,
                   typename same_<A>::type... args) {
    void *argv[] = {(void *)&args...};
    if (coop) {
        CUDA_OK(cudaLaunchCooperativeKernel((const void *)kernel, dim3(blocks), dim3(threads), argv,
                                            0, s));
    } else {
        CUDA_OK(cudaLaunchKernel((const void *)kernel, dim3(blocks), dim3(threads), argv, 0, s));
    }
}

/* ---- rma ---------------------------------------------------------------------------------- */

#define RMA_BYTES (256 * 1024)

struct rma_args {
    unsigned char *src, *dst, *nbi; /* symmetric, RMA_BYTES each */
    unsigned char *back, *back_nbi; /* GPU memory of this PE only (cudaMalloc) */
    int64_t *words;                 /* symmetric, T_ALL */
    float *floats;                  /* symmetric, T_ALL */
    uint16_t *shorts;               /* symmetric, T_ALL */
};

/* The calling group: its number g among G groups, the caller's rank in it and its size. */
struct group {
    uint32_t g, G, rank, size;
};
template <int S>
static __device__ group my_group(void) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x, all = gridDim.x * blockDim.x;
    if (S == THREAD) return group{t, all, 0, 1};
    if (S == WARP) return group{t / 32, all / 32, t % 32, 32};
    return group{blockIdx.x, gridDim.x, threadIdx.x, blockDim.x};
}
/* Group g's span: odd offsets and lengths, 16 untouched bytes at least between two spans. */
template <int S>
static __host__ __device__ size_t span_base(void) {
    return S == THREAD ? 24 : S == WARP ? 1000 : 40000;
}
template <int S>
static __host__ __device__ size_t span_off(uint32_t g) {
    return (size_t)g * (span_base<S>() + 16) + g % 7;
}
template <int S>
static __host__ __device__ size_t span_len(uint32_t g) {
    return span_base<S>() + g % 5;
}

/* Put and get at scope S; `how` picks the form: 0 blocking, 1 _nbi, 2 the typed uint8 form. */
template <int S>
static __device__ void put_(unsigned char *d, const unsigned char *s, size_t n, int pe, int how) {
    if (S == THREAD) {
        if (how == 0) aclshmem_putmem(d, s, n, pe);
        if (how == 1) aclshmem_putmem_nbi(d, s, n, pe);
        if (how == 2) aclshmem_put_uint8_mem(d, s, n, pe);
    } else if (S == WARP) {
        if (how == 0) aclshmemx_putmem_warp(d, s, n, pe);
        if (how == 1) aclshmemx_putmem_nbi_warp(d, s, n, pe);
        if (how == 2) aclshmemx_put_uint8_mem_warp(d, s, n, pe);
    } else {
        if (how == 0) aclshmemx_putmem_block(d, s, n, pe);
        if (how == 1) aclshmemx_putmem_nbi_block(d, s, n, pe);
        if (how == 2) aclshmemx_put_uint8_mem_block(d, s, n, pe);
    }
}
template <int S>
static __device__ void get_(unsigned char *d, const unsigned char *s, size_t n, int pe, int how) {
    if (S == THREAD) {
        if (how == 0) aclshmem_getmem(d, s, n, pe);
        if (how == 1) aclshmem_getmem_nbi(d, s, n, pe);
        if (how == 2) aclshmem_get_uint8_mem_nbi(d, s, n, pe);
    } else if (S == WARP) {
        if (how == 0) aclshmemx_getmem_warp(d, s, n, pe);
        if (how == 1) aclshmemx_getmem_nbi_warp(d, s, n, pe);
        if (how == 2) aclshmemx_get_uint8_mem_warp(d, s, n, pe);
    } else {
        if (how == 0) aclshmemx_getmem_block(d, s, n, pe);
        if (how == 1) aclshmemx_getmem_nbi_block(d, s, n, pe);
        if (how == 2) aclshmemx_get_uint8_mem_nbi_block(d, s, n, pe);
    }
}

/* Every group puts its span of `src` into the right neighbour's `dst` (the form by group) and
 * `nbi` (_nbi, then quiet); every thread puts its words with p. */
template <int S>
__global__ void k_rma_put(const void *job, rma_args a, gpu_failures *f) {
    shmemx_cuda_set_job(job);
    (void)f;
    int me = aclshmem_my_pe(), n = aclshmem_n_pes(), right = (me + 1) % n;
    group gr = my_group<S>();
    size_t off = span_off<S>(gr.g), len = span_len<S>(gr.g);
    put_<S>(a.dst + off, a.src + off, len, right, (int)(gr.g % 3));
    put_<S>(a.nbi + off, a.src + off, len, right, 1);
    aclshmem_quiet();
    int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    aclshmem_int64_p(&a.words[t], wval(me, t), right);
    aclshmem_float_p(&a.floats[t], (float)wval(me, t) * 0.5f, right);
    aclshmem_uint16_p(&a.shorts[t], (uint16_t)wval(me, t), right);
}

/* Every group checks what its left neighbour put into its span (and that the bytes after it are
 * untouched), gets the neighbour's span of `src` back into local memory (blocking, _nbi and
 * quiet) and checks it; every thread checks its words and g's what it put on the right. */
template <int S>
__global__ void k_rma_check(const void *job, rma_args a, gpu_failures *f) {
    shmemx_cuda_set_job(job);
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    group gr = my_group<S>();
    size_t off = span_off<S>(gr.g), len = span_len<S>(gr.g);
    for (size_t i = gr.rank; i < len; i += gr.size) {
        GPU_CHECK(f, a.dst[off + i] == pat(left, off + i), a.dst[off + i], pat(left, off + i));
        GPU_CHECK(f, a.nbi[off + i] == pat(left, off + i), a.nbi[off + i], pat(left, off + i));
    }
    for (size_t i = off + len + gr.rank; i < span_off<S>(gr.g + 1); i += gr.size) {
        GPU_CHECK(f, a.dst[i] == 0, a.dst[i], 0);
        GPU_CHECK(f, a.nbi[i] == 0, a.nbi[i], 0);
    }
    get_<S>(a.back + off, a.src + off, len, left, (int)(gr.g % 3));
    get_<S>(a.back_nbi + off, a.src + off, len, left, 1);
    aclshmem_quiet();
    for (size_t i = gr.rank; i < len; i += gr.size) {
        GPU_CHECK(f, a.back[off + i] == pat(left, off + i), a.back[off + i], pat(left, off + i));
        GPU_CHECK(f, a.back_nbi[off + i] == pat(left, off + i), a.back_nbi[off + i],
                  pat(left, off + i));
    }
    int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    GPU_CHECK(f, a.words[t] == wval(left, t), a.words[t], wval(left, t));
    GPU_CHECK(f, a.floats[t] == (float)wval(left, t) * 0.5f, (long long)a.floats[t],
              (long long)((float)wval(left, t) * 0.5f));
    GPU_CHECK(f, a.shorts[t] == (uint16_t)wval(left, t), a.shorts[t], (uint16_t)wval(left, t));
    int64_t there = aclshmem_int64_g(&a.words[t], right);
    GPU_CHECK(f, there == wval(me, t), there, wval(me, t));
    float fthere = aclshmem_float_g(&a.floats[t], right);
    GPU_CHECK(f, fthere == (float)wval(me, t) * 0.5f, (long long)fthere,
              (long long)((float)wval(me, t) * 0.5f));
    uint16_t sthere = aclshmem_uint16_g(&a.shorts[t], right);
    GPU_CHECK(f, sthere == (uint16_t)wval(me, t), sthere, (uint16_t)wval(me, t));
}

template <int S>
static void run_rma(const void *job, rma_args a, gpu_failures *f, cudaStream_t s) {
    CUDA_OK(cudaMemset(a.dst, 0, RMA_BYTES));
    CUDA_OK(cudaMemset(a.nbi, 0, RMA_BYTES));
    CUDA_OK(cudaMemset(a.back, 0, RMA_BYTES));
    CUDA_OK(cudaMemset(a.back_nbi, 0, RMA_BYTES));
    CUDA_OK(cudaMemset(a.words, 0, T_ALL * sizeof(int64_t)));
    CUDA_OK(cudaMemset(a.floats, 0, T_ALL * sizeof(float)));
    CUDA_OK(cudaMemset(a.shorts, 0, T_ALL * sizeof(uint16_t)));
    CUDA_OK(cudaMemset(f, 0, sizeof *f));
    GPU_SETTLE();
    shmem_barrier_all(); /* every PE's buffers are clear before any PE puts */
    launch(k_rma_put<S>, BLOCKS, THREADS, s, job, a, f);
    GPU_FINISH(s, scope_names[S], f);
    shmem_barrier_all(); /* every PE's puts are done before any PE checks */
    launch(k_rma_check<S>, BLOCKS, THREADS, s, job, a, f);
    GPU_FINISH(s, scope_names[S], f);
    /* The host's view of one span, through the CUDA runtime rather than the kernel. */
    int me = shmem_my_pe(), n = shmem_n_pes(), left = (me + n - 1) % n;
    size_t off = span_off<S>(1), len = span_len<S>(1);
    std::vector<unsigned char> got(len);
    CUDA_OK(cudaMemcpy(got.data(), a.dst + off, len, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < len; i++) {
        CHECK(got[i] == pat(left, off + i), "rma.%s: dst[%zu] = %d, want %d", scope_names[S],
              off + i, got[i], pat(left, off + i));
    }
    shmem_barrier_all(); /* every PE has checked before the next case clears */
    if (me == 0) printf("kernels: rma.%s ok\n", scope_names[S]);
}

/* ---- signals ------------------------------------------------------------------------------ */

#define MSG 6000 /* per block */
#define WMSG 700 /* per warp */
#define TMSG 333 /* per thread-scope message */

struct sig_args {
    const unsigned char *src; /* symmetric: this PE's pattern */
    unsigned char *msg;       /* symmetric: BLOCKS * MSG */
    unsigned char *wmsg;      /* symmetric: WARPS * WMSG */
    unsigned char *tmsg;      /* symmetric: 3 * TMSG */
    int32_t *sig;             /* symmetric: [0] block ADD, [1] SET, [2] signal_op ADD on PE 0,
                                 [3] _nbi ADD */
    int32_t *wsig;            /* symmetric: WARPS, warp SET */
    uint64_t *sig64;          /* symmetric: [0] SET, [1] signal_op_u64 ADD on PE 0, [2] block
                                 SET */
};

__global__ void k_signals(const void *job, sig_args a, gpu_failures *f) {
    shmemx_cuda_set_job(job);
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    int b = (int)blockIdx.x, nb = (int)gridDim.x;
    int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), w = t / 32, lane = t % 32;

    /* Block scope, ADD: the right neighbour's counter reaches nb once every block's data is. */
    aclshmemx_putmem_signal_block(a.msg + (size_t)b * MSG, a.src + (size_t)b * MSG, MSG, &a.sig[0],
                                  1, ACLSHMEM_SIGNAL_ADD, right);
    /* Block scope, uint64 SET: block 0 only, a value naming the sender. */
    if (b == 0) {
        aclshmemx_putmem_signal_u64_block(a.tmsg + 2 * TMSG, a.src + 17, TMSG, &a.sig64[2],
                                          (uint64_t)(me + 1) << 33, ACLSHMEM_SIGNAL_SET, right);
    }
    /* Warp scope, SET: a value naming the sender and the warp. */
    aclshmemx_putmem_signal_warp(a.wmsg + (size_t)w * WMSG, a.src + (size_t)w * WMSG + 1, WMSG,
                                 &a.wsig[w], (me + 1) * 1000 + w, ACLSHMEM_SIGNAL_SET, right);
    /* Thread scope: SET int32 and uint64, _nbi ADD with quiet, signal_op onto PE 0. */
    if (t == 0) {
        aclshmem_putmem_signal(a.tmsg, a.src + 5, TMSG, &a.sig[1], 42 + me, ACLSHMEM_SIGNAL_SET,
                               right);
        aclshmemx_putmem_signal_u64(a.tmsg + TMSG, a.src + 9, TMSG, &a.sig64[0],
                                    (1ull << 40) + (uint64_t)me, ACLSHMEM_SIGNAL_SET, right);
        aclshmem_putmem_signal_nbi(a.msg + (size_t)BLOCKS * MSG, a.src + 13, TMSG, &a.sig[3], 3,
                                   ACLSHMEM_SIGNAL_ADD, right);
        aclshmem_quiet();
        aclshmemx_signal_op(&a.sig[2], me + 1, ACLSHMEM_SIGNAL_ADD, 0);
        aclshmemx_signal_op_u64(&a.sig64[1], (uint64_t)(me + 1) << 20, ACLSHMEM_SIGNAL_ADD, 0);
    }

    /* What the left neighbour sent, each check after its signal. */
    if (threadIdx.x == 0) {
        int32_t v = aclshmem_signal_wait_until(&a.sig[0], ACLSHMEM_CMP_GE, nb);
        GPU_CHECK(f, v == nb, v, nb);
    }
    __syncthreads();
    for (size_t i = threadIdx.x; i < MSG; i += blockDim.x) {
        size_t at = (size_t)b * MSG + i;
        GPU_CHECK(f, a.msg[at] == pat(left, at), a.msg[at], pat(left, at));
    }
    if (lane == 0) {
        int32_t want = (left + 1) * 1000 + w;
        int32_t v = aclshmem_signal_wait_until(&a.wsig[w], ACLSHMEM_CMP_EQ, want);
        GPU_CHECK(f, v == want, v, want);
    }
    __syncwarp();
    for (size_t i = (size_t)lane; i < WMSG; i += 32) {
        size_t at = (size_t)w * WMSG + i;
        GPU_CHECK(f, a.wmsg[at] == pat(left, at + 1), a.wmsg[at], pat(left, at + 1));
    }
    if (t == 0) {
        aclshmem_signal_wait_until(&a.sig[1], ACLSHMEM_CMP_EQ, 42 + left);
        for (size_t i = 0; i < TMSG; i++) {
            GPU_CHECK(f, a.tmsg[i] == pat(left, 5 + i), a.tmsg[i], pat(left, 5 + i));
        }
        uint64_t want64 = (1ull << 40) + (uint64_t)left;
        uint64_t v64 = aclshmemx_signal_wait_until_u64(&a.sig64[0], ACLSHMEM_CMP_EQ, want64);
        GPU_CHECK(f, v64 == want64, v64, want64);
        for (size_t i = 0; i < TMSG; i++) {
            GPU_CHECK(f, a.tmsg[TMSG + i] == pat(left, 9 + i), a.tmsg[TMSG + i], pat(left, 9 + i));
        }
        want64 = (uint64_t)(left + 1) << 33;
        aclshmemx_signal_wait_until_u64(&a.sig64[2], ACLSHMEM_CMP_EQ, want64);
        for (size_t i = 0; i < TMSG; i++) {
            GPU_CHECK(f, a.tmsg[2 * TMSG + i] == pat(left, 17 + i), a.tmsg[2 * TMSG + i],
                      pat(left, 17 + i));
        }
        int32_t v = aclshmem_signal_wait_until(&a.sig[3], ACLSHMEM_CMP_GE, 3);
        GPU_CHECK(f, v == 3, v, 3);
        const unsigned char *nbi = a.msg + (size_t)BLOCKS * MSG;
        for (size_t i = 0; i < TMSG; i++) {
            GPU_CHECK(f, nbi[i] == pat(left, 13 + i), nbi[i], pat(left, 13 + i));
        }
        if (me == 0) {
            int32_t sum = n * (n + 1) / 2;
            v = aclshmem_signal_wait_until(&a.sig[2], ACLSHMEM_CMP_GE, sum);
            GPU_CHECK(f, v == sum, v, sum);
            uint64_t sum64 = (uint64_t)sum << 20;
            v64 = aclshmemx_signal_wait_until_u64(&a.sig64[1], ACLSHMEM_CMP_GE, sum64);
            GPU_CHECK(f, v64 == sum64, v64, sum64);
            GPU_CHECK(f, aclshmemx_signal_fetch_u64(&a.sig64[1]) == sum64,
                      aclshmemx_signal_fetch_u64(&a.sig64[1]), sum64);
        }
    }
}

static void run_signals(const void *job, sig_args a, gpu_failures *f, cudaStream_t s) {
    CUDA_OK(cudaMemset(f, 0, sizeof *f));
    GPU_SETTLE();
    shmem_barrier_all();
    launch(k_signals, BLOCKS, THREADS, s, job, a, f);
    GPU_FINISH(s, "signals", f);
    int32_t sig[4];
    CUDA_OK(cudaMemcpy(sig, a.sig, sizeof sig, cudaMemcpyDeviceToHost));
    CHECK(sig[0] == BLOCKS && sig[3] == 3, "signals: the host reads %d and %d, want %d and 3",
          sig[0], sig[3], BLOCKS);
    shmem_barrier_all();
    if (shmem_my_pe() == 0) printf("kernels: signals ok\n");
}

/* ---- amos --------------------------------------------------------------------------------- */

struct amo_args {
    int64_t *counter; /* symmetric: [0] fetch_add target (PE 0) */
    int32_t *seen;    /* symmetric: n_pes * T_ALL, on PE 0: how often each value was fetched */
    uint32_t *incs;   /* symmetric: inc target (PE 0) */
    int32_t *lock;    /* symmetric: compare_swap target (PE 0) */
    int32_t *olds;    /* symmetric: n_pes, on PE 0: what each PE's compare_swap found */
    int64_t *swapped; /* symmetric: swap target (PE 0) */
    int64_t *swaps;   /* symmetric: n_pes, on PE 0: what each PE's swap found */
    uint64_t *bits;   /* symmetric: [0] fetch_or, [1] fetch_xor, [2] fetch_and (PE 0) */
    int64_t *box;     /* symmetric: n_pes, set by the left neighbour */
};

__global__ void k_amos(const void *job, amo_args a, gpu_failures *f) {
    shmemx_cuda_set_job(job);
    int me = aclshmem_my_pe(), n = aclshmem_n_pes(), right = (me + 1) % n;
    int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    int64_t v = aclshmem_int64_atomic_fetch_add(a.counter, 1, 0);
    GPU_CHECK(f, v >= 0 && v < (int64_t)n * T_ALL, v, (int64_t)n * T_ALL);
    if (v >= 0 && v < (int64_t)n * T_ALL) aclshmem_int32_atomic_add(&a.seen[v], 1, 0);
    if (t % 2) {
        aclshmem_uint32_atomic_inc(a.incs, 0);
    } else {
        uint32_t before = aclshmem_uint32_atomic_fetch_inc(a.incs, 0);
        GPU_CHECK(f, before < (uint32_t)(n * T_ALL), before, n * T_ALL);
    }
    if (t == 0) {
        int32_t old = aclshmem_int32_atomic_compare_swap(a.lock, 0, me + 1, 0);
        aclshmem_int32_p(&a.olds[me], old, 0);
        int64_t prev = aclshmem_int64_atomic_swap(a.swapped, me + 1, 0);
        aclshmem_int64_p(&a.swaps[me], prev, 0);
        aclshmem_uint64_atomic_fetch_or(&a.bits[0], 1ull << me, 0);
        aclshmem_uint64_atomic_xor(&a.bits[1], 0x101ull << me, 0);
        aclshmem_uint64_atomic_and(&a.bits[2], ~(1ull << me), 0);
        aclshmem_int64_atomic_set(&a.box[me], 1000 + me, right);
        aclshmem_quiet();
    }
}

/* Every PE checks PE 0's words through the kernel-side AMOs and gets. */
__global__ void k_amos_check(const void *job, amo_args a, gpu_failures *f) {
    shmemx_cuda_set_job(job);
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    int t = (int)(blockIdx.x * blockDim.x + threadIdx.x), all = (int)(gridDim.x * blockDim.x);
    int64_t total = (int64_t)n * T_ALL;
    for (int64_t v = t; v < total; v += all) {
        int32_t times = aclshmem_int32_g(&a.seen[v], 0);
        GPU_CHECK(f, times == 1, times, 1);
    }
    if (t != 0) return;
    int64_t c = aclshmem_int64_atomic_fetch(a.counter, 0);
    GPU_CHECK(f, c == total, c, total);
    uint32_t incs = aclshmem_uint32_atomic_fetch(a.incs, 0);
    GPU_CHECK(f, incs == (uint32_t)total, incs, total);
    int32_t lock = aclshmem_int32_atomic_fetch(a.lock, 0);
    int winners = 0;
    for (int pe = 0; pe < n; pe++) {
        int32_t old = aclshmem_int32_g(&a.olds[pe], 0);
        if (old == 0) {
            winners++;
            GPU_CHECK(f, lock == pe + 1, lock, pe + 1);
        } else {
            GPU_CHECK(f, old == lock, old, lock);
        }
    }
    GPU_CHECK(f, winners == 1, winners, 1);
    /* The swaps' old values and the last value are 0, 1, ..., n, each once. */
    uint64_t found = 1ull << aclshmem_int64_atomic_fetch(a.swapped, 0);
    for (int pe = 0; pe < n; pe++) found |= 1ull << aclshmem_int64_g(&a.swaps[pe], 0);
    GPU_CHECK(f, found == (1ull << (n + 1)) - 1, found, (1ull << (n + 1)) - 1);
    uint64_t every = (1ull << n) - 1;
    uint64_t bits = aclshmem_uint64_atomic_fetch(&a.bits[0], 0);
    GPU_CHECK(f, bits == every, bits, every);
    bits = aclshmem_uint64_atomic_fetch(&a.bits[1], 0);
    GPU_CHECK(f, bits == every * 0x101ull, bits, every * 0x101ull);
    bits = aclshmem_uint64_atomic_fetch(&a.bits[2], 0);
    GPU_CHECK(f, bits == ~every, bits, ~every);
    int64_t mine = aclshmem_int64_atomic_fetch(&a.box[left], me);
    GPU_CHECK(f, mine == 1000 + left, mine, 1000 + left);
    int64_t theirs = aclshmem_int64_atomic_fetch(&a.box[me], right);
    GPU_CHECK(f, theirs == 1000 + me, theirs, 1000 + me);
}

static void run_amos(const void *job, amo_args a, gpu_failures *f, cudaStream_t s) {
    CUDA_OK(cudaMemset(f, 0, sizeof *f));
    if (shmem_my_pe() == 0) { /* fetch_and clears one bit per PE from all ones */
        uint64_t ones = ~0ull;
        CUDA_OK(cudaMemcpy(&a.bits[2], &ones, sizeof ones, cudaMemcpyHostToDevice));
    }
    GPU_SETTLE();
    shmem_barrier_all();
    launch(k_amos, BLOCKS, THREADS, s, job, a, f);
    GPU_FINISH(s, "amos", f);
    shmem_barrier_all(); /* every PE's AMOs are done before any PE checks */
    launch(k_amos_check, BLOCKS, THREADS, s, job, a, f);
    GPU_FINISH(s, "amos (check)", f);
    int64_t box = 0;
    int me = shmem_my_pe(), n = shmem_n_pes(), left = (me + n - 1) % n;
    CUDA_OK(cudaMemcpy(&box, &a.box[left], sizeof box, cudaMemcpyDeviceToHost));
    CHECK(box == 1000 + left, "amos: the host reads box[%d] = %lld", left, (long long)box);
    shmem_barrier_all();
    if (me == 0) printf("kernels: amos ok\n");
}

/* ---- order -------------------------------------------------------------------------------- */

#define ROUNDS 200
#define BLOB 256

struct order_args {
    const unsigned char *src; /* symmetric: this PE's pattern */
    int64_t *data;            /* symmetric: ROUNDS */
    unsigned char *blob;      /* symmetric: ROUNDS * BLOB */
    int32_t *flag;            /* symmetric: rounds delivered by the left neighbour */
};

/* Lane 0 of warp 0 sends ROUNDS rounds to the right neighbour, lane 0 of warp 1 receives the
 * left neighbour's as they come: even rounds a p, fence, p of the flag; odd rounds a put_nbi,
 * quiet, atomic_set of the flag. A flag must never be seen before its data. */
__global__ void k_order(const void *job, order_args a, gpu_failures *f) {
    shmemx_cuda_set_job(job);
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    if (threadIdx.x == 0) {
        for (int r = 0; r < ROUNDS; r++) {
            if (r % 2 == 0) {
                aclshmem_int64_p(&a.data[r], wval(me, r), right);
                aclshmem_fence();
                aclshmem_int32_p(a.flag, r + 1, right);
            } else {
                aclshmem_putmem_nbi(a.blob + (size_t)r * BLOB, a.src + r, BLOB, right);
                aclshmem_quiet();
                aclshmem_int32_atomic_set(a.flag, r + 1, right);
            }
        }
    } else if (threadIdx.x == 32) {
        for (int r = 0; r < ROUNDS; r++) {
            aclshmem_int32_wait_until(a.flag, ACLSHMEM_CMP_GE, r + 1);
            if (r % 2 == 0) {
                int64_t got = SHMEM_ARCH_LOAD_ACQUIRE(&a.data[r]);
                GPU_CHECK(f, got == wval(left, r), got, wval(left, r));
            } else {
                for (size_t i = 0; i < BLOB; i++) {
                    unsigned char got = SHMEM_ARCH_LOAD_ELEM(&a.blob[(size_t)r * BLOB + i]);
                    GPU_CHECK(f, got == pat(left, r + i), got, pat(left, r + i));
                }
            }
        }
    }
}

static void run_order(const void *job, order_args a, gpu_failures *f, cudaStream_t s) {
    CUDA_OK(cudaMemset(f, 0, sizeof *f));
    GPU_SETTLE();
    shmem_barrier_all();
    launch(k_order, 1, 64, s, job, a, f);
    GPU_FINISH(s, "order", f);
    shmem_barrier_all();
    if (shmem_my_pe() == 0) printf("kernels: order ok\n");
}

/* ---- barrier_all -------------------------------------------------------------------------- */

#define BARRIER_ROUNDS 8

struct barrier_args {
    int64_t *slots; /* symmetric: 2 * T_ALL, written by the left neighbour (double-buffered) */
};

static __device__ int64_t bval(int round, int pe, int t) {
    return ((int64_t)round << 40) + ((int64_t)pe << 20) + t;
}

__global__ void k_barrier_all(const void *job, barrier_args a, gpu_failures *f) {
    shmemx_cuda_set_job(job);
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    for (int r = 0; r < BARRIER_ROUNDS; r++) {
        int64_t *slot = a.slots + (size_t)(r % 2) * T_ALL;
        aclshmem_int64_p(&slot[t], bval(r, me, t), right);
        if (r % 2 == 0) {
            aclshmem_barrier_all();
        } else {
            aclshmem_quiet();
            aclshmem_sync_all();
        }
        int64_t got = SHMEM_ARCH_LOAD_ELEM(&slot[t]);
        GPU_CHECK(f, got == bval(r, left, t), got, bval(r, left, t));
        /* A neighbour's value from another block: every block of this PE is past it too. */
        int u = (t + THREADS) % T_ALL;
        got = SHMEM_ARCH_LOAD_ELEM(&slot[u]);
        GPU_CHECK(f, got == bval(r, left, u), got, bval(r, left, u));
    }
}

static void run_barrier_all(const void *job, barrier_args a, gpu_failures *f, cudaStream_t s) {
    CUDA_OK(cudaMemset(f, 0, sizeof *f));
    GPU_SETTLE();
    shmem_barrier_all();
    launch(k_barrier_all, BLOCKS, THREADS, s, job, a, f);
    GPU_FINISH(s, "barrier_all", f);
    shmem_barrier_all();
    if (shmem_my_pe() == 0) printf("kernels: barrier_all ok\n");
}

/* ---- teams -------------------------------------------------------------------------------- */

#define MAX_PES 64

struct team_args {
    aclshmem_team_t team; /* the team's number in kernels (shmemx_team_kernel_id) */
    int64_t *slots;       /* symmetric: 2 * T_ALL, written by the previous member */
    int *answers;         /* GPU memory: my_pe, n_pes, world's my_pe, world's n_pes, an invalid
                             team's n_pes, my world number from the team, then the team's
                             members' world numbers */
};

/* Thread 0 answers the queries; then rounds of p to the next member and the team's barrier
 * (sync after quiet on odd rounds), every thread checking what the previous member put. */
__global__ void k_team(const void *job, team_args a, gpu_failures *f) {
    shmemx_cuda_set_job(job);
    int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    int rank = aclshmem_team_my_pe(a.team), size = aclshmem_team_n_pes(a.team);
    if (t == 0) {
        a.answers[0] = rank;
        a.answers[1] = size;
        a.answers[2] = aclshmem_team_my_pe(ACLSHMEM_TEAM_WORLD);
        a.answers[3] = aclshmem_team_n_pes(ACLSHMEM_TEAM_WORLD);
        a.answers[4] = aclshmem_team_n_pes(1000);
        a.answers[5] = aclshmem_team_translate_pe(a.team, rank, ACLSHMEM_TEAM_WORLD);
        for (int i = 0; i < size && i < MAX_PES; i++) {
            a.answers[6 + i] = aclshmem_team_translate_pe(a.team, i, ACLSHMEM_TEAM_WORLD);
        }
    }
    if (rank < 0 || size < 1) return; /* checked on the host */
    int next = aclshmem_team_translate_pe(a.team, (rank + 1) % size, ACLSHMEM_TEAM_WORLD);
    int prev = aclshmem_team_translate_pe(a.team, (rank + size - 1) % size, ACLSHMEM_TEAM_WORLD);
    for (int r = 0; r < BARRIER_ROUNDS; r++) {
        int64_t *slot = a.slots + (size_t)(r % 2) * T_ALL;
        aclshmem_int64_p(&slot[t], bval(r, aclshmem_my_pe(), t), next);
        if (r % 2 == 0) {
            aclshmem_barrier(a.team);
        } else {
            aclshmem_quiet();
            aclshmem_sync(a.team);
        }
        int64_t got = SHMEM_ARCH_LOAD_ELEM(&slot[t]);
        GPU_CHECK(f, got == bval(r, prev, t), got, bval(r, prev, t));
    }
}

/* Splits [start, start + stride, ...] off the world, runs k_team on its members and compares
 * the kernel's answers with the host's. */
static void run_team(const char *name, int start, int stride, int size, int64_t *slots,
                     gpu_failures *f, cudaStream_t s) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_team_t team = SHMEM_TEAM_INVALID;
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, start, stride, size, NULL, 0, &team);
    CHECK(rc == 0, "teams.%s: shmem_team_split_strided(%d, %d, %d) = %d", name, start, stride, size,
          rc);
    CUDA_OK(cudaMemset(f, 0, sizeof *f));
    CUDA_OK(cudaMemset(slots, 0, 2 * T_ALL * sizeof(int64_t)));
    GPU_SETTLE();
    shmem_barrier_all();
    if (team != SHMEM_TEAM_INVALID) {
        /* The device copy of the job state is refreshed by this call: it holds the new team. */
        const void *job = shmemx_job_state_device();
        CHECK(job != NULL, "teams.%s: shmemx_job_state_device() is NULL", name);
        team_args a;
        a.team = shmemx_team_kernel_id(team);
        CHECK(a.team > 0, "teams.%s: shmemx_team_kernel_id = %d", name, a.team);
        a.slots = slots;
        CUDA_OK(cudaMalloc((void **)&a.answers, (6 + MAX_PES) * sizeof(int)));
        CUDA_OK(cudaMemset(a.answers, 0xff, (6 + MAX_PES) * sizeof(int)));
        GPU_SETTLE();
        launch(k_team, BLOCKS, THREADS, s, job, a, f);
        GPU_FINISH(s, name, f);
        int got[6 + MAX_PES];
        CUDA_OK(cudaMemcpy(got, a.answers, sizeof got, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaFree(a.answers));
        int host_rank = shmem_team_my_pe(team), host_size = shmem_team_n_pes(team);
        CHECK(got[0] == host_rank && got[1] == host_size,
              "teams.%s: the kernel says rank %d of %d, the host %d of %d", name, got[0], got[1],
              host_rank, host_size);
        CHECK(got[2] == me && got[3] == n, "teams.%s: the kernel's world is %d of %d", name, got[2],
              got[3]);
        CHECK(got[4] == -1, "teams.%s: an invalid team has %d PEs in the kernel", name, got[4]);
        CHECK(got[5] == me, "teams.%s: the kernel translates rank %d to PE %d", name, got[0],
              got[5]);
        for (int i = 0; i < host_size && i < MAX_PES; i++) {
            int want = shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
            CHECK(got[6 + i] == want, "teams.%s: member %d is PE %d in the kernel, %d on the host",
                  name, i, got[6 + i], want);
        }
    }
    shmem_barrier_all();
    if (team != SHMEM_TEAM_INVALID) shmem_team_destroy(team);
    if (me == 0) printf("kernels: teams.%s ok\n", name);
}

/* ---- misuse ------------------------------------------------------------------------------- */

__global__ void k_misuse(const void *job, int32_t *word) {
    shmemx_cuda_set_job(job);
    aclshmem_int32_p(word, 1, aclshmem_n_pes()); /* ends the kernel: no such PE */
}

/* The launch must fail (gpu_sync ends the job with the line, after the device's own). */
static void run_misuse(const void *job, cudaStream_t s) {
    int32_t *word = (int32_t *)shmem_calloc(1, sizeof(int32_t));
    CHECK(word != NULL, "shmem_calloc (misuse)");
    launch(k_misuse, 1, 1, s, job, word);
    GPU_SYNC(s, "misuse");
    CHECK(false, "misuse: a put to PE %d did not end the kernel", shmem_n_pes());
}

/* ---- main --------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    shmem_init();
    int me = gpu_pe = shmem_my_pe(), n = shmem_n_pes();
    CHECK(n <= MAX_PES, "at most %d PEs", MAX_PES);
    const void *job = shmemx_job_state_device();
    CHECK(job != NULL, "the heap is not in GPU memory: run under shmemrun with SHMEM_DEVICE=cuda");
    int dev = 0, can = 0;
    CUDA_OK(cudaGetDevice(&dev));
    CUDA_OK(cudaDeviceGetAttribute(&can, cudaDevAttrCooperativeLaunch, dev));
    coop = can != 0;
    if (me == 0) {
        printf("kernels: %d PEs, GPU %d, %s launches, %d blocks of %d threads\n", n, dev,
               coop ? "cooperative" : "plain", BLOCKS, THREADS);
    }
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (argc > 1 && strcmp(argv[1], "misuse") == 0) run_misuse(job, s);
    gpu_failures *f = gpu_failures_new();

    unsigned char *src = (unsigned char *)shmem_malloc(RMA_BYTES);
    CHECK(src != NULL, "shmem_malloc(%d)", RMA_BYTES);
    std::vector<unsigned char> host(RMA_BYTES);
    for (size_t i = 0; i < host.size(); i++) host[i] = pat(me, i);
    CUDA_OK(cudaMemcpy(src, host.data(), RMA_BYTES, cudaMemcpyHostToDevice));
    GPU_SETTLE();

    rma_args ra;
    ra.src = src;
    ra.dst = (unsigned char *)shmem_calloc(RMA_BYTES, 1);
    ra.nbi = (unsigned char *)shmem_calloc(RMA_BYTES, 1);
    ra.words = (int64_t *)shmem_calloc(T_ALL, sizeof(int64_t));
    ra.floats = (float *)shmem_calloc(T_ALL, sizeof(float));
    ra.shorts = (uint16_t *)shmem_calloc(T_ALL, sizeof(uint16_t));
    CHECK(ra.dst && ra.nbi && ra.words && ra.floats && ra.shorts, "shmem_calloc (rma)");
    CUDA_OK(cudaMalloc((void **)&ra.back, RMA_BYTES));
    CUDA_OK(cudaMalloc((void **)&ra.back_nbi, RMA_BYTES));
    run_rma<THREAD>(job, ra, f, s);
    run_rma<WARP>(job, ra, f, s);
    run_rma<BLOCK>(job, ra, f, s);

    sig_args sa;
    sa.src = src;
    sa.msg = (unsigned char *)shmem_calloc(BLOCKS * MSG + TMSG, 1);
    sa.wmsg = (unsigned char *)shmem_calloc(WARPS * WMSG, 1);
    sa.tmsg = (unsigned char *)shmem_calloc(3 * TMSG, 1);
    sa.sig = (int32_t *)shmem_calloc(4, sizeof(int32_t));
    sa.wsig = (int32_t *)shmem_calloc(WARPS, sizeof(int32_t));
    sa.sig64 = (uint64_t *)shmem_calloc(3, sizeof(uint64_t));
    CHECK(sa.msg && sa.wmsg && sa.tmsg && sa.sig && sa.wsig && sa.sig64, "shmem_calloc (signals)");
    run_signals(job, sa, f, s);

    amo_args aa;
    aa.counter = (int64_t *)shmem_calloc(1, sizeof(int64_t));
    aa.seen = (int32_t *)shmem_calloc((size_t)n * T_ALL, sizeof(int32_t));
    aa.incs = (uint32_t *)shmem_calloc(1, sizeof(uint32_t));
    aa.lock = (int32_t *)shmem_calloc(1, sizeof(int32_t));
    aa.olds = (int32_t *)shmem_calloc((size_t)n, sizeof(int32_t));
    aa.swapped = (int64_t *)shmem_calloc(1, sizeof(int64_t));
    aa.swaps = (int64_t *)shmem_calloc((size_t)n, sizeof(int64_t));
    aa.bits = (uint64_t *)shmem_calloc(3, sizeof(uint64_t));
    aa.box = (int64_t *)shmem_calloc((size_t)n, sizeof(int64_t));
    CHECK(aa.counter && aa.seen && aa.incs && aa.lock && aa.olds && aa.swapped && aa.swaps &&
              aa.bits && aa.box,
          "shmem_calloc (amos)");
    run_amos(job, aa, f, s);

    order_args oa;
    oa.src = src;
    oa.data = (int64_t *)shmem_calloc(ROUNDS, sizeof(int64_t));
    oa.blob = (unsigned char *)shmem_calloc((size_t)ROUNDS * BLOB, 1);
    oa.flag = (int32_t *)shmem_calloc(1, sizeof(int32_t));
    CHECK(oa.data && oa.blob && oa.flag, "shmem_calloc (order)");
    run_order(job, oa, f, s);

    barrier_args ba;
    ba.slots = (int64_t *)shmem_calloc(2 * T_ALL, sizeof(int64_t));
    CHECK(ba.slots != NULL, "shmem_calloc (barrier_all)");
    run_barrier_all(job, ba, f, s);

    run_team("all", 0, 1, n, ba.slots, f, s);
    run_team("even", 0, 2, (n + 1) / 2, ba.slots, f, s);

    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaFree(f));
    CUDA_OK(cudaFree(ra.back));
    CUDA_OK(cudaFree(ra.back_nbi));
    shmem_barrier_all();
    if (me == 0) printf("kernels: %d PEs checked\n", n);
    shmem_finalize();
    return 0;
}
