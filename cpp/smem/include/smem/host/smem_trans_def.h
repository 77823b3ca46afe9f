/* smem_trans_def.h: memfabric_hybrid's transfer engine types (1.0.0's names, values and
 * layouts; compiles as C and as C++). */
#ifndef MF_HYBRID_SMEM_TRANS_DEF_H
#define MF_HYBRID_SMEM_TRANS_DEF_H

#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#include "smem_bm_def.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A transfer engine's handle. */
typedef void *smem_trans_t;

/* An engine's role: a sender addresses receivers, a receiver senders. */
typedef enum {
    SMEM_TRANS_NONE = 0,
    SMEM_TRANS_SENDER = 1,
    SMEM_TRANS_RECEIVER = 2,
    SMEM_TRANS_BOTH = 3,
    SMEM_TRANS_BUTT = 4
} smem_trans_role_t;

typedef struct {
    smem_trans_role_t role;          /* SMEM_TRANS_SENDER or SMEM_TRANS_RECEIVER */
    uint32_t initTimeout;            /* seconds of attempts to reach the config store */
    uint32_t deviceId;               /* the device; any value on host memory */
    uint32_t flags;                  /* reserved */
    smem_bm_data_op_type dataOpType; /* not set by smem_trans_config_init */
    bool startConfigServer;          /* serve the config store here if this host has its IP */
} smem_trans_config_t;

#ifdef __cplusplus
}
#endif

#endif /* MF_HYBRID_SMEM_TRANS_DEF_H */
