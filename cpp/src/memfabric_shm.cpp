// memfabric_shm.cpp: the entry points of memfabric_hybrid's Share Memory (smem_shm_*) that
// libmf_smem.so (cpp/smem/src/shm.cpp) calls once its argument checks passed: each passes its
// arguments to the runtime's bridge (rust/core/src/memfabric/shm.rs) and the reason of a
// failure back as text, for libmf_smem.so to log and keep as the last error.

#include "internal.h"
#include "memfabric.h"
#include "memfabric_bridge.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"

namespace {

using shmemi_mf::answer;
using shmemi_mf::text;

rust::Slice<const uint8_t> bytes(const void *p, uint32_t n) {
    return rust::Slice<const uint8_t>(n == 0 ? nullptr : static_cast<const uint8_t *>(p), n);
}

rust::Slice<uint8_t> bytes_mut(void *p, uint32_t n) {
    return rust::Slice<uint8_t>(n == 0 ? nullptr : static_cast<uint8_t *>(p), n);
}

}  // namespace

SHMEM_EXPORT int32_t shmemi_mf_shm_init(const char *url, uint32_t world_size, uint32_t rank,
                                        uint16_t device_id, uint32_t init_timeout_s,
                                        uint32_t control_timeout_s, bool start_store, bool *did,
                                        char *why, size_t why_len) {
    rust::Str url_text;
    if (!text(url, "configStoreIpPort", url_text, why, why_len)) {
        return -2000;
    }
    rust::String reason;
    shmem::core::MfShmConfig config{device_id, init_timeout_s, control_timeout_s, start_store};
    int32_t rc = shmem::core::mf_shm_init(url_text, world_size, rank, config, reason);
    if (did != nullptr) {
        *did = rc == 0;
    }
    return answer(rc == 1 ? 0 : rc, reason, why, why_len);
}

SHMEM_EXPORT bool shmemi_mf_shm_uninit(void) { return shmem::core::mf_shm_uninit(); }

SHMEM_EXPORT int32_t shmemi_mf_shm_create(uint32_t id, uint32_t rank_size, uint32_t rank,
                                          uint64_t symmetric_size, uint64_t *handle, void **gva,
                                          char *why, size_t why_len) {
    rust::String reason;
    uint64_t h = 0;
    size_t base = 0;
    int32_t rc = shmem::core::mf_shm_create(id, rank_size, rank, symmetric_size, h, base, reason);
    if (rc == 0) {
        *handle = h;
        *gva = reinterpret_cast<void *>(base);
    }
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_shm_destroy(uint64_t handle, char *why, size_t why_len) {
    rust::String reason;
    return answer(shmem::core::mf_shm_destroy(handle, reason), reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_shm_set_extra_context(uint64_t handle, const void *context,
                                                     uint32_t size, char *why, size_t why_len) {
    rust::String reason;
    int32_t rc = shmem::core::mf_shm_set_extra_context(handle, bytes(context, size), reason);
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_shm_rank(uint64_t handle, uint32_t *rank, uint32_t *size, char *why,
                                        size_t why_len) {
    rust::String reason;
    return answer(shmem::core::mf_shm_rank(handle, *rank, *size, reason), reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_shm_allgather(uint64_t handle, const void *send, uint32_t send_size,
                                             void *recv, uint32_t recv_size, char *why,
                                             size_t why_len) {
    rust::String reason;
    int32_t rc = shmem::core::mf_shm_allgather(handle, bytes(send, send_size),
                                               bytes_mut(recv, recv_size), reason);
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_shm_subgroup(uint64_t handle, const char *key, uint32_t rank_size,
                                            uint32_t rank, const void *send, uint32_t send_size,
                                            void *recv, uint32_t recv_size, char *why,
                                            size_t why_len) {
    rust::Str key_text;
    if (!text(key, "key", key_text, why, why_len)) {
        return -2000;
    }
    rust::String reason;
    int32_t rc =
        shmem::core::mf_shm_subgroup(handle, key_text, rank_size, rank, bytes(send, send_size),
                                     bytes_mut(recv, recv_size), reason);
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_shm_can_reach(uint64_t handle, uint32_t remote, uint32_t *reach,
                                             char *why, size_t why_len) {
    rust::String reason;
    uint32_t r = 0;
    int32_t rc = shmem::core::mf_shm_can_reach(handle, remote, r, reason);
    if (rc == 0) {
        *reach = r;
    }
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_shm_atomic_alloc(uint64_t handle, uint32_t limit, uint32_t *value,
                                                char *why, size_t why_len) {
    rust::String reason;
    uint32_t v = 0;
    int32_t rc = shmem::core::mf_shm_atomic_alloc(handle, limit, v, reason);
    if (rc == 0) {
        *value = v;
    }
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_shm_atomic_release(uint64_t handle, int32_t value, char *why,
                                                  size_t why_len) {
    rust::String reason;
    return answer(shmem::core::mf_shm_atomic_release(handle, value, reason), reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_shm_register_exit(uint64_t handle, void (*handler)(int), char *why,
                                                 size_t why_len) {
    rust::String reason;
    int32_t rc =
        shmem::core::mf_shm_register_exit(handle, reinterpret_cast<size_t>(handler), reason);
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_shm_global_exit(uint64_t handle, int status, char *why,
                                               size_t why_len) {
    rust::String reason;
    return answer(shmem::core::mf_shm_global_exit(handle, status, reason), reason, why, why_len);
}

SHMEM_EXPORT const void *shmemi_mf_shm_meta(void) {
    return reinterpret_cast<const void *>(shmem::core::mf_shm_meta());
}

SHMEM_EXPORT const void *shmemi_mf_shm_meta_kernels(void) {
    return reinterpret_cast<const void *>(shmem::core::mf_shm_meta_kernels());
}
