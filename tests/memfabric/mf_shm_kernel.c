/* mf_shm_kernel.c: kernel-side code of the memfabric Share Memory test (mf_shm.c), compiled on
 * the CPU architecture: it reads an SHM object's rank, rank count, symmetric size and extra
 * context through memfabric's kernel-side getters (shmem/memfabric_shm.h). A file of its own:
 * in C, the getters and the host header's functions of the same names do not meet. */
#include <shmem/memfabric_shm.h>

#include "mf_shm_kernel.h"

void mf_shm_kernel_read(uint32_t id, struct mf_shm_kernel_view *out) {
    out->rank = smem_shm_get_global_rank(id);
    out->rank_size = smem_shm_get_global_rank_size(id);
    out->symmetric_size = smem_shm_get_symmetric_size(id);
    out->context = smem_shm_get_extra_context_addr(id);
    out->context_size = smem_shm_get_extra_context_size(id);
    out->qp_info = smem_shm_get_qp_info_address(id);
}
