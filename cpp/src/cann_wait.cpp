// cann_wait.cpp: CANN SHMEM's host waits and tests (signal_wait_until and the typed wait/test
// families with CANN's `res_out` results) over the comparisons, the acquire load and the
// waiting policy of watch.h. CANN's type set (float, int8, int16, uint8, uint16, char among
// them) is wider than OpenSHMEM's wait types, so the families are written once here as
// templates rather than forwarded.
#include <aclshmem.h>

#include <cstdint>

#include "internal.h"
#include "watch.h"

using namespace shmem::detail;

namespace {

// CANN's comparison (ACLSHMEM_CMP_EQ = 0 ... LE = 5) as SHMEM_CMP_*, or 0 (logged) when it is
// not one, or when the library is not running.
int shmem_cmp(const char *call, int cmp) {
    if (lib_phase.load(std::memory_order_acquire) != kRunning) {
        log_call_error(call, "the library is not initialised (code %d, ACLSHMEM_NOT_INITED)",
                       ACLSHMEM_NOT_INITED);
        return 0;
    }
    if (cmp < ACLSHMEM_CMP_EQ || cmp > ACLSHMEM_CMP_LE) {
        log_call_error(
            call,
            "invalid argument cmp=%d: not ACLSHMEM_CMP_EQ..ACLSHMEM_CMP_LE (0..5) (code %d, "
            "ACLSHMEM_INVALID_PARAM)",
            cmp, ACLSHMEM_INVALID_PARAM);
        return 0;
    }
    return cmp - ACLSHMEM_CMP_EQ + SHMEM_CMP_EQ;
}

// Whether `p` is non-NULL (logged, naming `arg`, when it is NULL).
bool given(const char *call, const char *arg, const void *p) {
    if (p != nullptr) return true;
    log_call_error(call, "invalid argument %s=NULL (code %d, ACLSHMEM_INVALID_PARAM)", arg,
                   ACLSHMEM_INVALID_PARAM);
    return false;
}

// A peer's put is a plain store into this PE's memory (watch.h's load, floats included).
template <typename T>
T load(const T *p) {
    return load_watched(p);
}

// One wait or test set: entries of `ivars` not left out by `status`, each compared with the
// one value or with its own of `values`.
template <typename T>
struct Set {
    const T *ivars;
    size_t n;
    const int *status;
    int cmp;  // SHMEM_CMP_*
    T value;
    const T *values;  // nullptr: `value` for every entry

    bool included(size_t i) const { return status == nullptr || status[i] == 0; }
    bool hit(size_t i) const { return holds(load(ivars + i), cmp, values ? values[i] : value); }
    bool any_included() const {
        for (size_t i = 0; i < n; i++) {
            if (included(i)) return true;
        }
        return false;
    }
    bool all() const {
        for (size_t i = 0; i < n; i++) {
            if (included(i) && !hit(i)) return false;
        }
        return true;
    }
    size_t any() const {
        for (size_t i = 0; i < n; i++) {
            if (included(i) && hit(i)) return i;
        }
        return SIZE_MAX;
    }
    size_t some(size_t *indices) const {
        size_t count = 0;
        for (size_t i = 0; i < n; i++) {
            if (included(i) && hit(i)) indices[count++] = i;
        }
        return count;
    }
};

// Checks the pointers of a set routine; false (logged) when one is missing.
bool set_args(const char *call, const void *ivars, size_t nelems, const void *values, bool vector,
              const void *indices, bool some, const void *res_out, bool has_res) {
    if (nelems > 0 && !given(call, "ivars", ivars)) return false;
    if (vector && nelems > 0 && !given(call, "cmp_values", values)) return false;
    if (some && nelems > 0 && !given(call, "indices", indices)) return false;
    return !has_res || given(call, "res_out", res_out);
}

template <typename T>
void wait_until(const char *call, const T *ivar, int cmp, T value) {
    int c = shmem_cmp(call, cmp);
    if (c == 0 || !given(call, "ivar", ivar)) return;
    wait_for([&] { return holds(load(ivar), c, value); });
}

template <typename T>
void wait_all(const char *call, T *ivars, size_t n, const int *status, int cmp, T value,
              const T *values) {
    int c = shmem_cmp(call, cmp);
    if (c == 0 ||
        !set_args(call, ivars, n, values, values != nullptr, nullptr, false, nullptr, false)) {
        return;
    }
    Set<T> set{ivars, n, status, c, value, values};
    wait_for([&] { return set.all(); });
}

template <typename T>
void wait_any(const char *call, T *ivars, size_t n, const int *status, int cmp, T value,
              const T *values, bool vector, size_t *res_out) {
    int c = shmem_cmp(call, cmp);
    if (!set_args(call, ivars, n, values, vector, nullptr, false, res_out, true)) return;
    *res_out = SIZE_MAX;
    if (c == 0) return;
    Set<T> set{ivars, n, status, c, value, values};
    if (!set.any_included()) return;
    size_t found = SIZE_MAX;
    wait_for([&] { return (found = set.any()) != SIZE_MAX; });
    *res_out = found;
}

template <typename T>
void wait_some(const char *call, T *ivars, size_t n, size_t *indices, const int *status, int cmp,
               T value, const T *values, bool vector, size_t *res_out) {
    int c = shmem_cmp(call, cmp);
    if (!set_args(call, ivars, n, values, vector, indices, true, res_out, true)) return;
    *res_out = 0;
    if (c == 0) return;
    Set<T> set{ivars, n, status, c, value, values};
    if (!set.any_included()) return;
    size_t count = 0;
    wait_for([&] { return (count = set.some(indices)) > 0; });
    *res_out = count;
}

template <typename T>
void test_one(const char *call, const T *ivar, int cmp, T value, int *res_out) {
    int c = shmem_cmp(call, cmp);
    if (!given(call, "ivars", ivar) || !given(call, "res_out", res_out)) return;
    *res_out = c != 0 && holds(load(ivar), c, value) ? 1 : 0;
}

template <typename T>
void test_all(const char *call, T *ivars, size_t n, const int *status, int cmp, const T *values,
              int *res_out) {
    int c = shmem_cmp(call, cmp);
    if (!set_args(call, ivars, n, values, true, nullptr, false, res_out, true)) return;
    *res_out = 0;
    if (c == 0) return;
    Set<T> set{ivars, n, status, c, T{}, values};
    *res_out = set.all() ? 1 : 0;
}

template <typename T>
void test_any(const char *call, T *ivars, size_t n, const int *status, int cmp, T value,
              const T *values, bool vector, size_t *res_out) {
    int c = shmem_cmp(call, cmp);
    if (!set_args(call, ivars, n, values, vector, nullptr, false, res_out, true)) return;
    *res_out = SIZE_MAX;
    if (c == 0) return;
    Set<T> set{ivars, n, status, c, value, values};
    *res_out = set.any();
}

template <typename T>
void test_some(const char *call, T *ivars, size_t n, size_t *indices, const int *status, int cmp,
               T value, const T *values, bool vector, size_t *res_out) {
    int c = shmem_cmp(call, cmp);
    if (!set_args(call, ivars, n, values, vector, indices, true, res_out, true)) return;
    *res_out = 0;
    if (c == 0) return;
    Set<T> set{ivars, n, status, c, value, values};
    *res_out = set.some(indices);
}

}  // namespace

SHMEM_EXPORT void aclshmem_signal_wait_until(int32_t *sig_addr, int cmp, int32_t cmp_val) {
    wait_until("aclshmem_signal_wait_until", sig_addr, cmp, cmp_val);
}

// The typed forms, one definition per CANN type.
#define ACLSHMEMI_DEFINE_WAIT(NAME, TYPE)                                                          \
    SHMEM_EXPORT void aclshmem_##NAME##_wait_until(TYPE *ivar, int cmp, TYPE cmp_value) {          \
        wait_until("aclshmem_" #NAME "_wait_until", ivar, cmp, cmp_value);                         \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_##NAME##_wait(TYPE *ivar, TYPE cmp_value) {                         \
        wait_until("aclshmem_" #NAME "_wait", ivar, ACLSHMEM_CMP_NE, cmp_value);                   \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_##NAME##_wait_until_all(                                            \
        TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value) {                  \
        wait_all("aclshmem_" #NAME "_wait_until_all", ivars, nelems, status, cmp, cmp_value,       \
                 static_cast<const TYPE *>(nullptr));                                              \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_##NAME##_wait_until_any(                                            \
        TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value, size_t *res_out) { \
        wait_any("aclshmem_" #NAME "_wait_until_any", ivars, nelems, status, cmp, cmp_value,       \
                 static_cast<const TYPE *>(nullptr), false, res_out);                              \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_##NAME##_wait_until_some(                                           \
        TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp, TYPE cmp_value,   \
        size_t *res_out) {                                                                         \
        wait_some("aclshmem_" #NAME "_wait_until_some", ivars, nelems, indices, status, cmp,       \
                  cmp_value, static_cast<const TYPE *>(nullptr), false, res_out);                  \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_##NAME##_wait_until_all_vector(                                     \
        TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_values) {                \
        const char *call = "aclshmem_" #NAME "_wait_until_all_vector";                             \
        if (nelems > 0 && !given(call, "cmp_values", cmp_values)) return;                          \
        wait_all(call, ivars, nelems, status, cmp, TYPE{}, static_cast<const TYPE *>(cmp_values)); \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_##NAME##_wait_until_any_vector(TYPE *ivars, size_t nelems,          \
                                                              const int *status, int cmp,          \
                                                              TYPE *cmp_values, size_t *res_out) { \
        wait_any("aclshmem_" #NAME "_wait_until_any_vector", ivars, nelems, status, cmp, TYPE{},   \
                 static_cast<const TYPE *>(cmp_values), true, res_out);                            \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_##NAME##_wait_until_some_vector(                                    \
        TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp, TYPE *cmp_values, \
        size_t *res_out) {                                                                         \
        wait_some("aclshmem_" #NAME "_wait_until_some_vector", ivars, nelems, indices, status,     \
                  cmp, TYPE{}, static_cast<const TYPE *>(cmp_values), true, res_out);              \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_##NAME##_test(TYPE *ivars, int cmp, TYPE cmp_value, int *res_out) { \
        test_one("aclshmem_" #NAME "_test", ivars, cmp, cmp_value, res_out);                       \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_##NAME##_test_any(TYPE *ivars, size_t nelems, const int *status,    \
                                                 int cmp, TYPE cmp_value, size_t *res_out) {       \
        test_any("aclshmem_" #NAME "_test_any", ivars, nelems, status, cmp, cmp_value,             \
                 static_cast<const TYPE *>(nullptr), false, res_out);                              \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_##NAME##_test_some(TYPE *ivars, size_t nelems, size_t *indices,     \
                                                  const int *status, int cmp, TYPE cmp_value,      \
                                                  size_t *res_out) {                               \
        test_some("aclshmem_" #NAME "_test_some", ivars, nelems, indices, status, cmp, cmp_value,  \
                  static_cast<const TYPE *>(nullptr), false, res_out);                             \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_##NAME##_test_all_vector(                                           \
        TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_values, int *res_out) {  \
        test_all("aclshmem_" #NAME "_test_all_vector", ivars, nelems, status, cmp,                 \
                 static_cast<const TYPE *>(cmp_values), res_out);                                  \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_##NAME##_test_any_vector(TYPE *ivars, size_t nelems,                \
                                                        const int *status, int cmp,                \
                                                        TYPE *cmp_values, size_t *res_out) {       \
        test_any("aclshmem_" #NAME "_test_any_vector", ivars, nelems, status, cmp, TYPE{},         \
                 static_cast<const TYPE *>(cmp_values), true, res_out);                            \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_##NAME##_test_some_vector(                                          \
        TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp, TYPE *cmp_values, \
        size_t *res_out) {                                                                         \
        test_some("aclshmem_" #NAME "_test_some_vector", ivars, nelems, indices, status, cmp,      \
                  TYPE{}, static_cast<const TYPE *>(cmp_values), true, res_out);                   \
    }
ACLSHMEMI_P2P_TYPES(ACLSHMEMI_DEFINE_WAIT)
#undef ACLSHMEMI_DEFINE_WAIT
