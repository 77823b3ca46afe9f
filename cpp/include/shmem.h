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

/* shmem_sync names two routines: the deprecated active-set barrier without completion (the
 * exported symbol shmem_sync, four arguments) and, since 1.5, the team form, which is the symbol
 * shmem_team_sync. A call with one argument reaches shmem_team_sync: in C through this macro,
 * which picks by the number of arguments (taking the address of shmem_sync still gives the
 * active-set routine), in C++ through an overload. */
#ifdef __cplusplus
inline int shmem_sync(shmem_team_t team) { return shmem_team_sync(team); }
#else
#define SHMEM_SYNC_PICK_(a1, a2, a3, a4, name, ...) name
#define shmem_sync(...)                                                                            \
    SHMEM_SYNC_PICK_(__VA_ARGS__, shmem_sync, shmem_sync_takes_1_or_4_arguments,                   \
                     shmem_sync_takes_1_or_4_arguments, shmem_team_sync, ~)                        \
    (__VA_ARGS__)
#endif

#endif /* SHMEM_H */
