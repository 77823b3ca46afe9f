/*
 * allgather.cu: the allgather operator's kernel (examples/allgather/allgather.c) written as a
 * CUDA kernel, NVSHMEM's way: a block's threads put together.
 *
 * The same algorithm: every PE holds `count` floats in `input`; each block pushes its slice
 * into every PE's `output` with a block-wide put-with-signal (the signal counts the slices that
 * have arrived from this PE), then waits until every PE's slices have arrived. The host
 * launches it on a CUDA stream with the job state's device address first:
 *
 *   shmem_allgather_cuda<<<blocks, threads, 0, stream>>>(shmemx_job_state_device(), args);
 *
 * with `args` holding symmetric addresses, every PE launching the same block count. Its blocks
 * wait for every PE's blocks to have put, so the cooperative-launch rule binds it as it binds a
 * barrier: every block of every PE must be resident at once (at most as many blocks as fit,
 * or cudaLaunchCooperativeKernel). ctest cuda.compile compiles it with nvcc for sm_90; it has
 * not run on a GPU.
 */
#include <shmem/device.h>

/* The kernel's arguments, passed by value. */
struct allgather_cuda_args {
    const float *input; /* symmetric: count floats */
    float *output;      /* symmetric: npes * count floats */
    int32_t *arrived;   /* symmetric: npes counters, slices received from each PE */
    uint64_t count;
    int32_t round; /* 1 for the first launch, then 2, ...: the counters never need a reset */
};

__global__ void shmem_allgather_cuda(const void *job, allgather_cuda_args a) {
    shmemx_cuda_set_job(job);
    int me = aclshmem_my_pe(), npes = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    size_t lo = a.count * (size_t)b / (size_t)nb, hi = a.count * (size_t)(b + 1) / (size_t)nb;
    /* Starting with the next PE, so the PEs do not all write to PE 0 first. */
    for (int k = 1; k <= npes; k++) {
        int pe = (me + k) % npes;
        aclshmemx_putmem_signal_block(a.output + (size_t)me * a.count + lo, a.input + lo,
                                      (hi - lo) * sizeof(float), &a.arrived[me], 1,
                                      ACLSHMEM_SIGNAL_ADD, pe);
    }
    /* Every block of every PE signals once per round, empty slices too; thread t waits for PEs
     * t, t + blockDim.x, ..., then the block meets. */
    for (int pe = (int)threadIdx.x; pe < npes; pe += (int)blockDim.x) {
        aclshmem_signal_wait_until(&a.arrived[pe], ACLSHMEM_CMP_GE, a.round * nb);
    }
    __syncthreads();
}
