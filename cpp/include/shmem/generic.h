/*
 * shmem/generic.h: the type-generic routines of OpenSHMEM 1.5 (shmem_put, shmem_g,
 * shmem_atomic_fetch_add, shmem_wait_until, ...), included at the end of <shmem.h>.
 *
 * C11 and later: each is a macro whose _Generic selection calls the typed routine for the
 * type the first data pointer points to (`long *dest` calls shmem_long_put). C++: inline
 * overloads of the same names. C99 and earlier: nothing (use the typed routines).
 *
 * The selections and overloads are generated from the GENERIC part of the type tables of
 * <shmem/types.h>: no two associations of a _Generic may name compatible types, and int64_t,
 * size_t and the like are typedefs of types already listed (int64_t is long here), so a
 * pointer to one of them selects the routine of that type, with the same representation.
 * A pointer to a type outside a routine's table does not compile. The one limit of building
 * them from the tables: a generic routine cannot be called from code that is itself generated
 * by the same table of <shmem/types.h> (a macro is not expanded within its own expansion);
 * such code calls the typed routine, whose name it has.
 *
 * The macros are not functions: they have no pshmem_ twins and cannot be intercepted by a
 * profiling tool; the typed routines they call can.
 *
 * Adding a routine (its typed forms declared in <shmem/api.h>):
 *   C11, no context form:
 *     #define SHMEM_C11_A_put_signal(T, N) , T: shmem_##N##_put_signal
 *     #define shmem_put_signal(...) SHMEM_C11_GENERIC(SHMEM_RMA_GENERIC_TYPES,
 *                                                     SHMEM_C11_A_put_signal, __VA_ARGS__)
 *   C11 with a context form (a first argument of type shmem_ctx_t picks shmem_ctx_TYPENAME_X
 *   and the type of the second argument):
 *     #define SHMEM_C11_A_ctx_put(T, N) , T: shmem_ctx_##N##_put
 *     #define shmem_put(...) SHMEM_C11_GENERIC_CTX(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_put,
 *                                                  SHMEM_C11_A_ctx_put, __VA_ARGS__)
 *   C++: one inline overload in the family's SHMEM_CXX_* block below, e.g.
 *     inline void shmem_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe)
 *     { shmem_ctx_##N##_put(ctx, dest, source, nelems, pe); }
 */
#ifndef SHMEM_GENERIC_H
#define SHMEM_GENERIC_H

#if defined(__cplusplus)

/* ---- C++ overloads -------------------------------------------------------------------------
 * extern "C++": they stay overloads even when <shmem.h> is included inside extern "C". */
extern "C++" {

#define SHMEM_CXX_RMA(T, N)                                                                        \
    inline void shmem_put(T *dest, const T *source, size_t nelems, int pe) {                       \
        shmem_##N##_put(dest, source, nelems, pe);                                                 \
    }                                                                                              \
    inline void shmem_get(T *dest, const T *source, size_t nelems, int pe) {                       \
        shmem_##N##_get(dest, source, nelems, pe);                                                 \
    }                                                                                              \
    inline void shmem_put_nbi(T *dest, const T *source, size_t nelems, int pe) {                   \
        shmem_##N##_put_nbi(dest, source, nelems, pe);                                             \
    }                                                                                              \
    inline void shmem_get_nbi(T *dest, const T *source, size_t nelems, int pe) {                   \
        shmem_##N##_get_nbi(dest, source, nelems, pe);                                             \
    }                                                                                              \
    inline void shmem_p(T *dest, T value, int pe) { shmem_##N##_p(dest, value, pe); }              \
    inline T shmem_g(const T *source, int pe) { return shmem_##N##_g(source, pe); }                \
    inline void shmem_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,  \
                           int pe) {                                                               \
        shmem_##N##_iput(dest, source, dst, sst, nelems, pe);                                      \
    }                                                                                              \
    inline void shmem_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,  \
                           int pe) {                                                               \
        shmem_##N##_iget(dest, source, dst, sst, nelems, pe);                                      \
    }
SHMEM_RMA_GENERIC_TYPES(SHMEM_CXX_RMA)
#undef SHMEM_CXX_RMA

#define SHMEM_CXX_AMO_EXTENDED(T, N)                                                               \
    inline T shmem_atomic_fetch(const T *source, int pe) {                                         \
        return shmem_##N##_atomic_fetch(source, pe);                                               \
    }                                                                                              \
    inline void shmem_atomic_set(T *dest, T value, int pe) {                                       \
        shmem_##N##_atomic_set(dest, value, pe);                                                   \
    }                                                                                              \
    inline T shmem_atomic_swap(T *dest, T value, int pe) {                                         \
        return shmem_##N##_atomic_swap(dest, value, pe);                                           \
    }                                                                                              \
    inline void shmem_atomic_fetch_nbi(T *fetch, const T *source, int pe) {                        \
        shmem_##N##_atomic_fetch_nbi(fetch, source, pe);                                           \
    }                                                                                              \
    inline void shmem_atomic_swap_nbi(T *fetch, T *dest, T value, int pe) {                        \
        shmem_##N##_atomic_swap_nbi(fetch, dest, value, pe);                                       \
    }
SHMEM_AMO_EXTENDED_GENERIC_TYPES(SHMEM_CXX_AMO_EXTENDED)
#undef SHMEM_CXX_AMO_EXTENDED

#define SHMEM_CXX_AMO_STANDARD(T, N)                                                               \
    inline T shmem_atomic_compare_swap(T *dest, T cond, T value, int pe) {                         \
        return shmem_##N##_atomic_compare_swap(dest, cond, value, pe);                             \
    }                                                                                              \
    inline T shmem_atomic_fetch_inc(T *dest, int pe) {                                             \
        return shmem_##N##_atomic_fetch_inc(dest, pe);                                             \
    }                                                                                              \
    inline void shmem_atomic_inc(T *dest, int pe) { shmem_##N##_atomic_inc(dest, pe); }            \
    inline T shmem_atomic_fetch_add(T *dest, T value, int pe) {                                    \
        return shmem_##N##_atomic_fetch_add(dest, value, pe);                                      \
    }                                                                                              \
    inline void shmem_atomic_add(T *dest, T value, int pe) {                                       \
        shmem_##N##_atomic_add(dest, value, pe);                                                   \
    }                                                                                              \
    inline void shmem_atomic_compare_swap_nbi(T *fetch, T *dest, T cond, T value, int pe) {        \
        shmem_##N##_atomic_compare_swap_nbi(fetch, dest, cond, value, pe);                         \
    }                                                                                              \
    inline void shmem_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe) {                            \
        shmem_##N##_atomic_fetch_inc_nbi(fetch, dest, pe);                                         \
    }                                                                                              \
    inline void shmem_atomic_fetch_add_nbi(T *fetch, T *dest, T value, int pe) {                   \
        shmem_##N##_atomic_fetch_add_nbi(fetch, dest, value, pe);                                  \
    }
SHMEM_AMO_STANDARD_GENERIC_TYPES(SHMEM_CXX_AMO_STANDARD)
#undef SHMEM_CXX_AMO_STANDARD

#define SHMEM_CXX_AMO_BITWISE_OP(T, N, OP)                                                         \
    inline T shmem_atomic_fetch_##OP(T *dest, T value, int pe) {                                   \
        return shmem_##N##_atomic_fetch_##OP(dest, value, pe);                                     \
    }                                                                                              \
    inline void shmem_atomic_##OP(T *dest, T value, int pe) {                                      \
        shmem_##N##_atomic_##OP(dest, value, pe);                                                  \
    }                                                                                              \
    inline void shmem_atomic_fetch_##OP##_nbi(T *fetch, T *dest, T value, int pe) {                \
        shmem_##N##_atomic_fetch_##OP##_nbi(fetch, dest, value, pe);                               \
    }
#define SHMEM_CXX_AMO_BITWISE(T, N)                                                                \
    SHMEM_CXX_AMO_BITWISE_OP(T, N, and)                                                            \
    SHMEM_CXX_AMO_BITWISE_OP(T, N, or)                                                             \
    SHMEM_CXX_AMO_BITWISE_OP(T, N, xor)
SHMEM_AMO_BITWISE_GENERIC_TYPES(SHMEM_CXX_AMO_BITWISE)
#undef SHMEM_CXX_AMO_BITWISE
#undef SHMEM_CXX_AMO_BITWISE_OP

/* shmem_wait_until(long *, int, long) is also the (C-deprecated) function of <shmem.h>; the
 * overloads are templates with nothing to deduce, so they never clash with it and, for long,
 * the function is the better match. They resolve like plain overloads otherwise. */
#define SHMEM_CXX_SYNC(T, N)                                                                       \
    template <int = 0>                                                                             \
    inline void shmem_wait_until(T *ivar, int cmp, T cmp_value) {                                  \
        shmem_##N##_wait_until(ivar, cmp, cmp_value);                                              \
    }                                                                                              \
    inline int shmem_test(T *ivar, int cmp, T cmp_value) {                                         \
        return shmem_##N##_test(ivar, cmp, cmp_value);                                             \
    }
SHMEM_SYNC_GENERIC_TYPES(SHMEM_CXX_SYNC)
#undef SHMEM_CXX_SYNC

/* Deprecated generic AMO names, over their old type sets; each calls the shmem_atomic_*
 * routine it was renamed to. */
#define SHMEM_CXX_DEPRECATED(use) __attribute__((deprecated(use)))
#define SHMEM_CXX_DEPRECATED_EXTENDED(T, N)                                                        \
    SHMEM_CXX_DEPRECATED("use shmem_atomic_fetch")                                                 \
    inline T shmem_fetch(const T *source, int pe) { return shmem_##N##_atomic_fetch(source, pe); } \
    SHMEM_CXX_DEPRECATED("use shmem_atomic_set")                                                   \
    inline void shmem_set(T *dest, T value, int pe) { shmem_##N##_atomic_set(dest, value, pe); }   \
    SHMEM_CXX_DEPRECATED("use shmem_atomic_swap")                                                  \
    inline T shmem_swap(T *dest, T value, int pe) {                                                \
        return shmem_##N##_atomic_swap(dest, value, pe);                                           \
    }
SHMEM_AMO_DEPRECATED_EXTENDED_TYPES(SHMEM_CXX_DEPRECATED_EXTENDED)
#undef SHMEM_CXX_DEPRECATED_EXTENDED

#define SHMEM_CXX_DEPRECATED_STANDARD(T, N)                                                        \
    SHMEM_CXX_DEPRECATED("use shmem_atomic_compare_swap")                                          \
    inline T shmem_cswap(T *dest, T cond, T value, int pe) {                                       \
        return shmem_##N##_atomic_compare_swap(dest, cond, value, pe);                             \
    }                                                                                              \
    SHMEM_CXX_DEPRECATED("use shmem_atomic_fetch_inc")                                             \
    inline T shmem_finc(T *dest, int pe) { return shmem_##N##_atomic_fetch_inc(dest, pe); }        \
    SHMEM_CXX_DEPRECATED("use shmem_atomic_inc")                                                   \
    inline void shmem_inc(T *dest, int pe) { shmem_##N##_atomic_inc(dest, pe); }                   \
    SHMEM_CXX_DEPRECATED("use shmem_atomic_fetch_add")                                             \
    inline T shmem_fadd(T *dest, T value, int pe) {                                                \
        return shmem_##N##_atomic_fetch_add(dest, value, pe);                                      \
    }                                                                                              \
    SHMEM_CXX_DEPRECATED("use shmem_atomic_add")                                                   \
    inline void shmem_add(T *dest, T value, int pe) { shmem_##N##_atomic_add(dest, value, pe); }
SHMEM_AMO_DEPRECATED_STANDARD_TYPES(SHMEM_CXX_DEPRECATED_STANDARD)
#undef SHMEM_CXX_DEPRECATED_STANDARD
#undef SHMEM_CXX_DEPRECATED

} /* extern "C++" */

#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L

/* ---- C11 _Generic selections ---------------------------------------------------------------
 * The selection is on *p, p being the first data pointer: an lvalue conversion drops const
 * and volatile, so `const long *` selects the long routine as `long *` does. */

#define SHMEM_C11_ARG1_(a, ...) a
#define SHMEM_C11_ARG1(...) SHMEM_C11_ARG1_(__VA_ARGS__, ~)
#define SHMEM_C11_ARG2_(a, b, ...) b
#define SHMEM_C11_ARG2(...) SHMEM_C11_ARG2_(__VA_ARGS__, ~, ~)

/* Calls the routine of ASSOC (an X callback emitting `, TYPE: routine`) over TABLE for the
 * type the first argument points to. */
#define SHMEM_C11_GENERIC(TABLE, ASSOC, ...)                                                       \
    _Generic (*(SHMEM_C11_ARG1(__VA_ARGS__))TABLE(ASSOC))(__VA_ARGS__)

/* The same for a routine with a context form: when the first argument is a shmem_ctx_t, the
 * second is the data pointer and CTX_ASSOC gives the routine. SHMEM_C11_DATA is that data
 * pointer in both cases, so both selections below are well formed whichever form is used. */
#define SHMEM_C11_DATA(...)                                                                        \
    _Generic((SHMEM_C11_ARG1(__VA_ARGS__)), shmem_ctx_t                                            \
             : (SHMEM_C11_ARG2(__VA_ARGS__)), default                                              \
             : (SHMEM_C11_ARG1(__VA_ARGS__)))
#define SHMEM_C11_GENERIC_CTX(TABLE, ASSOC, CTX_ASSOC, ...)                                        \
    _Generic((SHMEM_C11_ARG1(__VA_ARGS__)), shmem_ctx_t                                            \
             : _Generic(*SHMEM_C11_DATA(__VA_ARGS__) TABLE(CTX_ASSOC)), default                    \
             : _Generic(*SHMEM_C11_DATA(__VA_ARGS__) TABLE(ASSOC)))(__VA_ARGS__)

/* RMA: standard RMA types. */
#define SHMEM_C11_A_put(T, N) , T : shmem_##N##_put
#define SHMEM_C11_A_get(T, N) , T : shmem_##N##_get
#define SHMEM_C11_A_put_nbi(T, N) , T : shmem_##N##_put_nbi
#define SHMEM_C11_A_get_nbi(T, N) , T : shmem_##N##_get_nbi
#define SHMEM_C11_A_p(T, N) , T : shmem_##N##_p
#define SHMEM_C11_A_g(T, N) , T : shmem_##N##_g
#define SHMEM_C11_A_iput(T, N) , T : shmem_##N##_iput
#define SHMEM_C11_A_iget(T, N) , T : shmem_##N##_iget
#define shmem_put(...) SHMEM_C11_GENERIC(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_put, __VA_ARGS__)
#define shmem_get(...) SHMEM_C11_GENERIC(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_get, __VA_ARGS__)
#define shmem_put_nbi(...)                                                                         \
    SHMEM_C11_GENERIC(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...)                                                                         \
    SHMEM_C11_GENERIC(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_get_nbi, __VA_ARGS__)
#define shmem_p(...) SHMEM_C11_GENERIC(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_p, __VA_ARGS__)
#define shmem_g(...) SHMEM_C11_GENERIC(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_g, __VA_ARGS__)
#define shmem_iput(...) SHMEM_C11_GENERIC(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_iput, __VA_ARGS__)
#define shmem_iget(...) SHMEM_C11_GENERIC(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_iget, __VA_ARGS__)

/* AMOs: fetch, set, swap over the extended AMO types. */
#define SHMEM_C11_A_atomic_fetch(T, N) , T : shmem_##N##_atomic_fetch
#define SHMEM_C11_A_atomic_set(T, N) , T : shmem_##N##_atomic_set
#define SHMEM_C11_A_atomic_swap(T, N) , T : shmem_##N##_atomic_swap
#define SHMEM_C11_A_atomic_fetch_nbi(T, N) , T : shmem_##N##_atomic_fetch_nbi
#define SHMEM_C11_A_atomic_swap_nbi(T, N) , T : shmem_##N##_atomic_swap_nbi
#define shmem_atomic_fetch(...)                                                                    \
    SHMEM_C11_GENERIC(SHMEM_AMO_EXTENDED_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch, __VA_ARGS__)
#define shmem_atomic_set(...)                                                                      \
    SHMEM_C11_GENERIC(SHMEM_AMO_EXTENDED_GENERIC_TYPES, SHMEM_C11_A_atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...)                                                                     \
    SHMEM_C11_GENERIC(SHMEM_AMO_EXTENDED_GENERIC_TYPES, SHMEM_C11_A_atomic_swap, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...)                                                                \
    SHMEM_C11_GENERIC(SHMEM_AMO_EXTENDED_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...)                                                                 \
    SHMEM_C11_GENERIC(SHMEM_AMO_EXTENDED_GENERIC_TYPES, SHMEM_C11_A_atomic_swap_nbi, __VA_ARGS__)

/* AMOs: compare_swap, fetch_inc, inc, fetch_add, add over the standard AMO types. */
#define SHMEM_C11_A_atomic_compare_swap(T, N) , T : shmem_##N##_atomic_compare_swap
#define SHMEM_C11_A_atomic_fetch_inc(T, N) , T : shmem_##N##_atomic_fetch_inc
#define SHMEM_C11_A_atomic_inc(T, N) , T : shmem_##N##_atomic_inc
#define SHMEM_C11_A_atomic_fetch_add(T, N) , T : shmem_##N##_atomic_fetch_add
#define SHMEM_C11_A_atomic_add(T, N) , T : shmem_##N##_atomic_add
#define SHMEM_C11_A_atomic_compare_swap_nbi(T, N) , T : shmem_##N##_atomic_compare_swap_nbi
#define SHMEM_C11_A_atomic_fetch_inc_nbi(T, N) , T : shmem_##N##_atomic_fetch_inc_nbi
#define SHMEM_C11_A_atomic_fetch_add_nbi(T, N) , T : shmem_##N##_atomic_fetch_add_nbi
#define shmem_atomic_compare_swap(...)                                                             \
    SHMEM_C11_GENERIC(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_compare_swap,           \
                      __VA_ARGS__)
#define shmem_atomic_fetch_inc(...)                                                                \
    SHMEM_C11_GENERIC(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...)                                                                      \
    SHMEM_C11_GENERIC(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...)                                                                \
    SHMEM_C11_GENERIC(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...)                                                                      \
    SHMEM_C11_GENERIC(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_add, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...)                                                         \
    SHMEM_C11_GENERIC(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_compare_swap_nbi,       \
                      __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...)                                                            \
    SHMEM_C11_GENERIC(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_inc_nbi,          \
                      __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...)                                                            \
    SHMEM_C11_GENERIC(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_add_nbi,          \
                      __VA_ARGS__)

/* AMOs: fetch_and/or/xor, and/or/xor over the bitwise AMO types. */
#define SHMEM_C11_A_atomic_fetch_and(T, N) , T : shmem_##N##_atomic_fetch_and
#define SHMEM_C11_A_atomic_fetch_or(T, N) , T : shmem_##N##_atomic_fetch_or
#define SHMEM_C11_A_atomic_fetch_xor(T, N) , T : shmem_##N##_atomic_fetch_xor
#define SHMEM_C11_A_atomic_and(T, N) , T : shmem_##N##_atomic_and
#define SHMEM_C11_A_atomic_or(T, N) , T : shmem_##N##_atomic_or
#define SHMEM_C11_A_atomic_xor(T, N) , T : shmem_##N##_atomic_xor
#define SHMEM_C11_A_atomic_fetch_and_nbi(T, N) , T : shmem_##N##_atomic_fetch_and_nbi
#define SHMEM_C11_A_atomic_fetch_or_nbi(T, N) , T : shmem_##N##_atomic_fetch_or_nbi
#define SHMEM_C11_A_atomic_fetch_xor_nbi(T, N) , T : shmem_##N##_atomic_fetch_xor_nbi
#define shmem_atomic_fetch_and(...)                                                                \
    SHMEM_C11_GENERIC(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...)                                                                 \
    SHMEM_C11_GENERIC(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...)                                                                \
    SHMEM_C11_GENERIC(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_and(...)                                                                      \
    SHMEM_C11_GENERIC(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_and, __VA_ARGS__)
#define shmem_atomic_or(...)                                                                       \
    SHMEM_C11_GENERIC(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_or, __VA_ARGS__)
#define shmem_atomic_xor(...)                                                                      \
    SHMEM_C11_GENERIC(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_xor, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...)                                                            \
    SHMEM_C11_GENERIC(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_and_nbi,           \
                      __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...)                                                             \
    SHMEM_C11_GENERIC(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...)                                                            \
    SHMEM_C11_GENERIC(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_xor_nbi,           \
                      __VA_ARGS__)

/* Point-to-point synchronisation. shmem_wait_until hides the deprecated long-only function
 * of the same name, which stays callable as (shmem_wait_until)(ivar, cmp, value). */
#define SHMEM_C11_A_wait_until(T, N) , T : shmem_##N##_wait_until
#define SHMEM_C11_A_test(T, N) , T : shmem_##N##_test
#define shmem_wait_until(...)                                                                      \
    SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_wait_until, __VA_ARGS__)
#define shmem_test(...) SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_test, __VA_ARGS__)

/* Deprecated generic AMO names over their old type sets. Each calls the shmem_atomic_* routine
 * it was renamed to, after a deprecated no-op, so a call is warned about once, naming the new
 * routine. */
#define SHMEM_C11_DEPRECATED(OLD, NEW)                                                             \
    __attribute__((deprecated("use " #NEW))) static inline void shmem_c11_deprecated_##OLD(void) {}
SHMEM_C11_DEPRECATED(fetch, shmem_atomic_fetch)
SHMEM_C11_DEPRECATED(set, shmem_atomic_set)
SHMEM_C11_DEPRECATED(swap, shmem_atomic_swap)
SHMEM_C11_DEPRECATED(cswap, shmem_atomic_compare_swap)
SHMEM_C11_DEPRECATED(finc, shmem_atomic_fetch_inc)
SHMEM_C11_DEPRECATED(inc, shmem_atomic_inc)
SHMEM_C11_DEPRECATED(fadd, shmem_atomic_fetch_add)
SHMEM_C11_DEPRECATED(add, shmem_atomic_add)
#undef SHMEM_C11_DEPRECATED
#define shmem_fetch(...)                                                                           \
    (shmem_c11_deprecated_fetch(), SHMEM_C11_GENERIC(SHMEM_AMO_DEPRECATED_EXTENDED_TYPES,          \
                                                     SHMEM_C11_A_atomic_fetch, __VA_ARGS__))
#define shmem_set(...)                                                                             \
    (shmem_c11_deprecated_set(),                                                                   \
     SHMEM_C11_GENERIC(SHMEM_AMO_DEPRECATED_EXTENDED_TYPES, SHMEM_C11_A_atomic_set, __VA_ARGS__))
#define shmem_swap(...)                                                                            \
    (shmem_c11_deprecated_swap(),                                                                  \
     SHMEM_C11_GENERIC(SHMEM_AMO_DEPRECATED_EXTENDED_TYPES, SHMEM_C11_A_atomic_swap, __VA_ARGS__))
#define shmem_cswap(...)                                                                           \
    (shmem_c11_deprecated_cswap(),                                                                 \
     SHMEM_C11_GENERIC(SHMEM_AMO_DEPRECATED_STANDARD_TYPES, SHMEM_C11_A_atomic_compare_swap,       \
                       __VA_ARGS__))
#define shmem_finc(...)                                                                            \
    (shmem_c11_deprecated_finc(), SHMEM_C11_GENERIC(SHMEM_AMO_DEPRECATED_STANDARD_TYPES,           \
                                                    SHMEM_C11_A_atomic_fetch_inc, __VA_ARGS__))
#define shmem_inc(...)                                                                             \
    (shmem_c11_deprecated_inc(),                                                                   \
     SHMEM_C11_GENERIC(SHMEM_AMO_DEPRECATED_STANDARD_TYPES, SHMEM_C11_A_atomic_inc, __VA_ARGS__))
#define shmem_fadd(...)                                                                            \
    (shmem_c11_deprecated_fadd(), SHMEM_C11_GENERIC(SHMEM_AMO_DEPRECATED_STANDARD_TYPES,           \
                                                    SHMEM_C11_A_atomic_fetch_add, __VA_ARGS__))
#define shmem_add(...)                                                                             \
    (shmem_c11_deprecated_add(),                                                                   \
     SHMEM_C11_GENERIC(SHMEM_AMO_DEPRECATED_STANDARD_TYPES, SHMEM_C11_A_atomic_add, __VA_ARGS__))

#endif /* C11 / C++ */

#endif /* SHMEM_GENERIC_H */
