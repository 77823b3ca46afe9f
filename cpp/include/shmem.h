/*
 * shmem.h: the OpenSHMEM 1.5 C API of the shmem library.
 *
 * Every PE (process) owns a symmetric heap; any PE reads and writes any other PE's heap with
 * one-sided calls and synchronises with barriers. The routines, each with a line or two on
 * what it does, what may alias and what blocks, are listed in <shmem/api.h>; the OpenSHMEM 1.5
 * specification is the full contract. Profiling twins (pshmem_*) are in <pshmem.h>.
 * The routines OpenSHMEM 1.5 still lists as deprecated are in <shmem/deprecated.h>, the
 * type-generic names (shmem_put, shmem_atomic_add, ...) in <shmem/generic.h>.
 */
#ifndef SHMEM_H
#define SHMEM_H

#include <stddef.h>
#include <stdint.h>

#include "shmem/constants.h"
#include "shmem/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)
#define SHMEM_ROUTINE(ret, name, params) ret shmem_##name params;
#include "shmem/api.h"
#undef SHMEM_ROUTINE

/* Deprecated routines: a call to one is warned about, with what replaces it. */
#if defined(__GNUC__) || defined(__clang__)
#define SHMEM_DEPRECATED_ROUTINE(ret, name, params, use)                                           \
    ret name params __attribute__((deprecated(use)));
#else
#define SHMEM_DEPRECATED_ROUTINE(ret, name, params, use) ret name params;
#endif
#ifdef __cplusplus
#define SHMEM_DEPRECATED_ROUTINE_C(ret, name, params, use) ret name params;
#else
#define SHMEM_DEPRECATED_ROUTINE_C SHMEM_DEPRECATED_ROUTINE
#endif
#include "shmem/deprecated.h"
#undef SHMEM_DEPRECATED_ROUTINE
#undef SHMEM_DEPRECATED_ROUTINE_C
#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

/* Type-generic routines: C11 _Generic selections, or C++ overloads. */
#include "shmem/generic.h"

#endif /* SHMEM_H */
