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
/* The same on context `ctx`: `pe` is a PE number of the context's team (see Contexts below). */
SHMEM_ROUTINE(void, ctx_putmem,
              (shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe))
SHMEM_ROUTINE(void, ctx_getmem,
              (shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe))
SHMEM_ROUTINE(void, ctx_putmem_nbi,
              (shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe))
SHMEM_ROUTINE(void, ctx_getmem_nbi,
              (shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe))

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

/* The typed forms on context `ctx` (shmem_ctx_TYPENAME_put, ...). */
#define SHMEM_API_CTX_RMA_TYPED(TYPE, NAME)                                                        \
    SHMEM_ROUTINE(void, ctx_##NAME##_put,                                                          \
                  (shmem_ctx_t ctx, TYPE * dest, const TYPE *source, size_t nelems, int pe))       \
    SHMEM_ROUTINE(void, ctx_##NAME##_get,                                                          \
                  (shmem_ctx_t ctx, TYPE * dest, const TYPE *source, size_t nelems, int pe))       \
    SHMEM_ROUTINE(void, ctx_##NAME##_put_nbi,                                                      \
                  (shmem_ctx_t ctx, TYPE * dest, const TYPE *source, size_t nelems, int pe))       \
    SHMEM_ROUTINE(void, ctx_##NAME##_get_nbi,                                                      \
                  (shmem_ctx_t ctx, TYPE * dest, const TYPE *source, size_t nelems, int pe))       \
    SHMEM_ROUTINE(void, ctx_##NAME##_p, (shmem_ctx_t ctx, TYPE * dest, TYPE value, int pe))        \
    SHMEM_ROUTINE(TYPE, ctx_##NAME##_g, (shmem_ctx_t ctx, const TYPE *source, int pe))             \
    SHMEM_ROUTINE(void, ctx_##NAME##_iput,                                                         \
                  (shmem_ctx_t ctx, TYPE * dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst, \
                   size_t nelems, int pe))                                                         \
    SHMEM_ROUTINE(void, ctx_##NAME##_iget,                                                         \
                  (shmem_ctx_t ctx, TYPE * dest, const TYPE *source, ptrdiff_t dst, ptrdiff_t sst, \
                   size_t nelems, int pe))
SHMEM_RMA_TYPES(SHMEM_API_CTX_RMA_TYPED)
#undef SHMEM_API_CTX_RMA_TYPED

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

/* The sized forms on context `ctx` (shmem_ctx_put32, ...). */
#define SHMEM_API_CTX_RMA_SIZED(BITS)                                                              \
    SHMEM_ROUTINE(void, ctx_put##BITS,                                                             \
                  (shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe))        \
    SHMEM_ROUTINE(void, ctx_get##BITS,                                                             \
                  (shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe))        \
    SHMEM_ROUTINE(void, ctx_put##BITS##_nbi,                                                       \
                  (shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe))        \
    SHMEM_ROUTINE(void, ctx_get##BITS##_nbi,                                                       \
                  (shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe))        \
    SHMEM_ROUTINE(void, ctx_iput##BITS,                                                            \
                  (shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,  \
                   size_t nelems, int pe))                                                         \
    SHMEM_ROUTINE(void, ctx_iget##BITS,                                                            \
                  (shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,  \
                   size_t nelems, int pe))
SHMEM_RMA_SIZES(SHMEM_API_CTX_RMA_SIZED)
#undef SHMEM_API_CTX_RMA_SIZED

/* ---- Atomic memory operations --------------------------------------------------------------
 * Each updates one naturally aligned symmetric element on `pe` atomically with respect to every
 * other AMO on it; the fetching forms return the value before the update. The _nbi forms store
 * that value at local `fetch`, complete after shmem_quiet. Each has a shmem_ctx_ form whose
 * first argument is a context and whose `pe` numbers a PE of the context's team. */

/* fetch, set, swap: SHMEM_AMO_EXTENDED_TYPES. */
#define SHMEM_API_AMO_EXTENDED(TYPE, NAME)                                                         \
    SHMEM_ROUTINE(TYPE, NAME##_atomic_fetch, (const TYPE *source, int pe))                         \
    SHMEM_ROUTINE(void, NAME##_atomic_set, (TYPE * dest, TYPE value, int pe))                      \
    SHMEM_ROUTINE(TYPE, NAME##_atomic_swap, (TYPE * dest, TYPE value, int pe))                     \
    SHMEM_ROUTINE(void, NAME##_atomic_fetch_nbi, (TYPE * fetch, const TYPE *source, int pe))       \
    SHMEM_ROUTINE(void, NAME##_atomic_swap_nbi, (TYPE * fetch, TYPE * dest, TYPE value, int pe))
SHMEM_AMO_EXTENDED_TYPES(SHMEM_API_AMO_EXTENDED)
#undef SHMEM_API_AMO_EXTENDED
#define SHMEM_API_CTX_AMO_EXTENDED(TYPE, NAME)                                                     \
    SHMEM_ROUTINE(TYPE, ctx_##NAME##_atomic_fetch, (shmem_ctx_t ctx, const TYPE *source, int pe))  \
    SHMEM_ROUTINE(void, ctx_##NAME##_atomic_set,                                                   \
                  (shmem_ctx_t ctx, TYPE * dest, TYPE value, int pe))                              \
    SHMEM_ROUTINE(TYPE, ctx_##NAME##_atomic_swap,                                                  \
                  (shmem_ctx_t ctx, TYPE * dest, TYPE value, int pe))                              \
    SHMEM_ROUTINE(void, ctx_##NAME##_atomic_fetch_nbi,                                             \
                  (shmem_ctx_t ctx, TYPE * fetch, const TYPE *source, int pe))                     \
    SHMEM_ROUTINE(void, ctx_##NAME##_atomic_swap_nbi,                                              \
                  (shmem_ctx_t ctx, TYPE * fetch, TYPE * dest, TYPE value, int pe))
SHMEM_AMO_EXTENDED_TYPES(SHMEM_API_CTX_AMO_EXTENDED)
#undef SHMEM_API_CTX_AMO_EXTENDED

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
#define SHMEM_API_CTX_AMO_STANDARD(TYPE, NAME)                                                     \
    SHMEM_ROUTINE(TYPE, ctx_##NAME##_atomic_compare_swap,                                          \
                  (shmem_ctx_t ctx, TYPE * dest, TYPE cond, TYPE value, int pe))                   \
    SHMEM_ROUTINE(TYPE, ctx_##NAME##_atomic_fetch_inc, (shmem_ctx_t ctx, TYPE * dest, int pe))     \
    SHMEM_ROUTINE(void, ctx_##NAME##_atomic_inc, (shmem_ctx_t ctx, TYPE * dest, int pe))           \
    SHMEM_ROUTINE(TYPE, ctx_##NAME##_atomic_fetch_add,                                             \
                  (shmem_ctx_t ctx, TYPE * dest, TYPE value, int pe))                              \
    SHMEM_ROUTINE(void, ctx_##NAME##_atomic_add,                                                   \
                  (shmem_ctx_t ctx, TYPE * dest, TYPE value, int pe))                              \
    SHMEM_ROUTINE(void, ctx_##NAME##_atomic_compare_swap_nbi,                                      \
                  (shmem_ctx_t ctx, TYPE * fetch, TYPE * dest, TYPE cond, TYPE value, int pe))     \
    SHMEM_ROUTINE(void, ctx_##NAME##_atomic_fetch_inc_nbi,                                         \
                  (shmem_ctx_t ctx, TYPE * fetch, TYPE * dest, int pe))                            \
    SHMEM_ROUTINE(void, ctx_##NAME##_atomic_fetch_add_nbi,                                         \
                  (shmem_ctx_t ctx, TYPE * fetch, TYPE * dest, TYPE value, int pe))
SHMEM_AMO_STANDARD_TYPES(SHMEM_API_CTX_AMO_STANDARD)
#undef SHMEM_API_CTX_AMO_STANDARD

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
#define SHMEM_API_CTX_AMO_BITWISE(TYPE, NAME)                                                      \
    SHMEM_ROUTINE(TYPE, ctx_##NAME##_atomic_fetch_and,                                             \
                  (shmem_ctx_t ctx, TYPE * dest, TYPE value, int pe))                              \
    SHMEM_ROUTINE(TYPE, ctx_##NAME##_atomic_fetch_or,                                              \
                  (shmem_ctx_t ctx, TYPE * dest, TYPE value, int pe))                              \
    SHMEM_ROUTINE(TYPE, ctx_##NAME##_atomic_fetch_xor,                                             \
                  (shmem_ctx_t ctx, TYPE * dest, TYPE value, int pe))                              \
    SHMEM_ROUTINE(void, ctx_##NAME##_atomic_and,                                                   \
                  (shmem_ctx_t ctx, TYPE * dest, TYPE value, int pe))                              \
    SHMEM_ROUTINE(void, ctx_##NAME##_atomic_or,                                                    \
                  (shmem_ctx_t ctx, TYPE * dest, TYPE value, int pe))                              \
    SHMEM_ROUTINE(void, ctx_##NAME##_atomic_xor,                                                   \
                  (shmem_ctx_t ctx, TYPE * dest, TYPE value, int pe))                              \
    SHMEM_ROUTINE(void, ctx_##NAME##_atomic_fetch_and_nbi,                                         \
                  (shmem_ctx_t ctx, TYPE * fetch, TYPE * dest, TYPE value, int pe))                \
    SHMEM_ROUTINE(void, ctx_##NAME##_atomic_fetch_or_nbi,                                          \
                  (shmem_ctx_t ctx, TYPE * fetch, TYPE * dest, TYPE value, int pe))                \
    SHMEM_ROUTINE(void, ctx_##NAME##_atomic_fetch_xor_nbi,                                         \
                  (shmem_ctx_t ctx, TYPE * fetch, TYPE * dest, TYPE value, int pe))
SHMEM_AMO_BITWISE_TYPES(SHMEM_API_CTX_AMO_BITWISE)
#undef SHMEM_API_CTX_AMO_BITWISE

/* ---- Ordering and synchronisation --------------------------------------------------------- */

/* Orders this PE's puts and AMOs to each PE: those before land before those after. */
SHMEM_ROUTINE(void, fence, (void))
/* Completes every put, AMO and non-blocking operation this PE issued. */
SHMEM_ROUTINE(void, quiet, (void))
/* shmem_fence and shmem_quiet for the operations issued on context `ctx` alone. */
SHMEM_ROUTINE(void, ctx_fence, (shmem_ctx_t ctx))
SHMEM_ROUTINE(void, ctx_quiet, (shmem_ctx_t ctx))
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

/* ---- Teams ---------------------------------------------------------------------------------
 * A team is an ordered set of PEs with its own PE numbering; SHMEM_TEAM_WORLD and
 * SHMEM_TEAM_SHARED are predefined. Team PE numbers run from 0 to shmem_team_n_pes() - 1. */

/* This PE's number in `team`, or -1 when `team` is SHMEM_TEAM_INVALID. */
SHMEM_ROUTINE(int, team_my_pe, (shmem_team_t team))
/* Number of PEs in `team`, or -1 when `team` is SHMEM_TEAM_INVALID. */
SHMEM_ROUTINE(int, team_n_pes, (shmem_team_t team))
/* Copies the members of `team`'s configuration selected by `config_mask` (SHMEM_TEAM_*) into
 * `*config`; returns 0, or non-zero when `team` is SHMEM_TEAM_INVALID. */
SHMEM_ROUTINE(int, team_get_config,
              (shmem_team_t team, long config_mask, shmem_team_config_t *config))
/* Number in `dest_team` of the PE that is `src_pe` in `src_team`; -1 when it is not a member of
 * `dest_team`, when `src_pe` is not in `src_team`, or when a team is SHMEM_TEAM_INVALID. */
SHMEM_ROUTINE(int, team_translate_pe, (shmem_team_t src_team, int src_pe, shmem_team_t dest_team))

/* Splits `parent_team` (collective over it): the new team holds the parent's PEs start,
 * start + stride, ..., size of them (a negative stride lists them downwards; stride 0 only with
 * size 1). Members get the new handle in `*new_team`, the others SHMEM_TEAM_INVALID. Returns 0,
 * or non-zero on every parent PE (with `*new_team` = SHMEM_TEAM_INVALID) for an invalid triplet,
 * a SHMEM_TEAM_INVALID parent, or when a member already belongs to the most teams a PE may
 * belong to at once (see docs/c-api.md). `config`/`config_mask` as in shmem_team_get_config. */
SHMEM_ROUTINE(int, team_split_strided,
              (shmem_team_t parent_team, int start, int stride, int size,
               const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team))
/* Splits `parent_team` (collective over it) along a grid `xrange` PEs wide: parent PE p sits at
 * (p % xrange, p / xrange); `*xaxis_team` holds this PE's row (numbered by x), `*yaxis_team` its
 * column (numbered by y). Returns 0, or non-zero with both handles SHMEM_TEAM_INVALID. */
SHMEM_ROUTINE(int, team_split_2d,
              (shmem_team_t parent_team, int xrange, const shmem_team_config_t *xaxis_config,
               long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
               long yaxis_mask, shmem_team_t *yaxis_team))
/* Destroys a team made by a split (collective over it), and the shareable contexts made from it.
 * SHMEM_TEAM_INVALID does nothing; a predefined team is an error. */
SHMEM_ROUTINE(void, team_destroy, (shmem_team_t team))
/* Waits until every PE of `team` reaches it; completes no operations. Returns 0. */
SHMEM_ROUTINE(int, team_sync, (shmem_team_t team))
/* Address at which this PE can load and store `dest` of team PE `pe`, or NULL (NULL too for
 * SHMEM_TEAM_INVALID). */
SHMEM_ROUTINE(void *, team_ptr, (shmem_team_t team, const void *dest, int pe))

/* ---- Collectives over a team ---------------------------------------------------------------
 * Every PE of `team` calls with the same arguments (collect: its own `nelems`); `dest` and
 * `source` are symmetric. Each returns once this PE's `dest` holds the result and its `source`
 * may be reused, and returns 0. `dest` and `source` must not overlap, except in reductions,
 * where they may be the same array (in place). Only PEs of the team call; each blocks until the
 * PEs it reads from or that read from it have arrived. The *mem forms count bytes. */

/* Copies `nelems` elements of `source` on team PE `PE_root` to `dest` on every PE of the team,
 * the root included. */
SHMEM_ROUTINE(int, broadcastmem,
              (shmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root))
/* Concatenates every PE's `source` (`nelems` elements, which may differ between PEs) in team PE
 * order into `dest` on every PE. */
SHMEM_ROUTINE(int, collectmem, (shmem_team_t team, void *dest, const void *source, size_t nelems))
/* As collect, with the same `nelems` on every PE. */
SHMEM_ROUTINE(int, fcollectmem, (shmem_team_t team, void *dest, const void *source, size_t nelems))
/* Block j (`nelems` elements) of `source` on team PE i lands as block i of `dest` on team PE j. */
SHMEM_ROUTINE(int, alltoallmem, (shmem_team_t team, void *dest, const void *source, size_t nelems))
/* As alltoall with strides (in elements, >= 1): element k of block j of `source` is
 * source[sst * (j * nelems + k)], and lands at dest[dst * (i * nelems + k)] on team PE j. */
SHMEM_ROUTINE(int, alltoallsmem,
              (shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
               size_t nelems))

/* Typed forms, one per type of SHMEM_COLL_TYPES. */
#define SHMEM_API_COLL_TYPED(TYPE, NAME)                                                           \
    SHMEM_ROUTINE(                                                                                 \
        int, NAME##_broadcast,                                                                     \
        (shmem_team_t team, TYPE * dest, const TYPE *source, size_t nelems, int PE_root))          \
    SHMEM_ROUTINE(int, NAME##_collect,                                                             \
                  (shmem_team_t team, TYPE * dest, const TYPE *source, size_t nelems))             \
    SHMEM_ROUTINE(int, NAME##_fcollect,                                                            \
                  (shmem_team_t team, TYPE * dest, const TYPE *source, size_t nelems))             \
    SHMEM_ROUTINE(int, NAME##_alltoall,                                                            \
                  (shmem_team_t team, TYPE * dest, const TYPE *source, size_t nelems))             \
    SHMEM_ROUTINE(int, NAME##_alltoalls,                                                           \
                  (shmem_team_t team, TYPE * dest, const TYPE *source, ptrdiff_t dst,              \
                   ptrdiff_t sst, size_t nelems))
SHMEM_COLL_TYPES(SHMEM_API_COLL_TYPED)
#undef SHMEM_API_COLL_TYPED

/* Reductions: `dest[i]` on every PE of the team becomes source[i] of all its PEs combined by
 * the operation, for i < `nreduce`; `dest` == `source` is allowed. Types per operation in
 * SHMEM_REDUCE_OPS (<shmem/types.h>). */
#define SHMEM_API_REDUCE_TYPED(TYPE, NAME, OP)                                                     \
    SHMEM_ROUTINE(int, NAME##_##OP##_reduce,                                                       \
                  (shmem_team_t team, TYPE * dest, const TYPE *source, size_t nreduce))
#define SHMEM_API_REDUCE(OP, TEAM_TYPES, ACTIVE_SET_TYPES) TEAM_TYPES(SHMEM_API_REDUCE_TYPED, OP)
SHMEM_REDUCE_OPS(SHMEM_API_REDUCE)
#undef SHMEM_API_REDUCE
#undef SHMEM_API_REDUCE_TYPED

/* ---- Deprecated active-set collectives -----------------------------------------------------
 * The active set is the world PEs PE_start, PE_start + 2^logPE_stride, ..., PE_size of them;
 * only they call, all with the same arguments and the same symmetric `pSync` array (at least
 * SHMEM_*_SYNC_SIZE longs, every element SHMEM_SYNC_VALUE before the first use). On return
 * pSync holds SHMEM_SYNC_VALUE again, so it may be passed to the next collective at once. */

/* shmem_quiet, then waits until every PE of the active set arrives. */
SHMEM_ROUTINE(void, barrier, (int PE_start, int logPE_stride, int PE_size, long *pSync))
/* Waits until every PE of the active set arrives; completes no operations. In C, shmem_sync
 * with one argument is shmem_team_sync (a macro picks by the number of arguments); in C++ an
 * overload does the same. */
SHMEM_ROUTINE(void, sync, (int PE_start, int logPE_stride, int PE_size, long *pSync))

/* As the team forms over the active set, with elements of BITS/8 bytes; broadcast leaves `dest`
 * on the root unchanged. */
#define SHMEM_API_COLL_SIZED(BITS)                                                                 \
    SHMEM_ROUTINE(void, broadcast##BITS,                                                           \
                  (void *dest, const void *source, size_t nelems, int PE_root, int PE_start,       \
                   int logPE_stride, int PE_size, long *pSync))                                    \
    SHMEM_ROUTINE(void, collect##BITS,                                                             \
                  (void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride,  \
                   int PE_size, long *pSync))                                                      \
    SHMEM_ROUTINE(void, fcollect##BITS,                                                            \
                  (void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride,  \
                   int PE_size, long *pSync))                                                      \
    SHMEM_ROUTINE(void, alltoall##BITS,                                                            \
                  (void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride,  \
                   int PE_size, long *pSync))                                                      \
    SHMEM_ROUTINE(void, alltoalls##BITS,                                                           \
                  (void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,    \
                   int PE_start, int logPE_stride, int PE_size, long *pSync))
SHMEM_COLL_SIZES(SHMEM_API_COLL_SIZED)
#undef SHMEM_API_COLL_SIZED

/* Reductions over the active set (types per operation in SHMEM_REDUCE_OPS). `pWrk` is accepted
 * for compatibility and not used: members read each other's `source` directly. */
#define SHMEM_API_TO_ALL_TYPED(TYPE, NAME, OP)                                                     \
    SHMEM_ROUTINE(void, NAME##_##OP##_to_all,                                                      \
                  (TYPE * dest, const TYPE *source, int nreduce, int PE_start, int logPE_stride,   \
                   int PE_size, TYPE *pWrk, long *pSync))
#define SHMEM_API_TO_ALL(OP, TEAM_TYPES, ACTIVE_SET_TYPES)                                         \
    ACTIVE_SET_TYPES(SHMEM_API_TO_ALL_TYPED, OP)
SHMEM_REDUCE_OPS(SHMEM_API_TO_ALL)
#undef SHMEM_API_TO_ALL
#undef SHMEM_API_TO_ALL_TYPED
/* ---- Communication contexts ----------------------------------------------------------------
 * A context is a stream of RMA, AMO and signal operations that shmem_ctx_fence and
 * shmem_ctx_quiet order and complete separately from the others. SHMEM_CTX_DEFAULT is the
 * context of the routines without a ctx argument. A context belongs to a team: the `pe` of a
 * shmem_ctx_ routine is a PE number of that team (SHMEM_TEAM_WORLD for shmem_ctx_create).
 * Options (bit flags, or 0): SHMEM_CTX_SERIALIZED (never used by two threads at once),
 * SHMEM_CTX_PRIVATE (used by the creating thread only), SHMEM_CTX_NOSTORE (no shmem_ctx_quiet
 * needed for stores); other bits make creation fail. Creation is local, not collective. */

/* Creates a context on SHMEM_TEAM_WORLD into `*ctx`; returns 0, or non-zero with `*ctx` set to
 * SHMEM_CTX_INVALID when `options` holds unknown bits. */
SHMEM_ROUTINE(int, ctx_create, (long options, shmem_ctx_t *ctx))
/* As shmem_ctx_create, on `team`. Also fails when `team` is SHMEM_TEAM_INVALID, or when the
 * team was split with SHMEM_TEAM_NUM_CONTEXTS in its configuration mask and already has
 * num_contexts contexts. */
SHMEM_ROUTINE(int, team_create_ctx, (shmem_team_t team, long options, shmem_ctx_t *ctx))
/* Completes the context's operations (shmem_ctx_quiet) and destroys it. SHMEM_CTX_INVALID does
 * nothing; SHMEM_CTX_DEFAULT cannot be destroyed. Destroying a team destroys its contexts. */
SHMEM_ROUTINE(void, ctx_destroy, (shmem_ctx_t ctx))
/* Stores the context's team in `*team` and returns 0 (SHMEM_TEAM_WORLD for SHMEM_CTX_DEFAULT
 * and for contexts from shmem_ctx_create); SHMEM_CTX_INVALID gives SHMEM_TEAM_INVALID and a
 * non-zero return. */
SHMEM_ROUTINE(int, ctx_get_team, (shmem_ctx_t ctx, shmem_team_t *team))

/* ---- Signals -------------------------------------------------------------------------------
 * A signal is a uint64_t symmetric word. The put-with-signal routines copy `nelems` elements
 * from local `source` to `dest` on `pe`, then update `sig_addr` on `pe` atomically with `signal`
 * by `sig_op`: SHMEM_SIGNAL_SET stores it, SHMEM_SIGNAL_ADD adds it. A PE that sees the signal
 * sees the data (the update is ordered after the copy); nothing else is ordered with it
 * without shmem_fence. `dest` and `sig_addr` must not overlap. They return when `source` may
 * be reused; the _nbi forms when shmem_quiet has been called. Every form has a shmem_ctx_ twin
 * taking a context first. */
#define SHMEM_PUT_SIGNAL_PARAMS(TYPE)                                                              \
    (TYPE * dest, const TYPE *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,          \
     int sig_op, int pe)
#define SHMEM_CTX_PUT_SIGNAL_PARAMS(TYPE)                                                          \
    (shmem_ctx_t ctx, TYPE * dest, const TYPE *source, size_t nelems, uint64_t *sig_addr,          \
     uint64_t signal, int sig_op, int pe)

/* Typed forms over SHMEM_RMA_TYPES: `nelems` counts elements of TYPE. */
#define SHMEM_API_PUT_SIGNAL_TYPED(TYPE, NAME)                                                     \
    SHMEM_ROUTINE(void, NAME##_put_signal, SHMEM_PUT_SIGNAL_PARAMS(TYPE))                          \
    SHMEM_ROUTINE(void, NAME##_put_signal_nbi, SHMEM_PUT_SIGNAL_PARAMS(TYPE))                      \
    SHMEM_ROUTINE(void, ctx_##NAME##_put_signal, SHMEM_CTX_PUT_SIGNAL_PARAMS(TYPE))                \
    SHMEM_ROUTINE(void, ctx_##NAME##_put_signal_nbi, SHMEM_CTX_PUT_SIGNAL_PARAMS(TYPE))
SHMEM_RMA_TYPES(SHMEM_API_PUT_SIGNAL_TYPED)
#undef SHMEM_API_PUT_SIGNAL_TYPED

/* Sized forms: elements of BITS/8 bytes. */
#define SHMEM_API_PUT_SIGNAL_SIZED(BITS)                                                           \
    SHMEM_ROUTINE(void, put##BITS##_signal, SHMEM_PUT_SIGNAL_PARAMS(void))                         \
    SHMEM_ROUTINE(void, put##BITS##_signal_nbi, SHMEM_PUT_SIGNAL_PARAMS(void))                     \
    SHMEM_ROUTINE(void, ctx_put##BITS##_signal, SHMEM_CTX_PUT_SIGNAL_PARAMS(void))                 \
    SHMEM_ROUTINE(void, ctx_put##BITS##_signal_nbi, SHMEM_CTX_PUT_SIGNAL_PARAMS(void))
SHMEM_RMA_SIZES(SHMEM_API_PUT_SIGNAL_SIZED)
#undef SHMEM_API_PUT_SIGNAL_SIZED

/* Byte forms: `nelems` counts bytes. */
SHMEM_ROUTINE(void, putmem_signal, SHMEM_PUT_SIGNAL_PARAMS(void))
SHMEM_ROUTINE(void, putmem_signal_nbi, SHMEM_PUT_SIGNAL_PARAMS(void))
SHMEM_ROUTINE(void, ctx_putmem_signal, SHMEM_CTX_PUT_SIGNAL_PARAMS(void))
SHMEM_ROUTINE(void, ctx_putmem_signal_nbi, SHMEM_CTX_PUT_SIGNAL_PARAMS(void))
#undef SHMEM_PUT_SIGNAL_PARAMS
#undef SHMEM_CTX_PUT_SIGNAL_PARAMS

/* The value of local signal word `sig_addr`, read atomically. */
SHMEM_ROUTINE(uint64_t, signal_fetch, (const uint64_t *sig_addr))
/* Blocks until local signal word `sig_addr` satisfies `cmp` (SHMEM_CMP_*) against `cmp_value`,
 * waiting as shmem_uint64_wait_until does; returns the value that satisfied it. The data of the
 * put-with-signal that set it is then visible. */
SHMEM_ROUTINE(uint64_t, signal_wait_until, (uint64_t * sig_addr, int cmp, uint64_t cmp_value))
/* ---- Point-to-point synchronisation on sets of variables (SHMEM_SYNC_TYPES) ----------------
 * `ivars` is a local symmetric array of `nelems` elements that peers update. `status`, when not
 * NULL, is a mask of `nelems` ints: an element whose entry is not 0 is left out of the set (NULL
 * includes every element). The plain forms compare every element with `cmp_value`, the _vector
 * forms element i with `cmp_values[i]`. The waits spin briefly, then yield, then nap, so they
 * never burn a core for long.
 *   wait_until_all   returns once every element of the set has satisfied the comparison
 *                    (at once if the set is empty).
 *   wait_until_any   returns the index of one element that satisfies it; SIZE_MAX at once if
 *                    the set is empty. Successive calls start their search past the index
 *                    returned last, so no satisfied element is passed over for ever.
 *   wait_until_some  waits until at least one element satisfies it, stores the indices of all
 *                    that do in `indices` (room for `nelems`) and returns their number; 0 at
 *                    once if the set is empty.
 *   test_all/any/some  the same without blocking: test_all returns 1 if every element of the
 *                    set satisfies it (also for an empty set), else 0; test_any returns an
 *                    index or SIZE_MAX when none does; test_some returns the number stored. */
#define SHMEM_API_SYNC_SET(TYPE, NAME)                                                             \
    SHMEM_ROUTINE(void, NAME##_wait_until_all,                                                     \
                  (TYPE * ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value))       \
    SHMEM_ROUTINE(size_t, NAME##_wait_until_any,                                                   \
                  (TYPE * ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value))       \
    SHMEM_ROUTINE(size_t, NAME##_wait_until_some,                                                  \
                  (TYPE * ivars, size_t nelems, size_t * indices, const int *status, int cmp,      \
                   TYPE cmp_value))                                                                \
    SHMEM_ROUTINE(void, NAME##_wait_until_all_vector,                                              \
                  (TYPE * ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_values))     \
    SHMEM_ROUTINE(size_t, NAME##_wait_until_any_vector,                                            \
                  (TYPE * ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_values))     \
    SHMEM_ROUTINE(size_t, NAME##_wait_until_some_vector,                                           \
                  (TYPE * ivars, size_t nelems, size_t * indices, const int *status, int cmp,      \
                   TYPE *cmp_values))                                                              \
    SHMEM_ROUTINE(int, NAME##_test_all,                                                            \
                  (TYPE * ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value))       \
    SHMEM_ROUTINE(size_t, NAME##_test_any,                                                         \
                  (TYPE * ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value))       \
    SHMEM_ROUTINE(size_t, NAME##_test_some,                                                        \
                  (TYPE * ivars, size_t nelems, size_t * indices, const int *status, int cmp,      \
                   TYPE cmp_value))                                                                \
    SHMEM_ROUTINE(int, NAME##_test_all_vector,                                                     \
                  (TYPE * ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_values))     \
    SHMEM_ROUTINE(size_t, NAME##_test_any_vector,                                                  \
                  (TYPE * ivars, size_t nelems, const int *status, int cmp, TYPE *cmp_values))     \
    SHMEM_ROUTINE(size_t, NAME##_test_some_vector,                                                 \
                  (TYPE * ivars, size_t nelems, size_t * indices, const int *status, int cmp,      \
                   TYPE *cmp_values))
SHMEM_SYNC_TYPES(SHMEM_API_SYNC_SET)
#undef SHMEM_API_SYNC_SET

/* ---- Distributed locking -------------------------------------------------------------------
 * `lock` is a symmetric long, 0 on every PE before its first use and touched by nothing but
 * these routines. A lock is held by a PE, not a thread: a PE must not ask again for a lock it
 * holds or is waiting for (that is reported as an error), so threads of one PE that share a
 * lock need their own mutual exclusion as well.
 * The lock is a queue: each PE's copy of the long holds two 32-bit words (lower address first).
 * The first is used on one home PE, chosen from the lock's offset in its segment: 0 when the
 * lock is free, else 1 + the PE that asked last. The second is the PE's own place in the queue
 * (waiting and holding flags, 1 + the PE queued behind it). A free lock nobody waits for is 0
 * on every PE again. */

/* Blocks until this PE holds the lock; PEs get it in the order they asked (first come, first
 * served). Waits spin briefly, then yield, then nap. */
SHMEM_ROUTINE(void, set_lock, (long *lock))
/* Takes the lock if nobody holds it or waits for it: returns 0 when taken, 1 otherwise (also
 * when this PE already holds it). Never blocks. */
SHMEM_ROUTINE(int, test_lock, (long *lock))
/* Completes every put and AMO this PE issued (as shmem_quiet), then passes the lock to the
 * next PE waiting, or frees it. Only the PE holding the lock may clear it. */
SHMEM_ROUTINE(void, clear_lock, (long *lock))

/* ---- Profiling ---------------------------------------------------------------------------- */

/* Sets the profiling level (<= 0 off, 1 default, 2 flush, > 2 tool-defined with extra
 * arguments). The library itself keeps no profile and only records the level: the call exists
 * so that a profiling tool that defines its own shmem_pcontrol over the pshmem_* interface
 * sees it. Callable at any time, also before shmem_init. */
SHMEM_ROUTINE(void, pcontrol, (const int level, ...))
