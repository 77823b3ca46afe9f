/* bench/cuda/host_shmem.cpp: the host side of the GPU benchmarks' "shmem" variant
 * (host_shmem.h): OpenSHMEM start-up and symmetric memory, the device job state, and CANN's
 * on-stream put, each a thin call of the library's own. */
#include "host_shmem.h"

#include <stdio.h>
#include <stdlib.h>

#include <aclshmem.h>
#include <shmem/launch.h>

extern "C" {

void bench_shmem_init(void) {
    shmem_init();
    if (shmemx_job_state_device() == nullptr) {
        fprintf(stderr,
                "bench: PE %d: the symmetric heap is not in GPU memory: run under "
                "shmemrun with SHMEM_DEVICE=cuda\n",
                shmem_my_pe());
        exit(2);
    }
}

void bench_shmem_finalize(void) { shmem_finalize(); }
int bench_shmem_my_pe(void) { return shmem_my_pe(); }
int bench_shmem_n_pes(void) { return shmem_n_pes(); }

void *bench_shmem_malloc(size_t bytes) {
    void *p = shmem_malloc(bytes);
    if (p == nullptr) {
        fprintf(stderr, "bench: PE %d: shmem_malloc(%zu) failed: raise SHMEM_SYMMETRIC_SIZE\n",
                shmem_my_pe(), bytes);
        exit(2);
    }
    return p;
}

void bench_shmem_free(void *p) { shmem_free(p); }
void bench_shmem_barrier_all(void) { shmem_barrier_all(); }
const void *bench_shmem_job(void) { return shmemx_job_state_device(); }

void bench_shmem_putmem_on_stream(void *dst, const void *src, size_t bytes, int pe, void *stream) {
    aclshmemx_putmem_on_stream(dst, const_cast<void *>(src), bytes, pe, stream);
}

void bench_shmem_quiet_on_stream(void *stream) { aclshmemx_quiet_on_stream(stream); }
}
