/*
 * pshmem.h: the profiling twins of <shmem.h>.
 *
 * Every routine pshmem_X is the library's own definition and shmem_X a weak alias to it, so a
 * profiling tool may define shmem_X itself and call pshmem_X. Routines are in <shmem/api.h>.
 */
#ifndef PSHMEM_H
#define PSHMEM_H

#include <stddef.h>
#include <stdint.h>

#include "shmem/constants.h"
#include "shmem/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)
#define SHMEM_ROUTINE(ret, name, params) ret pshmem_##name params;
#include "shmem/api.h"
#undef SHMEM_ROUTINE
#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* PSHMEM_H */
