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

/* Deprecated names of the constants above (OpenSHMEM 1.3), same values. */
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

#endif /* SHMEM_CONSTANTS_H */
