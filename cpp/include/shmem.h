/*
 * shmem.h: the OpenSHMEM 1.5 C API of the shmem library.
 *
 * Every PE (process) owns a symmetric heap; any PE reads and writes any other PE's heap with
 * one-sided calls and synchronises with barriers. The routines, each with a line or two on
 * what it does, what may alias and what blocks, are listed in <shmem/api.h>; the OpenSHMEM 1.5
 * specification is the full contract. Profiling twins (pshmem_*) are in <pshmem.h>.
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
#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_H */
