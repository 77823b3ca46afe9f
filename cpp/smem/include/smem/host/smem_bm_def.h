/* smem_bm_def.h: memfabric_hybrid's Big Memory types and constants (1.0.0's names, values and
 * layouts; compiles as C and as C++). */
#ifndef __MEMFABRIC_SMEM_BM_DEF_H__
#define __MEMFABRIC_SMEM_BM_DEF_H__

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef void *smem_bm_t;

#define SMEM_BM_TIMEOUT_MAX UINT32_MAX
#define SMEM_BM_PERFORMANCE_MODE_FLAG_INDEX 7
#define SMEM_BM_PERFORMANCE_MODE_FLAG_LEN 1
#define SMEM_BM_BIND_NUMA_FLAG_INDEX 0
#define SMEM_BM_BIND_NUMA_FLAG_LEN 7
#define SMEM_TLS_PATH_SIZE 256
#define SMEM_BM_FLAG_CREATE_WITH_SHM (1U << 8)

typedef enum {
    SMEM_MEM_TYPE_LOCAL_DEVICE = 0,
    SMEM_MEM_TYPE_LOCAL_HOST = 1,
    SMEM_MEM_TYPE_DEVICE = 2,
    SMEM_MEM_TYPE_HOST = 3,
    SMEM_MEM_TYPE_BUTT = 4
} smem_bm_mem_type;

typedef enum {
    SMEMB_DATA_OP_SDMA = 1,
    SMEMB_DATA_OP_HOST_RDMA = 2,
    SMEMB_DATA_OP_HOST_TCP = 4,
    SMEMB_DATA_OP_DEVICE_RDMA = 8,
    SMEMB_DATA_OP_HOST_URMA = 16,
    SMEMB_DATA_OP_BUTT = 17
} smem_bm_data_op_type;

typedef enum {
    SMEMB_COPY_L2G = 0,
    SMEMB_COPY_G2L = 1,
    SMEMB_COPY_G2H = 2,
    SMEMB_COPY_H2G = 3,
    SMEMB_COPY_L2GH = 4,
    SMEMB_COPY_GH2L = 5,
    SMEMB_COPY_GH2H = 6,
    SMEMB_COPY_H2GH = 7,
    SMEMB_COPY_G2G = 8,
    SMEMB_COPY_AUTO = 9,
    SMEMB_COPY_BUTT = 10
} smem_bm_copy_type;

typedef struct {
    bool tlsEnable;
    char caPath[SMEM_TLS_PATH_SIZE];
    char crlPath[SMEM_TLS_PATH_SIZE];
    char certPath[SMEM_TLS_PATH_SIZE];
    char keyPath[SMEM_TLS_PATH_SIZE];
    char keyPassPath[SMEM_TLS_PATH_SIZE];
    char packagePath[SMEM_TLS_PATH_SIZE];
    char decrypterLibPath[SMEM_TLS_PATH_SIZE];
} smem_tls_config;

typedef struct {
    uint32_t initTimeout;
    uint32_t createTimeout;
    uint32_t controlOperationTimeout;
    bool startConfigStoreServer;
    bool startConfigStoreOnly;
    bool dynamicWorldSize;
    bool unifiedAddressSpace;
    bool autoRanking;
    uint16_t rankId;
    uint32_t flags;
    char hcomUrl[64];
    smem_tls_config hcomTlsConfig;
    smem_tls_config storeTlsConfig;
} smem_bm_config_t;

typedef struct {
    uint64_t maxDramSize;
    uint64_t maxHbmSize;
    uint64_t localDRAMSize;
    uint64_t localHBMSize;
    smem_bm_data_op_type dataOpType;
    uint32_t flags;
    char tag[32];
    char tagOpInfo[256];
    int dramShmFd;
} smem_bm_create_option_t;

typedef struct {
    const void *src;
    void *dest;
    size_t dataSize;
} smem_copy_params;

typedef struct {
    void **sources;
    void **destinations;
    const uint64_t *dataSizes;
    uint32_t batchSize;
} smem_batch_copy_params;

#ifdef __cplusplus
}
#endif

#endif /* __MEMFABRIC_SMEM_BM_DEF_H__ */
