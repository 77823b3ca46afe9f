/* smem_shm_def.h: memfabric_hybrid's Share Memory types and constants (1.0.0's names, values
 * and layouts; C and C++). */
#ifndef __MEMFABRIC_SMEM_DEF_H__
#define __MEMFABRIC_SMEM_DEF_H__

#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef void *smem_shm_t;

#define SMEM_SHM_TIMEOUT_MAX UINT32_MAX
#define SMEM_SHM_ATOMIC_NUM_LIMIT 1024U

typedef enum {
    SMEMS_DATA_OP_MTE = 1,
    SMEMS_DATA_OP_SDMA = 2,
    SMEMS_DATA_OP_RDMA = 4
} smem_shm_data_op_type;

typedef struct {
    uint32_t shmInitTimeout;
    uint32_t shmCreateTimeout;
    uint32_t controlOperationTimeout;
    bool startConfigStoreServer;
    uint32_t flags;
} smem_shm_config_t;

#ifdef __cplusplus
}
#endif

#endif /* __MEMFABRIC_SMEM_DEF_H__ */
