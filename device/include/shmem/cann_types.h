/* shmem/cann_types.h: CANN SHMEM's element types, the one table of them.
 *
 * CANN's typed routines (aclshmem_put_<NAME>_mem, aclshmem_<NAME>_p, the put-with-signal forms,
 * aclshmem_<NAME>_wait_until, ...) come in families over these types. Every family's list is
 * built here from the groups below, each (NAME, TYPE) pair written once: <aclshmem.h> (host)
 * and shmem/device.h (kernel-side) expand their declarations and definitions from these lists,
 * the facade its definitions, and the Rust declarations of rust/shmem-sys are checked against
 * this file by its tests.
 *
 * Common to both sides: plain macros, no #include and no type of its own, so a kernel-side
 * header may include it (it names shmem_half_t and shmem_bfloat16_t, which shmem/device.h
 * defines, only in the kernel-side lists). X is called as X(NAME, TYPE). cpp/include/shmem/
 * cann_types.h is a link to this file, so a build with only cpp/include on its path finds it;
 * the file is installed once, from device/include. */
#ifndef SHMEM_CANN_TYPES_H
#define SHMEM_CANN_TYPES_H

/* The groups. */
#define ACLSHMEMI_INT_TYPES(X)                                                                     \
    X(int8, int8_t)                                                                                \
    X(int16, int16_t)                                                                              \
    X(int32, int32_t)                                                                              \
    X(int64, int64_t)                                                                              \
    X(uint8, uint8_t)                                                                              \
    X(uint16, uint16_t)                                                                            \
    X(uint32, uint32_t)                                                                            \
    X(uint64, uint64_t)
#define ACLSHMEMI_FLOAT_TYPE(X) X(float, float)
#define ACLSHMEMI_DOUBLE_TYPE(X) X(double, double)
#define ACLSHMEMI_CHAR_TYPE(X) X(char, char)
/* Kernel side only: the 16-bit floating-point types of the architecture (shmem/device.h). */
#define ACLSHMEMI_HALF_TYPES(X)                                                                    \
    X(half, shmem_half_t)                                                                          \
    X(bfloat16, shmem_bfloat16_t)

/* Host RMA: typed put/get (blocking, _nbi), the put-with-signal forms, _p and _g. */
#define ACLSHMEMI_HOST_TYPES(X)                                                                    \
    ACLSHMEMI_FLOAT_TYPE(X)                                                                        \
    ACLSHMEMI_DOUBLE_TYPE(X)                                                                       \
    ACLSHMEMI_INT_TYPES(X)                                                                         \
    ACLSHMEMI_CHAR_TYPE(X)

/* Host point-to-point waits and tests on this PE's variables. */
#define ACLSHMEMI_P2P_TYPES(X)                                                                     \
    ACLSHMEMI_FLOAT_TYPE(X)                                                                        \
    ACLSHMEMI_INT_TYPES(X)                                                                         \
    ACLSHMEMI_CHAR_TYPE(X)

/* Kernel-side put/get (every scope), strided and 2-D copies, _p and _g. */
#define SHMEM_DEVICE_RMA_TYPES(X)                                                                  \
    ACLSHMEMI_HALF_TYPES(X)                                                                        \
    ACLSHMEMI_FLOAT_TYPE(X)                                                                        \
    ACLSHMEMI_DOUBLE_TYPE(X)                                                                       \
    ACLSHMEMI_CHAR_TYPE(X)                                                                         \
    ACLSHMEMI_INT_TYPES(X)

/* Kernel-side waits and tests on this PE's words. */
#define SHMEM_DEVICE_WAIT_TYPES(X) ACLSHMEMI_INT_TYPES(X)

#endif /* SHMEM_CANN_TYPES_H */
