/* bench/cuda/api.cuh: the one API the GPU benchmarks are written against, over this library's
 * kernel-side API (shmem/device.h, CUDA architecture) or over NVSHMEM's (nvshmem.h, nvshmemx.h,
 * when compiled with -DBENCH_NVSHMEM), so that both variants of a benchmark run the same loops
 * and differ only in the calls below.
 *
 * Kernel side (called from __global__ code):
 *   BENCH_KERNEL_ENTRY(job)        first statement of every kernel, in every thread: ours hands
 *                                  the device job state to shmemx_cuda_set_job; NVSHMEM needs
 *                                  nothing (its state is a device global)
 *   BENCH_PUTMEM[_WARP|_BLOCK]     blocking put by a thread, a full warp, every thread of a block
 *   BENCH_GETMEM[_WARP|_BLOCK]     blocking get, same scopes
 *   BENCH_UINT64_P                 one 8-byte element to a peer
 *   BENCH_PUTMEM_SIGNAL            put, then SET the peer's uint64_t signal word
 *   BENCH_SIGNAL_WAIT_GE           wait until the local signal word is >= a value
 *   BENCH_UINT64_WAIT_GE           the same on a word written by p
 *   BENCH_QUIET, BENCH_FENCE       completion and ordering of the calling thread's operations
 *   BENCH_BARRIER_ALL_BLOCK        barrier of every PE, called by every thread of the one block
 *                                  of a one-block launch (ours: aclshmem_barrier_all by every
 *                                  thread of every block; NVSHMEM: nvshmemx_barrier_all_block)
 *   BENCH_DEV_MY_PE, BENCH_DEV_N_PES
 *
 * Host side: bench_lib_init / bench_lib_finalize, bench_lib_my_pe / bench_lib_n_pes,
 * bench_lib_malloc / bench_lib_free (symmetric, in GPU memory), bench_lib_barrier_all,
 * bench_lib_job (what kernels get as `job`), bench_lib_putmem_on_stream,
 * bench_lib_quiet_on_stream. Our host calls live in host_shmem.cpp
 * (shmem/device.h and <aclshmem.h> declare the same CANN names, so a kernel's file includes only
 * the former); NVSHMEM's are inline below. NVSHMEM is started without MPI or a launcher of its own:
 * PE `BENCH_PE` of `BENCH_NPES` (the environment, set by scripts/bench-cuda.sh), with the unique id
 * handed over through the file `BENCH_UID_FILE` (PE 0 writes it, the others wait for it, bounded).
 */
#ifndef BENCH_CUDA_API_CUH
#define BENCH_CUDA_API_CUH

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#if defined(BENCH_NVSHMEM)

#include <nvshmem.h>
#include <nvshmemx.h>

#define BENCH_LIB_NAME "nvshmem"

#define BENCH_KERNEL_ENTRY(job) ((void)(job))
#define BENCH_DEV_MY_PE() nvshmem_my_pe()
#define BENCH_DEV_N_PES() nvshmem_n_pes()
#define BENCH_PUTMEM(dst, src, n, pe) nvshmem_putmem((dst), (src), (n), (pe))
#define BENCH_PUTMEM_WARP(dst, src, n, pe) nvshmemx_putmem_warp((dst), (src), (n), (pe))
#define BENCH_PUTMEM_BLOCK(dst, src, n, pe) nvshmemx_putmem_block((dst), (src), (n), (pe))
#define BENCH_GETMEM(dst, src, n, pe) nvshmem_getmem((dst), (src), (n), (pe))
#define BENCH_GETMEM_WARP(dst, src, n, pe) nvshmemx_getmem_warp((dst), (src), (n), (pe))
#define BENCH_GETMEM_BLOCK(dst, src, n, pe) nvshmemx_getmem_block((dst), (src), (n), (pe))
#define BENCH_UINT64_P(dst, v, pe) nvshmem_uint64_p((dst), (v), (pe))
#define BENCH_PUTMEM_SIGNAL(dst, src, n, sig, v, pe)                                               \
    nvshmem_putmem_signal((dst), (src), (n), (sig), (v), NVSHMEM_SIGNAL_SET, (pe))
#define BENCH_SIGNAL_WAIT_GE(sig, v) nvshmem_signal_wait_until((sig), NVSHMEM_CMP_GE, (v))
#define BENCH_UINT64_WAIT_GE(ivar, v) nvshmem_uint64_wait_until((ivar), NVSHMEM_CMP_GE, (v))
#define BENCH_QUIET() nvshmem_quiet()
#define BENCH_FENCE() nvshmem_fence()
#define BENCH_BARRIER_ALL_BLOCK() nvshmemx_barrier_all_block()

/* The integer `name` of the environment, or exits naming it. */
static inline int bench_nv_env_int(const char *name) {
    const char *v = getenv(name);
    char *end = NULL;
    long n = v ? strtol(v, &end, 10) : -1;
    if (!v || *end != '\0' || n < 0 || n > 4096) {
        fprintf(stderr, "bench: %s=%s: not set to a PE number (scripts/bench-cuda.sh sets it)\n",
                name, v ? v : "(unset)");
        exit(2);
    }
    return (int)n;
}

/* PE 0 writes the unique id to `path` (through a temporary name, so a reader never sees half
 * of it); the others read it once it is there, for at most 60 seconds. */
static inline void bench_nv_share_uid(nvshmemx_uniqueid_t *uid, int pe, const char *path) {
    if (pe == 0) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(uid, sizeof *uid, 1, f) != 1 || fclose(f) != 0 || rename(tmp, path)) {
            fprintf(stderr, "bench: BENCH_UID_FILE=%s: cannot write the unique id: %s\n", path,
                    strerror(errno));
            exit(2);
        }
        return;
    }
    for (int tries = 0; tries < 6000; tries++) {
        FILE *f = fopen(path, "rb");
        if (f) {
            size_t got = fread(uid, sizeof *uid, 1, f);
            fclose(f);
            if (got == 1) return;
        }
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    fprintf(stderr, "bench: BENCH_UID_FILE=%s: PE 0 wrote no unique id within 60 s\n", path);
    exit(2);
}

static inline void bench_lib_init(void) {
    const int pe = bench_nv_env_int("BENCH_PE"), npes = bench_nv_env_int("BENCH_NPES");
    const char *path = getenv("BENCH_UID_FILE");
    if (!path || !*path) {
        fprintf(stderr, "bench: BENCH_UID_FILE is not set (scripts/bench-cuda.sh sets it)\n");
        exit(2);
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        fprintf(stderr, "bench: no CUDA device\n");
        exit(2);
    }
    /* NVSHMEM takes the device current at init: the PEs share the node's GPUs round robin. */
    cudaSetDevice(pe % ndev);
    nvshmemx_uniqueid_t uid = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (pe == 0 && nvshmemx_get_uniqueid(&uid) != 0) {
        fprintf(stderr, "bench: nvshmemx_get_uniqueid failed\n");
        exit(2);
    }
    bench_nv_share_uid(&uid, pe, path);
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_set_attr_uniqueid_args(pe, npes, &uid, &attr) != 0 ||
        nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
        fprintf(stderr, "bench: nvshmemx_init_attr failed for PE %d of %d\n", pe, npes);
        exit(2);
    }
}
static inline void bench_lib_finalize(void) { nvshmem_finalize(); }
static inline int bench_lib_my_pe(void) { return nvshmem_my_pe(); }
static inline int bench_lib_n_pes(void) { return nvshmem_n_pes(); }
static inline void *bench_lib_malloc(size_t bytes) { return nvshmem_malloc(bytes); }
static inline void bench_lib_free(void *p) { nvshmem_free(p); }
static inline void bench_lib_barrier_all(void) { nvshmem_barrier_all(); }
static inline const void *bench_lib_job(void) { return NULL; }
static inline void bench_lib_putmem_on_stream(void *dst, const void *src, size_t n, int pe,
                                              cudaStream_t s) {
    nvshmemx_putmem_on_stream(dst, src, n, pe, s);
}
static inline void bench_lib_quiet_on_stream(cudaStream_t s) { nvshmemx_quiet_on_stream(s); }

#else /* this library */

#include <shmem/device.h>

#include "host_shmem.h"

#define BENCH_LIB_NAME "shmem"

#define BENCH_KERNEL_ENTRY(job) shmemx_cuda_set_job(job)
#define BENCH_DEV_MY_PE() aclshmem_my_pe()
#define BENCH_DEV_N_PES() aclshmem_n_pes()
#define BENCH_PUTMEM(dst, src, n, pe) aclshmem_putmem((dst), (src), (n), (pe))
#define BENCH_PUTMEM_WARP(dst, src, n, pe) aclshmemx_putmem_warp((dst), (src), (n), (pe))
#define BENCH_PUTMEM_BLOCK(dst, src, n, pe) aclshmemx_putmem_block((dst), (src), (n), (pe))
#define BENCH_GETMEM(dst, src, n, pe) aclshmem_getmem((dst), (src), (n), (pe))
#define BENCH_GETMEM_WARP(dst, src, n, pe) aclshmemx_getmem_warp((dst), (src), (n), (pe))
#define BENCH_GETMEM_BLOCK(dst, src, n, pe) aclshmemx_getmem_block((dst), (src), (n), (pe))
#define BENCH_UINT64_P(dst, v, pe) aclshmem_uint64_p((dst), (v), (pe))
#define BENCH_PUTMEM_SIGNAL(dst, src, n, sig, v, pe)                                               \
    aclshmemx_putmem_signal_u64((dst), (src), (n), (sig), (v), ACLSHMEM_SIGNAL_SET, (pe))
#define BENCH_SIGNAL_WAIT_GE(sig, v) aclshmemx_signal_wait_until_u64((sig), ACLSHMEM_CMP_GE, (v))
#define BENCH_UINT64_WAIT_GE(ivar, v) aclshmem_uint64_wait_until((ivar), ACLSHMEM_CMP_GE, (v))
#define BENCH_QUIET() aclshmem_quiet()
#define BENCH_FENCE() aclshmem_fence()
#define BENCH_BARRIER_ALL_BLOCK() aclshmem_barrier_all()

static inline void bench_lib_init(void) {
    bench_shmem_init();
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        fprintf(stderr, "bench: no CUDA device\n");
        exit(2);
    }
    /* The runtime's current device is the one the library's heap is on (its primary context):
     * the PEs share the node's GPUs round robin, as the library assigns them. */
    cudaSetDevice(bench_shmem_my_pe() % ndev);
}
static inline void bench_lib_finalize(void) { bench_shmem_finalize(); }
static inline int bench_lib_my_pe(void) { return bench_shmem_my_pe(); }
static inline int bench_lib_n_pes(void) { return bench_shmem_n_pes(); }
static inline void *bench_lib_malloc(size_t bytes) { return bench_shmem_malloc(bytes); }
static inline void bench_lib_free(void *p) { bench_shmem_free(p); }
static inline void bench_lib_barrier_all(void) { bench_shmem_barrier_all(); }
static inline const void *bench_lib_job(void) { return bench_shmem_job(); }
static inline void bench_lib_putmem_on_stream(void *dst, const void *src, size_t n, int pe,
                                              cudaStream_t s) {
    bench_shmem_putmem_on_stream(dst, src, n, pe, (void *)s);
}
static inline void bench_lib_quiet_on_stream(cudaStream_t s) {
    bench_shmem_quiet_on_stream((void *)s);
}

#endif

#endif /* BENCH_CUDA_API_CUH */
