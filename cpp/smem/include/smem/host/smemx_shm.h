/* smemx_shm.h: this library's extension to memfabric_hybrid's Share Memory (not in memfabric;
 * C and C++).
 *
 * memfabric's kernels find their objects' records (rank, rank count, symmetric size, extra
 * context) at a fixed device address. Here a kernel is handed the block's address instead, once,
 * with smem_shm_set_meta_block (<shmem/memfabric_shm.h> of the kernel-side API), and the host
 * gets that address from smemx_shm_meta_block. */
#ifndef __MEMFABRIC_SMEMX_SHM_H__
#define __MEMFABRIC_SMEMX_SHM_H__

#ifdef __cplusplus
extern "C" {
#endif

/* The address of the block the kernel-side getters read, to pass to the kernel for
 * smem_shm_set_meta_block: after smem_shm_init on the npu device, a device address (the
 * device copy, in NPU memory, kept up to date by smem_shm_create, smem_shm_set_extra_context
 * and smem_shm_destroy, valid until smem_shm_uninit); otherwise the block in host memory that
 * the CPU architecture's getters read by themselves. Never NULL. */
const void *smemx_shm_meta_block(void);

#ifdef __cplusplus
}
#endif

#endif /* __MEMFABRIC_SMEMX_SHM_H__ */
