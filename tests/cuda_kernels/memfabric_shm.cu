/* memfabric_shm.cu: memfabric_hybrid's kernel-side Share Memory getters (shmem/memfabric_shm.h)
 * from a CUDA kernel: the kernel is handed the device copy of the block, then reads object 0
 * with the default id and another by its id. ctest cuda.compile compiles it with nvcc, warnings
 * as errors. Not run here: no GPU. */
#include <shmem/device.h>
#include <shmem/memfabric_shm.h>

__global__ void shmem_cuda_memfabric_shm(const void *meta, uint64_t *out) {
    smem_shm_set_meta_block(meta);
    out[0] = smem_shm_get_global_rank();
    out[1] = smem_shm_get_global_rank_size();
    out[2] = smem_shm_get_symmetric_size(3);
    out[3] = smem_shm_get_extra_context_size(3);
    const void *ctx = smem_shm_get_extra_context_addr(3);
    out[4] = ctx == nullptr ? 0 : *static_cast<const uint8_t *>(ctx);
    out[5] = smem_shm_get_qp_info_address() == nullptr ? 0 : 1;
}
