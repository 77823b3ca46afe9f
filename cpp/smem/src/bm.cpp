// bm.cpp: memfabric_hybrid's Big Memory API (smem_bm.h). smem_bm_config_init writes
// memfabric's defaults; smem_bm_init checks its arguments as memfabric does and then reports
// that Big Memory pools are not available yet (the lower layer's "function unsupported", -10).
// Every other function behaves as memfabric's does while Big Memory is not initialised: its
// argument checks, then the not-initialised answer (docs/memfabric.md lists them).
#include <smem/host/smem_bm.h>

#include <cstring>

#include "mf_smem.h"

namespace {

constexpr uint32_t kDefaultTimeoutS = 120;

// memfabric's answer of a handle function while Big Memory is not initialised.
int32_t not_initialized(const char *call) {
    return mf::fail(mf::kNotInitialized, call,
                    "Big Memory is not initialised (smem_bm_init is not available yet in this "
                    "library)");
}

// Argument checks common to the functions taking a handle: a NULL handle is memfabric's
// -2000; any other handle names no object while nothing is initialised.
int32_t handle_call(const char *call, smem_bm_t handle) {
    if (handle == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument handle=NULL");
    }
    return not_initialized(call);
}

// The checks of smem_bm_copy and smem_bm_copy_batch before the handle's.
int32_t copy_call(const char *call, smem_bm_t handle, const void *params, smem_bm_copy_type t) {
    if (params == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument params=NULL");
    }
    if (static_cast<uint32_t>(t) >= SMEMB_COPY_BUTT) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument t=%u: not below %u",
                        static_cast<uint32_t>(t), static_cast<uint32_t>(SMEMB_COPY_BUTT));
    }
    return handle_call(call, handle);
}

}  // namespace

MF_EXPORT int32_t smem_bm_config_init(smem_bm_config_t *config) {
    if (config == nullptr) {
        return mf::fail(mf::kInvalidParam, "smem_bm_config_init", "invalid argument config=NULL");
    }
    std::memset(config, 0, sizeof *config);
    config->initTimeout = kDefaultTimeoutS;
    config->createTimeout = kDefaultTimeoutS;
    config->controlOperationTimeout = kDefaultTimeoutS;
    config->startConfigStoreServer = true;
    config->startConfigStoreOnly = false;
    config->dynamicWorldSize = false;
    config->unifiedAddressSpace = true;
    config->autoRanking = true;
    config->rankId = UINT16_MAX;
    config->flags = 0;
    return mf::kOk;
}

MF_EXPORT int32_t smem_bm_init(const char *storeURL, uint32_t worldSize, uint16_t deviceId,
                               const smem_bm_config_t *config) {
    const char *call = "smem_bm_init";
    if (storeURL == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument storeURL=NULL");
    }
    if (worldSize == 0 || worldSize > SMEM_WORLD_SIZE_MAX) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument worldSize=%u: not in 1..%u",
                        worldSize, SMEM_WORLD_SIZE_MAX);
    }
    if (config == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument config=NULL");
    }
    if (!config->unifiedAddressSpace) {
        return mf::fail(mf::kInvalidParam, call,
                        "invalid argument config->unifiedAddressSpace=false: must be true");
    }
    if (!config->autoRanking && config->rankId >= worldSize) {
        return mf::fail(mf::kInvalidParam, call,
                        "invalid argument config->rankId=%u: not below worldSize=%u (autoRanking "
                        "is off)",
                        config->rankId, worldSize);
    }
    return mf::fail(mf::kUnsupported, call,
                    "Big Memory pools are not available yet in this library (storeURL=%s "
                    "worldSize=%u deviceId=%u)",
                    storeURL, worldSize, deviceId);
}

MF_EXPORT void smem_bm_uninit(uint32_t flags) {
    mf::log(mf::kWarn, "smem_bm_uninit: flags=%u: Big Memory is not initialised", flags);
}

MF_EXPORT uint32_t smem_bm_get_rank_id(void) { return 0; }

MF_EXPORT smem_bm_t smem_bm_create(uint32_t id, uint32_t memberSize,
                                   smem_bm_data_op_type dataOpType, uint64_t localDRAMSize,
                                   uint64_t localHBMSize, uint32_t flags) {
    (void)memberSize;
    (void)dataOpType;
    (void)localDRAMSize;
    (void)localHBMSize;
    (void)flags;
    (void)id;
    not_initialized("smem_bm_create");
    return nullptr;
}

MF_EXPORT smem_bm_t smem_bm_create2(uint32_t id, const smem_bm_create_option_t *option) {
    const char *call = "smem_bm_create2";
    if (option == nullptr) {
        mf::fail(mf::kInvalidParam, call, "invalid argument option=NULL (id=%u)", id);
        return nullptr;
    }
    not_initialized(call);
    return nullptr;
}

MF_EXPORT void smem_bm_destroy(smem_bm_t handle) { handle_call("smem_bm_destroy", handle); }

MF_EXPORT int32_t smem_bm_join(smem_bm_t handle, uint32_t flags) {
    (void)flags;
    return handle_call("smem_bm_join", handle);
}

MF_EXPORT int32_t smem_bm_leave(smem_bm_t handle, uint32_t flags) {
    (void)flags;
    return handle_call("smem_bm_leave", handle);
}

MF_EXPORT uint64_t smem_bm_get_local_mem_size_by_mem_type(smem_bm_t handle,
                                                          smem_bm_mem_type memType) {
    (void)memType;
    handle_call("smem_bm_get_local_mem_size_by_mem_type", handle);
    return 0;
}

MF_EXPORT void *smem_bm_ptr_by_mem_type(smem_bm_t handle, smem_bm_mem_type memType,
                                        uint16_t peerRankId) {
    (void)memType;
    (void)peerRankId;
    handle_call("smem_bm_ptr_by_mem_type", handle);
    return nullptr;
}

MF_EXPORT int32_t smem_bm_copy(smem_bm_t handle, smem_copy_params *params, smem_bm_copy_type t,
                               uint32_t flags) {
    (void)flags;
    return copy_call("smem_bm_copy", handle, params, t);
}

MF_EXPORT int32_t smem_bm_copy_batch(smem_bm_t handle, smem_batch_copy_params *params,
                                     smem_bm_copy_type t, uint32_t flags) {
    (void)flags;
    return copy_call("smem_bm_copy_batch", handle, params, t);
}

MF_EXPORT int32_t smem_bm_wait(smem_bm_t handle) { return handle_call("smem_bm_wait", handle); }

MF_EXPORT int32_t smem_bm_register_user_mem(smem_bm_t handle, uint64_t addr, uint64_t size) {
    const char *call = "smem_bm_register_user_mem";
    if (addr == 0) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument addr=0 (size=%llu)",
                        static_cast<unsigned long long>(size));
    }
    return handle_call(call, handle);
}

MF_EXPORT int32_t smem_bm_unregister_user_mem(smem_bm_t handle, uint64_t addr) {
    const char *call = "smem_bm_unregister_user_mem";
    if (addr == 0) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument addr=0");
    }
    return handle_call(call, handle);
}

MF_EXPORT uint32_t smem_bm_get_rank_id_by_gva(smem_bm_t handle, void *gva) {
    const char *call = "smem_bm_get_rank_id_by_gva";
    if (gva == nullptr) {
        return static_cast<uint32_t>(
            mf::fail(mf::kInvalidParam, call, "invalid argument gva=NULL"));
    }
    return static_cast<uint32_t>(handle_call(call, handle));
}
