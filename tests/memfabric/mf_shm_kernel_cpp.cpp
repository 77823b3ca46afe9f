// mf_shm_kernel_cpp.cpp: the kernel-side getters (shmem/memfabric_shm.h) as C++ sees them: beside
// the host header, whose functions of the same names take a handle (overloads), with the SHM id
// defaulting to 0 as in memfabric.
#include <shmem/memfabric_shm.h>
#include <smem/host/smem_shm.h>

#include "mf_shm_kernel.h"

extern "C" uint32_t mf_shm_kernel_rank_default(void) {
    static_assert(sizeof(smem_shm_meta_slot) == 128, "a record is memfabric's 128 bytes");
    static_assert(offsetof(smem_shm_meta_block, slot) == 128, "the header is 128 bytes");
    return smem_shm_get_global_rank() == smem_shm_get_global_rank(0u)
               ? smem_shm_get_global_rank_size()
               : UINT32_MAX;
}
