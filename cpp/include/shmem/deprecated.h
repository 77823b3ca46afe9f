/*
 * shmem/deprecated.h: the routines OpenSHMEM 1.5 lists as deprecated but still supported
 * (its annex on deprecated interfaces), once. Each entry is
 *   SHMEM_DEPRECATED_ROUTINE(return type, full name, (parameters), "what replaces it")
 * with the full name, since some have no shmem_ prefix (start_pes, shmalloc, ...); the
 * profiling twin of each is the name with a `p` in front (pshmem_long_fadd, pstart_pes,
 * p_my_pe). <shmem.h> declares them deprecated, so a program that calls one is warned and one
 * that does not is unaffected; <pshmem.h> declares the twins without the mark.
 * SHMEM_DEPRECATED_ROUTINE_C is the same for a routine that is deprecated in C only: the long
 * form of shmem_wait_until, whose name is also the type-generic routine of C11 and C++.
 * No include guard: included once per expansion.
 */
#if !defined(SHMEM_DEPRECATED_ROUTINE) || !defined(SHMEM_DEPRECATED_ROUTINE_C)
#error "shmem/deprecated.h is included by <shmem.h> and <pshmem.h> only"
#endif

/* ---- Setup, query and memory under their pre-1.2 names ------------------------------------ */

/* shmem_init; `npes` is ignored. The library is then finalized at exit if the program does
 * not call shmem_finalize (the implicit finalization of those versions). */
SHMEM_DEPRECATED_ROUTINE(void, start_pes, (int npes), "use shmem_init")
SHMEM_DEPRECATED_ROUTINE(int, _my_pe, (void), "use shmem_my_pe")
SHMEM_DEPRECATED_ROUTINE(int, _num_pes, (void), "use shmem_n_pes")
SHMEM_DEPRECATED_ROUTINE(void *, shmalloc, (size_t size), "use shmem_malloc")
SHMEM_DEPRECATED_ROUTINE(void, shfree, (void *ptr), "use shmem_free")
SHMEM_DEPRECATED_ROUTINE(void *, shrealloc, (void *ptr, size_t size), "use shmem_realloc")
SHMEM_DEPRECATED_ROUTINE(void *, shmemalign, (size_t alignment, size_t size), "use shmem_align")

/* ---- Cache management ----------------------------------------------------------------------
 * For machines whose caches were not coherent with remote writes. Every PE's memory here is
 * cache-coherent (other PEs' stores reach this PE's loads through the hardware's coherence), so
 * there is nothing to invalidate or flush and these do nothing, as the specification allows. */
SHMEM_DEPRECATED_ROUTINE(void, shmem_clear_cache_inv, (void), "caches are coherent: remove it")
SHMEM_DEPRECATED_ROUTINE(void, shmem_set_cache_inv, (void), "caches are coherent: remove it")
SHMEM_DEPRECATED_ROUTINE(void, shmem_clear_cache_line_inv, (void *dest),
                         "caches are coherent: remove it")
SHMEM_DEPRECATED_ROUTINE(void, shmem_set_cache_line_inv, (void *dest),
                         "caches are coherent: remove it")
SHMEM_DEPRECATED_ROUTINE(void, shmem_udcflush, (void), "caches are coherent: remove it")
SHMEM_DEPRECATED_ROUTINE(void, shmem_udcflush_line, (void *dest), "caches are coherent: remove it")

/* ---- Point-to-point synchronisation --------------------------------------------------------
 * shmem_wait(ivar, v) is shmem_wait_until(ivar, SHMEM_CMP_NE, v); shmem_wait_until is the long
 * form of the typed routine. */
SHMEM_DEPRECATED_ROUTINE(void, shmem_wait, (long *ivar, long cmp_value),
                         "use shmem_long_wait_until with SHMEM_CMP_NE")
SHMEM_DEPRECATED_ROUTINE_C(void, shmem_wait_until, (long *ivar, int cmp, long cmp_value),
                           "use shmem_long_wait_until")
#define SHMEM_DEPRECATED_WAIT(TYPE, NAME)                                                          \
    SHMEM_DEPRECATED_ROUTINE(void, shmem_##NAME##_wait, (TYPE * ivar, TYPE cmp_value),             \
                             "use shmem_" #NAME "_wait_until with SHMEM_CMP_NE")
SHMEM_SYNC_DEPRECATED_TYPES(SHMEM_DEPRECATED_WAIT)
#undef SHMEM_DEPRECATED_WAIT

/* ---- Atomic memory operations under their pre-1.4 names: each is the shmem_TYPENAME_atomic_*
 * routine named in its message, same arguments, same result. */
#define SHMEM_DEPRECATED_AMO_EXTENDED(TYPE, NAME)                                                  \
    SHMEM_DEPRECATED_ROUTINE(TYPE, shmem_##NAME##_fetch, (const TYPE *source, int pe),             \
                             "use shmem_" #NAME "_atomic_fetch")                                   \
    SHMEM_DEPRECATED_ROUTINE(void, shmem_##NAME##_set, (TYPE * dest, TYPE value, int pe),          \
                             "use shmem_" #NAME "_atomic_set")                                     \
    SHMEM_DEPRECATED_ROUTINE(TYPE, shmem_##NAME##_swap, (TYPE * dest, TYPE value, int pe),         \
                             "use shmem_" #NAME "_atomic_swap")
SHMEM_AMO_DEPRECATED_EXTENDED_TYPES(SHMEM_DEPRECATED_AMO_EXTENDED)
#undef SHMEM_DEPRECATED_AMO_EXTENDED

#define SHMEM_DEPRECATED_AMO_STANDARD(TYPE, NAME)                                                  \
    SHMEM_DEPRECATED_ROUTINE(TYPE, shmem_##NAME##_cswap,                                           \
                             (TYPE * dest, TYPE cond, TYPE value, int pe),                         \
                             "use shmem_" #NAME "_atomic_compare_swap")                            \
    SHMEM_DEPRECATED_ROUTINE(TYPE, shmem_##NAME##_finc, (TYPE * dest, int pe),                     \
                             "use shmem_" #NAME "_atomic_fetch_inc")                               \
    SHMEM_DEPRECATED_ROUTINE(void, shmem_##NAME##_inc, (TYPE * dest, int pe),                      \
                             "use shmem_" #NAME "_atomic_inc")                                     \
    SHMEM_DEPRECATED_ROUTINE(TYPE, shmem_##NAME##_fadd, (TYPE * dest, TYPE value, int pe),         \
                             "use shmem_" #NAME "_atomic_fetch_add")                               \
    SHMEM_DEPRECATED_ROUTINE(void, shmem_##NAME##_add, (TYPE * dest, TYPE value, int pe),          \
                             "use shmem_" #NAME "_atomic_add")
SHMEM_AMO_DEPRECATED_STANDARD_TYPES(SHMEM_DEPRECATED_AMO_STANDARD)
#undef SHMEM_DEPRECATED_AMO_STANDARD
