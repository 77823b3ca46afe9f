/* shmem/arch/ascendc.h: the AscendC architecture of the kernel-side API.
 *
 * A kernel is an AscendC kernel, `extern "C" __global__ __aicore__ void k(GM_ADDR job, ...)`,
 * launched by the host on an ACL stream (`k<<<blocks, nullptr, stream>>>(job, ...)`); a block
 * is an AI core running it (an AIV core for a vector kernel). This file gives the primitives
 * shmem/device.h is written over, in AscendC as CANN's own device headers write them:
 * - Memory a kernel reaches is global memory (__gm__, SHMEM_ARCH_GM), seen through
 *   AscendC::GlobalTensor. The scalar unit reaches it through a data cache that is coherent
 *   neither with other cores nor with the core's own MTEs, so every scalar access to memory
 *   another core or PE writes is bracketed by DataCacheCleanAndInvalid of its line: before a
 *   read (a stale line is dropped) and after a write (the line leaves now).
 * - A copy moves GM -> UB -> GM with DataCopyPad through the unified-buffer scratch area that
 *   aclshmemx_set_mte_config sets (the job state's mte_* fields; a default when never set), one
 *   chunk of the area's size at a time: MTE2 fills the area, SetFlag/WaitFlag<MTE2_MTE3> hands
 *   it to MTE3, which drains it to the destination, and SetFlag/WaitFlag<MTE3_MTE2> hands it
 *   back for the next chunk. PipeBarrier<PIPE_ALL> before the first stage (the core's earlier
 *   work has left) and after the last (the copy is complete when it returns).
 * - Atomics are AscendC's scalar atomics on global memory (AtomicAdd, AtomicCas, AtomicExch,
 *   each returning the old value); and/or/xor are compare-and-swap loops.
 * - The barrier among the blocks of a launch is AscendC::SyncAll.
 * - The job state is the device copy of the host's that the runtime keeps in device memory
 *   (its arrays too): the host passes its GM address as a kernel argument and the kernel's
 *   entry hands it to shmemx_ascendc_set_job, on every core, before any other call.
 * - A misuse prints its one line with AscendC::printf and stops the core with AscendC::Trap.
 *
 * It includes CANN's kernel_operator.h and nothing of the library's host side; C++ only (the
 * kernel's file is compiled by bisheng as CCE C++, or by a host compiler in AscendC's CPU-debug
 * mode). tests/ascendc/ holds a declaration-only stand-in of the kernel_operator.h subset used
 * here, against which CI compiles this file on every run. */
#ifndef SHMEM_ARCH_ASCENDC_H
#define SHMEM_ARCH_ASCENDC_H

#ifndef __cplusplus
#error "shmem/arch/ascendc.h: AscendC kernels are C++: compile the kernel's file as C++"
#endif
#ifdef SHMEM_JOB_STATE_H
#error                                                                                             \
    "shmem/arch/ascendc.h: include shmem/device.h before shmem/job_state.h (a kernel reads the state's arrays in global memory)"
#endif

#include <stddef.h>
#include <stdint.h>

#include "kernel_operator.h"

/* The job state's arrays, as a kernel reads them, are in global memory. */
#define SHMEM_JOB_GM __gm__
#include "../job_state.h"

#define SHMEM_ARCH_ASCENDC 1
/* Qualifiers of kernel-side routines and of the memory they reach. */
#define SHMEM_ARCH_INLINE __aicore__ static inline __attribute__((always_inline, unused))
#define SHMEM_ARCH_COLD __aicore__ static __attribute__((cold, noinline, noreturn, unused))
#define SHMEM_ARCH_GM __gm__
/* CANN's 2-byte floating-point types: the element types of aclshmem_put_half_mem & co. */
#define SHMEM_ARCH_HALF half
#define SHMEM_ARCH_BFLOAT16 bfloat16_t

/* The scratch area a copy is staged through while aclshmemx_set_mte_config was never called:
 * [160 KiB, 176 KiB) of the 192 KiB unified buffer of an Atlas A2 (dav-c220) vector core, above
 * the buffers a kernel's TPipe hands out from the bottom, ordered on event 0. A kernel whose own
 * UB buffers reach there sets another area. */
#define SHMEM_ASCENDC_UB_OFFSET_DEFAULT (160u * 1024u)
#define SHMEM_ASCENDC_UB_SIZE_DEFAULT (16u * 1024u)
#define SHMEM_ASCENDC_EVENT_DEFAULT 0u

/* The device copy of the job state this core's kernel reads: set by shmemx_ascendc_set_job,
 * one per core (block-local storage), for the launch's lifetime. Before that call it holds
 * what the core's block-local storage starts with: NULL in the CPU-debug mode, where a call
 * made too early ends the kernel with its message; the entry must not rely on that on an NPU. */
__BLOCK_LOCAL__ inline __gm__ const shmem_job_state *shmem_ascendc_job_g;

/* Ends the kernel with "call: invalid argument arg=value: why (kernel block b of n)": the line
 * goes to the kernel's printf dump, then the core traps and the stream reports the failure. */
SHMEM_ARCH_COLD void shmem_arch_fail(const char *call, const char *arg, long long value,
                                     const char *why) {
    AscendC::printf("%s: invalid argument %s=%lld: %s (kernel block %lld of %lld)\n", call, arg,
                    value, why, (long long)AscendC::GetBlockIdx(),
                    (long long)AscendC::GetBlockNum());
    AscendC::Trap();
    __builtin_unreachable();
}
SHMEM_ARCH_COLD void shmem_arch_fail_addr(const char *call, const char *arg,
                                          __gm__ const void *addr, const char *why) {
    AscendC::printf("%s: invalid argument %s=%p: %s (kernel block %lld of %lld)\n", call, arg, addr,
                    why, (long long)AscendC::GetBlockIdx(), (long long)AscendC::GetBlockNum());
    AscendC::Trap();
    __builtin_unreachable();
}

/* Gives this core's kernel the job state: `job` is the GM address of the device copy the host
 * passed as a kernel argument. The kernel's entry calls it first, on every core. A state of
 * another layout (a kernel built against other headers than the library's) ends the kernel. */
SHMEM_ARCH_INLINE void shmemx_ascendc_set_job(GM_ADDR job) {
    __gm__ const shmem_job_state *s = reinterpret_cast<__gm__ const shmem_job_state *>(job);
    if (s == nullptr) {
        shmem_arch_fail("shmemx_ascendc_set_job", "job", 0,
                        "is NULL: pass the job state's GM address");
    }
    AscendC::GlobalTensor<uint32_t> head;
    head.SetGlobalBuffer(reinterpret_cast<__gm__ uint32_t *>(job), 2);
    AscendC::DataCacheCleanAndInvalid<uint32_t, AscendC::CacheLine::SINGLE_CACHE_LINE,
                                      AscendC::DcciDst::CACHELINE_OUT>(head);
    if (head.GetValue(0) != sizeof(shmem_job_state)) {
        shmem_arch_fail("shmemx_ascendc_set_job", "job->size", head.GetValue(0),
                        "is not this header's sizeof(shmem_job_state)");
    }
    if (head.GetValue(1) != SHMEM_JOB_STATE_VERSION) {
        shmem_arch_fail("shmemx_ascendc_set_job", "job->version", head.GetValue(1),
                        "is not this header's SHMEM_JOB_STATE_VERSION");
    }
    shmem_ascendc_job_g = s;
}

/* The job state the calling core reads; NULL (no shmemx_ascendc_set_job yet) ends the kernel. */
SHMEM_ARCH_INLINE __gm__ const shmem_job_state *shmem_arch_job(const char *call) {
    __gm__ const shmem_job_state *job = shmem_ascendc_job_g;
    if (__builtin_expect(job == nullptr, 0)) {
        shmem_arch_fail(call, "job", 0,
                        "is not set: the kernel's entry calls shmemx_ascendc_set_job first");
    }
    return job;
}

/* Block index and block count of the current kernel. */
SHMEM_ARCH_INLINE int32_t shmem_arch_block_idx(void) {
    return static_cast<int32_t>(AscendC::GetBlockIdx());
}
SHMEM_ARCH_INLINE int32_t shmem_arch_block_num(void) {
    return static_cast<int32_t>(AscendC::GetBlockNum());
}

/* ---- The data cache ------------------------------------------------------------------------ */

/* Writes back and drops the data-cache line holding `p`. */
template <typename T>
SHMEM_ARCH_INLINE void shmem_ascendc_dcci_line_(__gm__ const T *p) {
    AscendC::GlobalTensor<T> line;
    line.SetGlobalBuffer(const_cast<__gm__ T *>(p), 1);
    AscendC::DataCacheCleanAndInvalid<T, AscendC::CacheLine::SINGLE_CACHE_LINE,
                                      AscendC::DcciDst::CACHELINE_OUT>(line);
}

/* Writes back and drops the whole data cache (any GM address names it). */
SHMEM_ARCH_INLINE void shmem_ascendc_dcci_all_(void) {
    AscendC::GlobalTensor<uint8_t> any;
    any.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t *>(
                            const_cast<__gm__ shmem_job_state *>(shmem_ascendc_job_g)),
                        1);
    AscendC::DataCacheCleanAndInvalid<uint8_t, AscendC::CacheLine::ENTIRE_DATA_CACHE,
                                      AscendC::DcciDst::CACHELINE_OUT>(any);
}

/* One element of memory another core or PE writes: read what the memory holds now, write so
 * that the memory holds it now. */
template <typename T>
SHMEM_ARCH_INLINE T shmem_ascendc_load_(__gm__ const T *p) {
    shmem_ascendc_dcci_line_(p);
    AscendC::GlobalTensor<T> g;
    g.SetGlobalBuffer(const_cast<__gm__ T *>(p), 1);
    return g.GetValue(0);
}
template <typename T, typename V>
SHMEM_ARCH_INLINE void shmem_ascendc_store_(__gm__ T *p, V v) {
    AscendC::GlobalTensor<T> g;
    g.SetGlobalBuffer(p, 1);
    g.SetValue(0, static_cast<T>(v));
    shmem_ascendc_dcci_line_(p);
}
/* An acquire load: no later copy of this core starts before the value is read. */
template <typename T>
SHMEM_ARCH_INLINE T shmem_ascendc_load_acquire_(__gm__ const T *p) {
    T v = shmem_ascendc_load_(p);
    AscendC::PipeBarrier<PIPE_ALL>();
    return v;
}

#define SHMEM_ARCH_LOAD_ACQUIRE(p) shmem_ascendc_load_acquire_(p)
#define SHMEM_ARCH_LOAD_ELEM(p) shmem_ascendc_load_(p)
#define SHMEM_ARCH_STORE_ELEM(p, v) shmem_ascendc_store_((p), (v))

/* ---- Copies ------------------------------------------------------------------------------- */

/* Copy of a span by the calling core's MTEs, staged through the scratch area; complete when it
 * returns. The ranges must not overlap. */
SHMEM_ARCH_INLINE void shmem_arch_copy(__gm__ void *dst, __gm__ const void *src, size_t bytes) {
    if (bytes == 0) return;
    uint64_t ub = SHMEM_ASCENDC_UB_OFFSET_DEFAULT;
    uint32_t chunk = SHMEM_ASCENDC_UB_SIZE_DEFAULT;
    uint32_t event = SHMEM_ASCENDC_EVENT_DEFAULT;
    __gm__ const shmem_job_state *job = shmem_ascendc_job_g;
    if (job != nullptr && job->mte_ub_size != 0) {
        ub = job->mte_ub_offset;
        chunk = job->mte_ub_size;
        event = job->mte_event_id;
    }
    AscendC::LocalTensor<uint8_t> stage;
    stage.address_.logicPos = static_cast<uint8_t>(AscendC::TPosition::VECIN);
    stage.address_.bufferAddr = static_cast<uint32_t>(ub);
    stage.address_.dataLen = chunk;
    AscendC::GlobalTensor<uint8_t> from;
    AscendC::GlobalTensor<uint8_t> to;
    from.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t *>(const_cast<__gm__ void *>(src)), bytes);
    to.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t *>(dst), bytes);
    const AscendC::TEventID ev = static_cast<AscendC::TEventID>(event);

    /* The core's scalar stores to the source reach the memory before MTE2 reads it, and no line
     * of the destination cached before the copy outlives it. */
    shmem_ascendc_dcci_all_();
    AscendC::PipeBarrier<PIPE_ALL>();
    for (size_t done = 0; done < bytes; done += chunk) {
        const uint32_t n = bytes - done < chunk ? static_cast<uint32_t>(bytes - done) : chunk;
        const AscendC::DataCopyExtParams one_block(1, n, 0, 0, 0);
        if (done != 0) {
            /* MTE3 has drained the previous chunk: the area may be filled again. */
            AscendC::SetFlag<AscendC::HardEvent::MTE3_MTE2>(ev);
            AscendC::WaitFlag<AscendC::HardEvent::MTE3_MTE2>(ev);
        }
        AscendC::DataCopyPad(stage, from[done], one_block,
                             AscendC::DataCopyPadExtParams<uint8_t>());
        AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE3>(ev);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE3>(ev);
        AscendC::DataCopyPad(to[done], stage, one_block);
    }
    AscendC::PipeBarrier<PIPE_ALL>();
}

/* The groups of the scoped forms (_warp, _block): a block is one AI core, whose scalar unit is
 * the one caller, so a group is the calling core; it is its own leader, meets nobody, and its
 * group copy is its own MTE copy. */
SHMEM_ARCH_INLINE int shmem_arch_leader_warp(void) { return 1; }
SHMEM_ARCH_INLINE int shmem_arch_leader_block(void) { return 1; }
SHMEM_ARCH_INLINE void shmem_arch_sync_warp(void) {}
SHMEM_ARCH_INLINE void shmem_arch_sync_block(void) {}
SHMEM_ARCH_INLINE void shmem_arch_copy_warp(__gm__ void *dst, __gm__ const void *src,
                                            size_t bytes) {
    shmem_arch_copy(dst, src, bytes);
}
SHMEM_ARCH_INLINE void shmem_arch_copy_block(__gm__ void *dst, __gm__ const void *src,
                                             size_t bytes) {
    shmem_arch_copy(dst, src, bytes);
}

/* ---- Fences and atomics ------------------------------------------------------------------- */

/* acquire and release order the core's pipes (a copy before a release is complete before any
 * later store; no copy after an acquire starts before it); system also writes back and drops
 * the data cache, so every earlier store of this core is visible to every PE. */
SHMEM_ARCH_INLINE void shmem_arch_fence_acquire(void) { AscendC::PipeBarrier<PIPE_ALL>(); }
SHMEM_ARCH_INLINE void shmem_arch_fence_release(void) { AscendC::PipeBarrier<PIPE_ALL>(); }
SHMEM_ARCH_INLINE void shmem_arch_fence_system(void) {
    AscendC::PipeBarrier<PIPE_ALL>();
    shmem_ascendc_dcci_all_();
}

/* Atomics on 4- and 8-byte words in global memory. Each is bracketed by a write-back and drop
 * of the word's line, so the atomic sees this core's earlier stores and later loads see it. */
#define SHMEM_ASCENDC_ATOMIC_BIT_(SUFFIX, T, OP, EXPR)                                             \
    SHMEM_ARCH_INLINE T shmem_arch_fetch_##OP##_##SUFFIX(__gm__ T *p, T v) {                       \
        T old = shmem_ascendc_load_(p);                                                            \
        for (;;) {                                                                                 \
            T seen = AscendC::AtomicCas(p, old, static_cast<T>(EXPR));                             \
            if (seen == old) break;                                                                \
            old = seen;                                                                            \
        }                                                                                          \
        shmem_ascendc_dcci_line_(p);                                                               \
        return old;                                                                                \
    }

#define SHMEM_ASCENDC_ATOMICS_(SUFFIX, T)                                                          \
    SHMEM_ARCH_INLINE T shmem_arch_load_acquire_##SUFFIX(__gm__ const T *p) {                      \
        return shmem_ascendc_load_acquire_(p);                                                     \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_load_##SUFFIX(__gm__ const T *p) {                              \
        return shmem_ascendc_load_(p);                                                             \
    }                                                                                              \
    SHMEM_ARCH_INLINE void shmem_arch_store_release_##SUFFIX(__gm__ T *p, T v) {                   \
        AscendC::PipeBarrier<PIPE_ALL>();                                                          \
        shmem_ascendc_store_(p, v);                                                                \
    }                                                                                              \
    SHMEM_ARCH_INLINE void shmem_arch_store_##SUFFIX(__gm__ T *p, T v) {                           \
        AscendC::PipeBarrier<PIPE_ALL>();                                                          \
        shmem_ascendc_store_(p, v);                                                                \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_fetch_add_##SUFFIX(__gm__ T *p, T v) {                          \
        shmem_ascendc_dcci_line_(p);                                                               \
        T old = AscendC::AtomicAdd(p, v);                                                          \
        shmem_ascendc_dcci_line_(p);                                                               \
        return old;                                                                                \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_swap_##SUFFIX(__gm__ T *p, T v) {                               \
        shmem_ascendc_dcci_line_(p);                                                               \
        T old = AscendC::AtomicExch(p, v);                                                         \
        shmem_ascendc_dcci_line_(p);                                                               \
        return old;                                                                                \
    }                                                                                              \
    /* Returns the old value; stores `desired` only where it equalled `expected`. */               \
    SHMEM_ARCH_INLINE T shmem_arch_cas_##SUFFIX(__gm__ T *p, T expected, T desired) {              \
        shmem_ascendc_dcci_line_(p);                                                               \
        T old = AscendC::AtomicCas(p, expected, desired);                                          \
        shmem_ascendc_dcci_line_(p);                                                               \
        return old;                                                                                \
    }                                                                                              \
    SHMEM_ASCENDC_ATOMIC_BIT_(SUFFIX, T, and, old &v)                                              \
    SHMEM_ASCENDC_ATOMIC_BIT_(SUFFIX, T, or, old | v)                                              \
    SHMEM_ASCENDC_ATOMIC_BIT_(SUFFIX, T, xor, old ^ v)

SHMEM_ASCENDC_ATOMICS_(u32, uint32_t)
SHMEM_ASCENDC_ATOMICS_(u64, uint64_t)

/* ---- Waiting and the block barrier -------------------------------------------------------- */

/* One wait's progress; start each wait from SHMEM_ARCH_WAIT_INIT. An AI core has nothing to
 * yield to: a wait re-reads its word (each read goes to memory), and a wait that never ends is
 * ended by the host's bounded synchronisation of the stream. */
typedef struct shmem_arch_wait {
    uint32_t spins; /* checks so far */
} shmem_arch_wait;
#define SHMEM_ARCH_WAIT_INIT                                                                       \
    { 0 }

/* One step of a spin-wait, between two checks of the caller's condition. */
SHMEM_ARCH_INLINE void shmem_arch_spin(shmem_arch_wait *wait) { ++wait->spins; }

/* Barrier among the blocks of this launch (every block must call it). Orders every store of a
 * block before the barrier before every load of another block after it. */
SHMEM_ARCH_INLINE void shmem_arch_block_barrier(void) {
    shmem_arch_fence_system();
    AscendC::SyncAll();
}

#endif /* SHMEM_ARCH_ASCENDC_H */
