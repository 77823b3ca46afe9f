/* shmem/device.h: the kernel-side API: what a kernel calls to reach the symmetric heap.
 *
 * CANN SHMEM's kernel-side names (aclshmem_*, aclshmemx_*), so a kernel written against CANN's
 * device headers compiles here, written once over the architecture layer (shmem/arch.h: the
 * CPU one, where a kernel runs as blocks on threads launched by shmemx_cpu_launch,
 * shmem/launch.h; the AscendC one, where blocks are AI cores, shmem/arch/ascendc.h). Every
 * routine reads the plain job state (shmem/job_state.h) the kernel is given: the bases of every
 * PE's heap and static data as mapped here, how each PE is reached, the team table. Every
 * pointer to memory a kernel reaches (symmetric or not) carries SHMEM_ARCH_GM, the
 * architecture's global-memory qualifier (AscendC's __gm__, nothing on the CPU), as CANN's
 * signatures do. Nothing here includes a host header or calls into the runtime on the data
 * path; a misuse ends the job with one line naming the call, the argument and its value.
 *
 * Include it in the files that hold kernels, not together with <aclshmem.h>'s data-plane
 * declarations: several kernel-side routines share their names with CANN's host routines.
 *
 * On the CPU architecture:
 * - puts and gets are copies by the calling block, complete when they return; the _nbi forms
 *   too (quiet has nothing left to wait for but orders memory);
 * - a PE that is not mapped here (reached through a transport, or on another node) cannot be
 *   reached from a kernel yet: a call naming it ends the job with a message, never with wrong
 *   data; AMOs end the job likewise while a transport is in use (its atomics and the CPU's are
 *   not atomic together);
 * - barrier_all and sync_all take every block of every PE: the blocks of a PE meet, block 0
 *   runs a dissemination barrier among the PEs on words of the heap's reserved prefix (below),
 *   then the blocks are released.
 * On the AscendC architecture the same holds, by other means: puts and gets are the core's MTE
 * copies staged through the unified buffer, complete when they return; AMOs are AscendC's
 * atomics on global memory, and the blocks of a PE meet with SyncAll; a misuse prints its line
 * and traps the core.
 * On the CUDA architecture (shmem/arch/cuda.h) the routines are called by threads, as
 * NVSHMEM's: the plain forms are the calling thread's, the _warp and _block forms (below) are
 * called by every thread of a full warp or of the block with the same arguments and the group
 * shares the copy. Signals are released and acquired at system scope, AMOs are CUDA's system
 * atomics between full fences, quiet and fence are __threadfence_system. The barriers are
 * called by every thread of every block, and every block of the launch must be resident at
 * once: launch with cudaLaunchCooperativeKernel, or with no more blocks than fit on the GPU
 * together (NVSHMEM's rule for kernels that synchronise across PEs). A misuse prints its line
 * with the device printf and traps. */
#ifndef SHMEM_DEVICE_H
#define SHMEM_DEVICE_H

#ifdef ACLSHMEM_H
#error                                                                                             \
    "shmem/device.h (kernel-side) and <aclshmem.h> (host data plane) declare the same CANN names: include them in different files (the kernel's file includes shmem/device.h and shmem/launch.h)"
#endif

#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "cann_types.h"
#include "job_state.h"

/* Every routine here is static inline (no symbol, no language linkage to match), so C++ may
 * add overloads; only the calls into libshmem.so are declared with C linkage. */

/* CANN's constants (its values): signal updates and wait comparisons. */
#ifndef ACLSHMEM_SIGNAL_SET
#define ACLSHMEM_SIGNAL_SET 0
#define ACLSHMEM_SIGNAL_ADD 1
#endif
#ifndef ACLSHMEM_CMP_EQ
#define ACLSHMEM_CMP_EQ 0
#define ACLSHMEM_CMP_NE 1
#define ACLSHMEM_CMP_GT 2
#define ACLSHMEM_CMP_GE 3
#define ACLSHMEM_CMP_LT 4
#define ACLSHMEM_CMP_LE 5
#endif

/* A team, kernel-side: its slot in the job state's team table; the world is slot 0. */
typedef int aclshmem_team_t;
#ifndef ACLSHMEM_TEAM_WORLD
#define ACLSHMEM_TEAM_WORLD 0
#endif

/* 2-byte floating-point element types of CANN's type set. Only moved, never computed on, by
 * the routines here: the architecture's (AscendC's half and bfloat16_t), else the compiler's
 * types where it has them, else their bits. */
#if defined(SHMEM_ARCH_HALF)
typedef SHMEM_ARCH_HALF shmem_half_t;
#elif defined(__FLT16_MAX__)
typedef _Float16 shmem_half_t;
#else
typedef uint16_t shmem_half_t;
#endif
#if defined(SHMEM_ARCH_BFLOAT16)
typedef SHMEM_ARCH_BFLOAT16 shmem_bfloat16_t;
#elif defined(__BFLT16_MAX__)
typedef __bf16 shmem_bfloat16_t;
#else
typedef uint16_t shmem_bfloat16_t;
#endif

/* ---- Layout of the kernel-side words in the heap's reserved prefix --------------------------
 * Each PE's heap segment starts with `reserved` bytes before its user heap, in the same memory
 * as the data (so an accelerator's kernel reaches them where it reaches the data, unlike the
 * host control segment, which is host memory). The kernel-side barrier owns its first lines:
 * line 0, the PE-level barriers this PE has entered (written by its block 0 only); line 1 + r,
 * round r's flag of the dissemination barrier, written by the one PE that signals this PE in
 * round r. Epochs only grow, so a flag is compared, never reset. Then two lines per team slot s,
 * used on the team's PE 0 only: the arrivals at the team's current barrier (0 between
 * barriers: the last to arrive resets it) and the barriers completed. Neither depends on which
 * team held the slot before, so a slot needs no reset when a split reuses it. */
#define SHMEM_DEVICE_LINE 64u
#define SHMEM_DEVICE_BARRIER_EPOCH 0u
#define SHMEM_DEVICE_BARRIER_ROUND0 1u
#define SHMEM_DEVICE_BARRIER_ROUNDS 32u
#define SHMEM_DEVICE_TEAM_COUNT(slot) (1u + SHMEM_DEVICE_BARRIER_ROUNDS + 2u * (unsigned)(slot))
#define SHMEM_DEVICE_TEAM_RELEASE(slot) (SHMEM_DEVICE_TEAM_COUNT(slot) + 1u)
/* Bytes of the prefix in use for a job of `slots` team slots. */
#define SHMEM_DEVICE_RESERVED_USED(slots) (SHMEM_DEVICE_LINE * SHMEM_DEVICE_TEAM_COUNT(slots))

/* ---- Address translation ------------------------------------------------------------------ */

/* Why a translation failed, decided off the hot path. */
SHMEM_ARCH_COLD void shmem_device_miss_(SHMEM_ARCH_GM const shmem_job_state *job, const char *call,
                                        const char *arg, SHMEM_ARCH_GM const void *addr, int pe,
                                        int amo) {
    if ((unsigned)pe >= (unsigned)job->n_pes) {
        shmem_arch_fail(call, "pe", pe, "is not a PE of the job");
    }
    if (job->reach[pe] != SHMEM_JOB_REACH_MAPPED) {
        shmem_arch_fail(call, "pe", pe,
                        "is not mapped here (reached through a transport or not at all); "
                        "kernel-side calls reach mapped PEs only");
    }
    if (amo) {
        shmem_arch_fail(call, "pe", pe,
                        "AMOs go through the transport in this job; kernel-side AMOs "
                        "need every PE mapped and no transport");
    }
    shmem_arch_fail_addr(call, arg, addr,
                         "is not a symmetric address (heap or symmetric static data)");
}

/* [addr, addr + n) of `pe` as mapped here, in the view `bases` (laid out as the job state's
 * `bases`); 0 when it is not symmetric or the view has no base for it. */
SHMEM_ARCH_INLINE SHMEM_ARCH_GM char *shmem_device_translate_(
    SHMEM_ARCH_GM const shmem_job_state *job, SHMEM_ARCH_GM const uintptr_t *bases,
    SHMEM_ARCH_GM const void *addr, size_t n, int pe) {
    uintptr_t a = (uintptr_t)addr;
    uintptr_t heap_off = a - job->heap_base;
    uintptr_t data_off = a - job->data_base;
    int in_heap = heap_off <= job->heap_size && n <= job->heap_size - heap_off;
    int in_data = data_off <= job->data_span && n <= job->data_span - data_off;
    if (!(in_heap | in_data) || (unsigned)pe >= (unsigned)job->n_pes)
        return (SHMEM_ARCH_GM char *)0;
    uintptr_t base = bases[2 * (size_t)pe + (in_heap ? 0 : 1)];
    if (base == 0 || job->reach[pe] != SHMEM_JOB_REACH_MAPPED) return (SHMEM_ARCH_GM char *)0;
    return (SHMEM_ARCH_GM char *)(base + (in_heap ? heap_off : data_off));
}

/* Where the calling block reaches [addr, addr + n) of `pe`; ends the job when it cannot. */
SHMEM_ARCH_INLINE SHMEM_ARCH_GM char *shmem_device_remote_(const char *call, const char *arg,
                                                           SHMEM_ARCH_GM const void *addr, size_t n,
                                                           int pe) {
    SHMEM_ARCH_GM const shmem_job_state *job = shmem_arch_job(call);
    SHMEM_ARCH_GM char *to = shmem_device_translate_(job, job->bases, addr, n, pe);
    if (__builtin_expect(to == (SHMEM_ARCH_GM char *)0, 0))
        shmem_device_miss_(job, call, arg, addr, pe, 0);
    return to;
}

/* As shmem_device_remote_, for an AMO or a signal update. */
SHMEM_ARCH_INLINE SHMEM_ARCH_GM char *shmem_device_amo_remote_(const char *call, const char *arg,
                                                               SHMEM_ARCH_GM const void *addr,
                                                               size_t n, int pe) {
    SHMEM_ARCH_GM const shmem_job_state *job = shmem_arch_job(call);
    SHMEM_ARCH_GM char *to = shmem_device_translate_(job, job->amo_bases, addr, n, pe);
    if (__builtin_expect(to == (SHMEM_ARCH_GM char *)0, 0)) {
        shmem_device_miss_(job, call, arg, addr, pe, job->bases != job->amo_bases);
    }
    return to;
}

/* ---- PEs, teams, blocks ------------------------------------------------------------------- */

/* This PE's number in the world. */
SHMEM_ARCH_INLINE int aclshmem_my_pe(void) { return shmem_arch_job("aclshmem_my_pe")->my_pe; }
/* PEs of the job. */
SHMEM_ARCH_INLINE int aclshmem_n_pes(void) { return shmem_arch_job("aclshmem_n_pes")->n_pes; }
/* The calling block's index in the current kernel, and the kernel's block count. */
SHMEM_ARCH_INLINE int aclshmemx_block_idx(void) { return (int)shmem_arch_block_idx(); }
SHMEM_ARCH_INLINE int aclshmemx_block_num(void) { return (int)shmem_arch_block_num(); }

/* The team table's entry for `team`, or 0 when the slot holds no team on this PE. */
SHMEM_ARCH_INLINE SHMEM_ARCH_GM const shmem_job_team *shmem_device_team_(
    SHMEM_ARCH_GM const shmem_job_state *job, aclshmem_team_t team) {
    if (team < 0 || team >= job->team_slots || job->teams == 0) return 0;
    SHMEM_ARCH_GM const shmem_job_team *t = &job->teams[team];
    return t->size > 0 ? t : 0;
}

/* `world_pe`'s number in team `t`, or -1 when it is not a member. */
SHMEM_ARCH_INLINE int shmem_device_team_rank_(SHMEM_ARCH_GM const shmem_job_team *t, int world_pe) {
    if (t->stride == 0) return world_pe == t->start ? 0 : -1;
    int d = world_pe - t->start;
    if (d % t->stride != 0) return -1;
    int i = d / t->stride;
    return i >= 0 && i < t->size ? i : -1;
}

/* This PE's number in `team`; -1 when it is not a member or the team is not valid here. */
SHMEM_ARCH_INLINE int aclshmem_team_my_pe(aclshmem_team_t team) {
    SHMEM_ARCH_GM const shmem_job_state *job = shmem_arch_job("aclshmem_team_my_pe");
    SHMEM_ARCH_GM const shmem_job_team *t = shmem_device_team_(job, team);
    return t ? shmem_device_team_rank_(t, job->my_pe) : -1;
}

/* PEs in `team`; -1 when the team is not valid here. */
SHMEM_ARCH_INLINE int aclshmem_team_n_pes(aclshmem_team_t team) {
    SHMEM_ARCH_GM const shmem_job_team *t =
        shmem_device_team_(shmem_arch_job("aclshmem_team_n_pes"), team);
    return t ? t->size : -1;
}

/* PE `src_pe` of `src_team` as numbered in `dest_team`; -1 when it is not a member of
 * `dest_team` or either team is not valid here. */
SHMEM_ARCH_INLINE int aclshmem_team_translate_pe(aclshmem_team_t src_team, int src_pe,
                                                 aclshmem_team_t dest_team) {
    SHMEM_ARCH_GM const shmem_job_state *job = shmem_arch_job("aclshmem_team_translate_pe");
    SHMEM_ARCH_GM const shmem_job_team *s = shmem_device_team_(job, src_team);
    SHMEM_ARCH_GM const shmem_job_team *d = shmem_device_team_(job, dest_team);
    if (!s || !d || src_pe < 0 || src_pe >= s->size) return -1;
    return shmem_device_team_rank_(d, s->start + src_pe * s->stride);
}

/* ---- Pointers, put and get ---------------------------------------------------------------- */

/* 1 when a put or get of `n` bytes has nothing to move: no bytes touch nothing, whatever the
 * addresses (NULL too, as OpenSHMEM allows), but `pe` must still be a PE of the job. */
SHMEM_ARCH_INLINE int shmem_device_no_bytes_(const char *call, size_t n, int pe) {
    if (n != 0) return 0;
    SHMEM_ARCH_GM const shmem_job_state *job = shmem_arch_job(call);
    if ((unsigned)pe >= (unsigned)job->n_pes)
        shmem_arch_fail(call, "pe", pe, "is not a PE of the job");
    return 1;
}

/* The copy of every put and get form: `n` bytes to symmetric `dst` on `pe` / from symmetric
 * `src` on `pe`, named `call` in a failure. */
SHMEM_ARCH_INLINE void shmem_device_put_(const char *call, SHMEM_ARCH_GM void *dst,
                                         SHMEM_ARCH_GM const void *src, size_t n, int pe) {
    if (shmem_device_no_bytes_(call, n, pe)) return;
    shmem_arch_copy(shmem_device_remote_(call, "dst", dst, n, pe), src, n);
}
SHMEM_ARCH_INLINE void shmem_device_get_(const char *call, SHMEM_ARCH_GM void *dst,
                                         SHMEM_ARCH_GM const void *src, size_t n, int pe) {
    if (shmem_device_no_bytes_(call, n, pe)) return;
    shmem_arch_copy(dst, shmem_device_remote_(call, "src", src, n, pe), n);
}

/* Where the calling block may load and store `ptr` of `pe`, or NULL when `pe` is not mapped
 * here (or `ptr` is not symmetric). */
SHMEM_ARCH_INLINE SHMEM_ARCH_GM void *aclshmem_ptr(SHMEM_ARCH_GM const void *ptr, int pe) {
    SHMEM_ARCH_GM const shmem_job_state *job = shmem_arch_job("aclshmem_ptr");
    return shmem_device_translate_(job, job->bases, ptr, 1, pe);
}

/* Copies `bytes` bytes from `src` (local) to symmetric `dst` on `pe`; returns once `dst` holds
 * them. `src` and the destination must not overlap. */
SHMEM_ARCH_INLINE void aclshmem_putmem(SHMEM_ARCH_GM void *dst, SHMEM_ARCH_GM const void *src,
                                       size_t bytes, int pe) {
    shmem_device_put_("aclshmem_putmem", dst, src, bytes, pe);
}
/* Copies `bytes` bytes from symmetric `src` on `pe` to `dst` (local); returns with them in
 * `dst`. */
SHMEM_ARCH_INLINE void aclshmem_getmem(SHMEM_ARCH_GM void *dst, SHMEM_ARCH_GM const void *src,
                                       size_t bytes, int pe) {
    shmem_device_get_("aclshmem_getmem", dst, src, bytes, pe);
}
/* Non-blocking forms: complete at the next quiet (on the CPU, at once). */
SHMEM_ARCH_INLINE void aclshmem_putmem_nbi(SHMEM_ARCH_GM void *dst, SHMEM_ARCH_GM const void *src,
                                           size_t bytes, int pe) {
    shmem_device_put_("aclshmem_putmem_nbi", dst, src, bytes, pe);
}
SHMEM_ARCH_INLINE void aclshmem_getmem_nbi(SHMEM_ARCH_GM void *dst, SHMEM_ARCH_GM const void *src,
                                           size_t bytes, int pe) {
    shmem_device_get_("aclshmem_getmem_nbi", dst, src, bytes, pe);
}

/* Every put, get, AMO and signal update of the calling block is complete and visible to every
 * PE before any later one. */
SHMEM_ARCH_INLINE void aclshmem_quiet(void) { shmem_arch_fence_system(); }
/* Puts, AMOs and signal updates of the calling block to one PE are delivered in order. */
SHMEM_ARCH_INLINE void aclshmem_fence(void) { shmem_arch_fence_system(); }

/* Typed forms over CANN's kernel-side types (SHMEM_DEVICE_RMA_TYPES, shmem/cann_types.h: half,
 * bfloat16, float, double, char, int8 .. uint64): `nelems` elements; p and g move one. */
#define SHMEM_DEVICE_RMA_(NAME, T)                                                                 \
    SHMEM_ARCH_INLINE void aclshmem_put_##NAME##_mem(                                              \
        SHMEM_ARCH_GM T *dst, SHMEM_ARCH_GM const T *src, size_t nelems, int pe) {                 \
        shmem_device_put_("aclshmem_put_" #NAME "_mem", dst, src, nelems * sizeof(T), pe);         \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmem_get_##NAME##_mem(                                              \
        SHMEM_ARCH_GM T *dst, SHMEM_ARCH_GM const T *src, size_t nelems, int pe) {                 \
        shmem_device_get_("aclshmem_get_" #NAME "_mem", dst, src, nelems * sizeof(T), pe);         \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmem_put_##NAME##_mem_nbi(                                          \
        SHMEM_ARCH_GM T *dst, SHMEM_ARCH_GM const T *src, size_t nelems, int pe) {                 \
        shmem_device_put_("aclshmem_put_" #NAME "_mem_nbi", dst, src, nelems * sizeof(T), pe);     \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmem_get_##NAME##_mem_nbi(                                          \
        SHMEM_ARCH_GM T *dst, SHMEM_ARCH_GM const T *src, size_t nelems, int pe) {                 \
        shmem_device_get_("aclshmem_get_" #NAME "_mem_nbi", dst, src, nelems * sizeof(T), pe);     \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmem_##NAME##_p(SHMEM_ARCH_GM T *dst, T value, int pe) {            \
        SHMEM_ARCH_STORE_ELEM((SHMEM_ARCH_GM T *)shmem_device_remote_("aclshmem_" #NAME "_p",      \
                                                                      "dst", dst, sizeof(T), pe),  \
                              value);                                                              \
    }                                                                                              \
    SHMEM_ARCH_INLINE T aclshmem_##NAME##_g(SHMEM_ARCH_GM const T *src, int pe) {                  \
        return SHMEM_ARCH_LOAD_ELEM((SHMEM_ARCH_GM const T *)shmem_device_remote_(                 \
            "aclshmem_" #NAME "_g", "src", src, sizeof(T), pe));                                   \
    }

SHMEM_DEVICE_RMA_TYPES(SHMEM_DEVICE_RMA_)

/* Strided forms: element i goes from source[i * sst] to dest[i * dst] (strides in elements, at
 * least 1). */
#define SHMEM_DEVICE_STRIDED_(NAME, T)                                                             \
    SHMEM_ARCH_INLINE void aclshmem_##NAME##_iput(SHMEM_ARCH_GM T *dest,                           \
                                                  SHMEM_ARCH_GM const T *source, ptrdiff_t dst,    \
                                                  ptrdiff_t sst, size_t nelems, int pe) {          \
        if (nelems == 0) return;                                                                   \
        if (dst < 1) shmem_arch_fail("aclshmem_" #NAME "_iput", "dst", dst, "is not >= 1");        \
        if (sst < 1) shmem_arch_fail("aclshmem_" #NAME "_iput", "sst", sst, "is not >= 1");        \
        size_t span = ((nelems - 1) * (size_t)dst + 1) * sizeof(T);                                \
        SHMEM_ARCH_GM T *to = (SHMEM_ARCH_GM T *)shmem_device_remote_("aclshmem_" #NAME "_iput",   \
                                                                      "dest", dest, span, pe);     \
        for (size_t i = 0; i < nelems; i++) {                                                      \
            SHMEM_ARCH_STORE_ELEM(&to[i * (size_t)dst],                                            \
                                  SHMEM_ARCH_LOAD_ELEM(&source[i * (size_t)sst]));                 \
        }                                                                                          \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmem_##NAME##_iget(SHMEM_ARCH_GM T *dest,                           \
                                                  SHMEM_ARCH_GM const T *source, ptrdiff_t dst,    \
                                                  ptrdiff_t sst, size_t nelems, int pe) {          \
        if (nelems == 0) return;                                                                   \
        if (dst < 1) shmem_arch_fail("aclshmem_" #NAME "_iget", "dst", dst, "is not >= 1");        \
        if (sst < 1) shmem_arch_fail("aclshmem_" #NAME "_iget", "sst", sst, "is not >= 1");        \
        size_t span = ((nelems - 1) * (size_t)sst + 1) * sizeof(T);                                \
        SHMEM_ARCH_GM const T *from = (SHMEM_ARCH_GM const T *)shmem_device_remote_(               \
            "aclshmem_" #NAME "_iget", "source", source, span, pe);                                \
        for (size_t i = 0; i < nelems; i++) {                                                      \
            SHMEM_ARCH_STORE_ELEM(&dest[i * (size_t)dst],                                          \
                                  SHMEM_ARCH_LOAD_ELEM(&from[i * (size_t)sst]));                   \
        }                                                                                          \
    }

SHMEM_DEVICE_RMA_TYPES(SHMEM_DEVICE_STRIDED_)

/* ---- Point-to-point waits on local words ---------------------------------------------------
 * On the integer types (SHMEM_DEVICE_WAIT_TYPES, shmem/cann_types.h); `ivar` is this PE's own
 * symmetric word, written by peers' puts or AMOs. */

SHMEM_ARCH_COLD void shmem_device_bad_cmp_(const char *call, int cmp) {
    shmem_arch_fail(call, "cmp", cmp, "is not one of ACLSHMEM_CMP_EQ .. ACLSHMEM_CMP_LE");
}

#define SHMEM_DEVICE_WAIT_(NAME, T)                                                                \
    SHMEM_ARCH_INLINE int shmem_device_holds_##NAME##_(const char *call, T v, int cmp,             \
                                                       T cmp_value) {                              \
        switch (cmp) {                                                                             \
        case ACLSHMEM_CMP_EQ: return v == cmp_value;                                               \
        case ACLSHMEM_CMP_NE: return v != cmp_value;                                               \
        case ACLSHMEM_CMP_GT: return v > cmp_value;                                                \
        case ACLSHMEM_CMP_GE: return v >= cmp_value;                                               \
        case ACLSHMEM_CMP_LT: return v < cmp_value;                                                \
        case ACLSHMEM_CMP_LE: return v <= cmp_value;                                               \
        default: shmem_device_bad_cmp_(call, cmp);                                                 \
        }                                                                                          \
    }                                                                                              \
    /* Blocks until `*ivar cmp cmp_value` holds. */                                                \
    SHMEM_ARCH_INLINE void aclshmem_##NAME##_wait_until(SHMEM_ARCH_GM T *ivar, int cmp,            \
                                                        T cmp_value) {                             \
        const char *call = "aclshmem_" #NAME "_wait_until";                                        \
        (void)shmem_arch_job(call);                                                                \
        shmem_arch_wait wait = SHMEM_ARCH_WAIT_INIT;                                               \
        while (                                                                                    \
            !shmem_device_holds_##NAME##_(call, SHMEM_ARCH_LOAD_ACQUIRE(ivar), cmp, cmp_value)) {  \
            shmem_arch_spin(&wait);                                                                \
        }                                                                                          \
    }                                                                                              \
    /* Blocks until `*ivar` differs from `cmp_value`. */                                           \
    SHMEM_ARCH_INLINE void aclshmem_##NAME##_wait(SHMEM_ARCH_GM T *ivar, T cmp_value) {            \
        (void)shmem_arch_job("aclshmem_" #NAME "_wait");                                           \
        shmem_arch_wait wait = SHMEM_ARCH_WAIT_INIT;                                               \
        while (SHMEM_ARCH_LOAD_ACQUIRE(ivar) == cmp_value) shmem_arch_spin(&wait);                 \
    }                                                                                              \
    /* 1 when `*ivar cmp cmp_value` holds now, else 0; never blocks. */                            \
    SHMEM_ARCH_INLINE int aclshmem_##NAME##_test(SHMEM_ARCH_GM T *ivar, int cmp, T cmp_value) {    \
        const char *call = "aclshmem_" #NAME "_test";                                              \
        (void)shmem_arch_job(call);                                                                \
        return shmem_device_holds_##NAME##_(call, SHMEM_ARCH_LOAD_ACQUIRE(ivar), cmp, cmp_value);  \
    }

SHMEM_DEVICE_WAIT_TYPES(SHMEM_DEVICE_WAIT_)

/* ---- AMOs ----------------------------------------------------------------------------------
 * On 4- and 8-byte integers, atomic with every other kernel-side AMO on the same word, from any
 * block of any PE. NAME, TYPE, the arch's word suffix, its unsigned type. */
#define SHMEM_DEVICE_AMO_TYPES(X)                                                                  \
    X(int32, int32_t, u32, uint32_t)                                                               \
    X(int64, int64_t, u64, uint64_t)                                                               \
    X(uint32, uint32_t, u32, uint32_t)                                                             \
    X(uint64, uint64_t, u64, uint64_t)

#define SHMEM_DEVICE_AMO_(NAME, T, W, U)                                                           \
    SHMEM_ARCH_INLINE SHMEM_ARCH_GM U *shmem_device_amo_##NAME##_(const char *call,                \
                                                                  SHMEM_ARCH_GM T *dst, int pe) {  \
        return (SHMEM_ARCH_GM U *)shmem_device_amo_remote_(call, "dst", dst, sizeof(T), pe);       \
    }                                                                                              \
    SHMEM_ARCH_INLINE T aclshmem_##NAME##_atomic_fetch_add(SHMEM_ARCH_GM T *dst, T value,          \
                                                           int pe) {                               \
        SHMEM_ARCH_GM U *p =                                                                       \
            shmem_device_amo_##NAME##_("aclshmem_" #NAME "_atomic_fetch_add", dst, pe);            \
        return (T)shmem_arch_fetch_add_##W(p, (U)value);                                           \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmem_##NAME##_atomic_add(SHMEM_ARCH_GM T *dst, T value, int pe) {   \
        SHMEM_ARCH_GM U *p = shmem_device_amo_##NAME##_("aclshmem_" #NAME "_atomic_add", dst, pe); \
        (void)shmem_arch_fetch_add_##W(p, (U)value);                                               \
    }                                                                                              \
    SHMEM_ARCH_INLINE T aclshmem_##NAME##_atomic_fetch_inc(SHMEM_ARCH_GM T *dst, int pe) {         \
        SHMEM_ARCH_GM U *p =                                                                       \
            shmem_device_amo_##NAME##_("aclshmem_" #NAME "_atomic_fetch_inc", dst, pe);            \
        return (T)shmem_arch_fetch_add_##W(p, (U)1);                                               \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmem_##NAME##_atomic_inc(SHMEM_ARCH_GM T *dst, int pe) {            \
        SHMEM_ARCH_GM U *p = shmem_device_amo_##NAME##_("aclshmem_" #NAME "_atomic_inc", dst, pe); \
        (void)shmem_arch_fetch_add_##W(p, (U)1);                                                   \
    }                                                                                              \
    SHMEM_ARCH_INLINE T aclshmem_##NAME##_atomic_fetch(SHMEM_ARCH_GM const T *src, int pe) {       \
        SHMEM_ARCH_GM U *p = shmem_device_amo_##NAME##_("aclshmem_" #NAME "_atomic_fetch",         \
                                                        (SHMEM_ARCH_GM T *)src, pe);               \
        return (T)shmem_arch_load_##W(p);                                                          \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmem_##NAME##_atomic_set(SHMEM_ARCH_GM T *dst, T value, int pe) {   \
        SHMEM_ARCH_GM U *p = shmem_device_amo_##NAME##_("aclshmem_" #NAME "_atomic_set", dst, pe); \
        shmem_arch_store_##W(p, (U)value);                                                         \
    }                                                                                              \
    SHMEM_ARCH_INLINE T aclshmem_##NAME##_atomic_swap(SHMEM_ARCH_GM T *dst, T value, int pe) {     \
        SHMEM_ARCH_GM U *p =                                                                       \
            shmem_device_amo_##NAME##_("aclshmem_" #NAME "_atomic_swap", dst, pe);                 \
        return (T)shmem_arch_swap_##W(p, (U)value);                                                \
    }                                                                                              \
    /* Stores `value` where the word equals `cond`; returns the word's old value. */               \
    SHMEM_ARCH_INLINE T aclshmem_##NAME##_atomic_compare_swap(SHMEM_ARCH_GM T *dst, T cond,        \
                                                              T value, int pe) {                   \
        SHMEM_ARCH_GM U *p =                                                                       \
            shmem_device_amo_##NAME##_("aclshmem_" #NAME "_atomic_compare_swap", dst, pe);         \
        return (T)shmem_arch_cas_##W(p, (U)cond, (U)value);                                        \
    }                                                                                              \
    SHMEM_DEVICE_AMO_BIT_(NAME, T, W, U, and)                                                      \
    SHMEM_DEVICE_AMO_BIT_(NAME, T, W, U, or)                                                       \
    SHMEM_DEVICE_AMO_BIT_(NAME, T, W, U, xor)

#define SHMEM_DEVICE_AMO_BIT_(NAME, T, W, U, OP)                                                   \
    SHMEM_ARCH_INLINE T aclshmem_##NAME##_atomic_fetch_##OP(SHMEM_ARCH_GM T *dst, T value,         \
                                                            int pe) {                              \
        SHMEM_ARCH_GM U *p =                                                                       \
            shmem_device_amo_##NAME##_("aclshmem_" #NAME "_atomic_fetch_" #OP, dst, pe);           \
        return (T)shmem_arch_fetch_##OP##_##W(p, (U)value);                                        \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmem_##NAME##_atomic_##OP(SHMEM_ARCH_GM T *dst, T value, int pe) {  \
        SHMEM_ARCH_GM U *p =                                                                       \
            shmem_device_amo_##NAME##_("aclshmem_" #NAME "_atomic_" #OP, dst, pe);                 \
        (void)shmem_arch_fetch_##OP##_##W(p, (U)value);                                            \
    }

SHMEM_DEVICE_AMO_TYPES(SHMEM_DEVICE_AMO_)

/* ---- Signals -------------------------------------------------------------------------------
 * CANN's signals are int32_t words, OpenSHMEM's uint64_t ones; both updated with
 * ACLSHMEM_SIGNAL_SET or ACLSHMEM_SIGNAL_ADD and waited on with the ACLSHMEM_CMP_* operators. A
 * PE that sees a signal's new value also sees the data put before it. */

SHMEM_ARCH_COLD void shmem_device_bad_op_(const char *call, const char *arg, int value) {
    shmem_arch_fail(call, arg, value, "is not a valid operator here");
}

#define SHMEM_DEVICE_SIGNAL_(SUFFIX, T, W, U)                                                      \
    SHMEM_ARCH_INLINE void shmem_device_signal_##W##_(const char *call, SHMEM_ARCH_GM T *sig_addr, \
                                                      T signal, int sig_op, int pe) {              \
        SHMEM_ARCH_GM U *p = (SHMEM_ARCH_GM U *)shmem_device_amo_remote_(call, "sig_addr",         \
                                                                         sig_addr, sizeof(T), pe); \
        if (sig_op == ACLSHMEM_SIGNAL_SET) {                                                       \
            shmem_arch_store_release_##W(p, (U)signal);                                            \
        } else if (sig_op == ACLSHMEM_SIGNAL_ADD) {                                                \
            (void)shmem_arch_fetch_add_##W(p, (U)signal);                                          \
        } else {                                                                                   \
            shmem_device_bad_op_(call, "sig_op", sig_op);                                          \
        }                                                                                          \
    }                                                                                              \
    SHMEM_ARCH_INLINE int shmem_device_cmp_##W##_(const char *call, T v, int cmp, T cmp_val) {     \
        switch (cmp) {                                                                             \
        case ACLSHMEM_CMP_EQ: return v == cmp_val;                                                 \
        case ACLSHMEM_CMP_NE: return v != cmp_val;                                                 \
        case ACLSHMEM_CMP_GT: return v > cmp_val;                                                  \
        case ACLSHMEM_CMP_GE: return v >= cmp_val;                                                 \
        case ACLSHMEM_CMP_LT: return v < cmp_val;                                                  \
        case ACLSHMEM_CMP_LE: return v <= cmp_val;                                                 \
        default: shmem_device_bad_op_(call, "cmp", cmp);                                           \
        }                                                                                          \
    }                                                                                              \
    /* Blocks until the local `sig_addr` compares true with `cmp_val`; returns the value seen. */  \
    SHMEM_ARCH_INLINE T shmem_device_wait_##W##_(const char *call, SHMEM_ARCH_GM T *sig_addr,      \
                                                 int cmp, T cmp_val) {                             \
        (void)shmem_arch_job(call);                                                                \
        shmem_arch_wait wait = SHMEM_ARCH_WAIT_INIT;                                               \
        for (;;) {                                                                                 \
            T v = (T)shmem_arch_load_acquire_##W((SHMEM_ARCH_GM const U *)sig_addr);               \
            if (shmem_device_cmp_##W##_(call, v, cmp, cmp_val)) return v;                          \
            shmem_arch_spin(&wait);                                                                \
        }                                                                                          \
    }

SHMEM_DEVICE_SIGNAL_(i32, int32_t, u32, uint32_t)
SHMEM_DEVICE_SIGNAL_(u64, uint64_t, u64, uint64_t)

/* Updates `sig_addr` on `pe` with `signal` (CANN's int32_t signal). */
SHMEM_ARCH_INLINE void aclshmemx_signal_op(SHMEM_ARCH_GM int32_t *sig_addr, int32_t signal,
                                           int sig_op, int pe) {
    shmem_device_signal_u32_("aclshmemx_signal_op", sig_addr, signal, sig_op, pe);
}
/* Puts `bytes` bytes to `dst` on `pe`, then updates its `sig_addr` with `signal`. */
SHMEM_ARCH_INLINE void aclshmem_putmem_signal(SHMEM_ARCH_GM void *dst,
                                              SHMEM_ARCH_GM const void *src, size_t bytes,
                                              SHMEM_ARCH_GM int32_t *sig_addr, int32_t signal,
                                              int sig_op, int pe) {
    shmem_device_put_("aclshmem_putmem_signal", dst, src, bytes, pe);
    shmem_device_signal_u32_("aclshmem_putmem_signal", sig_addr, signal, sig_op, pe);
}
SHMEM_ARCH_INLINE void aclshmem_putmem_signal_nbi(SHMEM_ARCH_GM void *dst,
                                                  SHMEM_ARCH_GM const void *src, size_t bytes,
                                                  SHMEM_ARCH_GM int32_t *sig_addr, int32_t signal,
                                                  int sig_op, int pe) {
    shmem_device_put_("aclshmem_putmem_signal_nbi", dst, src, bytes, pe);
    shmem_device_signal_u32_("aclshmem_putmem_signal_nbi", sig_addr, signal, sig_op, pe);
}
/* Blocks until the local int32_t `sig_addr` compares true with `cmp_val`; returns its value. */
SHMEM_ARCH_INLINE int32_t aclshmem_signal_wait_until(SHMEM_ARCH_GM int32_t *sig_addr, int cmp,
                                                     int32_t cmp_val) {
    return shmem_device_wait_u32_("aclshmem_signal_wait_until", sig_addr, cmp, cmp_val);
}

/* OpenSHMEM's uint64_t signals: the same operations. */
SHMEM_ARCH_INLINE void aclshmemx_signal_op_u64(SHMEM_ARCH_GM uint64_t *sig_addr, uint64_t signal,
                                               int sig_op, int pe) {
    shmem_device_signal_u64_("aclshmemx_signal_op_u64", sig_addr, signal, sig_op, pe);
}
SHMEM_ARCH_INLINE void aclshmemx_putmem_signal_u64(SHMEM_ARCH_GM void *dst,
                                                   SHMEM_ARCH_GM const void *src, size_t bytes,
                                                   SHMEM_ARCH_GM uint64_t *sig_addr,
                                                   uint64_t signal, int sig_op, int pe) {
    shmem_device_put_("aclshmemx_putmem_signal_u64", dst, src, bytes, pe);
    shmem_device_signal_u64_("aclshmemx_putmem_signal_u64", sig_addr, signal, sig_op, pe);
}
SHMEM_ARCH_INLINE uint64_t aclshmemx_signal_fetch_u64(SHMEM_ARCH_GM const uint64_t *sig_addr) {
    (void)shmem_arch_job("aclshmemx_signal_fetch_u64");
    return shmem_arch_load_acquire_u64(sig_addr);
}
SHMEM_ARCH_INLINE uint64_t aclshmemx_signal_wait_until_u64(SHMEM_ARCH_GM uint64_t *sig_addr,
                                                           int cmp, uint64_t cmp_val) {
    return shmem_device_wait_u64_("aclshmemx_signal_wait_until_u64", sig_addr, cmp, cmp_val);
}

/* ---- Scoped forms: a warp's, a block's ---------------------------------------------------
 * NVSHMEM's _warp and _block forms of put and get: every thread of the calling group (a full
 * warp, or every thread of the block) calls with the same arguments, and returns when the copy
 * is complete for all of them. On CUDA the group's threads share the bytes; where a block is
 * one thread (the CPU, an AscendC core) the group is the calling thread and a scoped form is
 * the plain one. The _nbi forms complete at the next quiet, as the thread's do. The signal
 * forms update the signal once, from the group's leader, after the whole group's data. */
#define SHMEM_DEVICE_SCOPED_(SCOPE)                                                                \
    SHMEM_ARCH_INLINE void shmem_device_put_##SCOPE##_(const char *call, SHMEM_ARCH_GM void *dst,  \
                                                       SHMEM_ARCH_GM const void *src, size_t n,    \
                                                       int pe) {                                   \
        if (shmem_device_no_bytes_(call, n, pe)) return;                                           \
        shmem_arch_copy_##SCOPE(shmem_device_remote_(call, "dst", dst, n, pe), src, n);            \
    }                                                                                              \
    SHMEM_ARCH_INLINE void shmem_device_get_##SCOPE##_(const char *call, SHMEM_ARCH_GM void *dst,  \
                                                       SHMEM_ARCH_GM const void *src, size_t n,    \
                                                       int pe) {                                   \
        if (shmem_device_no_bytes_(call, n, pe)) return;                                           \
        shmem_arch_copy_##SCOPE(dst, shmem_device_remote_(call, "src", src, n, pe), n);            \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmemx_putmem_##SCOPE(                                               \
        SHMEM_ARCH_GM void *dst, SHMEM_ARCH_GM const void *src, size_t bytes, int pe) {            \
        shmem_device_put_##SCOPE##_("aclshmemx_putmem_" #SCOPE, dst, src, bytes, pe);              \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmemx_getmem_##SCOPE(                                               \
        SHMEM_ARCH_GM void *dst, SHMEM_ARCH_GM const void *src, size_t bytes, int pe) {            \
        shmem_device_get_##SCOPE##_("aclshmemx_getmem_" #SCOPE, dst, src, bytes, pe);              \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmemx_putmem_nbi_##SCOPE(                                           \
        SHMEM_ARCH_GM void *dst, SHMEM_ARCH_GM const void *src, size_t bytes, int pe) {            \
        shmem_device_put_##SCOPE##_("aclshmemx_putmem_nbi_" #SCOPE, dst, src, bytes, pe);          \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmemx_getmem_nbi_##SCOPE(                                           \
        SHMEM_ARCH_GM void *dst, SHMEM_ARCH_GM const void *src, size_t bytes, int pe) {            \
        shmem_device_get_##SCOPE##_("aclshmemx_getmem_nbi_" #SCOPE, dst, src, bytes, pe);          \
    }                                                                                              \
    /* The group's put, delivered (each member's stores fenced at system scope, the group met):    \
     * 1 in the group's leader, which then updates the signal on `pe`. */                          \
    SHMEM_ARCH_INLINE int shmem_device_put_delivered_##SCOPE##_(                                   \
        const char *call, SHMEM_ARCH_GM void *dst, SHMEM_ARCH_GM const void *src, size_t bytes,    \
        int pe) {                                                                                  \
        shmem_device_put_##SCOPE##_(call, dst, src, bytes, pe);                                    \
        shmem_arch_fence_system();                                                                 \
        shmem_arch_sync_##SCOPE();                                                                 \
        return shmem_arch_leader_##SCOPE();                                                        \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmemx_putmem_signal_##SCOPE(                                        \
        SHMEM_ARCH_GM void *dst, SHMEM_ARCH_GM const void *src, size_t bytes,                      \
        SHMEM_ARCH_GM int32_t *sig_addr, int32_t signal, int sig_op, int pe) {                     \
        const char *call = "aclshmemx_putmem_signal_" #SCOPE;                                      \
        if (shmem_device_put_delivered_##SCOPE##_(call, dst, src, bytes, pe))                      \
            shmem_device_signal_u32_(call, sig_addr, signal, sig_op, pe);                          \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmemx_putmem_signal_nbi_##SCOPE(                                    \
        SHMEM_ARCH_GM void *dst, SHMEM_ARCH_GM const void *src, size_t bytes,                      \
        SHMEM_ARCH_GM int32_t *sig_addr, int32_t signal, int sig_op, int pe) {                     \
        const char *call = "aclshmemx_putmem_signal_nbi_" #SCOPE;                                  \
        if (shmem_device_put_delivered_##SCOPE##_(call, dst, src, bytes, pe))                      \
            shmem_device_signal_u32_(call, sig_addr, signal, sig_op, pe);                          \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmemx_putmem_signal_u64_##SCOPE(                                    \
        SHMEM_ARCH_GM void *dst, SHMEM_ARCH_GM const void *src, size_t bytes,                      \
        SHMEM_ARCH_GM uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {                   \
        const char *call = "aclshmemx_putmem_signal_u64_" #SCOPE;                                  \
        if (shmem_device_put_delivered_##SCOPE##_(call, dst, src, bytes, pe))                      \
            shmem_device_signal_u64_(call, sig_addr, signal, sig_op, pe);                          \
    }

SHMEM_DEVICE_SCOPED_(warp)
SHMEM_DEVICE_SCOPED_(block)

/* Typed scoped forms: `nelems` elements, as aclshmem_put_<type>_mem & co. */
#define SHMEM_DEVICE_RMA_SCOPED_(NAME, T, SCOPE)                                                   \
    SHMEM_ARCH_INLINE void aclshmemx_put_##NAME##_mem_##SCOPE(                                     \
        SHMEM_ARCH_GM T *dst, SHMEM_ARCH_GM const T *src, size_t nelems, int pe) {                 \
        shmem_device_put_##SCOPE##_("aclshmemx_put_" #NAME "_mem_" #SCOPE, dst, src,               \
                                    nelems * sizeof(T), pe);                                       \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmemx_get_##NAME##_mem_##SCOPE(                                     \
        SHMEM_ARCH_GM T *dst, SHMEM_ARCH_GM const T *src, size_t nelems, int pe) {                 \
        shmem_device_get_##SCOPE##_("aclshmemx_get_" #NAME "_mem_" #SCOPE, dst, src,               \
                                    nelems * sizeof(T), pe);                                       \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmemx_put_##NAME##_mem_nbi_##SCOPE(                                 \
        SHMEM_ARCH_GM T *dst, SHMEM_ARCH_GM const T *src, size_t nelems, int pe) {                 \
        shmem_device_put_##SCOPE##_("aclshmemx_put_" #NAME "_mem_nbi_" #SCOPE, dst, src,           \
                                    nelems * sizeof(T), pe);                                       \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmemx_get_##NAME##_mem_nbi_##SCOPE(                                 \
        SHMEM_ARCH_GM T *dst, SHMEM_ARCH_GM const T *src, size_t nelems, int pe) {                 \
        shmem_device_get_##SCOPE##_("aclshmemx_get_" #NAME "_mem_nbi_" #SCOPE, dst, src,           \
                                    nelems * sizeof(T), pe);                                       \
    }
#define SHMEM_DEVICE_RMA_WARP_(NAME, T) SHMEM_DEVICE_RMA_SCOPED_(NAME, T, warp)
#define SHMEM_DEVICE_RMA_BLOCK_(NAME, T) SHMEM_DEVICE_RMA_SCOPED_(NAME, T, block)

SHMEM_DEVICE_RMA_TYPES(SHMEM_DEVICE_RMA_WARP_)
SHMEM_DEVICE_RMA_TYPES(SHMEM_DEVICE_RMA_BLOCK_)

/* ---- 2-D non-contiguous copies (C++: overloads of the typed forms, as CANN declares them) ---
 * `repeat` rows of `length` elements; row r starts at src + r * src_ld and dst + r * dst_ld
 * (leading dimensions in elements). */
#ifndef SHMEM_NON_CONTIGUOUS_COPY_PARAM_DEFINED
#define SHMEM_NON_CONTIGUOUS_COPY_PARAM_DEFINED
struct non_contiguous_copy_param {
    uint32_t repeat;
    uint32_t length;
    uint32_t src_ld;
    uint32_t dst_ld;
};
#endif

#ifdef __cplusplus
/* Copies the rows of `p` between local `local` and symmetric `sym` on `pe`; `put` says which
 * way. The remote span is checked once. */
template <typename T>
SHMEM_ARCH_INLINE void shmem_device_copy_2d_(const char *call, SHMEM_ARCH_GM T *dst,
                                             SHMEM_ARCH_GM const T *src,
                                             const non_contiguous_copy_param &p, int pe, bool put) {
    if (p.repeat == 0 || p.length == 0) return;
    size_t ld = put ? p.dst_ld : p.src_ld;
    size_t span = ((size_t)(p.repeat - 1) * ld + p.length) * sizeof(T);
    SHMEM_ARCH_GM char *remote = put ? shmem_device_remote_(call, "dst", dst, span, pe)
                                     : shmem_device_remote_(call, "src", src, span, pe);
    for (uint32_t r = 0; r < p.repeat; r++) {
        SHMEM_ARCH_GM T *to =
            put ? (SHMEM_ARCH_GM T *)remote + (size_t)r * p.dst_ld : dst + (size_t)r * p.dst_ld;
        SHMEM_ARCH_GM const T *from = put ? src + (size_t)r * p.src_ld
                                          : (SHMEM_ARCH_GM const T *)remote + (size_t)r * p.src_ld;
        shmem_arch_copy(to, from, (size_t)p.length * sizeof(T));
    }
}

#define SHMEM_DEVICE_2D_(NAME, T)                                                                  \
    SHMEM_ARCH_INLINE void aclshmem_put_##NAME##_mem(                                              \
        SHMEM_ARCH_GM T *dst, SHMEM_ARCH_GM const T *src,                                          \
        const non_contiguous_copy_param &copy_params, int pe) {                                    \
        shmem_device_copy_2d_("aclshmem_put_" #NAME "_mem", dst, src, copy_params, pe, true);      \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmem_get_##NAME##_mem(                                              \
        SHMEM_ARCH_GM T *dst, SHMEM_ARCH_GM const T *src,                                          \
        const non_contiguous_copy_param &copy_params, int pe) {                                    \
        shmem_device_copy_2d_("aclshmem_get_" #NAME "_mem", dst, src, copy_params, pe, false);     \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmem_put_##NAME##_mem_nbi(                                          \
        SHMEM_ARCH_GM T *dst, SHMEM_ARCH_GM const T *src,                                          \
        const non_contiguous_copy_param &copy_params, int pe) {                                    \
        shmem_device_copy_2d_("aclshmem_put_" #NAME "_mem_nbi", dst, src, copy_params, pe, true);  \
    }                                                                                              \
    SHMEM_ARCH_INLINE void aclshmem_get_##NAME##_mem_nbi(                                          \
        SHMEM_ARCH_GM T *dst, SHMEM_ARCH_GM const T *src,                                          \
        const non_contiguous_copy_param &copy_params, int pe) {                                    \
        shmem_device_copy_2d_("aclshmem_get_" #NAME "_mem_nbi", dst, src, copy_params, pe, false); \
    }

SHMEM_DEVICE_RMA_TYPES(SHMEM_DEVICE_2D_)
#endif

/* ---- Barriers ----------------------------------------------------------------------------- */

/* Word `line` of `pe`'s reserved prefix, as mapped here. */
SHMEM_ARCH_INLINE SHMEM_ARCH_GM uint64_t *shmem_device_prefix_word_(
    const char *call, SHMEM_ARCH_GM const shmem_job_state *job, int pe, unsigned line) {
    uintptr_t heap = job->mapped_bases[2 * (size_t)pe];
    if (heap == 0) {
        shmem_arch_fail(call, "pe", pe,
                        "is not mapped here; the kernel-side barrier "
                        "reaches mapped PEs only");
    }
    return (SHMEM_ARCH_GM uint64_t *)(heap - job->reserved + (uintptr_t)line * SHMEM_DEVICE_LINE);
}

/* The PE-level barrier run by one block of each PE: a dissemination barrier, log2(n) rounds,
 * each PE writing one flag of one peer and waiting on one of its own. */
SHMEM_ARCH_INLINE void shmem_device_pe_barrier_(const char *call,
                                                SHMEM_ARCH_GM const shmem_job_state *job) {
    int me = job->my_pe, n = job->n_pes;
    if (job->reserved < SHMEM_DEVICE_RESERVED_USED(job->team_slots)) {
        shmem_arch_fail(call, "reserved", (long long)job->reserved,
                        "bytes of heap prefix are too few for the kernel-side barrier");
    }
    SHMEM_ARCH_GM uint64_t *mine =
        shmem_device_prefix_word_(call, job, me, SHMEM_DEVICE_BARRIER_EPOCH);
    uint64_t epoch = shmem_arch_load_u64(mine) + 1;
    shmem_arch_store_u64(mine, epoch);
    unsigned round = 0;
    for (int dist = 1; dist < n; dist <<= 1, ++round) {
        int to = (me + dist) % n;
        shmem_arch_store_release_u64(
            shmem_device_prefix_word_(call, job, to, SHMEM_DEVICE_BARRIER_ROUND0 + round), epoch);
        SHMEM_ARCH_GM const uint64_t *flag =
            shmem_device_prefix_word_(call, job, me, SHMEM_DEVICE_BARRIER_ROUND0 + round);
        shmem_arch_wait wait = SHMEM_ARCH_WAIT_INIT;
        while (shmem_arch_load_acquire_u64(flag) < epoch) shmem_arch_spin(&wait);
    }
    shmem_arch_fence_system();
}

/* The team-level barrier run by one block of each member: a central barrier on the team's PE
 * 0, sense-reversing (each member waits for the completed count it read on entry to move). */
SHMEM_ARCH_INLINE void shmem_device_team_barrier_(const char *call,
                                                  SHMEM_ARCH_GM const shmem_job_state *job,
                                                  aclshmem_team_t team) {
    if (team == ACLSHMEM_TEAM_WORLD) {
        shmem_device_pe_barrier_(call, job);
        return;
    }
    SHMEM_ARCH_GM const shmem_job_team *t = shmem_device_team_(job, team);
    if (t == 0) shmem_arch_fail(call, "team", team, "is not a team on this PE");
    if (shmem_device_team_rank_(t, job->my_pe) < 0) {
        shmem_arch_fail(call, "team", team, "does not hold this PE");
    }
    if (job->reserved < SHMEM_DEVICE_RESERVED_USED(job->team_slots)) {
        shmem_arch_fail(call, "reserved", (long long)job->reserved,
                        "bytes of heap prefix are too few for the kernel-side barrier");
    }
    if (t->size > 1) {
        SHMEM_ARCH_GM uint64_t *count =
            shmem_device_prefix_word_(call, job, t->start, SHMEM_DEVICE_TEAM_COUNT(t->slot));
        SHMEM_ARCH_GM uint64_t *release =
            shmem_device_prefix_word_(call, job, t->start, SHMEM_DEVICE_TEAM_RELEASE(t->slot));
        uint64_t done = shmem_arch_load_acquire_u64(release);
        if (shmem_arch_fetch_add_u64(count, 1) + 1 == (uint64_t)t->size) {
            shmem_arch_store_u64(count, 0);
            shmem_arch_store_release_u64(release, done + 1);
        } else {
            shmem_arch_wait wait = SHMEM_ARCH_WAIT_INIT;
            while (shmem_arch_load_acquire_u64(release) == done) shmem_arch_spin(&wait);
        }
    }
    shmem_arch_fence_system();
}

/* Every block of every member of `team` meets (`team`: a slot of the team table, as
 * shmemx_team_kernel_id gives it; ACLSHMEM_TEAM_WORLD for all PEs); on CUDA every thread of
 * every block calls it, under the cooperative-launch rule above. sync orders memory;
 * barrier also completes the calling block's operations first (the same on the CPU). */
SHMEM_ARCH_INLINE void aclshmem_sync(aclshmem_team_t team) {
    SHMEM_ARCH_GM const shmem_job_state *job = shmem_arch_job("aclshmem_sync");
    shmem_arch_block_barrier();
    if (shmem_arch_block_idx() == 0 && shmem_arch_leader_block())
        shmem_device_team_barrier_("aclshmem_sync", job, team);
    shmem_arch_block_barrier();
}
SHMEM_ARCH_INLINE void aclshmem_barrier(aclshmem_team_t team) {
    SHMEM_ARCH_GM const shmem_job_state *job = shmem_arch_job("aclshmem_barrier");
    shmem_arch_fence_system();
    shmem_arch_block_barrier();
    if (shmem_arch_block_idx() == 0 && shmem_arch_leader_block())
        shmem_device_team_barrier_("aclshmem_barrier", job, team);
    shmem_arch_block_barrier();
}
/* CANN's vector-core barriers: on the CPU every block takes part, as in aclshmem_barrier. */
SHMEM_ARCH_INLINE void aclshmemx_barrier_vec(aclshmem_team_t team) { aclshmem_barrier(team); }

/* Every block of every PE meets: no block leaves before all have arrived. sync_all orders
 * memory at the barrier; barrier_all also completes the calling block's puts, gets and AMOs
 * first (on the CPU they are complete already, so the two are the same). */
SHMEM_ARCH_INLINE void aclshmem_sync_all(void) {
    SHMEM_ARCH_GM const shmem_job_state *job = shmem_arch_job("aclshmem_sync_all");
    shmem_arch_block_barrier();
    if (shmem_arch_block_idx() == 0 && shmem_arch_leader_block())
        shmem_device_pe_barrier_("aclshmem_sync_all", job);
    shmem_arch_block_barrier();
}
SHMEM_ARCH_INLINE void aclshmem_barrier_all(void) {
    SHMEM_ARCH_GM const shmem_job_state *job = shmem_arch_job("aclshmem_barrier_all");
    shmem_arch_fence_system();
    shmem_arch_block_barrier();
    if (shmem_arch_block_idx() == 0 && shmem_arch_leader_block())
        shmem_device_pe_barrier_("aclshmem_barrier_all", job);
    shmem_arch_block_barrier();
}

SHMEM_ARCH_INLINE void aclshmemx_barrier_all_vec(void) { aclshmem_barrier_all(); }

#endif /* SHMEM_DEVICE_H */
