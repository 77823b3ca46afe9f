/* shmem/memfabric_shm.h: the kernel-side getters of memfabric_hybrid's Share Memory objects
 * (its device header's smem_shm_get_*), over the architecture layer (shmem/arch.h).
 *
 * A kernel reads, for the SHM object of id `shmemId` (the id given to smem_shm_create, 0..63),
 * this process's rank in it, its rank count, its symmetric size and the extra context set with
 * smem_shm_set_extra_context (address and size). The runtime keeps them in one block per
 * process (smem_shm_meta_block below; rust/core/src/memfabric/shm.rs fills it at create, at
 * set_extra_context and at destroy). An id out of range, or with no live object, gives
 * UINT32_MAX for the rank and the rank count, 0 for the sizes and NULL for the addresses.
 * smem_shm_get_qp_info_address is NULL: no device RDMA queue pairs here.
 *
 * Where the block lives:
 * - CPU architecture: host memory of this process; the getters find it through
 *   shmemi_mf_shm_meta() (libshmem.so, which the program links, as it links the CPU
 *   launcher). They may be called from a kernel block or from any host thread.
 * - AscendC and CUDA: a device copy of the block whose address the kernel hands over once with
 *   smem_shm_set_meta_block (AscendC: per core, like shmemx_ascendc_set_job; CUDA: per
 *   translation unit). On the npu device the runtime keeps that copy in NPU memory from
 *   smem_shm_init to smem_shm_uninit; the host gets its address from smemx_shm_meta_block()
 *   (<smem/host/smemx_shm.h>, libmf_smem.so) and passes it to the kernel. The cuda device has
 *   no Share Memory windows: see docs/memfabric.md.
 *
 * The getters carry memfabric's names, and the host header <smem/host/smem_shm.h> has host
 * functions of the same names (taking a handle): in C++ they are overloads (the id defaults to
 * 0, as in memfabric); in C a file includes one header or the other. */
#ifndef SHMEM_MEMFABRIC_SHM_H
#define SHMEM_MEMFABRIC_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "arch.h"

#ifdef __cplusplus
#define SMEM_SHM_ID_DEFAULT = 0
extern "C" {
#else
#define SMEM_SHM_ID_DEFAULT
#endif

/* The block: a 128-byte header, a 128-byte record per SHM id, then a 64 KiB extra context per
 * SHM id. A record with rank_size 0 holds no object. */
#define SMEM_SHM_META_MAGIC 0x48534d53u /* "SMSH" */
#define SMEM_SHM_META_VERSION 1u
#define SMEM_SHM_META_SLOTS 64u
#define SMEM_SHM_META_CONTEXT_BYTES 65536u

typedef struct smem_shm_meta_slot {
    uint32_t obj_id;
    uint32_t rank;
    uint32_t rank_size;
    uint32_t context_size;
    uint64_t symmetric_size;
    uint64_t qp_info;
    uint8_t reserved[96];
} smem_shm_meta_slot;

typedef struct smem_shm_meta_block {
    uint32_t magic;
    uint32_t version;
    uint32_t slots;
    uint32_t context_bytes;
    uint8_t reserved[112];
    smem_shm_meta_slot slot[SMEM_SHM_META_SLOTS];
    uint8_t context[SMEM_SHM_META_SLOTS][SMEM_SHM_META_CONTEXT_BYTES];
} smem_shm_meta_block;

#if defined(SHMEM_ARCH_CPU)
/* The block in this process (defined in libshmem.so). */
const void *shmemi_mf_shm_meta(void);
#endif

#ifdef __cplusplus
}
#endif

#if defined(SHMEM_ARCH_CPU)
SHMEM_ARCH_INLINE const smem_shm_meta_block *smem_shm_meta_block_(void) {
    return (const smem_shm_meta_block *)shmemi_mf_shm_meta();
}
#elif defined(SHMEM_ARCH_ASCENDC)
__BLOCK_LOCAL__ inline __gm__ const smem_shm_meta_block *smem_shm_meta_g;
/* Hands the kernel the device copy of the block. */
SHMEM_ARCH_INLINE void smem_shm_set_meta_block(GM_ADDR block) {
    smem_shm_meta_g = reinterpret_cast<__gm__ const smem_shm_meta_block *>(block);
}
SHMEM_ARCH_INLINE __gm__ const smem_shm_meta_block *smem_shm_meta_block_(void) {
    return smem_shm_meta_g;
}
#elif defined(SHMEM_ARCH_CUDA)
static __device__ const smem_shm_meta_block *smem_shm_meta_g;
/* Hands the kernel the device copy of the block. */
SHMEM_ARCH_INLINE void smem_shm_set_meta_block(const void *block) {
    smem_shm_meta_g = static_cast<const smem_shm_meta_block *>(block);
}
SHMEM_ARCH_INLINE const smem_shm_meta_block *smem_shm_meta_block_(void) { return smem_shm_meta_g; }
#endif

/* The record of a live object of id `id`, else NULL. */
SHMEM_ARCH_INLINE SHMEM_ARCH_GM const smem_shm_meta_slot *smem_shm_meta_slot_(uint32_t id) {
    SHMEM_ARCH_GM const smem_shm_meta_block *b = smem_shm_meta_block_();
    if (b == NULL || b->magic != SMEM_SHM_META_MAGIC || id >= b->slots ||
        b->slot[id].rank_size == 0) {
        return NULL;
    }
    return &b->slot[id];
}

SHMEM_ARCH_INLINE uint32_t smem_shm_get_global_rank(uint32_t shmemId SMEM_SHM_ID_DEFAULT) {
    SHMEM_ARCH_GM const smem_shm_meta_slot *s = smem_shm_meta_slot_(shmemId);
    return s == NULL ? UINT32_MAX : s->rank;
}

SHMEM_ARCH_INLINE uint32_t smem_shm_get_global_rank_size(uint32_t shmemId SMEM_SHM_ID_DEFAULT) {
    SHMEM_ARCH_GM const smem_shm_meta_slot *s = smem_shm_meta_slot_(shmemId);
    return s == NULL ? UINT32_MAX : s->rank_size;
}

SHMEM_ARCH_INLINE uint64_t smem_shm_get_symmetric_size(uint32_t shmemId SMEM_SHM_ID_DEFAULT) {
    SHMEM_ARCH_GM const smem_shm_meta_slot *s = smem_shm_meta_slot_(shmemId);
    return s == NULL ? 0 : s->symmetric_size;
}

SHMEM_ARCH_INLINE SHMEM_ARCH_GM void *smem_shm_get_qp_info_address(
    uint32_t shmemId SMEM_SHM_ID_DEFAULT) {
    SHMEM_ARCH_GM const smem_shm_meta_slot *s = smem_shm_meta_slot_(shmemId);
    return s == NULL ? NULL : (SHMEM_ARCH_GM void *)(uintptr_t)s->qp_info;
}

SHMEM_ARCH_INLINE SHMEM_ARCH_GM void *smem_shm_get_extra_context_addr(
    uint32_t shmemId SMEM_SHM_ID_DEFAULT) {
    SHMEM_ARCH_GM const smem_shm_meta_slot *s = smem_shm_meta_slot_(shmemId);
    if (s == NULL || s->context_size == 0) {
        return NULL;
    }
    return (SHMEM_ARCH_GM void *)smem_shm_meta_block_()->context[shmemId];
}

SHMEM_ARCH_INLINE uint32_t smem_shm_get_extra_context_size(uint32_t shmemId SMEM_SHM_ID_DEFAULT) {
    SHMEM_ARCH_GM const smem_shm_meta_slot *s = smem_shm_meta_slot_(shmemId);
    return s == NULL ? 0 : s->context_size;
}

#undef SMEM_SHM_ID_DEFAULT

#endif /* SHMEM_MEMFABRIC_SHM_H */
