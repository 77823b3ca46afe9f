// wait.cpp: point-to-point synchronisation on a local symmetric element that peers update.
// The condition is checked here; between checks the facade asks the runtime to wait a little
// by the library's one waiting policy (watch.h). Generated from SHMEM_SYNC_TYPES.
#include "internal.h"
#include "watch.h"

using namespace shmem::detail;

namespace {

// The element to watch: local, symmetric, aligned; `cmp` one of SHMEM_CMP_*.
template <typename T>
inline const T *watched(const char *call, const T *ivar, int cmp) {
    require_running(call);
    if (SHMEM_UNLIKELY(!valid_cmp(cmp))) {
        fail(call, "invalid argument cmp=%d: not one of SHMEM_CMP_EQ..SHMEM_CMP_LE", cmp);
    }
    if (SHMEM_UNLIKELY(!symmetric_range(ivar, sizeof(T)))) {
        fail(call, "invalid argument ivar=%p: not a symmetric address",
             static_cast<const void *>(ivar));
    }
    if (SHMEM_UNLIKELY(reinterpret_cast<uintptr_t>(ivar) % sizeof(T) != 0)) {
        fail(call, "invalid argument ivar=%p: not aligned to its %zu-byte type",
             static_cast<const void *>(ivar), sizeof(T));
    }
    return ivar;
}

template <typename T>
void wait_until(const char *call, const T *ivar, int cmp, T target) {
    const T *p = watched(call, ivar, cmp);
    wait_for([&] { return holds(load_watched(p), cmp, target); });
}

template <typename T>
int test(const char *call, const T *ivar, int cmp, T target) {
    return holds(load_watched(watched(call, ivar, cmp)), cmp, target) ? 1 : 0;
}

}  // namespace

#define SHMEM_DEFINE_SYNC(TYPE, NAME)                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_wait_until(TYPE *ivar, int cmp, TYPE cmp_value) {            \
        wait_until("shmem_" #NAME "_wait_until", ivar, cmp, cmp_value);                            \
    }                                                                                              \
    SHMEM_EXPORT int pshmem_##NAME##_test(TYPE *ivar, int cmp, TYPE cmp_value) {                   \
        return test("shmem_" #NAME "_test", ivar, cmp, cmp_value);                                 \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_wait_until)                                                    \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_test)
SHMEM_SYNC_TYPES(SHMEM_DEFINE_SYNC)

// The deprecated forms (<shmem/deprecated.h>): shmem_TYPENAME_wait(ivar, v) waits until
// *ivar != v; shmem_wait is its long form and shmem_wait_until the long form of wait_until.
#define SHMEM_DEFINE_SYNC_DEPRECATED(TYPE, NAME)                                                   \
    SHMEM_EXPORT void pshmem_##NAME##_wait(TYPE *ivar, TYPE cmp_value) {                           \
        wait_until("shmem_" #NAME "_wait", ivar, SHMEM_CMP_NE, cmp_value);                         \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_wait)
SHMEM_SYNC_DEPRECATED_TYPES(SHMEM_DEFINE_SYNC_DEPRECATED)

SHMEM_EXPORT void pshmem_wait(long *ivar, long cmp_value) {
    wait_until("shmem_wait", ivar, SHMEM_CMP_NE, cmp_value);
}

SHMEM_EXPORT void pshmem_wait_until(long *ivar, int cmp, long cmp_value) {
    wait_until("shmem_wait_until", ivar, cmp, cmp_value);
}

SHMEM_WEAK_ALIAS(shmem_wait)
SHMEM_WEAK_ALIAS(shmem_wait_until)
