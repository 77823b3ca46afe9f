/* shmem/transport.h: the table of operations through which the facade reaches a PE whose
 * memory is not mapped here (shmem_job_state.reach[pe] == SHMEM_JOB_REACH_TRANSPORT).
 *
 * The runtime picks a transport at start-up (rust/core/src/transport/), fills one table and
 * publishes it in the job state (shmem_job_state.transport); the facade calls it and never
 * learns which transport it is. A job whose peers are all mapped has no table (NULL): the data
 * path then never looks here. Addresses cross the table as a segment and an offset in it, the
 * same on every PE, so a transport translates them with the remote keys it exchanged for that
 * segment.
 *
 * Every operation returns 0, or nonzero after the transport logged the error (one line naming
 * the operation, the PE and the cause); the facade then ends the job. `ctx` is the context the
 * call was made on (NULL: the default context) and only identifies it: completion (quiet) and
 * ordering (fence) are per context.
 *
 * The table may grow: operations are only ever added at its end, `size` says how many bytes the
 * filler wrote and `version` which operations it knows. Frozen per version.
 *
 * Not installed: the layout is the library's own until a transport plug-in ABI ships. */
#ifndef SHMEM_TRANSPORT_H
#define SHMEM_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Operations this header knows; raised when one is added. */
#define SHMEM_TRANSPORT_OPS_VERSION 1u

/* The symmetric segments an address can lie in. */
enum shmem_transport_segment {
    SHMEM_TRANSPORT_SEGMENT_HEAP = 0,    /* the user heap (shmem_malloc) */
    SHMEM_TRANSPORT_SEGMENT_DATA = 1,    /* global and static variables */
    SHMEM_TRANSPORT_SEGMENT_CONTROL = 2, /* the PE's control segment */
};

/* The atomic operations (shmem_transport_ops.amo). Every one returns the old value in *fetched
 * when fetched is not NULL; SET ignores it. Values are the element's bytes in the low `size`
 * bytes (4 or 8); ADD is two's complement, so it serves signed and unsigned types alike. */
enum shmem_transport_amo_op {
    SHMEM_TRANSPORT_AMO_FETCH = 0,
    SHMEM_TRANSPORT_AMO_SET = 1,
    SHMEM_TRANSPORT_AMO_SWAP = 2,
    SHMEM_TRANSPORT_AMO_COMPARE_SWAP = 3, /* stores value where the element equals compare */
    SHMEM_TRANSPORT_AMO_FETCH_ADD = 4,
    SHMEM_TRANSPORT_AMO_FETCH_AND = 5,
    SHMEM_TRANSPORT_AMO_FETCH_OR = 6,
    SHMEM_TRANSPORT_AMO_FETCH_XOR = 7,
};

typedef struct shmem_transport_ops {
    uint32_t size;    /* bytes the filler wrote: its sizeof(shmem_transport_ops) */
    uint32_t version; /* its SHMEM_TRANSPORT_OPS_VERSION */
    const char *name; /* NUL-terminated, for messages */
    void *self;       /* passed back as the first argument of every operation */

    /* Blocking: `n` bytes between local memory and [offset, offset+n) of `segment` on `pe`.
     * A put returns when `source` may be reused, and is remotely visible after quiet on `ctx`
     * (ordered before later puts and AMOs by fence), as OpenSHMEM's put is; a get returns when
     * the data has landed here. */
    int (*put)(void *self, const void *ctx, int pe, int segment, uint64_t offset,
               const void *source, size_t n);
    int (*get)(void *self, const void *ctx, int pe, int segment, uint64_t offset, void *dest,
               size_t n);
    /* Non-blocking: the source may be reused, and the dest read, only after quiet on `ctx`. */
    int (*put_nbi)(void *self, const void *ctx, int pe, int segment, uint64_t offset,
                   const void *source, size_t n);
    int (*get_nbi)(void *self, const void *ctx, int pe, int segment, uint64_t offset, void *dest,
                   size_t n);
    /* One atomic operation (enum shmem_transport_amo_op) on a naturally aligned element of
     * `size` bytes (4 or 8); blocking. */
    int (*amo)(void *self, const void *ctx, int pe, int segment, uint64_t offset, int op,
               size_t size, uint64_t value, uint64_t compare, uint64_t *fetched);
    /* Orders the puts and AMOs issued on `ctx` to each PE before those issued after it. */
    int (*fence)(void *self, const void *ctx);
    /* Completes every operation issued on `ctx`. */
    int (*quiet)(void *self, const void *ctx);
    /* Lets the transport move data while this PE waits (called from every wait loop). */
    int (*progress)(void *self);
} shmem_transport_ops;

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_TRANSPORT_H */
