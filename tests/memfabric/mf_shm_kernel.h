/* mf_shm_kernel.h: what the kernel-side part of the memfabric Share Memory test reads
 * (mf_shm_kernel.c) for the host part (mf_shm.c). */
#ifndef MF_SHM_KERNEL_H
#define MF_SHM_KERNEL_H

#include <stdint.h>

struct mf_shm_kernel_view {
    uint32_t rank;
    uint32_t rank_size;
    uint64_t symmetric_size;
    void *context;
    uint32_t context_size;
    void *qp_info;
};

/* Reads SHM object `id` through the kernel-side getters. */
void mf_shm_kernel_read(uint32_t id, struct mf_shm_kernel_view *out);

#endif
