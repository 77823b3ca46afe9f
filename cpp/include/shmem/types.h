/*
 * shmem/types.h: the type tables of OpenSHMEM 1.5, once. Each table is an X-macro: it calls
 * X(TYPE, TYPENAME) for every member, TYPENAME being the name part of routines such as
 * shmem_TYPENAME_put. <shmem/api.h> declares the typed routines from them, the library defines
 * them from them, and the tests are generated from them. Nothing else lists types.
 */
#ifndef SHMEM_TYPES_H
#define SHMEM_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* Standard RMA types (put, get, p, g, iput, iget and their nbi forms). */
#define SHMEM_RMA_TYPES(X)                                                                         \
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
    X(unsigned long long, ulonglong)                                                               \
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
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(ptrdiff_t, ptrdiff)

/* Extended AMO types: fetch, set, swap (the standard ones plus float and double). */
#define SHMEM_AMO_EXTENDED_TYPES(X)                                                                \
    SHMEM_AMO_STANDARD_TYPES(X)                                                                    \
    X(float, float)                                                                                \
    X(double, double)

/* Bitwise AMO types: fetch_and/or/xor, and/or/xor. */
#define SHMEM_AMO_BITWISE_TYPES(X)                                                                 \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)

/* Point-to-point synchronisation types: wait_until, test. */
#define SHMEM_SYNC_TYPES(X)                                                                        \
    X(short, short)                                                                                \
    X(int, int)                                                                                    \
    X(long, long)                                                                                  \
    X(long long, longlong)                                                                         \
    X(unsigned short, ushort)                                                                      \
    X(unsigned int, uint)                                                                          \
    X(unsigned long, ulong)                                                                        \
    X(unsigned long long, ulonglong)                                                               \
    X(int32_t, int32)                                                                              \
    X(int64_t, int64)                                                                              \
    X(uint32_t, uint32)                                                                            \
    X(uint64_t, uint64)                                                                            \
    X(size_t, size)                                                                                \
    X(ptrdiff_t, ptrdiff)

#endif /* SHMEM_TYPES_H */
