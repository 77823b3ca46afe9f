/* bench/cuda/host_shmem.h: this library's host calls the GPU benchmarks make, behind names of
 * their own (host_shmem.cpp). A kernel's file includes shmem/device.h, which declares CANN's
 * kernel-side names, so it cannot include <aclshmem.h>, where the same names are host calls:
 * the host side of our variant is this one small file, compiled apart and linked in. Every
 * call here ends the process with one line on failure (a benchmark has nothing to recover). */
#ifndef BENCH_CUDA_HOST_SHMEM_H
#define BENCH_CUDA_HOST_SHMEM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* shmem_init, under shmemrun with SHMEM_DEVICE=cuda; exits when the heap is not on a GPU. */
void bench_shmem_init(void);
void bench_shmem_finalize(void);
int bench_shmem_my_pe(void);
int bench_shmem_n_pes(void);
/* shmem_malloc (collective); exits when the heap is full. */
void *bench_shmem_malloc(size_t bytes);
void bench_shmem_free(void *p);
/* shmem_barrier_all: every PE's host meets. */
void bench_shmem_barrier_all(void);
/* shmemx_job_state_device(): the device job state kernels hand to shmemx_cuda_set_job. */
const void *bench_shmem_job(void);
/* aclshmemx_putmem_on_stream / aclshmemx_quiet_on_stream on a cudaStream_t. */
void bench_shmem_putmem_on_stream(void *dst, const void *src, size_t bytes, int pe, void *stream);
void bench_shmem_quiet_on_stream(void *stream);

#ifdef __cplusplus
}
#endif

#endif /* BENCH_CUDA_HOST_SHMEM_H */
