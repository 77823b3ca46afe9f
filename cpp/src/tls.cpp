// tls.cpp: TLS settings of the control store (CANN's entry points, declared in shmemx.h).
// Arguments are checked and copied here; the runtime keeps them until shmem_init.
#include <shmemx.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "internal.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"

namespace core = shmem::core;
using shmem::detail::log_call_error;

namespace {

constexpr int32_t kInvalidParam = -1;  // ACLSHMEM_INVALID_PARAM

// Longest password a decrypt handler may return.
constexpr size_t kMaxPassword = 4096;

int32_t bad(const char *call, const char *arg, const char *why) {
    log_call_error(call, "invalid argument %s: %s", arg, why);
    return kInvalidParam;
}

int32_t set_store(const char *call, bool enable, const char *info, uint32_t len) {
    if (enable && (info == nullptr || len == 0))
        return bad(call, "tls_info", "NULL or empty while enable is true");
    if (info != nullptr && std::memchr(info, '\0', len) != nullptr)
        len = static_cast<uint32_t>(std::strlen(info));
    // 0, or the runtime's code for what it refused (and logged).
    return core::tls_set_store(
        call, enable, rust::Str(enable ? info : "", enable ? static_cast<size_t>(len) : 0));
}

int32_t set_key(const char *call, const char *pk, uint32_t pk_len, const char *pw, uint32_t pw_len,
                aclshmem_decrypt_handler handler) {
    if (pk == nullptr || pk_len == 0) return bad(call, "tls_pk", "NULL or empty");
    if (pw == nullptr && pw_len != 0) return bad(call, "tls_pk_pw", "NULL with a length");
    std::vector<char> password;
    bool has_password = pw != nullptr && pw_len != 0;
    if (has_password && handler != nullptr) {
        password.assign(kMaxPassword + 1, '\0');
        size_t out_len = kMaxPassword;
        int rc = handler(pw, pw_len, password.data(), out_len);
        if (rc != 0 || out_len > kMaxPassword) {
            std::fill(password.begin(), password.end(), '\0');
            log_call_error(call, "decrypt_handler returned %d (password length %zu, limit %zu)", rc,
                           out_len, kMaxPassword);
            return kInvalidParam;
        }
        password.resize(out_len);
    } else if (has_password) {
        password.assign(pw, pw + pw_len);
    }
    // 0, or the runtime's code for what it refused (and logged).
    int32_t rc = core::tls_set_key(
        call, rust::Slice<const uint8_t>(reinterpret_cast<const uint8_t *>(pk), pk_len),
        rust::Slice<const uint8_t>(reinterpret_cast<const uint8_t *>(password.data()),
                                   password.size()),
        has_password);
    std::fill(password.begin(), password.end(), '\0');
    return rc;
}

}  // namespace

SHMEM_EXPORT int32_t pshmem_set_conf_store_tls(bool enable, const char *tls_info,
                                               const uint32_t tls_info_len) {
    return set_store("shmem_set_conf_store_tls", enable, tls_info, tls_info_len);
}
SHMEM_WEAK_ALIAS(shmem_set_conf_store_tls)

SHMEM_EXPORT int32_t aclshmemx_set_conf_store_tls(bool enable, const char *tls_info,
                                                  const uint32_t tls_info_len) {
    return set_store("aclshmemx_set_conf_store_tls", enable, tls_info, tls_info_len);
}

SHMEM_EXPORT int32_t pshmem_set_config_store_tls_key(const char *tls_pk, const uint32_t tls_pk_len,
                                                     const char *tls_pk_pw,
                                                     const uint32_t tls_pk_pw_len,
                                                     const aclshmem_decrypt_handler handler) {
    return set_key("shmem_set_config_store_tls_key", tls_pk, tls_pk_len, tls_pk_pw, tls_pk_pw_len,
                   handler);
}
SHMEM_WEAK_ALIAS(shmem_set_config_store_tls_key)

SHMEM_EXPORT int32_t aclshmemx_set_config_store_tls_key(const char *tls_pk,
                                                        const uint32_t tls_pk_len,
                                                        const char *tls_pk_pw,
                                                        const uint32_t tls_pk_pw_len,
                                                        const aclshmem_decrypt_handler handler) {
    return set_key("aclshmemx_set_config_store_tls_key", tls_pk, tls_pk_len, tls_pk_pw,
                   tls_pk_pw_len, handler);
}
