// smem.cpp: memfabric_hybrid's general API (smem.h): init flag, logging, last error message
// and the config store, which the runtime in libshmem.so serves (shmemi_mf_config_store_open).
#include <smem/host/smem.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "../../src/memfabric.h"
#include "mf_smem.h"

namespace {

std::atomic<bool> g_initialized{false};
std::atomic<int> g_level{mf::kError_};
std::atomic<void (*)(int, const char *)> g_logger{nullptr};
std::atomic<bool> g_plain_store_logged{false};

// This thread's last error, and the copy smem_get_and_clear_last_err_msg hands out.
thread_local std::string t_last_error;
thread_local std::string t_cleared;

constexpr const char *kLevelNames[] = {"DEBUG", "INFO", "WARN", "ERROR"};

std::string vformat(const char *fmt, va_list ap) {
    va_list copy;
    va_copy(copy, ap);
    int n = std::vsnprintf(nullptr, 0, fmt, copy);
    va_end(copy);
    if (n <= 0) {
        return std::string();
    }
    std::string out(static_cast<size_t>(n) + 1, '\0');
    std::vsnprintf(&out[0], out.size(), fmt, ap);
    out.resize(static_cast<size_t>(n));
    return out;
}

void emit(int level, const std::string &line) {
    if (level < g_level.load(std::memory_order_relaxed)) {
        return;
    }
    if (auto logger = g_logger.load(std::memory_order_acquire)) {
        logger(level, line.c_str());
    } else {
        std::fprintf(stderr, "[mf_smem] %s %s\n", kLevelNames[level], line.c_str());
    }
}

std::string record(const char *call, const char *fmt, va_list ap) {
    std::string line = std::string(call) + ": " + vformat(fmt, ap);
    t_last_error = line;
    emit(mf::kError_, line);
    return line;
}

}  // namespace

namespace mf {

void log(int level, const char *fmt, ...) {
    if (level < g_level.load(std::memory_order_relaxed)) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    std::string line = vformat(fmt, ap);
    va_end(ap);
    emit(level, line);
}

int32_t fail(int32_t code, const char *call, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    record(call, fmt, ap);
    va_end(ap);
    return code;
}

void fail_void(const char *call, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    record(call, fmt, ap);
    va_end(ap);
}

void warn_plain_store(const char *call, const char *url) {
    if (!g_plain_store_logged.exchange(true)) {
        mf::log(mf::kWarn,
                "%s: the config store on %s is plain TCP (unencrypted): any process that "
                "reaches the port can use it",
                call, url);
    }
}

}  // namespace mf

MF_EXPORT int32_t smem_init(uint32_t flags) {
    g_initialized.store(true);
    mf::log(mf::kDebug, "smem_init: flags=%u", flags);
    return mf::kOk;
}

MF_EXPORT void smem_uninit(void) {
    g_initialized.store(false);
    mf::log(mf::kDebug, "smem_uninit");
}

MF_EXPORT int32_t smem_create_config_store(const char *storeUrl) {
    const char *call = "smem_create_config_store";
    if (storeUrl == nullptr) {
        return mf::fail(mf::kInvalidParam, call, "invalid argument storeUrl=NULL");
    }
    char why[512] = "";
    int32_t rc = shmemi_mf_config_store_open(storeUrl, why, sizeof why);
    if (rc != mf::kOk) {
        return mf::fail(rc, call, "%s", why);
    }
    mf::log(mf::kInfo, "%s: config store served on %s", call, storeUrl);
    mf::warn_plain_store(call, storeUrl);
    return mf::kOk;
}

MF_EXPORT int32_t smem_set_extern_logger(void (*func)(int level, const char *msg)) {
    if (func == nullptr) {
        return mf::fail(mf::kInvalidParam, "smem_set_extern_logger", "invalid argument func=NULL");
    }
    g_logger.store(func, std::memory_order_release);
    return mf::kOk;
}

MF_EXPORT int32_t smem_set_log_level(int level) {
    if (level < mf::kDebug || level > mf::kError_) {
        return mf::fail(mf::kError, "smem_set_log_level",
                        "invalid argument level=%d: not in 0..3 (0 debug, 1 info, 2 warn, 3 error)",
                        level);
    }
    g_level.store(level, std::memory_order_relaxed);
    return mf::kOk;
}

MF_EXPORT int32_t smem_set_conf_store_tls(bool enable, const char *tls_info,
                                          const uint32_t tls_info_len) {
    (void)tls_info;
    mf::log(mf::kWarn,
            "smem_set_conf_store_tls: enable=%d tls_info_len=%u has no effect: a config store's "
            "TLS is set in smem_bm_config_t.storeTlsConfig",
            enable ? 1 : 0, tls_info_len);
    return mf::kOk;
}

MF_EXPORT int32_t smem_set_config_store_tls_key(const char *tls_pk, const uint32_t tls_pk_len,
                                                const char *tls_pk_pw, const uint32_t tls_pk_pw_len,
                                                const smem_decrypt_handler h) {
    (void)tls_pk;
    (void)tls_pk_pw;
    (void)h;
    mf::log(mf::kWarn,
            "smem_set_config_store_tls_key: tls_pk_len=%u tls_pk_pw_len=%u has no effect: a "
            "config store's TLS is set in smem_bm_config_t.storeTlsConfig",
            tls_pk_len, tls_pk_pw_len);
    return mf::kOk;
}

MF_EXPORT const char *smem_get_last_err_msg(void) { return t_last_error.c_str(); }

MF_EXPORT const char *smem_get_and_clear_last_err_msg(void) {
    t_cleared.swap(t_last_error);
    t_last_error.clear();
    return t_cleared.c_str();
}
