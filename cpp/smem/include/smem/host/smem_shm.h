/* smem_shm.h: memfabric_hybrid's Share Memory functions (1.0.0's declarations; C and C++). */
#ifndef __MEMFABRIC_SMEM_SHM_H__
#define __MEMFABRIC_SMEM_SHM_H__

#include "smem.h"
#include "smem_shm_def.h"

#ifdef __cplusplus
extern "C" {
#endif

int32_t smem_shm_config_init(smem_shm_config_t *config);
int32_t smem_shm_init(const char *configStoreIpPort, uint32_t worldSize, uint32_t rankId,
                      uint16_t deviceId, smem_shm_config_t *config);
void smem_shm_uninit(uint32_t flags);
uint32_t smem_shm_query_support_data_operation(void);
smem_shm_t smem_shm_create(uint32_t id, uint32_t rankSize, uint32_t rankId, uint64_t symmetricSize,
                           smem_shm_data_op_type dataOpType, uint32_t flags, void **gva);
int32_t smem_shm_destroy(smem_shm_t handle, uint32_t flags);
int32_t smem_shm_set_extra_context(smem_shm_t handle, const void *context, uint32_t size);
uint32_t smem_shm_get_global_rank(smem_shm_t handle);
uint32_t smem_shm_get_global_rank_size(smem_shm_t handle);
int32_t smem_shm_control_barrier(smem_shm_t handle);
int32_t smem_shm_control_allgather(smem_shm_t handle, const char *sendBuf, uint32_t sendSize,
                                   char *recvBuf, uint32_t recvSize);
int32_t smem_shm_subgroup_barrier(smem_shm_t handle, const char *key, uint32_t rankSize,
                                  uint32_t rankId);
int32_t smem_shm_subgroup_allgather(smem_shm_t handle, const char *key, uint32_t rankSize,
                                    uint32_t rankId, const char *sendBuf, uint32_t sendSize,
                                    char *recvBuf, uint32_t recvSize);
int32_t smem_shm_topology_can_reach(smem_shm_t handle, uint32_t remoteRank, uint32_t *reachInfo);
int32_t smem_shm_atomic_alloc_value(smem_shm_t handle, uint32_t limit, uint32_t *retVal);
int32_t smem_shm_atomic_release_value(smem_shm_t handle, int32_t value);
int32_t smem_shm_register_exit(smem_shm_t handle, void (*exit)(int));
void smem_shm_global_exit(smem_shm_t handle, int status);

#ifdef __cplusplus
}
#endif

#endif /* __MEMFABRIC_SMEM_SHM_H__ */
