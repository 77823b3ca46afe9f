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
#define SHMEM_SYNC_ALIAS_TYPES(X)                                                                  \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(ptrdiff_t, ptrdiff)

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
