// trans.cpp: memfabric_hybrid's transfer engine (smem_trans.h) over the runtime's engines
// (libshmem.so's shmemi_mf_trans_*, rust/core/src/memfabric/trans/). Every function checks its
// arguments first, as memfabric does (NULL handles, ids and pointers, zero sizes and counts:
// -2000; create: NULL), then calls the runtime, which checks the rest and answers with
// memfabric's code and a reason kept as the last error. On the host device a stream of the
// *_submit forms is a token of the caller's: the work is done, in call order, before the call
// returns. On the npu device the copies into a peer's NPU memory are enqueued on that ACL stream
// (done once it is synchronised); those into its host memory are done before the call returns,
// after the stream's earlier work.
#include <smem/host/smem_trans.h>

#include <cstdint>
#include <cstring>

#include "../../src/memfabric_trans.h"
#include "mf_smem.h"

namespace {

constexpr uint32_t kDefaultTimeoutS = 120;
constexpr size_t kWhy = 1024;

int32_t answer(const char *call, int32_t rc, const char *why) {
    if (rc == mf::kOk) {
        if (why[0] != '\0') {
            mf::log(mf::kWarn, "%s: %s", call, why);
        }
        return rc;
    }
    return mf::fail(rc, call, "%s", why);
}

int32_t null_arg(const char *call, const char *arg) {
    return mf::fail(mf::kInvalidParam, call, "invalid argument %s=NULL", arg);
}

// A transfer's common checks (memfabric's: -2000).
int32_t transfer_checks(const char *call, smem_trans_t handle, const char *peer) {
    if (handle == nullptr) {
        return null_arg(call, "handle");
    }
    if (peer == nullptr) {
        return null_arg(call, "remoteUniqueId");
    }
    return mf::kOk;
}

int32_t one(const char *call, smem_trans_t handle, int write, const void *local, const char *peer,
            const void *remote, size_t size, uint32_t flags, void *stream = nullptr) {
    int32_t rc = transfer_checks(call, handle, peer);
    if (rc != mf::kOk) {
        return rc;
    }
    if (local == nullptr) {
        return null_arg(call, "localAddr");
    }
    if (remote == nullptr) {
        return null_arg(call, "remoteAddr");
    }
    if (size == 0) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument dataSize=0");
    }
    char why[kWhy] = "";
    return answer(call,
                  shmemi_mf_trans_transfer(handle, write, peer, &local, &remote, &size, 1, flags,
                                           stream, why, sizeof why),
                  why);
}

int32_t batch(const char *call, smem_trans_t handle, int write, const void *const *locals,
              const char *peer, const void *const *remotes, const size_t *sizes, uint32_t count,
              uint32_t flags, void *stream = nullptr) {
    int32_t rc = transfer_checks(call, handle, peer);
    if (rc != mf::kOk) {
        return rc;
    }
    if (locals == nullptr) {
        return null_arg(call, "localAddrs");
    }
    if (remotes == nullptr) {
        return null_arg(call, "remoteAddrs");
    }
    if (sizes == nullptr) {
        return null_arg(call, "dataSizes");
    }
    if (count == 0) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument batchSize=0");
    }
    for (uint32_t i = 0; i < count; i++) {
        if (locals[i] == nullptr || remotes[i] == nullptr || sizes[i] == 0) {
            return mf::fail(mf::kInvalidParam, call,
                            "invalid argument element %u: localAddrs[%u]=%p remoteAddrs[%u]=%p "
                            "dataSizes[%u]=%zu",
                            i, i, locals[i], i, remotes[i], i, sizes[i]);
        }
    }
    char why[kWhy] = "";
    return answer(call,
                  shmemi_mf_trans_transfer(handle, write, peer, locals, remotes, sizes, count,
                                           flags, stream, why, sizeof why),
                  why);
}

}  // namespace

MF_EXPORT int32_t smem_trans_config_init(smem_trans_config_t *config) {
    if (config == nullptr) {
        return null_arg("smem_trans_config_init", "config");
    }
    // dataOpType is left as it is, as memfabric does.
    config->role = SMEM_TRANS_SENDER;
    config->initTimeout = kDefaultTimeoutS;
    config->deviceId = UINT32_MAX;
    config->flags = 0;
    config->startConfigServer = false;
    return mf::kOk;
}

MF_EXPORT int32_t smem_trans_init(const smem_trans_config_t *config) {
    const char *call = "smem_trans_init";
    if (config == nullptr) {
        return null_arg(call, "config");
    }
    char why[kWhy] = "";
    int32_t rc = shmemi_mf_trans_init(config->deviceId, why, sizeof why);
    if (rc < 0) {
        return mf::fail(rc, call, "%s", why);
    }
    if (rc == 0) {
        mf::log(mf::kWarn,
                "%s: the transfer engine is initialised already: the new arguments "
                "are ignored",
                call);
    }
    return mf::kOk;
}

MF_EXPORT void smem_trans_uninit(uint32_t flags) {
    if (!shmemi_mf_trans_uninit()) {
        mf::log(mf::kWarn, "smem_trans_uninit: flags=%u: the transfer engine is not initialised",
                flags);
    }
}

MF_EXPORT smem_trans_t smem_trans_create(const char *storeUrl, const char *uniqueId,
                                         const smem_trans_config_t *config) {
    const char *call = "smem_trans_create";
    if (storeUrl == nullptr || *storeUrl == '\0') {
        mf::fail(mf::kInvalidParam, call, "invalid argument storeUrl=%s",
                 storeUrl == nullptr ? "NULL" : "''");
        return nullptr;
    }
    if (uniqueId == nullptr || *uniqueId == '\0') {
        mf::fail(mf::kInvalidParam, call, "invalid argument uniqueId=%s",
                 uniqueId == nullptr ? "NULL" : "''");
        return nullptr;
    }
    if (config == nullptr) {
        null_arg(call, "config");
        return nullptr;
    }
    void *handle = nullptr;
    char why[kWhy] = "";
    int32_t rc = shmemi_mf_trans_create(storeUrl, uniqueId, static_cast<uint32_t>(config->role),
                                        config->initTimeout, config->startConfigServer ? 1 : 0,
                                        &handle, why, sizeof why);
    if (rc != mf::kOk) {
        answer(call, rc, why);
        return nullptr;
    }
    mf::warn_plain_store(call, storeUrl);
    return handle;
}

MF_EXPORT void smem_trans_destroy(smem_trans_t handle, uint32_t flags) {
    const char *call = "smem_trans_destroy";
    (void)flags;
    if (handle == nullptr) {
        null_arg(call, "handle");
        return;
    }
    char why[kWhy] = "";
    answer(call, shmemi_mf_trans_destroy(handle, why, sizeof why), why);
}

MF_EXPORT void *smem_trans_malloc(smem_trans_t handle, size_t capacity) {
    const char *call = "smem_trans_malloc";
    if (handle == nullptr) {
        null_arg(call, "handle");
        return nullptr;
    }
    void *addr = nullptr;
    char why[kWhy] = "";
    if (answer(call, shmemi_mf_trans_malloc(handle, capacity, &addr, why, sizeof why), why) !=
        mf::kOk) {
        return nullptr;
    }
    return addr;
}

MF_EXPORT int32_t smem_trans_free(smem_trans_t handle, void *address) {
    const char *call = "smem_trans_free";
    if (handle == nullptr) {
        return null_arg(call, "handle");
    }
    if (address == nullptr) {
        return null_arg(call, "address");
    }
    char why[kWhy] = "";
    return answer(call, shmemi_mf_trans_free(handle, address, why, sizeof why), why);
}

MF_EXPORT int32_t smem_trans_register_mem(smem_trans_t handle, void *address, size_t capacity,
                                          uint32_t flags) {
    const char *call = "smem_trans_register_mem";
    (void)flags;
    if (handle == nullptr) {
        return null_arg(call, "handle");
    }
    if (address == nullptr) {
        return null_arg(call, "address");
    }
    if (capacity == 0) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument capacity=0 (address=%p)",
                        address);
    }
    char why[kWhy] = "";
    return answer(call, shmemi_mf_trans_register(handle, &address, &capacity, 1, why, sizeof why),
                  why);
}

MF_EXPORT int32_t smem_trans_batch_register_mem(smem_trans_t handle, void *addresses[],
                                                size_t capacities[], uint32_t count,
                                                uint32_t flags) {
    const char *call = "smem_trans_batch_register_mem";
    (void)flags;
    if (handle == nullptr) {
        return null_arg(call, "handle");
    }
    if (addresses == nullptr) {
        return null_arg(call, "addresses");
    }
    if (capacities == nullptr) {
        return null_arg(call, "capacities");
    }
    if (count == 0) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument count=0");
    }
    for (uint32_t i = 0; i < count; i++) {
        if (addresses[i] == nullptr || capacities[i] == 0) {
            return mf::fail(mf::kInvalidParam, call,
                            "invalid argument element %u: addresses[%u]=%p capacities[%u]=%zu", i,
                            i, addresses[i], i, capacities[i]);
        }
    }
    char why[kWhy] = "";
    return answer(
        call, shmemi_mf_trans_register(handle, addresses, capacities, count, why, sizeof why), why);
}

MF_EXPORT int32_t smem_trans_deregister_mem(smem_trans_t handle, void *address) {
    const char *call = "smem_trans_deregister_mem";
    if (handle == nullptr) {
        return null_arg(call, "handle");
    }
    if (address == nullptr) {
        return null_arg(call, "address");
    }
    char why[kWhy] = "";
    return answer(call, shmemi_mf_trans_deregister(handle, address, why, sizeof why), why);
}

MF_EXPORT int32_t smem_trans_write(smem_trans_t handle, const void *localAddr,
                                   const char *remoteUniqueId, void *remoteAddr, size_t dataSize,
                                   uint32_t flags) {
    return one("smem_trans_write", handle, 1, localAddr, remoteUniqueId, remoteAddr, dataSize,
               flags);
}

MF_EXPORT int32_t smem_trans_batch_write(smem_trans_t handle, const void *localAddrs[],
                                         const char *remoteUniqueId, void *remoteAddrs[],
                                         size_t dataSizes[], uint32_t batchSize, uint32_t flags) {
    return batch("smem_trans_batch_write", handle, 1, localAddrs, remoteUniqueId, remoteAddrs,
                 dataSizes, batchSize, flags);
}

MF_EXPORT int32_t smem_trans_read(smem_trans_t handle, void *localAddr, const char *remoteUniqueId,
                                  const void *remoteAddr, size_t dataSize, uint32_t flags) {
    return one("smem_trans_read", handle, 0, localAddr, remoteUniqueId, remoteAddr, dataSize,
               flags);
}

MF_EXPORT int32_t smem_trans_batch_read(smem_trans_t handle, void *localAddrs[],
                                        const char *remoteUniqueId, const void *remoteAddrs[],
                                        size_t dataSizes[], uint32_t batchSize, uint32_t flags) {
    return batch("smem_trans_batch_read", handle, 0, localAddrs, remoteUniqueId, remoteAddrs,
                 dataSizes, batchSize, flags);
}

MF_EXPORT int32_t smem_trans_read_submit(smem_trans_t handle, void *localAddr,
                                         const char *remoteUniqueId, const void *remoteAddr,
                                         size_t dataSize, void *stream, uint32_t flags) {
    const char *call = "smem_trans_read_submit";
    if (stream == nullptr) {
        return null_arg(call, "stream");
    }
    return one(call, handle, 0, localAddr, remoteUniqueId, remoteAddr, dataSize, flags, stream);
}

MF_EXPORT int32_t smem_trans_write_submit(smem_trans_t handle, const void *localAddr,
                                          const char *remoteUniqueId, void *remoteAddr,
                                          size_t dataSize, void *stream, uint32_t flags) {
    const char *call = "smem_trans_write_submit";
    if (stream == nullptr) {
        return null_arg(call, "stream");
    }
    return one(call, handle, 1, localAddr, remoteUniqueId, remoteAddr, dataSize, flags, stream);
}

MF_EXPORT int32_t smem_trans_batch_read_submit(smem_trans_t handle, void *localAddrs[],
                                               const char *remoteUniqueId,
                                               const void *remoteAddrs[], size_t dataSizes[],
                                               uint32_t batchSize, void *stream, uint32_t flags) {
    const char *call = "smem_trans_batch_read_submit";
    if (stream == nullptr) {
        return null_arg(call, "stream");
    }
    return batch(call, handle, 0, localAddrs, remoteUniqueId, remoteAddrs, dataSizes, batchSize,
                 flags, stream);
}

MF_EXPORT int32_t smem_trans_batch_write_submit(smem_trans_t handle, const void *localAddrs[],
                                                const char *remoteUniqueId, void *remoteAddrs[],
                                                size_t dataSizes[], uint32_t batchSize,
                                                void *stream, uint32_t flags) {
    const char *call = "smem_trans_batch_write_submit";
    if (stream == nullptr) {
        return null_arg(call, "stream");
    }
    return batch(call, handle, 1, localAddrs, remoteUniqueId, remoteAddrs, dataSizes, batchSize,
                 flags, stream);
}
