/* mf_shm_kernel.h: what the kernel-side part of the memfabric Share Memory test reads
 * (mf_shm_kernel.c) for the host part (mf_shm.c). */
#ifndef MF_SHM_KERNEL_H
#define MF_SHM_KERNEL_H

#include <stddef.h>
#include <stdint.h>

struct mf_shm_kernel_view {
    uint32_t rank;
    uint32_t rank_size;
    uint64_t symmetric_size;
    void *context;
    uint32_t context_size;
    void *qp_info;
};

#ifdef __cplusplus
extern "C" {
#endif

/* Reads SHM object `id` through the kernel-side getters (C, mf_shm_kernel.c). */
void mf_shm_kernel_read(uint32_t id, struct mf_shm_kernel_view *out);

/* Object 0's rank count through the C++ getters with the default id, UINT32_MAX when the
 * default id and id 0 disagree (mf_shm_kernel_cpp.cpp). */
uint32_t mf_shm_kernel_rank_default(void);

/* On the npu device (mf_shm_npu.c): copies between host and NPU memory by aclrtMemcpy (0: done),
 * and SHM object `id` as a kernel reads it from the device copy of the kernel-side block at the
 * device address `block` (`context` is a device address; 0: read, -1: the copy failed or the
 * block is not one). */
int mf_npu_write(void *dev, const void *host, size_t n);
int mf_npu_read(void *host, const void *dev, size_t n);
int mf_npu_kernel_read(const void *block, uint32_t id, struct mf_shm_kernel_view *out);

#ifdef __cplusplus
}
#endif

#endif
