// memfabric_trans.cpp: the entry points libmf_smem.so's transfer engine calls
// (cpp/smem/src/trans.cpp): each passes its arguments to the runtime's bridge
// (rust/core/src/memfabric/trans/) and its reasons back as text, for libmf_smem.so to log to
// memfabric's logger and keep as the last error.
#include "memfabric_trans.h"

#include <string>
#include <vector>

#include "internal.h"
#include "memfabric_bm.h"
#include "memfabric_bridge.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"

namespace {

using shmemi_mf::answer;
using shmemi_mf::copy_reason;
using shmemi_mf::text;

size_t h(void *handle) { return reinterpret_cast<size_t>(handle); }

}  // namespace

SHMEM_EXPORT int32_t shmemi_mf_trans_init(uint32_t device_id, char *why, size_t why_len) {
    rust::String reason;
    int32_t rc = shmem::core::mf_trans_init(device_id, reason);
    if (rc < 0) {
        return answer(rc, reason, why, why_len);
    }
    return rc;
}

SHMEM_EXPORT int shmemi_mf_trans_uninit(void) { return shmem::core::mf_trans_uninit() ? 1 : 0; }

SHMEM_EXPORT int32_t shmemi_mf_trans_create(const char *url, const char *unique_id, uint32_t role,
                                            uint32_t init_timeout, int start_server, void **handle,
                                            char *why, size_t why_len) {
    rust::Str u, id;
    if (!text(url, "storeUrl", u, why, why_len) || !text(unique_id, "uniqueId", id, why, why_len)) {
        return -2000;
    }
    rust::String reason;
    size_t out = 0;
    int32_t rc =
        shmem::core::mf_trans_create(u, id, role, init_timeout, start_server != 0, out, reason);
    if (rc == 0) {
        *handle = reinterpret_cast<void *>(out);
    }
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_trans_destroy(void *handle, char *why, size_t why_len) {
    rust::String reason;
    return answer(shmem::core::mf_trans_destroy(h(handle), reason), reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_trans_malloc(void *handle, uint64_t size, void **addr, char *why,
                                            size_t why_len) {
    rust::String reason;
    uint64_t out = 0;
    int32_t rc = shmem::core::mf_trans_malloc(h(handle), size, out, reason);
    if (rc == 0) {
        *addr = reinterpret_cast<void *>(out);
    }
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_trans_free(void *handle, const void *addr, char *why,
                                          size_t why_len) {
    rust::String reason;
    int32_t rc = shmem::core::mf_trans_free(h(handle), reinterpret_cast<uint64_t>(addr), reason);
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_trans_register(void *handle, void *const *addrs, const size_t *sizes,
                                              uint32_t count, char *why, size_t why_len) {
    std::vector<uint64_t> a(count), s(count);
    for (uint32_t i = 0; i < count; i++) {
        a[i] = reinterpret_cast<uint64_t>(addrs[i]);
        s[i] = sizes[i];
    }
    rust::String reason;
    int32_t rc =
        shmem::core::mf_trans_register(h(handle), rust::Slice<const uint64_t>(a.data(), count),
                                       rust::Slice<const uint64_t>(s.data(), count), reason);
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_trans_deregister(void *handle, const void *addr, char *why,
                                                size_t why_len) {
    rust::String reason;
    int32_t rc =
        shmem::core::mf_trans_deregister(h(handle), reinterpret_cast<uint64_t>(addr), reason);
    return answer(rc, reason, why, why_len);
}

SHMEM_EXPORT int32_t shmemi_mf_trans_transfer(void *handle, int write, const char *peer,
                                              const void *const *locals, const void *const *remotes,
                                              const size_t *sizes, uint32_t count, uint32_t flags,
                                              void *stream, char *why, size_t why_len) {
    rust::Str p;
    if (!text(peer, "remoteUniqueId", p, why, why_len)) {
        return -2000;
    }
    // One element (every single write or read) on the stack; a batch's in vectors.
    size_t l1 = 0, r1 = 0;
    uint64_t s1 = 0;
    std::vector<size_t> lv, rv;
    std::vector<uint64_t> sv;
    size_t *l = &l1, *r = &r1;
    uint64_t *s = &s1;
    if (count > 1) {
        lv.resize(count);
        rv.resize(count);
        sv.resize(count);
        l = lv.data();
        r = rv.data();
        s = sv.data();
    }
    for (uint32_t i = 0; i < count; i++) {
        l[i] = reinterpret_cast<size_t>(locals[i]);
        r[i] = reinterpret_cast<size_t>(remotes[i]);
        s[i] = sizes[i];
    }
    rust::String reason;
    int32_t rc = shmem::core::mf_trans_transfer(
        h(handle), write != 0, p, rust::Slice<const size_t>(l, count),
        rust::Slice<const size_t>(r, count), rust::Slice<const uint64_t>(s, count), flags,
        reinterpret_cast<size_t>(stream), reason);
    // A success may carry a line for the log.
    copy_reason(std::string(reason), why, why_len);
    return rc;
}
