/*
 * kv_shuffle.cu: the KV-cache block exchange's kernel (examples/kv_shuffle/kv_shuffle.c)
 * written as a CUDA kernel, a block's threads putting each KV block together.
 *
 * The same algorithm: block b of the grid sends held KV blocks b, b + B, ... to their owners
 * with a block-wide put-with-signal (the signal counts the KV blocks arrived at the owner),
 * then waits until all the KV blocks this PE owns have arrived. The host launches it on a CUDA
 * stream with the job state's device address first:
 *
 *   shmem_kv_shuffle_cuda<<<blocks, threads, 0, stream>>>(shmemx_job_state_device(), args);
 *
 * with `held`, `owned` and `arrived` symmetric and the per-block tables in GPU memory. Its
 * blocks wait for other PEs' puts, so the cooperative-launch rule binds it: every block of
 * every PE resident at once. ctest cuda.compile compiles it with nvcc for sm_90; it has not
 * run on a GPU.
 */
#include <shmem/device.h>

/* The kernel's arguments, passed by value. */
struct kv_cuda_args {
    const float *held;       /* symmetric: the held KV blocks, in global order */
    float *owned;            /* symmetric: the owned KV blocks, in global order */
    int32_t *arrived;        /* symmetric: KV blocks received by this PE */
    const int *send_owner;   /* GPU memory, per held block: its owner */
    const size_t *send_slot; /* GPU memory, per held block: its index among the owner's blocks */
    size_t n_held, n_owned, bsize;
    int32_t round; /* 1 for the first launch, then 2, ...: the counter never needs a reset */
};

__global__ void shmem_kv_shuffle_cuda(const void *job, kv_cuda_args a) {
    shmemx_cuda_set_job(job);
    const size_t b = (size_t)aclshmemx_block_idx(), nb = (size_t)aclshmemx_block_num();
    for (size_t i = b; i < a.n_held; i += nb) {
        aclshmemx_putmem_signal_block(a.owned + a.send_slot[i] * a.bsize, a.held + i * a.bsize,
                                      a.bsize * sizeof(float), a.arrived, 1, ACLSHMEM_SIGNAL_ADD,
                                      a.send_owner[i]);
    }
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
        aclshmem_signal_wait_until(a.arrived, ACLSHMEM_CMP_GE, a.round * (int32_t)a.n_owned);
    }
    __syncthreads();
}
