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

/* ---- Ordering and synchronisation --------------------------------------------------------- */

/* Orders this PE's puts and AMOs to each PE: those before land before those after. */
SHMEM_ROUTINE(void, fence, (void))
/* Completes every put, AMO and non-blocking operation this PE issued. */
SHMEM_ROUTINE(void, quiet, (void))
/* shmem_quiet, then waits until every PE reaches the barrier. */
SHMEM_ROUTINE(void, barrier_all, (void))
/* Waits until every PE reaches it; completes no operations (use shmem_quiet for that). */
SHMEM_ROUTINE(void, sync_all, (void))
