/* memfabric_shm.cpp: memfabric_hybrid's kernel-side Share Memory getters (shmem/memfabric_shm.h)
 * from an AscendC kernel, as memfabric's SHM example reads them: the kernel is handed the device
 * copy of the block, then reads object 0 with the default id and another by its id. ctest
 * ascendc.compile compiles it against the stand-in of kernel_operator.h, warnings as errors.
 * Not run here: no NPU. */
#include <shmem/device.h>
#include <shmem/memfabric_shm.h>

extern "C" __global__ __aicore__ void shmem_ascendc_memfabric_shm(GM_ADDR meta, GM_ADDR out) {
    smem_shm_set_meta_block(meta);
    __gm__ uint64_t *o = reinterpret_cast<__gm__ uint64_t *>(out);
    o[0] = smem_shm_get_global_rank();
    o[1] = smem_shm_get_global_rank_size();
    o[2] = smem_shm_get_symmetric_size(3);
    o[3] = smem_shm_get_extra_context_size(3);
    __gm__ void *ctx = smem_shm_get_extra_context_addr(3);
    o[4] = ctx == nullptr ? 0 : *reinterpret_cast<__gm__ uint8_t *>(ctx);
    o[5] = smem_shm_get_qp_info_address() == nullptr ? 0 : 1;
}
