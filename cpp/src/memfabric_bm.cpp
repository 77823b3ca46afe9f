// memfabric_bm.cpp: the entry points libmf_smem.so's Big Memory calls (cpp/smem/src/bm.cpp):
// each passes its arguments to the runtime's bridge (rust/core/src/memfabric/bm/) and its
// reasons back as text, for libmf_smem.so to log to memfabric's logger and keep as the last
// error.
#include "memfabric_bm.h"

#include <array>
#include <vector>

#include "internal.h"
#include "memfabric_bridge.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"

namespace {

using shmemi_mf::answer;
using shmemi_mf::text;

int32_t handle_call(uint32_t what, void *handle, char *why, size_t why_len) {
    rust::String reason;
    int32_t rc = shmem::core::mf_bm_handle_call(what, reinterpret_cast<size_t>(handle), reason);
    return answer(rc, reason, why, why_len);
}

int32_t query(uint32_t what, void *handle, uint32_t mem_type, uint64_t arg, uint64_t *out,
              char *why, size_t why_len) {
    rust::String reason;
    uint64_t v = 0;
    int32_t rc =
        shmem::core::mf_bm_query(what, reinterpret_cast<size_t>(handle), mem_type, arg, v, reason);
    if (rc == 0) {
        *out = v;
    }
    return answer(rc, reason, why, why_len);
}

}  // namespace

SHMEM_EXPORT int32_t shmemi_mf_bm_init(const struct shmemi_mf_bm_init_args *a, int *plain,
                                       int *repeat, char *why, size_t why_len) {
    std::array<rust::Str, 5> tls;
    rust::Str url, hcom;
    if (!text(a->url, "storeURL", url, why, why_len) ||
        !text(a->hcom_url, "config->hcomUrl", hcom, why, why_len) ||
        !text(a->tls_ca, "config->storeTlsConfig.caPath", tls[0], why, why_len) ||
        !text(a->tls_crl, "config->storeTlsConfig.crlPath", tls[1], why, why_len) ||
        !text(a->tls_cert, "config->storeTlsConfig.certPath", tls[2], why, why_len) ||
        !text(a->tls_key, "config->storeTlsConfig.keyPath", tls[3], why, why_len) ||
        !text(a->tls_key_pass, "config->storeTlsConfig.keyPassPath", tls[4], why, why_len)) {
        return -2000;
    }
    rust::String reason;
    bool is_plain = false, is_repeat = false;
    int32_t rc = shmem::core::mf_bm_init(
        url, a->world_size, a->device_id, {a->init_timeout, a->control_timeout}, a->start_server,
        a->auto_ranking, a->rank_id, hcom, tls, a->tls_enable, is_plain, is_repeat, reason);
    *plain = is_plain ? 1 : 0;
    *repeat = is_repeat ? 1 : 0;
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int shmemi_mf_bm_uninit(void) { return shmem::core::mf_bm_uninit() ? 1 : 0; }

SHMEM_EXPORT uint32_t shmemi_mf_bm_rank(void) { return shmem::core::mf_bm_rank(); }

SHMEM_EXPORT int32_t shmemi_mf_bm_create(uint32_t id, const uint64_t sizes[4], uint32_t data_op,
                                         uint32_t flags, int shm_fd, void **handle, char *why,
                                         size_t why_len) {
    rust::String reason;
    size_t h = 0;
    int32_t rc = shmem::core::mf_bm_create(id, {sizes[0], sizes[1], sizes[2], sizes[3]}, data_op,
                                           flags, shm_fd, h, reason);
    if (rc == 0) {
        *handle = reinterpret_cast<void *>(h);
    }
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_bm_destroy(void *handle, char *why, size_t why_len) {
    return handle_call(0, handle, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_bm_join(void *handle, char *why, size_t why_len) {
    return handle_call(1, handle, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_bm_leave(void *handle, char *why, size_t why_len) {
    return handle_call(2, handle, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_bm_wait(void *handle, char *why, size_t why_len) {
    return handle_call(3, handle, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_bm_local_size(void *handle, uint32_t mem_type, uint64_t *out,
                                             char *why, size_t why_len) {
    return query(0, handle, mem_type, 0, out, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_bm_ptr(void *handle, uint32_t mem_type, uint32_t peer, uint64_t *out,
                                      char *why, size_t why_len) {
    return query(1, handle, mem_type, peer, out, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_bm_rank_by_gva(void *handle, const void *gva, uint64_t *out,
                                              char *why, size_t why_len) {
    return query(2, handle, 0, reinterpret_cast<uint64_t>(gva), out, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_bm_copy(void *handle, const void *const *srcs, void *const *dests,
                                       const uint64_t *sizes, uint32_t count, uint32_t type,
                                       uint32_t flags, int batch, char *why, size_t why_len) {
    if (count == 1 && batch == 0) {
        // smem_bm_copy: no array, no string unless it fails.
        int32_t rc = shmem::core::mf_bm_copy_one(
            reinterpret_cast<size_t>(handle), reinterpret_cast<size_t>(srcs[0]),
            reinterpret_cast<size_t>(dests[0]), sizes[0], type, flags);
        if (rc == 0) {
            return rc;
        }
        rust::String reason;
        shmem::core::mf_bm_copy_why(reason);
        return answer(rc, reason, why, why_len);
    }
    // A batch's elements in vectors (one on the stack).
    size_t s1 = 0, d1 = 0;
    std::vector<size_t> sv, dv;
    size_t *s = &s1, *d = &d1;
    if (count > 1) {
        sv.resize(count);
        dv.resize(count);
        s = sv.data();
        d = dv.data();
    }
    for (uint32_t i = 0; i < count; i++) {
        s[i] = reinterpret_cast<size_t>(srcs[i]);
        d[i] = reinterpret_cast<size_t>(dests[i]);
    }
    rust::String reason;
    int32_t rc = shmem::core::mf_bm_copy(
        reinterpret_cast<size_t>(handle), rust::Slice<const size_t>(s, count),
        rust::Slice<const size_t>(d, count), rust::Slice<const uint64_t>(sizes, count), type, flags,
        batch != 0, reason);
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_bm_user_mem(void *handle, int add, uint64_t addr, uint64_t size,
                                           char *why, size_t why_len) {
    rust::String reason;
    int32_t rc =
        shmem::core::mf_bm_user_mem(reinterpret_cast<size_t>(handle), add != 0, addr, size, reason);
    return answer(rc, reason, why, why_len);
}
