// shm.cpp: memfabric_hybrid's Share Memory API (smem_shm.h). Each function checks its
// arguments as memfabric does (memfabric's codes, the last error naming the call, the argument
// and its value), then calls the runtime in libshmem.so (shmemi_mf_shm_*, cpp/src/memfabric.h;
// rust/core/src/memfabric/shm.rs), whose reasons it logs and keeps as the last error.
#include <smem/host/smem_shm.h>
#include <smem/host/smemx_shm.h>

#include <cstdint>
#include <cstring>

#include "../../src/memfabric.h"
#include "mf_smem.h"

namespace {

constexpr uint32_t kDefaultTimeoutS = 120;
// memfabric's limits: an extra context, one rank's part of an allgather, a subgroup's key.
constexpr uint32_t kMaxContextBytes = 65536;
constexpr uint32_t kMaxGatherBytes = 65536;
constexpr size_t kMaxKeyChars = 64;

// memfabric's limits of an object: its id, its slot's size and granule.
constexpr uint32_t kMaxShmId = 63;
constexpr uint64_t kMaxSymmetricSize = 64ULL << 30;
constexpr uint64_t kSymmetricGranule = 2ULL << 20;

// A reason from the runtime.
struct Why {
    char text[512] = "";
};

uint64_t id_of(smem_shm_t handle) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
}

// `rc` from the runtime: kOk, or the code with its reason as the last error.
int32_t result(const char *call, int32_t rc, const Why &why) {
    return rc == mf::kOk ? mf::kOk : mf::fail(rc, call, "%s", why.text);
}

// kOk when `handle` is not NULL.
int32_t check_handle(const char *call, smem_shm_t handle) {
    if (handle == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument handle=NULL");
    }
    return mf::kOk;
}

// Runs `runtime(handle's id, why, why_len)`, the runtime's entry for `call`, once `handle` is not
// NULL; its code, with its reason as the last error.
template <typename F>
int32_t on_object(const char *call, smem_shm_t handle, F &&runtime) {
    int32_t rc = check_handle(call, handle);
    if (rc != mf::kOk) {
        return rc;
    }
    Why why;
    return result(call, runtime(id_of(handle), why.text, sizeof why.text), why);
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
    Why why;
    bool did = false;
    int32_t rc =
        shmemi_mf_shm_init(configStoreIpPort, worldSize, rankId, deviceId, config->shmInitTimeout,
                           config->controlOperationTimeout, config->startConfigStoreServer, &did,
                           why.text, sizeof why.text);
    if (rc != mf::kOk) {
        return result(call, rc, why);
    }
    if (!did) {
        mf::log(mf::kWarn,
                "%s: Share Memory is initialised already: rankId=%u worldSize=%u ignored", call,
                rankId, worldSize);
    } else {
        bool on_npu = shmemi_mf_shm_meta_kernels() != shmemi_mf_shm_meta();
        mf::log(mf::kInfo, "%s: rank %u of %u (device %u: %s), config store %s", call, rankId,
                worldSize, deviceId, on_npu ? "windows in NPU memory" : "host memory",
                configStoreIpPort);
        if (rankId == 0 && config->startConfigStoreServer) {
            mf::warn_plain_store(call, configStoreIpPort);
        }
    }
    return mf::kOk;
}

MF_EXPORT void smem_shm_uninit(uint32_t flags) {
    if (!shmemi_mf_shm_uninit()) {
        mf::log(mf::kWarn, "smem_shm_uninit: flags=%u: Share Memory is not initialised", flags);
    }
}

MF_EXPORT uint32_t smem_shm_query_support_data_operation(void) { return SMEMS_DATA_OP_MTE; }

MF_EXPORT smem_shm_t smem_shm_create(uint32_t id, uint32_t rankSize, uint32_t rankId,
                                     uint64_t symmetricSize, smem_shm_data_op_type dataOpType,
                                     uint32_t flags, void **gva) {
    const char *call = "smem_shm_create";
    (void)flags;
    const uint32_t known_ops = SMEMS_DATA_OP_MTE | SMEMS_DATA_OP_SDMA | SMEMS_DATA_OP_RDMA;
    if (id > kMaxShmId) {
        mf::fail_void(call, "invalid argument id=%u: not in 0..%u", id, kMaxShmId);
    } else if (rankSize == 0 || rankSize > SMEM_WORLD_SIZE_MAX) {
        mf::fail_void(call, "invalid argument rankSize=%u: not in 1..%u", rankSize,
                      SMEM_WORLD_SIZE_MAX);
    } else if (rankId >= rankSize) {
        mf::fail_void(call, "invalid argument rankId=%u: not below rankSize=%u", rankId, rankSize);
    } else if (symmetricSize == 0 || symmetricSize > kMaxSymmetricSize ||
               symmetricSize % kSymmetricGranule != 0) {
        mf::fail_void(call,
                      "invalid argument symmetricSize=%llu: not a multiple of 2 MiB in "
                      "2 MiB..64 GiB",
                      static_cast<unsigned long long>(symmetricSize));
    } else if ((static_cast<uint32_t>(dataOpType) & ~known_ops) != 0) {
        mf::fail_void(call,
                      "invalid argument dataOpType=%u: not a set of SMEMS_DATA_OP_MTE, "
                      "SMEMS_DATA_OP_SDMA and SMEMS_DATA_OP_RDMA",
                      static_cast<uint32_t>(dataOpType));
    } else if (gva == nullptr) {
        mf::fail_void(call, "invalid argument gva=NULL");
    } else {
        Why why;
        uint64_t handle = 0;
        void *base = nullptr;
        int32_t rc = shmemi_mf_shm_create(id, rankSize, rankId, symmetricSize, &handle, &base,
                                          why.text, sizeof why.text);
        if (rc == mf::kOk) {
            *gva = base;
            return reinterpret_cast<smem_shm_t>(static_cast<uintptr_t>(handle));
        }
        result(call, rc, why);
    }
    return nullptr;
}

MF_EXPORT int32_t smem_shm_destroy(smem_shm_t handle, uint32_t flags) {
    const char *call = "smem_shm_destroy";
    (void)flags;
    return on_object(call, handle, [](uint64_t id, char *why, size_t len) {
        return shmemi_mf_shm_destroy(id, why, len);
    });
}

MF_EXPORT int32_t smem_shm_set_extra_context(smem_shm_t handle, const void *context,
                                             uint32_t size) {
    const char *call = "smem_shm_set_extra_context";
    if (context == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument context=NULL");
    }
    if (size == 0 || size > kMaxContextBytes) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument size=%u: not in 1..%u", size,
                        kMaxContextBytes);
    }
    return on_object(call, handle, [&](uint64_t id, char *why, size_t len) {
        return shmemi_mf_shm_set_extra_context(id, context, size, why, len);
    });
}

// The rank or the rank count of `handle` (`want_size`); UINT32_MAX on error.
static uint32_t rank_query(const char *call, smem_shm_t handle, bool want_size) {
    uint32_t rank = 0;
    uint32_t size = 0;
    int32_t rc = on_object(call, handle, [&](uint64_t id, char *why, size_t len) {
        return shmemi_mf_shm_rank(id, &rank, &size, why, len);
    });
    if (rc != mf::kOk) {
        return UINT32_MAX;
    }
    return want_size ? size : rank;
}

MF_EXPORT uint32_t smem_shm_get_global_rank(smem_shm_t handle) {
    return rank_query("smem_shm_get_global_rank", handle, false);
}

MF_EXPORT uint32_t smem_shm_get_global_rank_size(smem_shm_t handle) {
    return rank_query("smem_shm_get_global_rank_size", handle, true);
}

MF_EXPORT int32_t smem_shm_control_barrier(smem_shm_t handle) {
    const char *call = "smem_shm_control_barrier";
    return on_object(call, handle, [&](uint64_t id, char *why, size_t len) {
        return shmemi_mf_shm_allgather(id, nullptr, 0, nullptr, 0, why, len);
    });
}

MF_EXPORT int32_t smem_shm_control_allgather(smem_shm_t handle, const char *sendBuf,
                                             uint32_t sendSize, char *recvBuf, uint32_t recvSize) {
    const char *call = "smem_shm_control_allgather";
    int32_t rc = check_gather(call, sendBuf, sendSize, recvBuf);
    if (rc == mf::kOk) {
        rc = check_handle(call, handle);
    }
    if (rc != mf::kOk) {
        return rc;
    }
    return on_object(call, handle, [&](uint64_t id, char *why, size_t len) {
        return shmemi_mf_shm_allgather(id, sendBuf, sendSize, recvBuf, recvSize, why, len);
    });
}

MF_EXPORT int32_t smem_shm_subgroup_barrier(smem_shm_t handle, const char *key, uint32_t rankSize,
                                            uint32_t rankId) {
    const char *call = "smem_shm_subgroup_barrier";
    int32_t rc = check_subgroup(call, key, rankSize, rankId);
    if (rc == mf::kOk) {
        rc = check_handle(call, handle);
    }
    if (rc != mf::kOk) {
        return rc;
    }
    return on_object(call, handle, [&](uint64_t id, char *why, size_t len) {
        return shmemi_mf_shm_subgroup(id, key, rankSize, rankId, nullptr, 0, nullptr, 0, why, len);
    });
}

MF_EXPORT int32_t smem_shm_subgroup_allgather(smem_shm_t handle, const char *key, uint32_t rankSize,
                                              uint32_t rankId, const char *sendBuf,
                                              uint32_t sendSize, char *recvBuf, uint32_t recvSize) {
    const char *call = "smem_shm_subgroup_allgather";
    int32_t rc = check_subgroup(call, key, rankSize, rankId);
    if (rc == mf::kOk) {
        rc = check_gather(call, sendBuf, sendSize, recvBuf);
    }
    if (rc == mf::kOk) {
        rc = check_handle(call, handle);
    }
    if (rc != mf::kOk) {
        return rc;
    }
    return on_object(call, handle, [&](uint64_t id, char *why, size_t len) {
        return shmemi_mf_shm_subgroup(id, key, rankSize, rankId, sendBuf, sendSize, recvBuf,
                                      recvSize, why, len);
    });
}

MF_EXPORT int32_t smem_shm_topology_can_reach(smem_shm_t handle, uint32_t remoteRank,
                                              uint32_t *reachInfo) {
    const char *call = "smem_shm_topology_can_reach";
    if (reachInfo == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument reachInfo=NULL");
    }
    return on_object(call, handle, [&](uint64_t id, char *why, size_t len) {
        return shmemi_mf_shm_can_reach(id, remoteRank, reachInfo, why, len);
    });
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
    return on_object(call, handle, [&](uint64_t id, char *why, size_t len) {
        return shmemi_mf_shm_atomic_alloc(id, limit, retVal, why, len);
    });
}

MF_EXPORT int32_t smem_shm_atomic_release_value(smem_shm_t handle, int32_t value) {
    const char *call = "smem_shm_atomic_release_value";
    return on_object(call, handle, [&](uint64_t id, char *why, size_t len) {
        return shmemi_mf_shm_atomic_release(id, value, why, len);
    });
}

MF_EXPORT int32_t smem_shm_register_exit(smem_shm_t handle, void (*exit)(int)) {
    const char *call = "smem_shm_register_exit";
    if (exit == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument exit=NULL");
    }
    return on_object(call, handle, [&](uint64_t id, char *why, size_t len) {
        return shmemi_mf_shm_register_exit(id, exit, why, len);
    });
}

MF_EXPORT void smem_shm_global_exit(smem_shm_t handle, int status) {
    const char *call = "smem_shm_global_exit";
    on_object(call, handle, [&](uint64_t id, char *why, size_t len) {
        return shmemi_mf_shm_global_exit(id, status, why, len);
    });
}

MF_EXPORT const void *smemx_shm_meta_block(void) { return shmemi_mf_shm_meta_kernels(); }
