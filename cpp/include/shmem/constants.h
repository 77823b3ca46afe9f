/*
 * shmem/constants.h: the constants and types of OpenSHMEM 1.5 that <shmem.h> and <pshmem.h>
 * share. Values the specification leaves to implementations are chosen so that 0 is never a
 * valid comparison or option, which lets argument checks catch an uninitialised value.
 */
#ifndef SHMEM_CONSTANTS_H
#define SHMEM_CONSTANTS_H

#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "shmem"

/* Library version of this implementation (not the specification's). */
#define SHMEM_LIBRARY_VERSION_MAJOR 0
#define SHMEM_LIBRARY_VERSION_MINOR 1
#define SHMEM_LIBRARY_VERSION_PATCH 0

/* Thread levels, in increasing order of support. */
#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

/* Context options (bit flags). */
#define SHMEM_CTX_SERIALIZED (1L << 0)
#define SHMEM_CTX_PRIVATE (1L << 1)
#define SHMEM_CTX_NOSTORE (1L << 2)

/* Point-to-point comparisons. */
#define SHMEM_CMP_EQ 1
#define SHMEM_CMP_NE 2
#define SHMEM_CMP_GT 3
#define SHMEM_CMP_GE 4
#define SHMEM_CMP_LT 5
#define SHMEM_CMP_LE 6

/* Signal operations. */
#define SHMEM_SIGNAL_SET 1
#define SHMEM_SIGNAL_ADD 2

/* Allocation hints for shmem_malloc_with_hints (bit flags). */
#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE (1L << 1)

/* Team configuration mask bits. */
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/* Work and synchronisation array sizes for the active-set collectives. */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 128
#define SHMEM_BCAST_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_BARRIER_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_COLLECT_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALL_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 16

/* Opaque handles. */
typedef struct shmem_ctx_s *shmem_ctx_t;
typedef struct shmem_team_s *shmem_team_t;

/* Team configuration (OpenSHMEM 1.5 §9.4). */
typedef struct {
    int num_contexts;
} shmem_team_config_t;

/* Predefined team and context handles. Each is the address of an object inside the library, so
 * it is a constant expression (usable in static initialisers); the objects' names are not API. */
#ifdef __cplusplus
extern "C" {
#endif
extern struct shmem_team_s shmem_internal_team_world;
extern struct shmem_team_s shmem_internal_team_shared;
extern struct shmem_ctx_s shmem_internal_ctx_default;
#ifdef __cplusplus
}
#endif

/* Every PE of the job. */
#define SHMEM_TEAM_WORLD (&shmem_internal_team_world)
/* The PEs that share memory with this one (those reachable with shmem_ptr): here, the PEs on
 * this node. */
#define SHMEM_TEAM_SHARED (&shmem_internal_team_shared)
/* No team: what a split returns to PEs left out of the new team. */
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
/* The context every non-ctx routine uses. */
#define SHMEM_CTX_DEFAULT (&shmem_internal_ctx_default)
/* No context. */
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)

#endif /* SHMEM_CONSTANTS_H */
