// memfabric.cpp: the entry points libmf_smem.so (cpp/smem/) calls, memfabric_hybrid's API over
// the runtime: each passes its arguments to the runtime's bridge and its reasons back as text,
// for libmf_smem.so to log to memfabric's logger and keep as the last error.
#include "memfabric.h"
#include "memfabric_bm.h"
#include "memfabric_bridge.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "internal.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"

namespace shmemi_mf {

void copy_reason(const std::string &reason, char *why, size_t why_len) {
    if (why == nullptr || why_len == 0) {
        return;
    }
    size_t n = reason.size() < why_len - 1 ? reason.size() : why_len - 1;
    std::memcpy(why, reason.data(), n);
    why[n] = '\0';
}

bool text(const char *s, const char *arg, rust::Str &out, char *why, size_t why_len) {
    try {
        out = rust::Str(s == nullptr ? "" : s);
        return true;
    } catch (const std::invalid_argument &) {
        copy_reason(std::string("invalid argument ") + arg + ": not UTF-8 text", why, why_len);
        return false;
    }
}

int32_t answer(int32_t rc, const rust::String &reason, char *why, size_t why_len) {
    if (rc != 0) {
        copy_reason(std::string(reason), why, why_len);
    }
    return rc;
}

}  // namespace shmemi_mf

using shmemi_mf::copy_reason;

SHMEM_EXPORT int32_t shmemi_mf_config_store_open(const char *url, char *why, size_t why_len) {
    if (url == nullptr) {
        copy_reason("invalid argument storeUrl=NULL", why, why_len);
        return -2000;
    }
    rust::Str text;
    try {
        text = rust::Str(url);
    } catch (const std::invalid_argument &) {
        copy_reason("invalid argument storeUrl: not UTF-8 text", why, why_len);
        return -2000;
    }
    rust::String reason;
    int32_t rc = shmem::core::mf_config_store_open(text, reason);
    if (rc != 0) {
        copy_reason(std::string(reason), why, why_len);
    }
    return rc;
}
