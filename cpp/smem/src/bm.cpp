// bm.cpp: memfabric_hybrid's Big Memory API (smem_bm.h) over the runtime's Big Memory pools
// (libshmem.so's shmemi_mf_bm_*, rust/core/src/memfabric/bm/). Every function checks its
// arguments first, as memfabric does (NULL handles and pointers, copy types, sizes: -2000),
// then calls the runtime, which checks the rest (not initialised: -2008, unknown handle: -2000,
// ...) and answers with memfabric's code and a reason kept as the last error.
#include <smem/host/smem_bm.h>

#include <cstring>
#include <string>

#include "../../src/memfabric_bm.h"
#include "mf_smem.h"

namespace {

constexpr uint32_t kDefaultTimeoutS = 120;
constexpr size_t kWhy = 1024;

// A char[N] field of memfabric's structs, which need not end in NUL.
template <size_t N>
std::string field(const char (&f)[N]) {
    return std::string(f, strnlen(f, N));
}

// The runtime's answer: 0, or its code with its reason kept as the last error.
int32_t answer(const char *call, int32_t rc, const char *why) {
    if (rc == mf::kOk) {
        return rc;
    }
    return mf::fail(rc, call, "%s", why);
}

int32_t null_handle(const char *call) {
    return mf::fail(mf::kInvalidParam, call, "invalid argument handle=NULL");
}

// The checks of smem_bm_copy and smem_bm_copy_batch before the runtime's.
int32_t copy_checks(const char *call, smem_bm_t handle, const void *params, smem_bm_copy_type t) {
    if (handle == nullptr) {
        return null_handle(call);
    }
    if (params == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument params=NULL");
    }
    if (static_cast<uint32_t>(t) >= SMEMB_COPY_BUTT) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument t=%u: not below %u",
                        static_cast<uint32_t>(t), static_cast<uint32_t>(SMEMB_COPY_BUTT));
    }
    return mf::kOk;
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
    const smem_tls_config &tls = config->storeTlsConfig;
    std::string hcom = field(config->hcomUrl), ca = field(tls.caPath), crl = field(tls.crlPath),
                cert = field(tls.certPath), key = field(tls.keyPath), pass = field(tls.keyPassPath);
    shmemi_mf_bm_init_args args{};
    args.url = storeURL;
    args.world_size = worldSize;
    args.device_id = deviceId;
    args.init_timeout = config->initTimeout;
    args.control_timeout = config->controlOperationTimeout;
    args.start_server = config->startConfigStoreServer;
    args.auto_ranking = config->autoRanking;
    args.rank_id = config->rankId;
    args.hcom_url = hcom.c_str();
    args.tls_enable = tls.tlsEnable;
    args.tls_ca = ca.c_str();
    args.tls_crl = crl.c_str();
    args.tls_cert = cert.c_str();
    args.tls_key = key.c_str();
    args.tls_key_pass = pass.c_str();
    int plain = 0, repeat = 0;
    char why[kWhy] = "";
    int32_t rc = shmemi_mf_bm_init(&args, &plain, &repeat, why, sizeof why);
    if (rc != mf::kOk) {
        return answer(call, rc, why);
    }
    if (repeat) {
        mf::log(mf::kWarn, "%s: Big Memory is initialised already: the new arguments are ignored",
                call);
        return mf::kOk;
    }
    if (plain) {
        mf::warn_plain_store(call, storeURL);
    }
    if (config->hcomTlsConfig.tlsEnable) {
        mf::log(mf::kWarn,
                "%s: config->hcomTlsConfig.tlsEnable=true is not applied: copies between nodes "
                "go over UCX, which its own settings secure or not",
                call);
    }
    mf::log(mf::kInfo, "%s: rank %u of %u, store %s", call, shmemi_mf_bm_rank(), worldSize,
            storeURL);
    return mf::kOk;
}

MF_EXPORT void smem_bm_uninit(uint32_t flags) {
    if (!shmemi_mf_bm_uninit()) {
        mf::log(mf::kWarn, "smem_bm_uninit: flags=%u: Big Memory is not initialised", flags);
    }
}

MF_EXPORT uint32_t smem_bm_get_rank_id(void) { return shmemi_mf_bm_rank(); }

MF_EXPORT smem_bm_t smem_bm_create2(uint32_t id, const smem_bm_create_option_t *option) {
    const char *call = "smem_bm_create2";
    if (option == nullptr) {
        mf::fail(mf::kInvalidParam, call, "invalid argument option=NULL (id=%u)", id);
        return nullptr;
    }
    const uint64_t sizes[4] = {option->maxDramSize, option->maxHbmSize, option->localDRAMSize,
                               option->localHBMSize};
    void *handle = nullptr;
    char why[kWhy] = "";
    int32_t rc = shmemi_mf_bm_create(id, sizes, static_cast<uint32_t>(option->dataOpType),
                                     option->flags, option->dramShmFd, &handle, why, sizeof why);
    if (rc != mf::kOk) {
        answer(call, rc, why);
        return nullptr;
    }
    return handle;
}

MF_EXPORT smem_bm_t smem_bm_create(uint32_t id, uint32_t memberSize,
                                   smem_bm_data_op_type dataOpType, uint64_t localDRAMSize,
                                   uint64_t localHBMSize, uint32_t flags) {
    (void)memberSize;  // memfabric ignores it: a pool's members are those that join.
    smem_bm_create_option_t option;
    std::memset(&option, 0, sizeof option);
    option.maxDramSize = localDRAMSize;
    option.maxHbmSize = localHBMSize;
    option.localDRAMSize = localDRAMSize;
    option.localHBMSize = localHBMSize;
    option.dataOpType = dataOpType;
    option.flags = flags & ~SMEM_BM_FLAG_CREATE_WITH_SHM;
    option.dramShmFd = -1;
    return smem_bm_create2(id, &option);
}

MF_EXPORT void smem_bm_destroy(smem_bm_t handle) {
    const char *call = "smem_bm_destroy";
    if (handle == nullptr) {
        null_handle(call);
        return;
    }
    char why[kWhy] = "";
    answer(call, shmemi_mf_bm_destroy(handle, why, sizeof why), why);
}

MF_EXPORT int32_t smem_bm_join(smem_bm_t handle, uint32_t flags) {
    (void)flags;
    if (handle == nullptr) {
        return null_handle("smem_bm_join");
    }
    char why[kWhy] = "";
    return answer("smem_bm_join", shmemi_mf_bm_join(handle, why, sizeof why), why);
}

MF_EXPORT int32_t smem_bm_leave(smem_bm_t handle, uint32_t flags) {
    (void)flags;
    if (handle == nullptr) {
        return null_handle("smem_bm_leave");
    }
    char why[kWhy] = "";
    return answer("smem_bm_leave", shmemi_mf_bm_leave(handle, why, sizeof why), why);
}

MF_EXPORT uint64_t smem_bm_get_local_mem_size_by_mem_type(smem_bm_t handle,
                                                          smem_bm_mem_type memType) {
    const char *call = "smem_bm_get_local_mem_size_by_mem_type";
    if (handle == nullptr) {
        null_handle(call);
        return 0;
    }
    uint64_t size = 0;
    char why[kWhy] = "";
    if (answer(
            call,
            shmemi_mf_bm_local_size(handle, static_cast<uint32_t>(memType), &size, why, sizeof why),
            why) != mf::kOk) {
        return 0;
    }
    return size;
}

MF_EXPORT void *smem_bm_ptr_by_mem_type(smem_bm_t handle, smem_bm_mem_type memType,
                                        uint16_t peerRankId) {
    const char *call = "smem_bm_ptr_by_mem_type";
    if (handle == nullptr) {
        null_handle(call);
        return nullptr;
    }
    uint64_t at = 0;
    char why[kWhy] = "";
    if (answer(call,
               shmemi_mf_bm_ptr(handle, static_cast<uint32_t>(memType), peerRankId, &at, why,
                                sizeof why),
               why) != mf::kOk) {
        return nullptr;
    }
    return reinterpret_cast<void *>(at);
}

MF_EXPORT int32_t smem_bm_copy(smem_bm_t handle, smem_copy_params *params, smem_bm_copy_type t,
                               uint32_t flags) {
    const char *call = "smem_bm_copy";
    int32_t rc = copy_checks(call, handle, params, t);
    if (rc != mf::kOk) {
        return rc;
    }
    if (params->src == nullptr || params->dest == nullptr || params->dataSize == 0) {
        return mf::fail(mf::kInvalidParam, call,
                        "invalid argument params: src=%p dest=%p dataSize=%zu (none may be 0)",
                        params->src, params->dest, params->dataSize);
    }
    const void *src = params->src;
    void *dest = params->dest;
    uint64_t size = params->dataSize;
    char why[kWhy];  // written when the copy fails (not cleared: a copy is a hot path)
    why[0] = '\0';
    return answer(call,
                  shmemi_mf_bm_copy(handle, &src, &dest, &size, 1, static_cast<uint32_t>(t), flags,
                                    0, why, sizeof why),
                  why);
}

MF_EXPORT int32_t smem_bm_copy_batch(smem_bm_t handle, smem_batch_copy_params *params,
                                     smem_bm_copy_type t, uint32_t flags) {
    const char *call = "smem_bm_copy_batch";
    int32_t rc = copy_checks(call, handle, params, t);
    if (rc != mf::kOk) {
        return rc;
    }
    if (params->sources == nullptr || params->destinations == nullptr ||
        params->dataSizes == nullptr || params->batchSize == 0) {
        return mf::fail(mf::kInvalidParam, call,
                        "invalid argument params: sources=%p destinations=%p dataSizes=%p "
                        "batchSize=%u (none may be NULL or 0)",
                        static_cast<void *>(params->sources),
                        static_cast<void *>(params->destinations),
                        static_cast<const void *>(params->dataSizes), params->batchSize);
    }
    char why[kWhy] = "";
    return answer(
        call,
        shmemi_mf_bm_copy(handle, params->sources, params->destinations, params->dataSizes,
                          params->batchSize, static_cast<uint32_t>(t), flags, 1, why, sizeof why),
        why);
}

MF_EXPORT int32_t smem_bm_wait(smem_bm_t handle) {
    if (handle == nullptr) {
        return null_handle("smem_bm_wait");
    }
    char why[kWhy] = "";
    return answer("smem_bm_wait", shmemi_mf_bm_wait(handle, why, sizeof why), why);
}

MF_EXPORT int32_t smem_bm_register_user_mem(smem_bm_t handle, uint64_t addr, uint64_t size) {
    const char *call = "smem_bm_register_user_mem";
    if (addr == 0) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument addr=0 (size=%llu)",
                        static_cast<unsigned long long>(size));
    }
    if (handle == nullptr) {
        return null_handle(call);
    }
    char why[kWhy] = "";
    return answer(call, shmemi_mf_bm_user_mem(handle, 1, addr, size, why, sizeof why), why);
}

MF_EXPORT int32_t smem_bm_unregister_user_mem(smem_bm_t handle, uint64_t addr) {
    const char *call = "smem_bm_unregister_user_mem";
    if (addr == 0) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument addr=0");
    }
    if (handle == nullptr) {
        return null_handle(call);
    }
    char why[kWhy] = "";
    return answer(call, shmemi_mf_bm_user_mem(handle, 0, addr, 0, why, sizeof why), why);
}

MF_EXPORT uint32_t smem_bm_get_rank_id_by_gva(smem_bm_t handle, void *gva) {
    const char *call = "smem_bm_get_rank_id_by_gva";
    if (gva == nullptr) {
        return static_cast<uint32_t>(
            mf::fail(mf::kInvalidParam, call, "invalid argument gva=NULL"));
    }
    if (handle == nullptr) {
        return static_cast<uint32_t>(null_handle(call));
    }
    uint64_t rank = UINT32_MAX;
    char why[kWhy] = "";
    int32_t rc = shmemi_mf_bm_rank_by_gva(handle, gva, &rank, why, sizeof why);
    if (rc != mf::kOk) {
        return static_cast<uint32_t>(answer(call, rc, why));
    }
    if (rank == UINT32_MAX) {
        mf::fail_void(call, "gva=%p lies outside the pool of handle %p", gva, handle);
    }
    return static_cast<uint32_t>(rank);
}
