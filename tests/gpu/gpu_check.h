/* gpu_check.h: checks for the GPU tests' host programs (CUDA runtime API, C++ compiled by nvcc).
 *
 * - CHECK(cond, fmt, ...): on failure prints "PE <n>: <file>:<line>: check failed: <cond>: <what
 *   was found>" and ends the whole job (shmem_global_exit(1)), so no peer waits forever.
 * - CUDA_OK(call): a CUDA runtime call that must succeed; on failure the line names the call and
 *   CUDA's error.
 * - Kernels record their own failed checks in a gpu_failures record in GPU memory
 *   (GPU_CHECK(f, cond, got, want) in the kernel: the first failure's line, block, thread and
 *   values, and a count); gpu_finish(stream, name, f) waits for the kernel with a deadline
 *   (a kernel that never ends, e.g. a wait nobody satisfies, fails the job naming it instead of
 *   hanging until shmemrun's watchdog) and turns a recorded failure into the job's end with that
 *   line.
 * `gpu_pe` is the PE to name (set it once known; -1 before). */
#ifndef SHMEM_TEST_GPU_CHECK_H
#define SHMEM_TEST_GPU_CHECK_H

#include <cuda_runtime.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int gpu_pe = -1;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", gpu_pe, __FILE__, __LINE__,        \
                    #cond);                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            shmem_global_exit(1);                                                                  \
        }                                                                                          \
    } while (0)

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t cuda_ok_rc_ = (call);                                                          \
        if (cuda_ok_rc_ != cudaSuccess) {                                                          \
            fprintf(stderr, "PE %d: %s:%d: %s failed: %s: %s\n", gpu_pe, __FILE__, __LINE__,       \
                    #call, cudaGetErrorName(cuda_ok_rc_), cudaGetErrorString(cuda_ok_rc_));        \
            shmem_global_exit(1);                                                                  \
        }                                                                                          \
    } while (0)

/* The first failed check of a kernel, and how many failed. Zeroed by gpu_failures_reset. */
struct gpu_failures {
    int count;
    int line; /* 0: none yet */
    int block, thread;
    long long got, want;
};

#ifdef __CUDACC__
/* Records a failed check; the first one to fail keeps its line and values. */
static __device__ __noinline__ void gpu_fail_(gpu_failures *f, int line, long long got,
                                              long long want) {
    atomicAdd(&f->count, 1);
    if (atomicCAS(&f->line, 0, -1) == 0) {
        f->block = (int)(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
        f->thread = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
        f->got = got;
        f->want = want;
        __threadfence();
        atomicExch(&f->line, line);
    }
}
#define GPU_CHECK(f, cond, got, want)                                                              \
    do {                                                                                           \
        if (!(cond)) gpu_fail_((f), __LINE__, (long long)(got), (long long)(want));                \
    } while (0)
#endif

/* cudaMemset, and cudaMemcpy from pageable host memory, may return before the GPU memory holds
 * the bytes: the tests settle the device before a barrier or a launch on another stream relies
 * on what they wrote. */
#define GPU_SETTLE() CUDA_OK(cudaDeviceSynchronize())

/* Seconds a kernel or a stream may take before the test calls it hung. Several PEs share the
 * one GPU and, without MPS, take turns on it (time slices of a few milliseconds), so a kernel
 * that waits for a peer's kernel waits at least a slice: far below this. */
#define GPU_DEADLINE_S 60

static inline double gpu_now_(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Waits for everything enqueued on `stream` (what = the test's name for it), at most
 * GPU_DEADLINE_S; a failure of the stream or the deadline ends the job with a line. */
static inline void gpu_sync(cudaStream_t stream, const char *what, const char *file, int line) {
    double end = gpu_now_() + GPU_DEADLINE_S;
    for (;;) {
        cudaError_t rc = cudaStreamQuery(stream);
        if (rc == cudaSuccess) return;
        if (rc != cudaErrorNotReady) {
            /* A synchronisation prints what the kernels' printf left (a misuse's line). */
            (void)cudaDeviceSynchronize();
            fflush(stdout);
            fprintf(stderr, "PE %d: %s:%d: %s failed on the GPU: %s: %s\n", gpu_pe, file, line,
                    what, cudaGetErrorName(rc), cudaGetErrorString(rc));
            shmem_global_exit(1);
        }
        if (gpu_now_() > end) {
            fprintf(stderr,
                    "PE %d: %s:%d: %s has not finished after %d s (a wait never satisfied?)\n",
                    gpu_pe, file, line, what, GPU_DEADLINE_S);
            shmem_global_exit(1);
        }
        struct timespec nap = {0, 200 * 1000};
        nanosleep(&nap, NULL);
    }
}
#define GPU_SYNC(stream, what) gpu_sync((stream), (what), __FILE__, __LINE__)

/* A record of kernel failures in GPU memory, zeroed. */
static inline gpu_failures *gpu_failures_new(void) {
    gpu_failures *f = NULL;
    CUDA_OK(cudaMalloc((void **)&f, sizeof *f));
    CUDA_OK(cudaMemset(f, 0, sizeof *f));
    GPU_SETTLE();
    return f;
}

/* Waits for kernel `name` on `stream`, then ends the job if it recorded a failed check. */
static inline void gpu_finish(cudaStream_t stream, const char *name, gpu_failures *f,
                              const char *file, int line) {
    gpu_sync(stream, name, file, line);
    gpu_failures got;
    CUDA_OK(cudaMemcpy(&got, f, sizeof got, cudaMemcpyDeviceToHost));
    if (got.count != 0) {
        fprintf(stderr,
                "PE %d: %s:%d: check failed in kernel %s (block %d, thread %d): got %lld, "
                "expected %lld (%d failed checks)\n",
                gpu_pe, file, got.line, name, got.block, got.thread, got.got, got.want, got.count);
        shmem_global_exit(1);
    }
}
#define GPU_FINISH(stream, name, f) gpu_finish((stream), (name), (f), __FILE__, __LINE__)

#endif /* SHMEM_TEST_GPU_CHECK_H */
