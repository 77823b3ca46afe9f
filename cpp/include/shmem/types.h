/*
 * shmem/types.h: the type tables of OpenSHMEM 1.5, once. Each table is an X-macro: it calls
 * X(TYPE, TYPENAME) for every member, TYPENAME being the name part of routines such as
 * shmem_TYPENAME_put. <shmem/api.h> declares the typed routines from them, the library defines
 * them from them, and the tests are generated from them. Nothing else lists types.
 *
 * Each table SHMEM_<T>_TYPES is the concatenation of SHMEM_<T>_GENERIC_TYPES, members that are
 * distinct C types, and SHMEM_<T>_ALIAS_TYPES, the fixed-width and size types that are typedefs
 * of a member of the first part (int32_t is int, int64_t is long or long long, size_t is
 * unsigned long or unsigned int, ...). The C11 _Generic selections and the C++ overloads of
 * <shmem/generic.h> use the first part only, since no two associations of a _Generic (and no
 * two overloads) may name the same type; an argument of an alias type then selects the routine
 * of the type it is a typedef of, which has the same representation.
 */
#ifndef SHMEM_TYPES_H
#define SHMEM_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* The complex types of the sum and product reductions: C99's _Complex in C, and in C++ (which
 * has no _Complex) std::complex, whose layout is the same two-element array of the real type. */
#ifdef __cplusplus
#include <complex>
#define SHMEM_COMPLEXF std::complex<float>
#define SHMEM_COMPLEXD std::complex<double>
#else
#define SHMEM_COMPLEXF float _Complex
#define SHMEM_COMPLEXD double _Complex
#endif

/* GCC and Clang accept C99's _Complex in C++ too, and code written for other OpenSHMEM
 * libraries passes float _Complex * and double _Complex * to the complex reductions: there the
 * C++ headers add overloads taking them (<shmem/c99_complex.h>), beside the std::complex ones.
 * X(C99_TYPE, TYPE, TYPENAME, OP): the C99 type, the declared type of the same layout, and the
 * name part of the routine. */
#if defined(__cplusplus) && (defined(__GNUC__) || defined(__clang__))
__extension__ typedef float _Complex shmem_c99_complexf_t;
__extension__ typedef double _Complex shmem_c99_complexd_t;
#define SHMEM_C99_COMPLEX_TYPES(X, OP)                                                             \
    X(shmem_c99_complexd_t, SHMEM_COMPLEXD, complexd, OP)                                          \
    X(shmem_c99_complexf_t, SHMEM_COMPLEXF, complexf, OP)
#endif

/* Standard RMA types (put, get, p, g, iput, iget and their nbi forms). */
#define SHMEM_RMA_TYPES(X) SHMEM_RMA_GENERIC_TYPES(X) SHMEM_RMA_ALIAS_TYPES(X)
#define SHMEM_RMA_GENERIC_TYPES(X)                                                                 \
    X(float, float)                                                                                \
    X(double, double)                                                                              \
    X(long double, longdouble)                                                                     \
    X(char, char)                                                                                  \
    X(signed char, schar)                                                                          \
    X(short, short)                                                                                \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(unsigned char, uchar)                                                                        \
    X(unsigned short, ushort)                                                                      \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)
#define SHMEM_RMA_ALIAS_TYPES(X)                                                                   \
    X(int8_t, int8)                                                                                \
    X(int16_t, int16)                                                                              \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint8_t, uint8)                                                                              \
    X(uint16_t, uint16)                                                                            \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(ptrdiff_t, ptrdiff)

/* Element sizes in bits of the sized RMA routines (shmem_put32, shmem_iget128, ...). */
#define SHMEM_RMA_SIZES(X) X(8) X(16) X(32) X(64) X(128)

/* Standard AMO types: compare_swap, fetch_inc, inc, fetch_add, add. */
#define SHMEM_AMO_STANDARD_TYPES(X)                                                                \
    SHMEM_AMO_STANDARD_GENERIC_TYPES(X) SHMEM_AMO_STANDARD_ALIAS_TYPES(X)
#define SHMEM_AMO_STANDARD_GENERIC_TYPES(X)                                                        \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)
#define SHMEM_AMO_STANDARD_ALIAS_TYPES(X)                                                          \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(ptrdiff_t, ptrdiff)

/* Extended AMO types: fetch, set, swap (the standard ones plus float and double). */
#define SHMEM_AMO_EXTENDED_TYPES(X)                                                                \
    SHMEM_AMO_EXTENDED_GENERIC_TYPES(X) SHMEM_AMO_EXTENDED_ALIAS_TYPES(X)
#define SHMEM_AMO_EXTENDED_GENERIC_TYPES(X)                                                        \
    SHMEM_AMO_STANDARD_GENERIC_TYPES(X)                                                            \
    X(float, float)                                                                                \
    X(double, double)
#define SHMEM_AMO_EXTENDED_ALIAS_TYPES(X) SHMEM_AMO_STANDARD_ALIAS_TYPES(X)

/* Bitwise AMO types: fetch_and/or/xor, and/or/xor. int32_t and int64_t have no plain
 * signed type in this table, so they are in its generic part. */
#define SHMEM_AMO_BITWISE_TYPES(X)                                                                 \
    SHMEM_AMO_BITWISE_GENERIC_TYPES(X) SHMEM_AMO_BITWISE_ALIAS_TYPES(X)
#define SHMEM_AMO_BITWISE_GENERIC_TYPES(X)                                                         \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)
#define SHMEM_AMO_BITWISE_ALIAS_TYPES(X)                                                           \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)

/* Point-to-point synchronisation types: wait_until, test. */
#define SHMEM_SYNC_TYPES(X) SHMEM_SYNC_GENERIC_TYPES(X) SHMEM_SYNC_ALIAS_TYPES(X)
#define SHMEM_SYNC_GENERIC_TYPES(X)                                                                \
    X(short, short)                                                                                \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(unsigned short, ushort)                                                                      \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)
/* The same fixed-width and size types as the standard AMOs. */
#define SHMEM_SYNC_ALIAS_TYPES(X) SHMEM_AMO_STANDARD_ALIAS_TYPES(X)

/* Collective types (broadcast, collect, fcollect, alltoall, alltoalls): the standard RMA types. */
#define SHMEM_COLL_TYPES(X) SHMEM_RMA_TYPES(X)

/* Element sizes in bits of the deprecated active-set collectives (shmem_broadcast32, ...). */
#define SHMEM_COLL_SIZES(X) X(32) X(64)

/* Reduction type tables. Each takes the callback and an operation name and calls
 * X(TYPE, TYPENAME, OP) for every type that the operation supports (the operation passes
 * through, so SHMEM_REDUCE_OPS can pair every operation with its tables). */

/* Team-based reductions (shmem_TYPENAME_OP_reduce), by operation. Like the tables above, each
 * table SHMEM_REDUCE_<K>_TYPES is its SHMEM_REDUCE_<K>_GENERIC_TYPES, the members that are
 * distinct C types, followed by its SHMEM_REDUCE_<K>_ALIAS_TYPES. They are put together from the
 * groups below, which name every type once; the signed fixed-width types are distinct in the
 * bitwise tables, which list no plain signed type, and aliases of a plain signed type in the
 * others. */
#define SHMEM_REDUCE_SIGNED_GROUP(X, OP)                                                           \
    X(char, char, OP)                                                                              \
    X(signed char, schar, OP)                                                                      \
    X(short, short, OP)                                                                            \
    X(int, int, OP)                                                                                \
    X(long, long, OP)                                                                              \
    X(long long, longlong, OP)
#define SHMEM_REDUCE_UNSIGNED_GROUP(X, OP)                                                         \
    X(unsigned char, uchar, OP)                                                                    \
    X(unsigned short, ushort, OP)                                                                  \
    X(unsigned int, uint, OP)                                                                      \
    X(unsigned long, ulong, OP)                                                                    \
    X(unsigned long long, ulonglong, OP)
#define SHMEM_REDUCE_SIGNED_FIXED_GROUP(X, OP)                                                     \
    X(int8_t, int8, OP)                                                                            \
    X(int16_t, int16, OP)                                                                          \
    X(int32_t, int32, OP)                                                                          \
    X(int64_t, int64, OP)
#define SHMEM_REDUCE_UNSIGNED_FIXED_GROUP(X, OP)                                                   \
    X(uint8_t, uint8, OP)                                                                          \
    X(uint16_t, uint16, OP)                                                                        \
    X(uint32_t, uint32, OP)                                                                        \
    X(uint64_t, uint64, OP)                                                                        \
    X(size_t, size, OP)
#define SHMEM_REDUCE_FLOAT_GROUP(X, OP)                                                            \
    X(float, float, OP)                                                                            \
    X(double, double, OP)                                                                          \
    X(long double, longdouble, OP)
#define SHMEM_REDUCE_COMPLEX_GROUP(X, OP)                                                          \
    X(SHMEM_COMPLEXD, complexd, OP)                                                                \
    X(SHMEM_COMPLEXF, complexf, OP)

/* AND, OR, XOR */
#define SHMEM_REDUCE_BITWISE_TYPES(X, OP)                                                          \
    SHMEM_REDUCE_BITWISE_GENERIC_TYPES(X, OP) SHMEM_REDUCE_BITWISE_ALIAS_TYPES(X, OP)
#define SHMEM_REDUCE_BITWISE_GENERIC_TYPES(X, OP)                                                  \
    SHMEM_REDUCE_UNSIGNED_GROUP(X, OP) SHMEM_REDUCE_SIGNED_FIXED_GROUP(X, OP)
#define SHMEM_REDUCE_BITWISE_ALIAS_TYPES(X, OP) SHMEM_REDUCE_UNSIGNED_FIXED_GROUP(X, OP)
/* MAX, MIN */
#define SHMEM_REDUCE_MINMAX_TYPES(X, OP)                                                           \
    SHMEM_REDUCE_MINMAX_GENERIC_TYPES(X, OP) SHMEM_REDUCE_MINMAX_ALIAS_TYPES(X, OP)
#define SHMEM_REDUCE_MINMAX_GENERIC_TYPES(X, OP)                                                   \
    SHMEM_REDUCE_SIGNED_GROUP(X, OP)                                                               \
    SHMEM_REDUCE_UNSIGNED_GROUP(X, OP)                                                             \
    SHMEM_REDUCE_FLOAT_GROUP(X, OP)
#define SHMEM_REDUCE_MINMAX_ALIAS_TYPES(X, OP)                                                     \
    X(ptrdiff_t, ptrdiff, OP)                                                                      \
    SHMEM_REDUCE_SIGNED_FIXED_GROUP(X, OP)                                                         \
    SHMEM_REDUCE_UNSIGNED_FIXED_GROUP(X, OP)
/* SUM, PROD */
#define SHMEM_REDUCE_ARITH_TYPES(X, OP)                                                            \
    SHMEM_REDUCE_ARITH_GENERIC_TYPES(X, OP) SHMEM_REDUCE_ARITH_ALIAS_TYPES(X, OP)
#define SHMEM_REDUCE_ARITH_GENERIC_TYPES(X, OP)                                                    \
    SHMEM_REDUCE_MINMAX_GENERIC_TYPES(X, OP) SHMEM_REDUCE_COMPLEX_GROUP(X, OP)
#define SHMEM_REDUCE_ARITH_ALIAS_TYPES(X, OP) SHMEM_REDUCE_MINMAX_ALIAS_TYPES(X, OP)

/* Deprecated active-set reductions (shmem_TYPENAME_OP_to_all), by operation. */
/* AND, OR, XOR */
#define SHMEM_TO_ALL_BITWISE_TYPES(X, OP)                                                          \
    X(short, short, OP)                                                                            \
    X(int, int, OP)                                                                                \
    X(long, long, OP)                                                                              \
    X(long long, longlong, OP)
/* MAX, MIN */
#define SHMEM_TO_ALL_MINMAX_TYPES(X, OP)                                                           \
    SHMEM_TO_ALL_BITWISE_TYPES(X, OP)                                                              \
    X(float, float, OP)                                                                            \
    X(double, double, OP)                                                                          \
    X(long double, longdouble, OP)
/* SUM, PROD */
#define SHMEM_TO_ALL_ARITH_TYPES(X, OP)                                                            \
    SHMEM_TO_ALL_MINMAX_TYPES(X, OP)                                                               \
    X(SHMEM_COMPLEXD, complexd, OP)                                                                \
    X(SHMEM_COMPLEXF, complexf, OP)

/* The reduction operations: X(OP, TEAM_TABLE, ACTIVE_SET_TABLE) names an operation and the tables
 * of the types it takes in the team-based and in the active-set forms. */
#define SHMEM_REDUCE_OPS(X)                                                                        \
    X(and, SHMEM_REDUCE_BITWISE_TYPES, SHMEM_TO_ALL_BITWISE_TYPES)                                 \
    X(or, SHMEM_REDUCE_BITWISE_TYPES, SHMEM_TO_ALL_BITWISE_TYPES)                                  \
    X(xor, SHMEM_REDUCE_BITWISE_TYPES, SHMEM_TO_ALL_BITWISE_TYPES)                                 \
    X(max, SHMEM_REDUCE_MINMAX_TYPES, SHMEM_TO_ALL_MINMAX_TYPES)                                   \
    X(min, SHMEM_REDUCE_MINMAX_TYPES, SHMEM_TO_ALL_MINMAX_TYPES)                                   \
    X(sum, SHMEM_REDUCE_ARITH_TYPES, SHMEM_TO_ALL_ARITH_TYPES)                                     \
    X(prod, SHMEM_REDUCE_ARITH_TYPES, SHMEM_TO_ALL_ARITH_TYPES)
/* X(OP, GENERIC_TABLE) for every reduction operation, for the generic reductions of
 * <shmem/generic.h> (shmem_sum_reduce, ...). */
#define SHMEM_REDUCE_GENERIC_OPS(X)                                                                \
    X(and, SHMEM_REDUCE_BITWISE_GENERIC_TYPES)                                                     \
    X(or, SHMEM_REDUCE_BITWISE_GENERIC_TYPES)                                                      \
    X(xor, SHMEM_REDUCE_BITWISE_GENERIC_TYPES)                                                     \
    X(max, SHMEM_REDUCE_MINMAX_GENERIC_TYPES)                                                      \
    X(min, SHMEM_REDUCE_MINMAX_GENERIC_TYPES)                                                      \
    X(sum, SHMEM_REDUCE_ARITH_GENERIC_TYPES)                                                       \
    X(prod, SHMEM_REDUCE_ARITH_GENERIC_TYPES)

/* Deprecated AMO names (shmem_TYPENAME_fetch, set, swap; cswap, finc, inc, fadd, add) keep
 * the type sets they had before OpenSHMEM 1.4 renamed them to shmem_TYPENAME_atomic_*. */
#define SHMEM_AMO_DEPRECATED_STANDARD_TYPES(X)                                                     \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)
#define SHMEM_AMO_DEPRECATED_EXTENDED_TYPES(X)                                                     \
    SHMEM_AMO_DEPRECATED_STANDARD_TYPES(X)                                                         \
    X(float, float)                                                                                \
    X(double, double)

/* Deprecated shmem_TYPENAME_wait. */
#define SHMEM_SYNC_DEPRECATED_TYPES(X)                                                             \
    X(short, short)                                                                                \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)

#endif /* SHMEM_TYPES_H */
