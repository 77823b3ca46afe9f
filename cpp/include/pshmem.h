/*
 * pshmem.h: the profiling twins of <shmem.h>.
 *
 * Every routine pshmem_X is the library's own definition and shmem_X a weak alias to it, so a
 * profiling tool may define shmem_X itself and call pshmem_X. Routines are in <shmem/api.h>;
 * the deprecated ones of <shmem/deprecated.h> have their twin under `p` + name (pstart_pes,
 * pshmalloc, pshmem_long_fadd). The type-generic names of C11 and C++ are macros or inline
 * overloads over the typed routines and have no twins.
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
#define SHMEM_DEPRECATED_ROUTINE(ret, name, params, use) ret p##name params;
#define SHMEM_DEPRECATED_ROUTINE_C SHMEM_DEPRECATED_ROUTINE
#include "shmem/deprecated.h"
#undef SHMEM_DEPRECATED_ROUTINE
#undef SHMEM_DEPRECATED_ROUTINE_C
#pragma GCC visibility pop

#ifdef __cplusplus
}
/* C99 complex pointers for the complex reductions, where the compiler has _Complex in C++. */
#define SHMEM_C99_NAME(x) pshmem_##x
#include "shmem/c99_complex.h"
#undef SHMEM_C99_NAME
#endif

#endif /* PSHMEM_H */
