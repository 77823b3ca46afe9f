// shm.cpp: memfabric_hybrid's Share Memory API (smem_shm.h). smem_shm_config_init writes
// memfabric's defaults; smem_shm_init checks its arguments as memfabric does and then reports
// that Share Memory is not available yet (the lower layer's "function unsupported", -10).
// Every other function behaves as memfabric's does while Share Memory is not initialised
// (memfabric answers -2000 there, not -2008; docs/memfabric.md lists them).
#include <smem/host/smem_shm.h>

#include <cstring>

#include "mf_smem.h"

namespace {

constexpr uint32_t kDefaultTimeoutS = 120;
// memfabric's limits: an extra context, one rank's part of an allgather, a subgroup's key.
constexpr uint32_t kMaxContextBytes = 65536;
constexpr uint32_t kMaxGatherBytes = 65536;
constexpr size_t kMaxKeyChars = 64;

int32_t not_initialized(const char *call) {
    return mf::fail(mf::kInvalidParam, call,
                    "Share Memory is not initialised (smem_shm_init is not available yet in this "
                    "library)");
}

int32_t handle_call(const char *call, smem_shm_t handle) {
    if (handle == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument handle=NULL");
    }
    return not_initialized(call);
}

// The buffers of the allgathers; kOk when they pass.
int32_t check_gather(const char *call, const char *sendBuf, uint32_t sendSize,
                     const char *recvBuf) {
    if (sendBuf == nullptr || recvBuf == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument %s=NULL",
                        sendBuf == nullptr ? "sendBuf" : "recvBuf");
    }
    if (sendSize == 0 || sendSize > kMaxGatherBytes) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument sendSize=%u: not in 1..%u",
                        sendSize, kMaxGatherBytes);
    }
    return mf::kOk;
}

// The key and the ranks of the subgroup calls; kOk when they pass.
int32_t check_subgroup(const char *call, const char *key, uint32_t rankSize, uint32_t rankId) {
    if (key == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument key=NULL");
    }
    if (std::strlen(key) >= kMaxKeyChars) {
        return mf::fail(mf::kInvalidParam, call,
                        "invalid argument key='%.16s...': %zu characters, not below %zu", key,
                        std::strlen(key), kMaxKeyChars);
    }
    if (rankId >= rankSize) {
        return mf::fail(mf::kInvalidParam, call,
                        "invalid argument rankId=%u: not below rankSize=%u", rankId, rankSize);
    }
    return mf::kOk;
}

}  // namespace

MF_EXPORT int32_t smem_shm_config_init(smem_shm_config_t *config) {
    if (config == nullptr) {
        return mf::fail(mf::kInvalidParam, "smem_shm_config_init", "invalid argument config=NULL");
    }
    std::memset(config, 0, sizeof *config);
    config->shmInitTimeout = kDefaultTimeoutS;
    config->shmCreateTimeout = kDefaultTimeoutS;
    config->controlOperationTimeout = kDefaultTimeoutS;
    config->startConfigStoreServer = true;
    config->flags = 0;
    return mf::kOk;
}

MF_EXPORT int32_t smem_shm_init(const char *configStoreIpPort, uint32_t worldSize, uint32_t rankId,
                                uint16_t deviceId, smem_shm_config_t *config) {
    const char *call = "smem_shm_init";
    if (configStoreIpPort == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument configStoreIpPort=NULL");
    }
    if (worldSize == 0 || worldSize > SMEM_WORLD_SIZE_MAX) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument worldSize=%u: not in 1..%u",
                        worldSize, SMEM_WORLD_SIZE_MAX);
    }
    if (rankId >= worldSize) {
        return mf::fail(mf::kInvalidParam, call,
                        "invalid argument rankId=%u: not below worldSize=%u", rankId, worldSize);
    }
    if (config == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument config=NULL");
    }
    return mf::fail(mf::kUnsupported, call,
                    "Share Memory is not available yet in this library (configStoreIpPort=%s "
                    "worldSize=%u rankId=%u deviceId=%u)",
                    configStoreIpPort, worldSize, rankId, deviceId);
}

MF_EXPORT void smem_shm_uninit(uint32_t flags) {
    mf::log(mf::kWarn, "smem_shm_uninit: flags=%u: Share Memory is not initialised", flags);
}

MF_EXPORT uint32_t smem_shm_query_support_data_operation(void) { return SMEMS_DATA_OP_MTE; }

MF_EXPORT smem_shm_t smem_shm_create(uint32_t id, uint32_t rankSize, uint32_t rankId,
                                     uint64_t symmetricSize, smem_shm_data_op_type dataOpType,
                                     uint32_t flags, void **gva) {
    (void)id;
    (void)rankSize;
    (void)rankId;
    (void)symmetricSize;
    (void)dataOpType;
    (void)flags;
    (void)gva;
    not_initialized("smem_shm_create");
    return nullptr;
}

MF_EXPORT int32_t smem_shm_destroy(smem_shm_t handle, uint32_t flags) {
    (void)flags;
    return handle_call("smem_shm_destroy", handle);
}

MF_EXPORT int32_t smem_shm_set_extra_context(smem_shm_t handle, const void *context,
                                             uint32_t size) {
    const char *call = "smem_shm_set_extra_context";
    if (context == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument context=NULL");
    }
    if (size == 0 || size > 65536) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument size=%u: not in 1..65536", size);
    }
    return handle_call(call, handle);
}

MF_EXPORT uint32_t smem_shm_get_global_rank(smem_shm_t handle) {
    handle_call("smem_shm_get_global_rank", handle);
    return UINT32_MAX;
}

MF_EXPORT uint32_t smem_shm_get_global_rank_size(smem_shm_t handle) {
    handle_call("smem_shm_get_global_rank_size", handle);
    return UINT32_MAX;
}

MF_EXPORT int32_t smem_shm_control_barrier(smem_shm_t handle) {
    return handle_call("smem_shm_control_barrier", handle);
}

MF_EXPORT int32_t smem_shm_control_allgather(smem_shm_t handle, const char *sendBuf,
                                             uint32_t sendSize, char *recvBuf, uint32_t recvSize) {
    const char *call = "smem_shm_control_allgather";
    (void)recvSize;
    int32_t rc = check_gather(call, sendBuf, sendSize, recvBuf);
    return rc != mf::kOk ? rc : handle_call(call, handle);
}

MF_EXPORT int32_t smem_shm_subgroup_barrier(smem_shm_t handle, const char *key, uint32_t rankSize,
                                            uint32_t rankId) {
    const char *call = "smem_shm_subgroup_barrier";
    int32_t rc = check_subgroup(call, key, rankSize, rankId);
    return rc != mf::kOk ? rc : handle_call(call, handle);
}

MF_EXPORT int32_t smem_shm_subgroup_allgather(smem_shm_t handle, const char *key, uint32_t rankSize,
                                              uint32_t rankId, const char *sendBuf,
                                              uint32_t sendSize, char *recvBuf, uint32_t recvSize) {
    const char *call = "smem_shm_subgroup_allgather";
    (void)recvSize;
    int32_t rc = check_subgroup(call, key, rankSize, rankId);
    if (rc == mf::kOk) {
        rc = check_gather(call, sendBuf, sendSize, recvBuf);
    }
    return rc != mf::kOk ? rc : handle_call(call, handle);
}

MF_EXPORT int32_t smem_shm_topology_can_reach(smem_shm_t handle, uint32_t remoteRank,
                                              uint32_t *reachInfo) {
    const char *call = "smem_shm_topology_can_reach";
    (void)remoteRank;
    if (reachInfo == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument reachInfo=NULL");
    }
    return handle_call(call, handle);
}

MF_EXPORT int32_t smem_shm_atomic_alloc_value(smem_shm_t handle, uint32_t limit, uint32_t *retVal) {
    const char *call = "smem_shm_atomic_alloc_value";
    if (retVal == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument retVal=NULL");
    }
    if (limit > SMEM_SHM_ATOMIC_NUM_LIMIT) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument limit=%u: above %u", limit,
                        SMEM_SHM_ATOMIC_NUM_LIMIT);
    }
    return handle_call(call, handle);
}

MF_EXPORT int32_t smem_shm_atomic_release_value(smem_shm_t handle, int32_t value) {
    (void)value;
    return handle_call("smem_shm_atomic_release_value", handle);
}

MF_EXPORT int32_t smem_shm_register_exit(smem_shm_t handle, void (*exit)(int)) {
    const char *call = "smem_shm_register_exit";
    if (exit == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument exit=NULL");
    }
    return handle_call(call, handle);
}

MF_EXPORT void smem_shm_global_exit(smem_shm_t handle, int status) {
    (void)status;
    handle_call("smem_shm_global_exit", handle);
}
