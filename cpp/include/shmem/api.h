/*
 * shmem/api.h: the list of public routines, once. Each entry is
 * SHMEM_ROUTINE(return type, name without prefix, (parameters)); <shmem.h> expands it to the
 * shmem_* declarations and <pshmem.h> to the pshmem_* ones. No include guard: it is included
 * once per expansion. What each routine does, may alias and blocks on is said above it.
 */
#ifndef SHMEM_ROUTINE
#error "shmem/api.h is included by <shmem.h> and <pshmem.h> only"
#endif

/* ---- Library setup, exit and query -------------------------------------------------------- */

/* Starts the library; collective over all PEs. Blocks until every PE has joined. */
SHMEM_ROUTINE(void, init, (void))
/* As shmem_init, asking for thread level `requested` (SHMEM_THREAD_*); stores the level given
 * in `*provided` and returns 0 (this library always provides SHMEM_THREAD_MULTIPLE). */
SHMEM_ROUTINE(int, init_thread, (int requested, int *provided))
/* Stores the thread level the library was started with in `*provided`. */
SHMEM_ROUTINE(void, query_thread, (int *provided))
/* Ends the library on this PE; collective, with an implied barrier. */
SHMEM_ROUTINE(void, finalize, (void))
/* Ends the whole job with `status` from any PE; does not return. Flushes stdio first. */
SHMEM_ROUTINE(void, global_exit, (int status))
/* This PE's number, in [0, shmem_n_pes()). */
SHMEM_ROUTINE(int, my_pe, (void))
/* Number of PEs in the job. */
SHMEM_ROUTINE(int, n_pes, (void))
/* The OpenSHMEM version this library implements (1.5). */
SHMEM_ROUTINE(void, info_get_version, (int *major, int *minor))
/* Copies the vendor string (at most SHMEM_MAX_NAME_LEN bytes with its NUL) into `name`. */
SHMEM_ROUTINE(void, info_get_name, (char *name))
/* 1 if `pe` can be reached with RMA and AMO routines, else 0. */
SHMEM_ROUTINE(int, pe_accessible, (int pe))
/* 1 if `addr` is symmetric and can be reached on `pe`, else 0. */
SHMEM_ROUTINE(int, addr_accessible, (const void *addr, int pe))
/* Address at which this PE can load and store `dest` of `pe` directly, or NULL. */
SHMEM_ROUTINE(void *, ptr, (const void *dest, int pe))
/* Profiling control: does nothing in the library itself; a profiling tool that defines its
 * own shmem_pcontrol reads `level` (0 off, 1 default, 2 and up tool-defined) and the
 * arguments after it. */
SHMEM_ROUTINE(void, pcontrol, (const int level, ...))

/* ---- Symmetric memory (collective: every PE calls with the same arguments) ---------------- */

/* `size` bytes, aligned to at least 64; NULL for size 0 or when the heap is exhausted. */
SHMEM_ROUTINE(void *, malloc, (size_t size))
/* As shmem_malloc; `hints` (SHMEM_MALLOC_*) describe intended use. */
SHMEM_ROUTINE(void *, malloc_with_hints, (size_t size, long hints))
/* `count` * `size` zeroed bytes; NULL on overflow, zero total or exhaustion. */
SHMEM_ROUTINE(void *, calloc, (size_t count, size_t size))
/* `size` bytes aligned to `alignment` (a power of two); NULL otherwise. */
SHMEM_ROUTINE(void *, align, (size_t alignment, size_t size))
/* Resizes a block, keeping its contents; may move it. NULL ptr allocates, size 0 frees. */
SHMEM_ROUTINE(void *, realloc, (void *ptr, size_t size))
/* Frees a block; waits for every PE first. NULL does nothing. */
SHMEM_ROUTINE(void, free, (void *ptr))

/* ---- Remote memory access ----------------------------------------------------------------- */

/* Copies `nelems` bytes from local `source` to `dest` on `pe`. Returns when `source` may be
 * reused; completion at the target is ensured by shmem_quiet or a barrier. `dest` must be
 * symmetric; the two ranges must not overlap. */
SHMEM_ROUTINE(void, putmem, (void *dest, const void *source, size_t nelems, int pe))
/* Copies `nelems` bytes from `source` on `pe` into local `dest`; returns when `dest` holds them. */
SHMEM_ROUTINE(void, getmem, (void *dest, const void *source, size_t nelems, int pe))
/* Non-blocking forms: `source` (put) and `dest` (get) may be used after shmem_quiet. */
SHMEM_ROUTINE(void, putmem_nbi, (void *dest, const void *source, size_t nelems, int pe))
SHMEM_ROUTINE(void, getmem_nbi, (void *dest, const void *source, size_t nelems, int pe))

/* Typed forms, one per type of SHMEM_RMA_TYPES: `nelems` counts elements of TYPE. p and g move
 * one element. iput/iget move `nelems` elements `sst` apart in `source` to elements `dst`
 * apart in `dest` (strides count elements; 1 is contiguous). */
#define SHMEM_API_RMA_TYPED(TYPE, NAME)                                                            \
    SHMEM_ROUTINE(void, NAME##_put, (TYPE * dest, const TYPE *source, size_t nelems, int pe))      \
    SHMEM_ROUTINE(void, NAME##_get, (TYPE * dest, const TYPE *source, size_t nelems, int pe))      \
    SHMEM_ROUTINE(void, NAME##_put_nbi, (TYPE * dest, const TYPE *source, size_t nelems, int pe))  \
    SHMEM_ROUTINE(void, NAME##_get_nbi, (TYPE * dest, const TYPE *source, size_t nelems, int pe))  \
    SHMEM_ROUTINE(void, NAME##_p, (TYPE * dest, TYPE value, int pe))                               \
    SHMEM_ROUTINE(TYPE, NAME##_g, (const TYPE *source, int pe))                                    \
    SHMEM_ROUTINE(                                                                                 \
        void, NAME##_iput,                                                                         \
        (TYPE * dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe))    \
    SHMEM_ROUTINE(                                                                                 \
        void, NAME##_iget,                                                                         \
        (TYPE * dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe))
SHMEM_RMA_TYPES(SHMEM_API_RMA_TYPED)
#undef SHMEM_API_RMA_TYPED

/* Sized forms: elements of BITS/8 bytes, whatever their type. */
#define SHMEM_API_RMA_SIZED(BITS)                                                                  \
    SHMEM_ROUTINE(void, put##BITS, (void *dest, const void *source, size_t nelems, int pe))        \
    SHMEM_ROUTINE(void, get##BITS, (void *dest, const void *source, size_t nelems, int pe))        \
    SHMEM_ROUTINE(void, put##BITS##_nbi, (void *dest, const void *source, size_t nelems, int pe))  \
    SHMEM_ROUTINE(void, get##BITS##_nbi, (void *dest, const void *source, size_t nelems, int pe))  \
    SHMEM_ROUTINE(                                                                                 \
        void, iput##BITS,                                                                          \
        (void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe))     \
    SHMEM_ROUTINE(                                                                                 \
        void, iget##BITS,                                                                          \
        (void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe))
SHMEM_RMA_SIZES(SHMEM_API_RMA_SIZED)
#undef SHMEM_API_RMA_SIZED

/* ---- Atomic memory operations --------------------------------------------------------------
 * Each updates one naturally aligned symmetric element on `pe` atomically with respect to every
 * other AMO on it; the fetching forms return the value before the update. The _nbi forms store
 * that value at local `fetch`, complete after shmem_quiet. */

/* fetch, set, swap: SHMEM_AMO_EXTENDED_TYPES. */
#define SHMEM_API_AMO_EXTENDED(TYPE, NAME)                                                         \
    SHMEM_ROUTINE(TYPE, NAME##_atomic_fetch, (const TYPE *source, int pe))                         \
    SHMEM_ROUTINE(void, NAME##_atomic_set, (TYPE * dest, TYPE value, int pe))                      \
    SHMEM_ROUTINE(TYPE, NAME##_atomic_swap, (TYPE * dest, TYPE value, int pe))                     \
    SHMEM_ROUTINE(void, NAME##_atomic_fetch_nbi, (TYPE * fetch, const TYPE *source, int pe))       \
    SHMEM_ROUTINE(void, NAME##_atomic_swap_nbi, (TYPE * fetch, TYPE * dest, TYPE value, int pe))
SHMEM_AMO_EXTENDED_TYPES(SHMEM_API_AMO_EXTENDED)
#undef SHMEM_API_AMO_EXTENDED

/* compare_swap, fetch_inc, inc, fetch_add, add: SHMEM_AMO_STANDARD_TYPES. compare_swap stores
 * `value` only if the element equals `cond`. */
#define SHMEM_API_AMO_STANDARD(TYPE, NAME)                                                         \
    SHMEM_ROUTINE(TYPE, NAME##_atomic_compare_swap, (TYPE * dest, TYPE cond, TYPE value, int pe))  \
    SHMEM_ROUTINE(TYPE, NAME##_atomic_fetch_inc, (TYPE * dest, int pe))                            \
    SHMEM_ROUTINE(void, NAME##_atomic_inc, (TYPE * dest, int pe))                                  \
    SHMEM_ROUTINE(TYPE, NAME##_atomic_fetch_add, (TYPE * dest, TYPE value, int pe))                \
    SHMEM_ROUTINE(void, NAME##_atomic_add, (TYPE * dest, TYPE value, int pe))                      \
    SHMEM_ROUTINE(void, NAME##_atomic_compare_swap_nbi,                                            \
                  (TYPE * fetch, TYPE * dest, TYPE cond, TYPE value, int pe))                      \
    SHMEM_ROUTINE(void, NAME##_atomic_fetch_inc_nbi, (TYPE * fetch, TYPE * dest, int pe))          \
    SHMEM_ROUTINE(void, NAME##_atomic_fetch_add_nbi,                                               \
                  (TYPE * fetch, TYPE * dest, TYPE value, int pe))
SHMEM_AMO_STANDARD_TYPES(SHMEM_API_AMO_STANDARD)
#undef SHMEM_API_AMO_STANDARD

/* fetch_and/or/xor, and/or/xor: SHMEM_AMO_BITWISE_TYPES. */
#define SHMEM_API_AMO_BITWISE(TYPE, NAME)                                                          \
    SHMEM_ROUTINE(TYPE, NAME##_atomic_fetch_and, (TYPE * dest, TYPE value, int pe))                \
    SHMEM_ROUTINE(TYPE, NAME##_atomic_fetch_or, (TYPE * dest, TYPE value, int pe))                 \
    SHMEM_ROUTINE(TYPE, NAME##_atomic_fetch_xor, (TYPE * dest, TYPE value, int pe))                \
    SHMEM_ROUTINE(void, NAME##_atomic_and, (TYPE * dest, TYPE value, int pe))                      \
    SHMEM_ROUTINE(void, NAME##_atomic_or, (TYPE * dest, TYPE value, int pe))                       \
    SHMEM_ROUTINE(void, NAME##_atomic_xor, (TYPE * dest, TYPE value, int pe))                      \
    SHMEM_ROUTINE(void, NAME##_atomic_fetch_and_nbi,                                               \
                  (TYPE * fetch, TYPE * dest, TYPE value, int pe))                                 \
    SHMEM_ROUTINE(void, NAME##_atomic_fetch_or_nbi,                                                \
                  (TYPE * fetch, TYPE * dest, TYPE value, int pe))                                 \
    SHMEM_ROUTINE(void, NAME##_atomic_fetch_xor_nbi,                                               \
                  (TYPE * fetch, TYPE * dest, TYPE value, int pe))
SHMEM_AMO_BITWISE_TYPES(SHMEM_API_AMO_BITWISE)
#undef SHMEM_API_AMO_BITWISE

/* ---- Ordering and synchronisation --------------------------------------------------------- */

/* Orders this PE's puts and AMOs to each PE: those before land before those after. */
SHMEM_ROUTINE(void, fence, (void))
/* Completes every put, AMO and non-blocking operation this PE issued. */
SHMEM_ROUTINE(void, quiet, (void))
/* shmem_quiet, then waits until every PE reaches the barrier. */
SHMEM_ROUTINE(void, barrier_all, (void))
/* Waits until every PE reaches it; completes no operations (use shmem_quiet for that). */
SHMEM_ROUTINE(void, sync_all, (void))

/* ---- Point-to-point synchronisation (SHMEM_SYNC_TYPES) -------------------------------------
 * `ivar` is a local symmetric element that peers update with puts or AMOs; `cmp` is one of
 * SHMEM_CMP_EQ, _NE, _GT, _GE, _LT, _LE. wait_until blocks until `*ivar cmp cmp_value` holds
 * (spinning briefly, then yielding, then napping: it never burns a core for long); test
 * returns 1 if it holds now, else 0. */
#define SHMEM_API_SYNC(TYPE, NAME)                                                                 \
    SHMEM_ROUTINE(void, NAME##_wait_until, (TYPE * ivar, int cmp, TYPE cmp_value))                 \
    SHMEM_ROUTINE(int, NAME##_test, (TYPE * ivar, int cmp, TYPE cmp_value))
SHMEM_SYNC_TYPES(SHMEM_API_SYNC)
#undef SHMEM_API_SYNC
