/*
 * shmem/generic.h: the type-generic routines of OpenSHMEM 1.5 (shmem_put, shmem_g,
 * shmem_atomic_fetch_add, shmem_put_signal, shmem_wait_until, shmem_test_any, shmem_broadcast,
 * shmem_sum_reduce, ...), included at the end of <shmem.h>.
 *
 * C11 and later: each is a macro whose _Generic selection calls the typed routine for the
 * type the first data pointer points to (`long *dest` calls shmem_long_put). The RMA, AMO and
 * put-with-signal names also take a shmem_ctx_t first (shmem_put(ctx, dest, source, n, pe)
 * calls shmem_ctx_long_put); the collectives take the team first and select on `dest`.
 * C++: inline overloads of the same names. C99 and earlier: nothing (use the typed routines).
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
 *     #define SHMEM_C11_A_test_any(T, N) , T: shmem_##N##_test_any
 *     #define shmem_test_any(...) SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES,
 *                                                   SHMEM_C11_A_test_any, __VA_ARGS__)
 *   C11, a team first (the selection is on the second argument): SHMEM_C11_GENERIC_DEST, or
 *   SHMEM_C11_REDUCE for a reduction, whose tables take the operation too.
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

/* Context forms of the RMA and AMO routines: the same overloads with a shmem_ctx_t first. */
#define SHMEM_CXX_CTX_RMA(T, N)                                                                    \
    inline void shmem_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe) {      \
        shmem_ctx_##N##_put(ctx, dest, source, nelems, pe);                                        \
    }                                                                                              \
    inline void shmem_get(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe) {      \
        shmem_ctx_##N##_get(ctx, dest, source, nelems, pe);                                        \
    }                                                                                              \
    inline void shmem_put_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe) {  \
        shmem_ctx_##N##_put_nbi(ctx, dest, source, nelems, pe);                                    \
    }                                                                                              \
    inline void shmem_get_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe) {  \
        shmem_ctx_##N##_get_nbi(ctx, dest, source, nelems, pe);                                    \
    }                                                                                              \
    inline void shmem_p(shmem_ctx_t ctx, T *dest, T value, int pe) {                               \
        shmem_ctx_##N##_p(ctx, dest, value, pe);                                                   \
    }                                                                                              \
    inline T shmem_g(shmem_ctx_t ctx, const T *source, int pe) {                                   \
        return shmem_ctx_##N##_g(ctx, source, pe);                                                 \
    }                                                                                              \
    inline void shmem_iput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst,               \
                           ptrdiff_t sst, size_t nelems, int pe) {                                 \
        shmem_ctx_##N##_iput(ctx, dest, source, dst, sst, nelems, pe);                             \
    }                                                                                              \
    inline void shmem_iget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst,               \
                           ptrdiff_t sst, size_t nelems, int pe) {                                 \
        shmem_ctx_##N##_iget(ctx, dest, source, dst, sst, nelems, pe);                             \
    }
SHMEM_RMA_GENERIC_TYPES(SHMEM_CXX_CTX_RMA)
#undef SHMEM_CXX_CTX_RMA

#define SHMEM_CXX_CTX_AMO_EXTENDED(T, N)                                                           \
    inline T shmem_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe) {                        \
        return shmem_ctx_##N##_atomic_fetch(ctx, source, pe);                                      \
    }                                                                                              \
    inline void shmem_atomic_set(shmem_ctx_t ctx, T *dest, T value, int pe) {                      \
        shmem_ctx_##N##_atomic_set(ctx, dest, value, pe);                                          \
    }                                                                                              \
    inline T shmem_atomic_swap(shmem_ctx_t ctx, T *dest, T value, int pe) {                        \
        return shmem_ctx_##N##_atomic_swap(ctx, dest, value, pe);                                  \
    }                                                                                              \
    inline void shmem_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch, const T *source, int pe) {       \
        shmem_ctx_##N##_atomic_fetch_nbi(ctx, fetch, source, pe);                                  \
    }                                                                                              \
    inline void shmem_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe) {       \
        shmem_ctx_##N##_atomic_swap_nbi(ctx, fetch, dest, value, pe);                              \
    }
SHMEM_AMO_EXTENDED_GENERIC_TYPES(SHMEM_CXX_CTX_AMO_EXTENDED)
#undef SHMEM_CXX_CTX_AMO_EXTENDED

#define SHMEM_CXX_CTX_AMO_STANDARD(T, N)                                                           \
    inline T shmem_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond, T value, int pe) {        \
        return shmem_ctx_##N##_atomic_compare_swap(ctx, dest, cond, value, pe);                    \
    }                                                                                              \
    inline T shmem_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe) {                            \
        return shmem_ctx_##N##_atomic_fetch_inc(ctx, dest, pe);                                    \
    }                                                                                              \
    inline void shmem_atomic_inc(shmem_ctx_t ctx, T *dest, int pe) {                               \
        shmem_ctx_##N##_atomic_inc(ctx, dest, pe);                                                 \
    }                                                                                              \
    inline T shmem_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value, int pe) {                   \
        return shmem_ctx_##N##_atomic_fetch_add(ctx, dest, value, pe);                             \
    }                                                                                              \
    inline void shmem_atomic_add(shmem_ctx_t ctx, T *dest, T value, int pe) {                      \
        shmem_ctx_##N##_atomic_add(ctx, dest, value, pe);                                          \
    }                                                                                              \
    inline void shmem_atomic_compare_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T cond, T value, \
                                              int pe) {                                            \
        shmem_ctx_##N##_atomic_compare_swap_nbi(ctx, fetch, dest, cond, value, pe);                \
    }                                                                                              \
    inline void shmem_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch, T *dest, int pe) {           \
        shmem_ctx_##N##_atomic_fetch_inc_nbi(ctx, fetch, dest, pe);                                \
    }                                                                                              \
    inline void shmem_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe) {  \
        shmem_ctx_##N##_atomic_fetch_add_nbi(ctx, fetch, dest, value, pe);                         \
    }
SHMEM_AMO_STANDARD_GENERIC_TYPES(SHMEM_CXX_CTX_AMO_STANDARD)
#undef SHMEM_CXX_CTX_AMO_STANDARD

#define SHMEM_CXX_CTX_AMO_BITWISE_OP(T, N, OP)                                                     \
    inline T shmem_atomic_fetch_##OP(shmem_ctx_t ctx, T *dest, T value, int pe) {                  \
        return shmem_ctx_##N##_atomic_fetch_##OP(ctx, dest, value, pe);                            \
    }                                                                                              \
    inline void shmem_atomic_##OP(shmem_ctx_t ctx, T *dest, T value, int pe) {                     \
        shmem_ctx_##N##_atomic_##OP(ctx, dest, value, pe);                                         \
    }                                                                                              \
    inline void shmem_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value,         \
                                              int pe) {                                            \
        shmem_ctx_##N##_atomic_fetch_##OP##_nbi(ctx, fetch, dest, value, pe);                      \
    }
#define SHMEM_CXX_CTX_AMO_BITWISE(T, N)                                                            \
    SHMEM_CXX_CTX_AMO_BITWISE_OP(T, N, and)                                                        \
    SHMEM_CXX_CTX_AMO_BITWISE_OP(T, N, or)                                                         \
    SHMEM_CXX_CTX_AMO_BITWISE_OP(T, N, xor)
SHMEM_AMO_BITWISE_GENERIC_TYPES(SHMEM_CXX_CTX_AMO_BITWISE)
#undef SHMEM_CXX_CTX_AMO_BITWISE
#undef SHMEM_CXX_CTX_AMO_BITWISE_OP

/* Put with signal, with and without a context. */
#define SHMEM_CXX_PUT_SIGNAL(T, N)                                                                 \
    inline void shmem_put_signal(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,      \
                                 uint64_t signal, int sig_op, int pe) {                            \
        shmem_##N##_put_signal(dest, source, nelems, sig_addr, signal, sig_op, pe);                \
    }                                                                                              \
    inline void shmem_put_signal_nbi(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,  \
                                     uint64_t signal, int sig_op, int pe) {                        \
        shmem_##N##_put_signal_nbi(dest, source, nelems, sig_addr, signal, sig_op, pe);            \
    }                                                                                              \
    inline void shmem_put_signal(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,         \
                                 uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {        \
        shmem_ctx_##N##_put_signal(ctx, dest, source, nelems, sig_addr, signal, sig_op, pe);       \
    }                                                                                              \
    inline void shmem_put_signal_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,     \
                                     uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {    \
        shmem_ctx_##N##_put_signal_nbi(ctx, dest, source, nelems, sig_addr, signal, sig_op, pe);   \
    }
SHMEM_RMA_GENERIC_TYPES(SHMEM_CXX_PUT_SIGNAL)
#undef SHMEM_CXX_PUT_SIGNAL

/* Waits and tests on sets of variables. */
#define SHMEM_CXX_SYNC_SET_ONE(T, N, X)                                                            \
    inline void shmem_##X##_all(T *ivars, size_t nelems, const int *status, int cmp,               \
                                T cmp_value) {                                                     \
        shmem_##N##_##X##_all(ivars, nelems, status, cmp, cmp_value);                              \
    }                                                                                              \
    inline size_t shmem_##X##_any(T *ivars, size_t nelems, const int *status, int cmp,             \
                                  T cmp_value) {                                                   \
        return shmem_##N##_##X##_any(ivars, nelems, status, cmp, cmp_value);                       \
    }                                                                                              \
    inline size_t shmem_##X##_some(T *ivars, size_t nelems, size_t *indices, const int *status,    \
                                   int cmp, T cmp_value) {                                         \
        return shmem_##N##_##X##_some(ivars, nelems, indices, status, cmp, cmp_value);             \
    }                                                                                              \
    inline void shmem_##X##_all_vector(T *ivars, size_t nelems, const int *status, int cmp,        \
                                       T *cmp_values) {                                            \
        shmem_##N##_##X##_all_vector(ivars, nelems, status, cmp, cmp_values);                      \
    }                                                                                              \
    inline size_t shmem_##X##_any_vector(T *ivars, size_t nelems, const int *status, int cmp,      \
                                         T *cmp_values) {                                          \
        return shmem_##N##_##X##_any_vector(ivars, nelems, status, cmp, cmp_values);               \
    }                                                                                              \
    inline size_t shmem_##X##_some_vector(T *ivars, size_t nelems, size_t *indices,                \
                                          const int *status, int cmp, T *cmp_values) {             \
        return shmem_##N##_##X##_some_vector(ivars, nelems, indices, status, cmp, cmp_values);     \
    }
#define SHMEM_CXX_SYNC_SET(T, N)                                                                   \
    SHMEM_CXX_SYNC_SET_ONE(T, N, wait_until)                                                       \
    SHMEM_CXX_SYNC_SET_TEST(T, N)
/* test_all returns int where wait_until_all returns nothing. */
#define SHMEM_CXX_SYNC_SET_TEST(T, N)                                                              \
    inline int shmem_test_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value) {  \
        return shmem_##N##_test_all(ivars, nelems, status, cmp, cmp_value);                        \
    }                                                                                              \
    inline size_t shmem_test_any(T *ivars, size_t nelems, const int *status, int cmp,              \
                                 T cmp_value) {                                                    \
        return shmem_##N##_test_any(ivars, nelems, status, cmp, cmp_value);                        \
    }                                                                                              \
    inline size_t shmem_test_some(T *ivars, size_t nelems, size_t *indices, const int *status,     \
                                  int cmp, T cmp_value) {                                          \
        return shmem_##N##_test_some(ivars, nelems, indices, status, cmp, cmp_value);              \
    }                                                                                              \
    inline int shmem_test_all_vector(T *ivars, size_t nelems, const int *status, int cmp,          \
                                     T *cmp_values) {                                              \
        return shmem_##N##_test_all_vector(ivars, nelems, status, cmp, cmp_values);                \
    }                                                                                              \
    inline size_t shmem_test_any_vector(T *ivars, size_t nelems, const int *status, int cmp,       \
                                        T *cmp_values) {                                           \
        return shmem_##N##_test_any_vector(ivars, nelems, status, cmp, cmp_values);                \
    }                                                                                              \
    inline size_t shmem_test_some_vector(T *ivars, size_t nelems, size_t *indices,                 \
                                         const int *status, int cmp, T *cmp_values) {              \
        return shmem_##N##_test_some_vector(ivars, nelems, indices, status, cmp, cmp_values);      \
    }
SHMEM_SYNC_GENERIC_TYPES(SHMEM_CXX_SYNC_SET)
#undef SHMEM_CXX_SYNC_SET
#undef SHMEM_CXX_SYNC_SET_TEST
#undef SHMEM_CXX_SYNC_SET_ONE

/* Team collectives. */
#define SHMEM_CXX_COLL(T, N)                                                                       \
    inline int shmem_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems,         \
                               int PE_root) {                                                      \
        return shmem_##N##_broadcast(team, dest, source, nelems, PE_root);                         \
    }                                                                                              \
    inline int shmem_collect(shmem_team_t team, T *dest, const T *source, size_t nelems) {         \
        return shmem_##N##_collect(team, dest, source, nelems);                                    \
    }                                                                                              \
    inline int shmem_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems) {        \
        return shmem_##N##_fcollect(team, dest, source, nelems);                                   \
    }                                                                                              \
    inline int shmem_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems) {        \
        return shmem_##N##_alltoall(team, dest, source, nelems);                                   \
    }                                                                                              \
    inline int shmem_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst,         \
                               ptrdiff_t sst, size_t nelems) {                                     \
        return shmem_##N##_alltoalls(team, dest, source, dst, sst, nelems);                        \
    }
SHMEM_RMA_GENERIC_TYPES(SHMEM_CXX_COLL)
#undef SHMEM_CXX_COLL

#define SHMEM_CXX_REDUCE(T, N, OP)                                                                 \
    inline int shmem_##OP##_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce) {  \
        return shmem_##N##_##OP##_reduce(team, dest, source, nreduce);                             \
    }
#define SHMEM_CXX_REDUCE_OP(OP, TABLE) TABLE(SHMEM_CXX_REDUCE, OP)
SHMEM_REDUCE_GENERIC_OPS(SHMEM_CXX_REDUCE_OP)
#undef SHMEM_CXX_REDUCE_OP
#undef SHMEM_CXX_REDUCE

/* The sum and product of C99 complex pointers, where the compiler has _Complex in C++ (the
 * typed overloads are in <shmem/c99_complex.h>). */
#ifdef SHMEM_C99_COMPLEX_TYPES
#define SHMEM_CXX_C99_REDUCE(C99, T, N, OP)                                                        \
    inline int shmem_##OP##_reduce(shmem_team_t team, C99 *dest, const C99 *source,                \
                                   size_t nreduce) {                                               \
        return shmem_##N##_##OP##_reduce(team, dest, source, nreduce);                             \
    }
SHMEM_C99_COMPLEX_TYPES(SHMEM_CXX_C99_REDUCE, sum)
SHMEM_C99_COMPLEX_TYPES(SHMEM_CXX_C99_REDUCE, prod)
#undef SHMEM_CXX_C99_REDUCE
#endif

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
#define SHMEM_C11_A_ctx_put(T, N) , T : shmem_ctx_##N##_put
#define SHMEM_C11_A_get(T, N) , T : shmem_##N##_get
#define SHMEM_C11_A_ctx_get(T, N) , T : shmem_ctx_##N##_get
#define SHMEM_C11_A_put_nbi(T, N) , T : shmem_##N##_put_nbi
#define SHMEM_C11_A_ctx_put_nbi(T, N) , T : shmem_ctx_##N##_put_nbi
#define SHMEM_C11_A_get_nbi(T, N) , T : shmem_##N##_get_nbi
#define SHMEM_C11_A_ctx_get_nbi(T, N) , T : shmem_ctx_##N##_get_nbi
#define SHMEM_C11_A_p(T, N) , T : shmem_##N##_p
#define SHMEM_C11_A_ctx_p(T, N) , T : shmem_ctx_##N##_p
#define SHMEM_C11_A_g(T, N) , T : shmem_##N##_g
#define SHMEM_C11_A_ctx_g(T, N) , T : shmem_ctx_##N##_g
#define SHMEM_C11_A_iput(T, N) , T : shmem_##N##_iput
#define SHMEM_C11_A_ctx_iput(T, N) , T : shmem_ctx_##N##_iput
#define SHMEM_C11_A_iget(T, N) , T : shmem_##N##_iget
#define SHMEM_C11_A_ctx_iget(T, N) , T : shmem_ctx_##N##_iget
#define shmem_put(...)                                                                             \
    SHMEM_C11_GENERIC_CTX(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_put, SHMEM_C11_A_ctx_put,           \
                          __VA_ARGS__)
#define shmem_get(...)                                                                             \
    SHMEM_C11_GENERIC_CTX(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_get, SHMEM_C11_A_ctx_get,           \
                          __VA_ARGS__)
#define shmem_put_nbi(...)                                                                         \
    SHMEM_C11_GENERIC_CTX(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_put_nbi, SHMEM_C11_A_ctx_put_nbi,   \
                          __VA_ARGS__)
#define shmem_get_nbi(...)                                                                         \
    SHMEM_C11_GENERIC_CTX(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_get_nbi, SHMEM_C11_A_ctx_get_nbi,   \
                          __VA_ARGS__)
#define shmem_p(...)                                                                               \
    SHMEM_C11_GENERIC_CTX(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_p, SHMEM_C11_A_ctx_p, __VA_ARGS__)
#define shmem_g(...)                                                                               \
    SHMEM_C11_GENERIC_CTX(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_g, SHMEM_C11_A_ctx_g, __VA_ARGS__)
#define shmem_iput(...)                                                                            \
    SHMEM_C11_GENERIC_CTX(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_iput, SHMEM_C11_A_ctx_iput,         \
                          __VA_ARGS__)
#define shmem_iget(...)                                                                            \
    SHMEM_C11_GENERIC_CTX(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_iget, SHMEM_C11_A_ctx_iget,         \
                          __VA_ARGS__)

/* AMOs: fetch, set, swap over the extended AMO types. */
#define SHMEM_C11_A_atomic_fetch(T, N) , T : shmem_##N##_atomic_fetch
#define SHMEM_C11_A_ctx_atomic_fetch(T, N) , T : shmem_ctx_##N##_atomic_fetch
#define SHMEM_C11_A_atomic_set(T, N) , T : shmem_##N##_atomic_set
#define SHMEM_C11_A_ctx_atomic_set(T, N) , T : shmem_ctx_##N##_atomic_set
#define SHMEM_C11_A_atomic_swap(T, N) , T : shmem_##N##_atomic_swap
#define SHMEM_C11_A_ctx_atomic_swap(T, N) , T : shmem_ctx_##N##_atomic_swap
#define SHMEM_C11_A_atomic_fetch_nbi(T, N) , T : shmem_##N##_atomic_fetch_nbi
#define SHMEM_C11_A_ctx_atomic_fetch_nbi(T, N) , T : shmem_ctx_##N##_atomic_fetch_nbi
#define SHMEM_C11_A_atomic_swap_nbi(T, N) , T : shmem_##N##_atomic_swap_nbi
#define SHMEM_C11_A_ctx_atomic_swap_nbi(T, N) , T : shmem_ctx_##N##_atomic_swap_nbi
#define shmem_atomic_fetch(...)                                                                    \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_EXTENDED_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch,              \
                          SHMEM_C11_A_ctx_atomic_fetch, __VA_ARGS__)
#define shmem_atomic_set(...)                                                                      \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_EXTENDED_GENERIC_TYPES, SHMEM_C11_A_atomic_set,                \
                          SHMEM_C11_A_ctx_atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...)                                                                     \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_EXTENDED_GENERIC_TYPES, SHMEM_C11_A_atomic_swap,               \
                          SHMEM_C11_A_ctx_atomic_swap, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...)                                                                \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_EXTENDED_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_nbi,          \
                          SHMEM_C11_A_ctx_atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...)                                                                 \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_EXTENDED_GENERIC_TYPES, SHMEM_C11_A_atomic_swap_nbi,           \
                          SHMEM_C11_A_ctx_atomic_swap_nbi, __VA_ARGS__)

/* AMOs: compare_swap, fetch_inc, inc, fetch_add, add over the standard AMO types. */
#define SHMEM_C11_A_atomic_compare_swap(T, N) , T : shmem_##N##_atomic_compare_swap
#define SHMEM_C11_A_ctx_atomic_compare_swap(T, N) , T : shmem_ctx_##N##_atomic_compare_swap
#define SHMEM_C11_A_atomic_fetch_inc(T, N) , T : shmem_##N##_atomic_fetch_inc
#define SHMEM_C11_A_ctx_atomic_fetch_inc(T, N) , T : shmem_ctx_##N##_atomic_fetch_inc
#define SHMEM_C11_A_atomic_inc(T, N) , T : shmem_##N##_atomic_inc
#define SHMEM_C11_A_ctx_atomic_inc(T, N) , T : shmem_ctx_##N##_atomic_inc
#define SHMEM_C11_A_atomic_fetch_add(T, N) , T : shmem_##N##_atomic_fetch_add
#define SHMEM_C11_A_ctx_atomic_fetch_add(T, N) , T : shmem_ctx_##N##_atomic_fetch_add
#define SHMEM_C11_A_atomic_add(T, N) , T : shmem_##N##_atomic_add
#define SHMEM_C11_A_ctx_atomic_add(T, N) , T : shmem_ctx_##N##_atomic_add
#define SHMEM_C11_A_atomic_compare_swap_nbi(T, N) , T : shmem_##N##_atomic_compare_swap_nbi
#define SHMEM_C11_A_ctx_atomic_compare_swap_nbi(T, N) , T : shmem_ctx_##N##_atomic_compare_swap_nbi
#define SHMEM_C11_A_atomic_fetch_inc_nbi(T, N) , T : shmem_##N##_atomic_fetch_inc_nbi
#define SHMEM_C11_A_ctx_atomic_fetch_inc_nbi(T, N) , T : shmem_ctx_##N##_atomic_fetch_inc_nbi
#define SHMEM_C11_A_atomic_fetch_add_nbi(T, N) , T : shmem_##N##_atomic_fetch_add_nbi
#define SHMEM_C11_A_ctx_atomic_fetch_add_nbi(T, N) , T : shmem_ctx_##N##_atomic_fetch_add_nbi
#define shmem_atomic_compare_swap(...)                                                             \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_compare_swap,       \
                          SHMEM_C11_A_ctx_atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...)                                                                \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_inc,          \
                          SHMEM_C11_A_ctx_atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...)                                                                      \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_inc,                \
                          SHMEM_C11_A_ctx_atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...)                                                                \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_add,          \
                          SHMEM_C11_A_ctx_atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...)                                                                      \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_add,                \
                          SHMEM_C11_A_ctx_atomic_add, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...)                                                         \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_compare_swap_nbi,   \
                          SHMEM_C11_A_ctx_atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...)                                                            \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_inc_nbi,      \
                          SHMEM_C11_A_ctx_atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...)                                                            \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_STANDARD_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_add_nbi,      \
                          SHMEM_C11_A_ctx_atomic_fetch_add_nbi, __VA_ARGS__)

/* AMOs: fetch_and/or/xor, and/or/xor over the bitwise AMO types. */
#define SHMEM_C11_A_atomic_fetch_and(T, N) , T : shmem_##N##_atomic_fetch_and
#define SHMEM_C11_A_ctx_atomic_fetch_and(T, N) , T : shmem_ctx_##N##_atomic_fetch_and
#define SHMEM_C11_A_atomic_fetch_or(T, N) , T : shmem_##N##_atomic_fetch_or
#define SHMEM_C11_A_ctx_atomic_fetch_or(T, N) , T : shmem_ctx_##N##_atomic_fetch_or
#define SHMEM_C11_A_atomic_fetch_xor(T, N) , T : shmem_##N##_atomic_fetch_xor
#define SHMEM_C11_A_ctx_atomic_fetch_xor(T, N) , T : shmem_ctx_##N##_atomic_fetch_xor
#define SHMEM_C11_A_atomic_and(T, N) , T : shmem_##N##_atomic_and
#define SHMEM_C11_A_ctx_atomic_and(T, N) , T : shmem_ctx_##N##_atomic_and
#define SHMEM_C11_A_atomic_or(T, N) , T : shmem_##N##_atomic_or
#define SHMEM_C11_A_ctx_atomic_or(T, N) , T : shmem_ctx_##N##_atomic_or
#define SHMEM_C11_A_atomic_xor(T, N) , T : shmem_##N##_atomic_xor
#define SHMEM_C11_A_ctx_atomic_xor(T, N) , T : shmem_ctx_##N##_atomic_xor
#define SHMEM_C11_A_atomic_fetch_and_nbi(T, N) , T : shmem_##N##_atomic_fetch_and_nbi
#define SHMEM_C11_A_ctx_atomic_fetch_and_nbi(T, N) , T : shmem_ctx_##N##_atomic_fetch_and_nbi
#define SHMEM_C11_A_atomic_fetch_or_nbi(T, N) , T : shmem_##N##_atomic_fetch_or_nbi
#define SHMEM_C11_A_ctx_atomic_fetch_or_nbi(T, N) , T : shmem_ctx_##N##_atomic_fetch_or_nbi
#define SHMEM_C11_A_atomic_fetch_xor_nbi(T, N) , T : shmem_##N##_atomic_fetch_xor_nbi
#define SHMEM_C11_A_ctx_atomic_fetch_xor_nbi(T, N) , T : shmem_ctx_##N##_atomic_fetch_xor_nbi
#define shmem_atomic_fetch_and(...)                                                                \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_and,           \
                          SHMEM_C11_A_ctx_atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...)                                                                 \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_or,            \
                          SHMEM_C11_A_ctx_atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...)                                                                \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_xor,           \
                          SHMEM_C11_A_ctx_atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_and(...)                                                                      \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_and,                 \
                          SHMEM_C11_A_ctx_atomic_and, __VA_ARGS__)
#define shmem_atomic_or(...)                                                                       \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_or,                  \
                          SHMEM_C11_A_ctx_atomic_or, __VA_ARGS__)
#define shmem_atomic_xor(...)                                                                      \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_xor,                 \
                          SHMEM_C11_A_ctx_atomic_xor, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...)                                                            \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_and_nbi,       \
                          SHMEM_C11_A_ctx_atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...)                                                             \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_or_nbi,        \
                          SHMEM_C11_A_ctx_atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...)                                                            \
    SHMEM_C11_GENERIC_CTX(SHMEM_AMO_BITWISE_GENERIC_TYPES, SHMEM_C11_A_atomic_fetch_xor_nbi,       \
                          SHMEM_C11_A_ctx_atomic_fetch_xor_nbi, __VA_ARGS__)

/* Point-to-point synchronisation. shmem_wait_until hides the deprecated long-only function
 * of the same name, which stays callable as (shmem_wait_until)(ivar, cmp, value). */
#define SHMEM_C11_A_wait_until(T, N) , T : shmem_##N##_wait_until
#define SHMEM_C11_A_test(T, N) , T : shmem_##N##_test
#define shmem_wait_until(...)                                                                      \
    SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_wait_until, __VA_ARGS__)
#define shmem_test(...) SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_test, __VA_ARGS__)

/* Put with signal, with and without a context. */
#define SHMEM_C11_A_put_signal(T, N) , T : shmem_##N##_put_signal
#define SHMEM_C11_A_put_signal_nbi(T, N) , T : shmem_##N##_put_signal_nbi
#define SHMEM_C11_A_ctx_put_signal(T, N) , T : shmem_ctx_##N##_put_signal
#define SHMEM_C11_A_ctx_put_signal_nbi(T, N) , T : shmem_ctx_##N##_put_signal_nbi
#define shmem_put_signal(...)                                                                      \
    SHMEM_C11_GENERIC_CTX(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_put_signal,                         \
                          SHMEM_C11_A_ctx_put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...)                                                                  \
    SHMEM_C11_GENERIC_CTX(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_put_signal_nbi,                     \
                          SHMEM_C11_A_ctx_put_signal_nbi, __VA_ARGS__)

/* Waits and tests on sets of variables. */
#define SHMEM_C11_A_wait_until_all(T, N) , T : shmem_##N##_wait_until_all
#define shmem_wait_until_all(...)                                                                  \
    SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_wait_until_all, __VA_ARGS__)
#define SHMEM_C11_A_wait_until_all_vector(T, N) , T : shmem_##N##_wait_until_all_vector
#define shmem_wait_until_all_vector(...)                                                           \
    SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_wait_until_all_vector, __VA_ARGS__)
#define SHMEM_C11_A_wait_until_any(T, N) , T : shmem_##N##_wait_until_any
#define shmem_wait_until_any(...)                                                                  \
    SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_wait_until_any, __VA_ARGS__)
#define SHMEM_C11_A_wait_until_any_vector(T, N) , T : shmem_##N##_wait_until_any_vector
#define shmem_wait_until_any_vector(...)                                                           \
    SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_wait_until_any_vector, __VA_ARGS__)
#define SHMEM_C11_A_wait_until_some(T, N) , T : shmem_##N##_wait_until_some
#define shmem_wait_until_some(...)                                                                 \
    SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_wait_until_some, __VA_ARGS__)
#define SHMEM_C11_A_wait_until_some_vector(T, N) , T : shmem_##N##_wait_until_some_vector
#define shmem_wait_until_some_vector(...)                                                          \
    SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_wait_until_some_vector, __VA_ARGS__)
#define SHMEM_C11_A_test_all(T, N) , T : shmem_##N##_test_all
#define shmem_test_all(...)                                                                        \
    SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_test_all, __VA_ARGS__)
#define SHMEM_C11_A_test_all_vector(T, N) , T : shmem_##N##_test_all_vector
#define shmem_test_all_vector(...)                                                                 \
    SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_test_all_vector, __VA_ARGS__)
#define SHMEM_C11_A_test_any(T, N) , T : shmem_##N##_test_any
#define shmem_test_any(...)                                                                        \
    SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_test_any, __VA_ARGS__)
#define SHMEM_C11_A_test_any_vector(T, N) , T : shmem_##N##_test_any_vector
#define shmem_test_any_vector(...)                                                                 \
    SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_test_any_vector, __VA_ARGS__)
#define SHMEM_C11_A_test_some(T, N) , T : shmem_##N##_test_some
#define shmem_test_some(...)                                                                       \
    SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_test_some, __VA_ARGS__)
#define SHMEM_C11_A_test_some_vector(T, N) , T : shmem_##N##_test_some_vector
#define shmem_test_some_vector(...)                                                                \
    SHMEM_C11_GENERIC(SHMEM_SYNC_GENERIC_TYPES, SHMEM_C11_A_test_some_vector, __VA_ARGS__)

/* Team collectives: the team comes first and the selection is on the type `dest` points to. */
#define SHMEM_C11_GENERIC_DEST(TABLE, ASSOC, ...)                                                  \
    _Generic (*(SHMEM_C11_ARG2(__VA_ARGS__))TABLE(ASSOC))(__VA_ARGS__)
#define SHMEM_C11_A_broadcast(T, N) , T : shmem_##N##_broadcast
#define shmem_broadcast(...)                                                                       \
    SHMEM_C11_GENERIC_DEST(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_broadcast, __VA_ARGS__)
#define SHMEM_C11_A_collect(T, N) , T : shmem_##N##_collect
#define shmem_collect(...)                                                                         \
    SHMEM_C11_GENERIC_DEST(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_collect, __VA_ARGS__)
#define SHMEM_C11_A_fcollect(T, N) , T : shmem_##N##_fcollect
#define shmem_fcollect(...)                                                                        \
    SHMEM_C11_GENERIC_DEST(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_fcollect, __VA_ARGS__)
#define SHMEM_C11_A_alltoall(T, N) , T : shmem_##N##_alltoall
#define shmem_alltoall(...)                                                                        \
    SHMEM_C11_GENERIC_DEST(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_alltoall, __VA_ARGS__)
#define SHMEM_C11_A_alltoalls(T, N) , T : shmem_##N##_alltoalls
#define shmem_alltoalls(...)                                                                       \
    SHMEM_C11_GENERIC_DEST(SHMEM_RMA_GENERIC_TYPES, SHMEM_C11_A_alltoalls, __VA_ARGS__)

/* Reductions, over the generic part of each operation's table. */
#define SHMEM_C11_A_reduce(T, N, OP) , T : shmem_##N##_##OP##_reduce
#define SHMEM_C11_REDUCE(TABLE, OP, ...)                                                           \
    _Generic (*(SHMEM_C11_ARG2(__VA_ARGS__))TABLE(SHMEM_C11_A_reduce, OP))(__VA_ARGS__)
#define shmem_and_reduce(...) SHMEM_C11_REDUCE(SHMEM_REDUCE_BITWISE_GENERIC_TYPES, and, __VA_ARGS__)
#define shmem_or_reduce(...) SHMEM_C11_REDUCE(SHMEM_REDUCE_BITWISE_GENERIC_TYPES, or, __VA_ARGS__)
#define shmem_xor_reduce(...) SHMEM_C11_REDUCE(SHMEM_REDUCE_BITWISE_GENERIC_TYPES, xor, __VA_ARGS__)
#define shmem_max_reduce(...) SHMEM_C11_REDUCE(SHMEM_REDUCE_MINMAX_GENERIC_TYPES, max, __VA_ARGS__)
#define shmem_min_reduce(...) SHMEM_C11_REDUCE(SHMEM_REDUCE_MINMAX_GENERIC_TYPES, min, __VA_ARGS__)
#define shmem_sum_reduce(...) SHMEM_C11_REDUCE(SHMEM_REDUCE_ARITH_GENERIC_TYPES, sum, __VA_ARGS__)
#define shmem_prod_reduce(...) SHMEM_C11_REDUCE(SHMEM_REDUCE_ARITH_GENERIC_TYPES, prod, __VA_ARGS__)

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
