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
/* C99 complex pointers for the complex reductions, where the compiler has _Complex in C++. */
#define SHMEM_C99_NAME(x) shmem_##x
#include "shmem/c99_complex.h"
#undef SHMEM_C99_NAME
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
/* Type-generic routines: C11 _Generic selections, or C++ overloads. */
#include "shmem/generic.h"

#endif /* SHMEM_H */
