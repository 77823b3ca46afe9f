/* on_stream.cu: CANN's on-stream calls on CUDA streams (cudaStream_t) over a GPU, under shmemrun
 * with SHMEM_DEVICE=cuda and NVIDIA's driver. Every PE checks with cudaMemcpy what its left
 * neighbour's streams wrote into its heap, and that nothing enqueued on a stream happens before
 * the stream reaches it:
 *   1. a put behind a kernel that holds the stream (a gate the host opens) is not there before
 *      the gate opens, and is after;
 *   2. signal SETs on a stream land in order on the right neighbour;
 *   3. a put behind signal_wait_until_on_stream waits for the signal, for each row of `waits`
 *      (an update by the left neighbour's stream that does not satisfy the comparison first,
 *      then one that does): EQ and GE (CUDA's stream memory operations), NE, GT, LT, LE and the
 *      signal ADD (the library's stream kernels);
 *   4. put, barrier_all_on_stream, then get on the stream: the get sees the left neighbour's
 *      put; a get from the right neighbour into memory from cudaMalloc;
 *   5. barrier_on_stream(team) and quiet_on_stream complete on the stream. */
#include <aclshmem.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <vector>

#include "gpu_check.h"

#define N (64 * 1024 + 3)

static unsigned char pattern(int pe, size_t i) { return (unsigned char)(pe * 31 + i * 7 + 1); }

/* Whether the `n` bytes of GPU memory at `dev` are PE `pe`'s pattern (or all zero, pe < 0). */
static bool holds(const void *dev, size_t n, int pe) {
    std::vector<unsigned char> got(n);
    CUDA_OK(cudaMemcpy(got.data(), dev, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) {
        if (got[i] != (pe < 0 ? 0 : pattern(pe, i))) return false;
    }
    return true;
}

/* Holds its stream until the host opens `*gate` (host memory mapped for the GPU), at most 30 s
 * (then it records a failure and returns). */
__global__ void k_gate(volatile int *gate, gpu_failures *f) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        if (*gate != 0) return;
        __nanosleep(10000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < 30ull * 1000 * 1000 * 1000);
    GPU_CHECK(f, *gate != 0, 0, 1);
}

/* A wait on a stream: the signal starts at `init`; the left neighbour's stream updates it with
 * `op` and `before` (after which `cmp target` must not hold), then with `op` and `after` (after
 * which it must). One row per comparison and update the library runs on a CUDA stream. */
struct wait_row {
    const char *name;
    int cmp;
    int32_t target, init;
    int op;
    int32_t before, after;
};
static const wait_row waits[] = {
    {"EQ", ACLSHMEM_CMP_EQ, 7, 0, ACLSHMEM_SIGNAL_SET, 6, 7},
    {"GE", ACLSHMEM_CMP_GE, 3, 0, ACLSHMEM_SIGNAL_SET, 2, 5},
    /* The library's stream kernels: the other comparisons, and the signal ADD. */
    {"NE", ACLSHMEM_CMP_NE, 0, 0, ACLSHMEM_SIGNAL_SET, 0, 9},
    {"GT", ACLSHMEM_CMP_GT, 3, 0, ACLSHMEM_SIGNAL_SET, 3, 4},
    {"LT", ACLSHMEM_CMP_LT, 3, 9, ACLSHMEM_SIGNAL_SET, 5, 2},
    {"LE", ACLSHMEM_CMP_LE, 3, 9, ACLSHMEM_SIGNAL_SET, 4, 3},
    {"GE+ADD", ACLSHMEM_CMP_GE, 6, 0, ACLSHMEM_SIGNAL_ADD, 2, 4},
    {"LT+ADD", ACLSHMEM_CMP_LT, 0, 0, ACLSHMEM_SIGNAL_ADD, 0, -1},
};
#define WAITS (sizeof waits / sizeof waits[0])

int main(void) {
    shmem_init();
    int me = gpu_pe = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;

    unsigned char *src = (unsigned char *)aclshmem_malloc(N);
    unsigned char *dst = (unsigned char *)aclshmem_calloc(1, N);
    unsigned char *dst3 = (unsigned char *)aclshmem_calloc(1, N);
    unsigned char *tmp = (unsigned char *)aclshmem_calloc(1, N);
    int32_t *sig = (int32_t *)aclshmem_calloc(1 + WAITS, sizeof(int32_t));
    CHECK(src && dst && dst3 && tmp && sig, "aclshmem_malloc failed");
    CHECK(aclshmem_ptr(dst, right) != NULL, "aclshmem_ptr gives no address for PE %d", right);
    unsigned char *local = NULL; /* GPU memory outside the heap */
    CUDA_OK(cudaMalloc((void **)&local, N));
    std::vector<unsigned char> mine(N);
    for (size_t i = 0; i < N; i++) mine[i] = pattern(me, i);
    CUDA_OK(cudaMemcpy(src, mine.data(), N, cudaMemcpyHostToDevice));
    GPU_SETTLE();

    cudaStream_t stream, waiting;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&waiting, cudaStreamNonBlocking));
    gpu_failures *f = gpu_failures_new();
    int *gate = NULL;
    CUDA_OK(cudaHostAlloc((void **)&gate, sizeof *gate, cudaHostAllocMapped));
    *gate = 0;
    int *gate_dev = NULL;
    CUDA_OK(cudaHostGetDevicePointer((void **)&gate_dev, gate, 0));
    shmem_barrier_all();

    /* 1. A put behind a held stream. */
    k_gate<<<1, 1, 0, stream>>>(gate_dev, f);
    CUDA_OK(cudaGetLastError());
    aclshmemx_putmem_on_stream(dst, src, N, right, stream);
    usleep(50000);
    shmem_barrier_all(); /* every PE's put is enqueued behind its gate */
    CHECK(holds(dst, N, -1), "PE %d's put landed before its stream reached it", left);
    shmem_barrier_all(); /* every PE has checked before any gate opens */
    __atomic_store_n(gate, 1, __ATOMIC_SEQ_CST);
    GPU_FINISH(stream, "the gate and the put behind it", f);
    shmem_barrier_all();
    CHECK(holds(dst, N, left), "PE %d's put on its stream is not here", left);
    if (me == 0) printf("on_stream: put behind a held stream ok\n");

    /* 2. Signal SETs on a stream, in order. */
    aclshmemx_signal_op_on_stream(&sig[0], 5, ACLSHMEM_SIGNAL_SET, right, stream);
    aclshmemx_signal_op_on_stream(&sig[0], 12, ACLSHMEM_SIGNAL_SET, right, stream);
    GPU_SYNC(stream, "signal SET on a stream");
    shmem_barrier_all();
    int32_t v = 0;
    CUDA_OK(cudaMemcpy(&v, &sig[0], sizeof v, cudaMemcpyDeviceToHost));
    CHECK(v == 12, "signal is %d, want 12 from PE %d's stream", v, left);
    if (me == 0) printf("on_stream: signal SET ok\n");

    /* 3. A put behind a signal wait on the stream `waiting`; the left neighbour's SETs come on
     * its `stream`. */
    for (size_t w = 0; w < WAITS; w++) {
        const wait_row &row = waits[w];
        int32_t *word = &sig[1 + w];
        CUDA_OK(cudaMemcpy(word, &row.init, sizeof row.init, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemset(dst, 0, N));
        GPU_SETTLE();
        shmem_barrier_all(); /* every PE's word and box are reset before any PE signals */
        aclshmemx_signal_wait_until_on_stream(word, row.cmp, row.target, waiting);
        aclshmemx_putmem_on_stream(dst, src, N, right, waiting);
        aclshmemx_signal_op_on_stream(word, row.before, row.op, right, stream);
        GPU_SYNC(stream, "a signal update on a stream");
        usleep(20000);
        shmem_barrier_all(); /* every PE's `before` is there */
        CHECK(holds(dst, N, -1), "wait %s: PE %d's put behind its wait for %d landed after %d",
              row.name, left, row.target, row.before);
        CHECK(cudaStreamQuery(waiting) == cudaErrorNotReady,
              "wait %s: the stream went past a wait for %d after %d", row.name, row.target,
              row.before);
        shmem_barrier_all(); /* every PE has checked before any `after` */
        aclshmemx_signal_op_on_stream(word, row.after, row.op, right, stream);
        GPU_SYNC(stream, "a signal update on a stream");
        GPU_SYNC(waiting, row.name);
        shmem_barrier_all();
        CHECK(holds(dst, N, left), "wait %s: PE %d's put behind its wait is not here", row.name,
              left);
        int32_t want =
            row.op == ACLSHMEM_SIGNAL_SET ? row.after : row.init + row.before + row.after;
        CUDA_OK(cudaMemcpy(&v, word, sizeof v, cudaMemcpyDeviceToHost));
        CHECK(v == want, "wait %s: the signal is %d, want %d", row.name, v, want);
        if (me == 0) printf("on_stream: put behind signal wait %s ok\n", row.name);
    }

    /* 4. Put, barrier on the stream, get on the stream. */
    aclshmemx_putmem_on_stream(dst3, src, N, right, stream);
    aclshmemx_barrier_all_on_stream(stream);
    aclshmemx_getmem_on_stream(tmp, dst3, N, me, stream);
    aclshmemx_getmem_on_stream(local, src, N, right, stream);
    aclshmemx_quiet_on_stream(stream);
    GPU_SYNC(stream, "put, barrier_all and get on a stream");
    CHECK(holds(tmp, N, left), "the get after barrier_all_on_stream missed PE %d's put", left);
    CHECK(holds(local, N, right), "the get on a stream from PE %d into cudaMalloc memory", right);
    if (me == 0) printf("on_stream: barrier_all_on_stream and get ok\n");

    /* 5. A team barrier and quiet on the stream. */
    aclshmemx_barrier_on_stream(ACLSHMEM_TEAM_WORLD, stream);
    aclshmemx_quiet_on_stream(stream);
    GPU_SYNC(stream, "barrier_on_stream and quiet_on_stream");

    CUDA_OK(cudaFreeHost(gate));
    CUDA_OK(cudaFree(f));
    CUDA_OK(cudaFree(local));
    shmem_barrier_all();
    aclshmem_free(sig);
    aclshmem_free(tmp);
    aclshmem_free(dst3);
    aclshmem_free(dst);
    aclshmem_free(src);
    if (me == 0) printf("on_stream: %d PEs checked\n", npes);
    /* shmem_finalize drains the streams the library enqueued work on: they outlive it (and may
     * go with the context, when the library held the last reference to it). */
    shmem_finalize();
    (void)cudaStreamDestroy(waiting);
    (void)cudaStreamDestroy(stream);
    return 0;
}
