// amo.cpp: atomic memory operations. The target is mapped here, so an AMO is one CPU atomic on
// the peer's memory; sequentially consistent, which on x86-64 costs nothing beyond the locked
// instruction itself and orders it with this PE's puts as shmem_fence requires. Generated from
// the AMO type tables in <shmem/types.h>.
#include "amo.h"

using namespace shmem::detail;

#define SHMEM_NAME(NAME, OP) "shmem_" #NAME "_atomic_" #OP

#define SHMEM_DEFINE_AMO_EXTENDED(TYPE, NAME)                                                      \
    SHMEM_EXPORT TYPE pshmem_##NAME##_atomic_fetch(const TYPE *source, int pe) {                   \
        return fetch(SHMEM_NAME(NAME, fetch), source, pe);                                         \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_atomic_set(TYPE *dest, TYPE value, int pe) {                 \
        set(SHMEM_NAME(NAME, set), dest, value, pe);                                               \
    }                                                                                              \
    SHMEM_EXPORT TYPE pshmem_##NAME##_atomic_swap(TYPE *dest, TYPE value, int pe) {                \
        return swap(SHMEM_NAME(NAME, swap), dest, value, pe);                                      \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_atomic_fetch_nbi(TYPE *out, const TYPE *source, int pe) {    \
        const char *call = SHMEM_NAME(NAME, fetch_nbi);                                            \
        *fetch_buffer(call, out) = fetch(call, source, pe);                                        \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_atomic_swap_nbi(TYPE *out, TYPE *dest, TYPE value, int pe) { \
        const char *call = SHMEM_NAME(NAME, swap_nbi);                                             \
        *fetch_buffer(call, out) = swap(call, dest, value, pe);                                    \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_fetch)                                                  \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_set)                                                    \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_swap)                                                   \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_fetch_nbi)                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_swap_nbi)
SHMEM_AMO_EXTENDED_TYPES(SHMEM_DEFINE_AMO_EXTENDED)

#define SHMEM_DEFINE_AMO_STANDARD(TYPE, NAME)                                                      \
    SHMEM_EXPORT TYPE pshmem_##NAME##_atomic_compare_swap(TYPE *dest, TYPE cond, TYPE value,       \
                                                          int pe) {                                \
        return compare_swap(SHMEM_NAME(NAME, compare_swap), dest, cond, value, pe);                \
    }                                                                                              \
    SHMEM_EXPORT TYPE pshmem_##NAME##_atomic_fetch_inc(TYPE *dest, int pe) {                       \
        return fetch_add(SHMEM_NAME(NAME, fetch_inc), dest, static_cast<TYPE>(1), pe);             \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_atomic_inc(TYPE *dest, int pe) {                             \
        fetch_add(SHMEM_NAME(NAME, inc), dest, static_cast<TYPE>(1), pe);                          \
    }                                                                                              \
    SHMEM_EXPORT TYPE pshmem_##NAME##_atomic_fetch_add(TYPE *dest, TYPE value, int pe) {           \
        return fetch_add(SHMEM_NAME(NAME, fetch_add), dest, value, pe);                            \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_atomic_add(TYPE *dest, TYPE value, int pe) {                 \
        fetch_add(SHMEM_NAME(NAME, add), dest, value, pe);                                         \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_atomic_compare_swap_nbi(TYPE *out, TYPE *dest, TYPE cond,    \
                                                              TYPE value, int pe) {                \
        const char *call = SHMEM_NAME(NAME, compare_swap_nbi);                                     \
        *fetch_buffer(call, out) = compare_swap(call, dest, cond, value, pe);                      \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_atomic_fetch_inc_nbi(TYPE *out, TYPE *dest, int pe) {        \
        const char *call = SHMEM_NAME(NAME, fetch_inc_nbi);                                        \
        *fetch_buffer(call, out) = fetch_add(call, dest, static_cast<TYPE>(1), pe);                \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_atomic_fetch_add_nbi(TYPE *out, TYPE *dest, TYPE value,      \
                                                           int pe) {                               \
        const char *call = SHMEM_NAME(NAME, fetch_add_nbi);                                        \
        *fetch_buffer(call, out) = fetch_add(call, dest, value, pe);                               \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_compare_swap)                                           \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_fetch_inc)                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_inc)                                                    \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_fetch_add)                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_add)                                                    \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_compare_swap_nbi)                                       \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_fetch_inc_nbi)                                          \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_fetch_add_nbi)
SHMEM_AMO_STANDARD_TYPES(SHMEM_DEFINE_AMO_STANDARD)

#define SHMEM_DEFINE_AMO_BITWISE_OP(TYPE, NAME, OP)                                                \
    SHMEM_EXPORT TYPE pshmem_##NAME##_atomic_fetch_##OP(TYPE *dest, TYPE value, int pe) {          \
        return fetch_##OP(SHMEM_NAME(NAME, fetch_##OP), dest, value, pe);                          \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_atomic_##OP(TYPE *dest, TYPE value, int pe) {                \
        fetch_##OP(SHMEM_NAME(NAME, OP), dest, value, pe);                                         \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_atomic_fetch_##OP##_nbi(TYPE *out, TYPE *dest, TYPE value,   \
                                                              int pe) {                            \
        const char *call = SHMEM_NAME(NAME, fetch_##OP##_nbi);                                     \
        *fetch_buffer(call, out) = fetch_##OP(call, dest, value, pe);                              \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_fetch_##OP)                                             \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_##OP)                                                   \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_atomic_fetch_##OP##_nbi)
#define SHMEM_DEFINE_AMO_BITWISE(TYPE, NAME)                                                       \
    SHMEM_DEFINE_AMO_BITWISE_OP(TYPE, NAME, and)                                                   \
    SHMEM_DEFINE_AMO_BITWISE_OP(TYPE, NAME, or)                                                    \
    SHMEM_DEFINE_AMO_BITWISE_OP(TYPE, NAME, xor)
SHMEM_AMO_BITWISE_TYPES(SHMEM_DEFINE_AMO_BITWISE)

// The pre-1.4 names (<shmem/deprecated.h>): the same operations, errors naming the old call.
#define SHMEM_OLD_NAME(NAME, OP) "shmem_" #NAME "_" #OP

#define SHMEM_DEFINE_AMO_DEPRECATED_EXTENDED(TYPE, NAME)                                           \
    SHMEM_EXPORT TYPE pshmem_##NAME##_fetch(const TYPE *source, int pe) {                          \
        return fetch(SHMEM_OLD_NAME(NAME, fetch), source, pe);                                     \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_set(TYPE *dest, TYPE value, int pe) {                        \
        set(SHMEM_OLD_NAME(NAME, set), dest, value, pe);                                           \
    }                                                                                              \
    SHMEM_EXPORT TYPE pshmem_##NAME##_swap(TYPE *dest, TYPE value, int pe) {                       \
        return swap(SHMEM_OLD_NAME(NAME, swap), dest, value, pe);                                  \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_fetch)                                                         \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_set)                                                           \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_swap)
SHMEM_AMO_DEPRECATED_EXTENDED_TYPES(SHMEM_DEFINE_AMO_DEPRECATED_EXTENDED)

#define SHMEM_DEFINE_AMO_DEPRECATED_STANDARD(TYPE, NAME)                                           \
    SHMEM_EXPORT TYPE pshmem_##NAME##_cswap(TYPE *dest, TYPE cond, TYPE value, int pe) {           \
        return compare_swap(SHMEM_OLD_NAME(NAME, cswap), dest, cond, value, pe);                   \
    }                                                                                              \
    SHMEM_EXPORT TYPE pshmem_##NAME##_finc(TYPE *dest, int pe) {                                   \
        return fetch_add(SHMEM_OLD_NAME(NAME, finc), dest, static_cast<TYPE>(1), pe);              \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_inc(TYPE *dest, int pe) {                                    \
        fetch_add(SHMEM_OLD_NAME(NAME, inc), dest, static_cast<TYPE>(1), pe);                      \
    }                                                                                              \
    SHMEM_EXPORT TYPE pshmem_##NAME##_fadd(TYPE *dest, TYPE value, int pe) {                       \
        return fetch_add(SHMEM_OLD_NAME(NAME, fadd), dest, value, pe);                             \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_add(TYPE *dest, TYPE value, int pe) {                        \
        fetch_add(SHMEM_OLD_NAME(NAME, add), dest, value, pe);                                     \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_cswap)                                                         \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_finc)                                                          \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_inc)                                                           \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_fadd)                                                          \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_add)
SHMEM_AMO_DEPRECATED_STANDARD_TYPES(SHMEM_DEFINE_AMO_DEPRECATED_STANDARD)
