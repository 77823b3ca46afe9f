// wait_set.cpp: point-to-point synchronisation on sets of local symmetric elements that peers
// update (shmem_TYPE_wait_until_all/any/some, shmem_TYPE_test_all/any/some and their _vector
// forms). A set is the elements of `ivars` whose `status` entry is 0 (all of them when status
// is NULL). The conditions are checked here; between sweeps the wait drives the library's one
// waiting policy (watch.h). Generated from SHMEM_SYNC_TYPES.
//
// Fairness: wait_until_any and test_any search from a per-thread cursor that moves past the
// index they returned last, so an element that stays satisfied is returned within one round of
// calls however many lower indices are satisfied too. wait_until_some and test_some report
// every satisfied element of the sweep that found one.
#include <cstdint>

#include "internal.h"
#include "watch.h"

using namespace shmem::detail;

namespace {

// Where the next _any search starts; one per thread, as the calls of a thread form one series.
thread_local size_t any_cursor = 0;

// One checked call: the set and the condition every member is compared with.
template <typename T>
struct WaitSet {
    const T *ivars;
    size_t n;
    const int *status;
    int cmp;
    T value;          // the plain forms' cmp_value
    const T *values;  // the _vector forms' cmp_values, else nullptr

    bool member(size_t i) const { return status == nullptr || status[i] == 0; }

    bool satisfied(size_t i) const {
        return holds(load_watched(&ivars[i]), cmp, values != nullptr ? values[i] : value);
    }

    bool empty() const {
        for (size_t i = 0; i < n; i++) {
            if (member(i)) return false;
        }
        return true;
    }

    // The first member at or after `start` (cyclically) that is satisfied, or SIZE_MAX.
    size_t find_from(size_t start) const {
        for (size_t k = 0; k < n; k++) {
            size_t i = start + k < n ? start + k : start + k - n;
            if (member(i) && satisfied(i)) return i;
        }
        return SIZE_MAX;
    }

    size_t find_any() const {
        size_t i = find_from(any_cursor < n ? any_cursor : 0);
        if (i != SIZE_MAX) any_cursor = i + 1;
        return i;
    }

    // Stores the indices of every satisfied member in `indices`; returns how many.
    size_t collect(size_t *indices) const {
        size_t found = 0;
        for (size_t i = 0; i < n; i++) {
            if (member(i) && satisfied(i)) indices[found++] = i;
        }
        return found;
    }
};

// Checks the arguments of one call; `values` and `indices` are checked when the form has them
// (`vector`, `some`). An empty array needs no valid pointers.
template <typename T>
WaitSet<T> checked(const char *call, const T *ivars, size_t nelems, const int *status, int cmp,
                   T value, const T *values, bool vector, const size_t *indices, bool some) {
    require_running(call);
    if (SHMEM_UNLIKELY(!valid_cmp(cmp))) {
        fail(call, "invalid argument cmp=%d: not one of SHMEM_CMP_EQ..SHMEM_CMP_LE", cmp);
    }
    if (nelems != 0) {
        require_buffer(call, "ivars", ivars, nelems);
        size_t bytes = 0;
        if (SHMEM_UNLIKELY(__builtin_mul_overflow(nelems, sizeof(T), &bytes))) {
            fail(call, "invalid argument nelems=%zu: %zu-byte elements overflow size_t", nelems,
                 sizeof(T));
        }
        if (SHMEM_UNLIKELY(!symmetric_range(ivars, bytes))) {
            fail(call, "invalid argument ivars=%p with nelems=%zu: not a symmetric address range",
                 static_cast<const void *>(ivars), nelems);
        }
        if (SHMEM_UNLIKELY(reinterpret_cast<uintptr_t>(ivars) % sizeof(T) != 0)) {
            fail(call, "invalid argument ivars=%p: not aligned to its %zu-byte type",
                 static_cast<const void *>(ivars), sizeof(T));
        }
        if (vector) require_buffer(call, "cmp_values", values, nelems);
        if (some) require_buffer(call, "indices", indices, nelems);
    }
    return WaitSet<T>{ivars, nelems, status, cmp, value, vector ? values : nullptr};
}

template <typename T>
void wait_all(const WaitSet<T> &s) {
    // Every member must be seen satisfied once; the sweep resumes where it stopped.
    size_t next = 0;
    wait_for([&] {
        while (next < s.n && (!s.member(next) || s.satisfied(next))) next++;
        return next == s.n;
    });
}

template <typename T>
size_t wait_any(const WaitSet<T> &s) {
    if (s.empty()) return SIZE_MAX;
    size_t found = SIZE_MAX;
    wait_for([&] {
        found = s.find_any();
        return found != SIZE_MAX;
    });
    return found;
}

template <typename T>
size_t wait_some(const WaitSet<T> &s, size_t *indices) {
    if (s.empty()) return 0;
    size_t found = 0;
    wait_for([&] {
        found = s.collect(indices);
        return found != 0;
    });
    return found;
}

template <typename T>
int test_all(const WaitSet<T> &s) {
    for (size_t i = 0; i < s.n; i++) {
        if (s.member(i) && !s.satisfied(i)) return 0;
    }
    return 1;  // also for an empty set (OpenSHMEM 1.5 errata: the set is vacuously satisfied)
}

}  // namespace

// The plain forms pass `cmp_value` and no vector, the _vector forms `cmp_values`.
#define SET_ARGS(FORM, TYPE, INDICES, SOME)                                                        \
    checked<TYPE>(FORM, ivars, nelems, status, cmp, value, values, vector, INDICES, SOME)

#define SHMEM_DEFINE_SYNC_SET_FORM(TYPE, NAME, SUFFIX, VALUE_PARAM, VALUE_INIT)                    \
    SHMEM_EXPORT void pshmem_##NAME##_wait_until_all##SUFFIX(                                      \
        TYPE *ivars, size_t nelems, const int *status, int cmp, VALUE_PARAM) {                     \
        VALUE_INIT;                                                                                \
        wait_all(SET_ARGS("shmem_" #NAME "_wait_until_all" #SUFFIX, TYPE, nullptr, false));        \
    }                                                                                              \
    SHMEM_EXPORT size_t pshmem_##NAME##_wait_until_any##SUFFIX(                                    \
        TYPE *ivars, size_t nelems, const int *status, int cmp, VALUE_PARAM) {                     \
        VALUE_INIT;                                                                                \
        return wait_any(SET_ARGS("shmem_" #NAME "_wait_until_any" #SUFFIX, TYPE, nullptr, false)); \
    }                                                                                              \
    SHMEM_EXPORT size_t pshmem_##NAME##_wait_until_some##SUFFIX(                                   \
        TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp, VALUE_PARAM) {    \
        VALUE_INIT;                                                                                \
        return wait_some(SET_ARGS("shmem_" #NAME "_wait_until_some" #SUFFIX, TYPE, indices, true), \
                         indices);                                                                 \
    }                                                                                              \
    SHMEM_EXPORT int pshmem_##NAME##_test_all##SUFFIX(TYPE *ivars, size_t nelems,                  \
                                                      const int *status, int cmp, VALUE_PARAM) {   \
        VALUE_INIT;                                                                                \
        return test_all(SET_ARGS("shmem_" #NAME "_test_all" #SUFFIX, TYPE, nullptr, false));       \
    }                                                                                              \
    SHMEM_EXPORT size_t pshmem_##NAME##_test_any##SUFFIX(                                          \
        TYPE *ivars, size_t nelems, const int *status, int cmp, VALUE_PARAM) {                     \
        VALUE_INIT;                                                                                \
        return SET_ARGS("shmem_" #NAME "_test_any" #SUFFIX, TYPE, nullptr, false).find_any();      \
    }                                                                                              \
    SHMEM_EXPORT size_t pshmem_##NAME##_test_some##SUFFIX(                                         \
        TYPE *ivars, size_t nelems, size_t *indices, const int *status, int cmp, VALUE_PARAM) {    \
        VALUE_INIT;                                                                                \
        return SET_ARGS("shmem_" #NAME "_test_some" #SUFFIX, TYPE, indices, true)                  \
            .collect(indices);                                                                     \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_wait_until_all##SUFFIX)                                        \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_wait_until_any##SUFFIX)                                        \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_wait_until_some##SUFFIX)                                       \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_test_all##SUFFIX)                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_test_any##SUFFIX)                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_test_some##SUFFIX)

#define SHMEM_DEFINE_SYNC_SET(TYPE, NAME)                                                          \
    SHMEM_DEFINE_SYNC_SET_FORM(TYPE, NAME, , TYPE value, const TYPE *values = nullptr;             \
                               constexpr bool vector = false)                                      \
    SHMEM_DEFINE_SYNC_SET_FORM(TYPE, NAME, _vector, TYPE *values, const TYPE value{};              \
                               constexpr bool vector = true)
SHMEM_SYNC_TYPES(SHMEM_DEFINE_SYNC_SET)
