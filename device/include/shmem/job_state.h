/* shmem/job_state.h: the job as the data path sees it, in plain C data.
 *
 * One instance per process, filled by the runtime (rust/core/src/job_state.rs, a #[repr(C)]
 * mirror of this struct) when the library starts and cleared when it ends. The host facade
 * reads it on every put and get; kernel-side code will read the same struct, directly on the
 * host device and from a device copy on accelerators. It holds only fixed-size fields and
 * pointers, so it can be copied as bytes; it must never include a host-only header.
 *
 * The struct may grow: fields are only ever added at its end, `size` says how many bytes the
 * filler wrote and `version` which fields it knows. The runtime checks at start-up that this
 * layout and its own agree field by field and refuses to run otherwise.
 *
 * Installed with the kernel-side API (shmem/device.h), which reads it directly; its layout is
 * still the library's own: only the kernel-side headers of the same version may read it. */
#ifndef SHMEM_JOB_STATE_H
#define SHMEM_JOB_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The address space of the arrays the pointers below lead to, as a kernel reads them: nothing,
 * except where an architecture reads a device copy of the state (shmem/arch/ascendc.h defines
 * it as __gm__ before it includes this header). It changes no layout. */
#ifndef SHMEM_JOB_GM
#define SHMEM_JOB_GM
#endif

/* Fields this header knows; raised when a field is added. */
#define SHMEM_JOB_STATE_VERSION 4u

/* How this PE reaches a peer's symmetric memory (shmem_job_state.reach). */
enum shmem_job_reach {
    SHMEM_JOB_REACH_NONE = 0,      /* not at all: every access to it is refused */
    SHMEM_JOB_REACH_MAPPED = 1,    /* mapped here: loads, stores and CPU atomics */
    SHMEM_JOB_REACH_TRANSPORT = 2, /* through `transport`; its bases in `bases` are 0 */
};

/* The words of a team's synchronisation area, one 64-byte line each (no false sharing): the
 * one layout of team areas, used by the barrier (the runtime's, for the world barrier too, whose
 * area has this layout), by the host facade's team collectives, and meant for kernel-side code.
 * The runtime reserves team_area_size bytes per slot and checks at build time that
 * SHMEM_TEAM_AREA_LINES lines fit. Epochs only grow; a split or shmemx_team_create zeroes the
 * area. */
#define SHMEM_TEAM_AREA_LINE_BYTES 64
enum shmem_job_team_area_line {
    SHMEM_TEAM_AREA_BCAST_ARRIVE = 0,    /* broadcast epoch the root has entered (on the root) */
    SHMEM_TEAM_AREA_BCAST_DONE = 1,      /* broadcast epoch this member has finished reading */
    SHMEM_TEAM_AREA_CENTRAL_COUNT = 2,   /* central barrier (on team PE 0): arrivals, then two
                                            words of the world barrier's call check */
    SHMEM_TEAM_AREA_CENTRAL_RELEASE = 3, /* central barrier: epoch released (on team PE 0);
                                            word SHMEM_TEAM_AREA_ID_WORD: the team's id */
    SHMEM_TEAM_AREA_VALUE = 4,           /* a value a member publishes between two barriers;
                                            in the world team's area (slot 0) its words 1..3
                                            are shmemx_team_create's (team.cpp) */
    SHMEM_TEAM_AREA_VALUE2 = 5,
    SHMEM_TEAM_AREA_SYNC_EPOCH = 6, /* team barriers this member has entered (its own word) */
    SHMEM_TEAM_AREA_CALL = 7,       /* the team collective this member last entered (its own
                                       line): its number on the team (bit 63 set while the line
                                       changes), 1 | checks << 8, count, extra, the routine's
                                       name (32 bytes, NUL-padded) */
    SHMEM_TEAM_AREA_ROUNDS = 8,     /* dissemination barrier: one flag per round, 32 rounds */
    SHMEM_TEAM_AREA_LINES = 40      /* lines in use */
};
/* Word of the CENTRAL_RELEASE line holding the team's id, in every member's own area: the same
 * on every member of a team, written when the team is made, and different from the id of any
 * team that used the slot before on that member. A member whose id differs from one's own has
 * left the team (destroyed it; it may use the slot for another team already). */
#define SHMEM_TEAM_AREA_ID_WORD 1

/* One entry of the team table, indexed by synchronisation slot. Team PE i is world PE
 * start + i * stride; the team's synchronisation area is `slot` on every member. size 0: the
 * slot holds no team on this PE, or a team whose PEs are a list rather than a progression
 * (shmemx_team_create), which the host API alone serves. */
typedef struct shmem_job_team {
    int32_t start;
    int32_t stride; /* negative for a team listed downwards, 0 only for a team of one PE */
    int32_t size;
    int32_t slot;
} shmem_job_team;

/* The job. Every offset and size is in bytes; every address is as mapped in this process. */
typedef struct shmem_job_state {
    uint32_t size;    /* bytes the filler wrote: its sizeof(shmem_job_state) */
    uint32_t version; /* its SHMEM_JOB_STATE_VERSION */
    int32_t my_pe;    /* -1 while the library is not running */
    int32_t n_pes;    /* 0 while the library is not running: every PE check then fails */

    /* This PE's user heap (what shmem_malloc carves). */
    uintptr_t heap_base;
    uint64_t heap_size;
    /* This PE's global and static variables (.data/.bss), whether symmetric or not. */
    uintptr_t data_base;
    uint64_t data_size;
    /* data_size when static data is symmetric in this job, else 0: the data path's one test. */
    uint64_t data_span;

    /* Per PE, 2 * n_pes entries: {user heap base, static data base} of PE p at [2p], [2p+1],
     * for puts and gets; 0 where PE p's memory is not mapped here, is reached through the
     * transport, or (static data) is not symmetric. A 0 sends the call to its cold path. */
    SHMEM_JOB_GM const uintptr_t *bases;
    /* Per PE, n_pes entries: how PE p is reached (enum shmem_job_reach). */
    SHMEM_JOB_GM const uint8_t *reach;
    /* Why a global or static variable cannot be a target (NUL-terminated; "" when it can). */
    const char *data_off_reason;

    /* Bytes before each PE's user heap, in the heap's own memory: where the kernel-side
     * synchronisation words live (their layout: shmem/device.h). The host API's words are in
     * the control segment (control_* below). */
    uint64_t reserved;
    /* Unused since version 3 (0): the world barrier's and the team areas' offsets in the heap
     * before they moved to the control segment. Kept so that no field moves. */
    uint64_t barrier_words;
    uint64_t team_areas;
    /* Bytes of one team area (a team area's layout: enum shmem_job_team_area_line). */
    uint64_t team_area_size;
    int32_t team_slots;      /* entries of `teams` */
    int32_t central_barrier; /* nonzero: barriers take the central shape */
    /* The team table: team_slots entries, indexed by slot; written by whoever makes a team. */
    SHMEM_JOB_GM shmem_job_team *teams;

    /* Version 2. The transport that reaches the PEs marked SHMEM_JOB_REACH_TRANSPORT, or NULL
     * when every PE is mapped here. Non-NULL also means every AMO goes through it, to mapped
     * PEs too: CPU atomics and a transport's atomics on one word are not atomic together. */
    const shmem_transport_ops *transport;
    /* Version 2. Laid out as `bases`: every peer's memory as mapped here, for the
     * synchronisation and collective code that reads peers' buffers in place; 0 for a PE
     * reached through the transport (this PE's own always), which is reached through the
     * transport table only. Equal to `bases` when every PE is mapped. */
    SHMEM_JOB_GM const uintptr_t *mapped_bases;
    /* Version 2. Laid out as `bases`, for AMOs and signal updates: `bases` when no transport is
     * in use, all 0 when one is, so every AMO takes its cold path to the transport. */
    SHMEM_JOB_GM const uintptr_t *amo_bases;

    /* Version 3. The control segment: one per PE in host memory, mapped by every PE of its
     * node, holding the host API's synchronisation words, so that barriers run on the CPU
     * wherever the heap lives. Per PE, n_pes entries: PE p's control segment as mapped here, 0
     * for a PE reached through the transport (its words are SHMEM_TRANSPORT_SEGMENT_CONTROL at
     * the same offsets). Team slot s's area on PE p is at control_bases[p] +
     * control_teams + s * team_area_size. */
    const uintptr_t *control_bases;
    uint64_t control_size;    /* bytes of each control segment */
    uint64_t control_state;   /* offset of a PE's state line: the last world barrier it entered
                                 and its call (written by the runtime only) */
    uint64_t control_barrier; /* offset of the world barrier's area (a team area's layout) */
    uint64_t control_teams;   /* offset of team slot 0's area */

    /* Version 4. Nonzero when the heap is device memory the CPU must not load or store: 1 on an
     * Ascend NPU (the npu device), 2 on an NVIDIA GPU (the cuda device); then `bases` and
     * `mapped_bases` hold 0 for every PE's heap, this PE's too, every heap access of the host goes
     * through `transport` (the device's copies), and heap_device_bases says where kernels and
     * shmem_ptr find the heaps. */
    int32_t heap_on_device;
    int32_t device_id; /* the device holding this PE's heap (-1: host memory) */
    /* Version 4. Per PE, n_pes entries: its user heap's base in this process's device address
     * space (what a kernel on this PE's device loads and stores); equal to the heap entries of
     * `mapped_bases` for host memory; 0 for a PE of another node. */
    const uintptr_t *heap_device_bases;

    /* Version 4. The unified-buffer scratch area through which an AscendC kernel stages its
     * copies (shmem/arch/ascendc.h), as aclshmemx_set_mte_config last set it: its offset in
     * the core's unified buffer and its bytes (both multiples of 32), and the MTE event id
     * that orders its stages (0..7). ub_size 0: never set, the architecture's default applies.
     * The CPU architecture has no unified buffer and ignores them. */
    uint64_t mte_ub_offset;
    uint32_t mte_ub_size;
    uint32_t mte_event_id;
} shmem_job_state;

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_JOB_STATE_H */
