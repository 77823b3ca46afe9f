// mf_smem.h: what libmf_smem.so's files share: memfabric_hybrid's return codes, the family's
// log (to the user's extern logger or stderr, by memfabric's level numbers) and the
// thread-local last error message.
#pragma once

#include <cstdint>

namespace mf {

// memfabric's codes (SMErrorCode) and the lower layer's "function unsupported".
constexpr int32_t kOk = 0;
constexpr int32_t kError = -1;
constexpr int32_t kUnsupported = -10;
constexpr int32_t kInvalidParam = -2000;
constexpr int32_t kNotStarted = -2003;
constexpr int32_t kObjectNotExists = -2007;
constexpr int32_t kNotInitialized = -2008;

// memfabric's log levels.
constexpr int kDebug = 0;
constexpr int kInfo = 1;
constexpr int kWarn = 2;
constexpr int kError_ = 3;

// Logs one line at `level` (shown when level >= the level smem_set_log_level chose).
void log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Keeps `call: <message>` as this thread's last error, logs it as an error line and returns
// `code`.
int32_t fail(int32_t code, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

// As fail, for a function whose result is not a code.
void fail_void(const char *call, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Logs, once per process whichever call comes first, that the config store at `url` is plain
// TCP (unencrypted).
void warn_plain_store(const char *call, const char *url);

}  // namespace mf

// Exported with default visibility (the library is compiled with hidden visibility).
#define MF_EXPORT extern "C" __attribute__((visibility("default")))
