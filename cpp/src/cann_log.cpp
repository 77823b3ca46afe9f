// cann_log.cpp: CANN SHMEM's logging calls. The callback and the level live in the runtime's
// one log subscriber (rust/base/src/log.rs); this file checks the arguments and maps CANN's
// level numbers onto the SHMEM_LOG_LEVEL words.
#include <aclshmem.h>

#include "internal.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"

using namespace shmem::detail;

// Defined by the runtime: routes log lines to `sink`, or to stderr when it is NULL.
extern "C" void shmemi_log_set_sink(void (*sink)(int level, const char *msg));

namespace {

// CANN's levels, 0 debug to 4 fatal; fatal has no lines of its own here, so it shows errors.
constexpr const char *kLevelWords[] = {"debug", "info", "warn", "error", "error"};
constexpr int kLevels = sizeof(kLevelWords) / sizeof(kLevelWords[0]);

int32_t set_logger(void (*func)(int, const char *)) {
    shmemi_log_set_sink(func);
    return ACLSHMEM_SUCCESS;
}

int32_t set_level(const char *call, int level) {
    if (level < 0 || level >= kLevels) {
        log_call_error(call,
                       "invalid argument level=%d: not in [0, %d] (0 debug, 1 info, 2 warn, "
                       "3 error, 4 fatal)",
                       level, kLevels - 1);
        return ACLSHMEM_INVALID_VALUE;
    }
    shmem::core::log_set_level(kLevelWords[level]);
    return ACLSHMEM_SUCCESS;
}

}  // namespace

SHMEM_EXPORT int32_t aclshmemx_set_extern_logger(void (*func)(int level, const char *msg)) {
    return set_logger(func);
}

SHMEM_EXPORT int32_t pshmem_set_extern_logger(void (*func)(int level, const char *msg)) {
    return set_logger(func);
}
SHMEM_WEAK_ALIAS(shmem_set_extern_logger)

SHMEM_EXPORT int32_t aclshmemx_set_log_level(int level) {
    return set_level("aclshmemx_set_log_level", level);
}

SHMEM_EXPORT int32_t pshmem_set_log_level(int level) {
    return set_level("shmem_set_log_level", level);
}
SHMEM_WEAK_ALIAS(shmem_set_log_level)
