/* smem_trans.h: memfabric_hybrid's transfer engine functions (1.0.0's declarations; C and C++).
 * docs/memfabric.md says what each does here. */
#ifndef MF_HYBRID_SMEM_TRANS_H
#define MF_HYBRID_SMEM_TRANS_H

#include <stddef.h>

#include "smem.h"
#include "smem_trans_def.h"

#ifdef __cplusplus
extern "C" {
#endif

int32_t smem_trans_config_init(smem_trans_config_t *config);
int32_t smem_trans_init(const smem_trans_config_t *config);
void smem_trans_uninit(uint32_t flags);
smem_trans_t smem_trans_create(const char *storeUrl, const char *uniqueId,
                               const smem_trans_config_t *config);
void smem_trans_destroy(smem_trans_t handle, uint32_t flags);
void *smem_trans_malloc(smem_trans_t handle, size_t capacity);
int32_t smem_trans_free(smem_trans_t handle, void *address);
int32_t smem_trans_register_mem(smem_trans_t handle, void *address, size_t capacity,
                                uint32_t flags);
int32_t smem_trans_batch_register_mem(smem_trans_t handle, void *addresses[], size_t capacities[],
                                      uint32_t count, uint32_t flags);
int32_t smem_trans_deregister_mem(smem_trans_t handle, void *address);
int32_t smem_trans_write(smem_trans_t handle, const void *localAddr, const char *remoteUniqueId,
                         void *remoteAddr, size_t dataSize, uint32_t flags);
int32_t smem_trans_batch_write(smem_trans_t handle, const void *localAddrs[],
                               const char *remoteUniqueId, void *remoteAddrs[], size_t dataSizes[],
                               uint32_t batchSize, uint32_t flags);
int32_t smem_trans_read(smem_trans_t handle, void *localAddr, const char *remoteUniqueId,
                        const void *remoteAddr, size_t dataSize, uint32_t flags);
int32_t smem_trans_batch_read(smem_trans_t handle, void *localAddrs[], const char *remoteUniqueId,
                              const void *remoteAddrs[], size_t dataSizes[], uint32_t batchSize,
                              uint32_t flags);
int32_t smem_trans_read_submit(smem_trans_t handle, void *localAddr, const char *remoteUniqueId,
                               const void *remoteAddr, size_t dataSize, void *stream,
                               uint32_t flags);
int32_t smem_trans_write_submit(smem_trans_t handle, const void *localAddr,
                                const char *remoteUniqueId, void *remoteAddr, size_t dataSize,
                                void *stream, uint32_t flags);
int32_t smem_trans_batch_read_submit(smem_trans_t handle, void *localAddrs[],
                                     const char *remoteUniqueId, const void *remoteAddrs[],
                                     size_t dataSizes[], uint32_t batchSize, void *stream,
                                     uint32_t flags);
int32_t smem_trans_batch_write_submit(smem_trans_t handle, const void *localAddrs[],
                                      const char *remoteUniqueId, void *remoteAddrs[],
                                      size_t dataSizes[], uint32_t batchSize, void *stream,
                                      uint32_t flags);

#ifdef __cplusplus
}
#endif

#endif /* MF_HYBRID_SMEM_TRANS_H */
