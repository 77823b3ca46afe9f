/* shmem/arch/cpu.h: the CPU architecture of the kernel-side API.
 *
 * A kernel is a plain function run as N blocks, one thread each, in the PE's own process, by
 * the host call shmemx_cpu_launch (shmem/launch.h). This file gives the primitives the
 * kernel-side routines (shmem/device.h) are written over: a span copy, atomics, fences, a
 * bounded spin-wait that yields, the calling block's index and the block count, and a barrier
 * among the blocks of one PE. The CUDA and AscendC architectures provide the same names.
 *
 * Only C and the compiler's __atomic builtins: no host-only header, no facade header. The one
 * state it reads is the calling thread's block record, which the launch call writes. */
#ifndef SHMEM_ARCH_CPU_H
#define SHMEM_ARCH_CPU_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../job_state.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SHMEM_ARCH_CPU 1
/* Qualifiers of kernel-side routines and of the memory they reach (empty on the CPU). */
#define SHMEM_ARCH_INLINE static inline __attribute__((always_inline, unused))
#define SHMEM_ARCH_COLD static __attribute__((cold, noinline, noreturn, unused))
#define SHMEM_ARCH_GM

/* End the job with "call: invalid argument arg=value: why" (defined in libshmem.so, so the
 * message has the library's form and the job ends as a shmem_global_exit would end it); the
 * _addr form prints an address. */
void shmemx_cpu_kernel_fail(const char *call, const char *arg, long long value, const char *why)
    __attribute__((noreturn, cold));
void shmemx_cpu_kernel_fail_addr(const char *call, const char *arg, const void *addr,
                                 const char *why) __attribute__((noreturn, cold));
#define shmem_arch_fail shmemx_cpu_kernel_fail
#define shmem_arch_fail_addr shmemx_cpu_kernel_fail_addr

/* The blocks of one launch: the barrier among them. One 64-byte line per word, so that the
 * arrivals and the release do not share a line. */
typedef struct shmemx_cpu_group {
    uint32_t blocks; /* blocks of the launch */
    uint32_t pad_;
    char pad0_[56];
    uint32_t arrived; /* blocks that reached the current barrier */
    char pad1_[60];
    uint32_t generation; /* barriers completed */
    char pad2_[60];
} __attribute__((aligned(64))) shmemx_cpu_group;

/* What a block knows of itself: written by the launch call on the block's thread before the
 * kernel runs, cleared after. `job` is NULL outside a kernel. */
typedef struct shmemx_cpu_block {
    const shmem_job_state *job;
    shmemx_cpu_group *group;
    int32_t idx; /* this block, 0 .. num - 1 */
    int32_t num; /* blocks of the launch */
} shmemx_cpu_block;

/* The calling thread's block record (defined in libshmem.so, exported). */
extern __thread shmemx_cpu_block shmemx_cpu_block_g;

/* Writes one line to stderr and ends the job: a kernel-side misuse or an unsupported case.
 * Defined in libshmem.so so the message has the library's form and the job ends as a
 * shmem_global_exit would end it. */
void shmemx_cpu_kernel_abort(const char *call, const char *what) __attribute__((noreturn, cold));

/* The job state the calling block reads; a call outside a kernel ends the job. */
SHMEM_ARCH_INLINE const shmem_job_state *shmem_arch_job(const char *call) {
    const shmem_job_state *job = shmemx_cpu_block_g.job;
    if (__builtin_expect(job == NULL, 0)) {
        shmemx_cpu_kernel_abort(call, "called outside a kernel launched by shmemx_cpu_launch");
    }
    return job;
}

/* Block index and block count of the current kernel (0 and 1 outside a kernel). */
SHMEM_ARCH_INLINE int32_t shmem_arch_block_idx(void) { return shmemx_cpu_block_g.idx; }
SHMEM_ARCH_INLINE int32_t shmem_arch_block_num(void) {
    return shmemx_cpu_block_g.num > 0 ? shmemx_cpu_block_g.num : 1;
}

/* Copy of a span by the calling group (a block is one thread on the CPU). The ranges must not
 * overlap. */
SHMEM_ARCH_INLINE void shmem_arch_copy(void *dst, const void *src, size_t bytes) {
    if (bytes != 0) memcpy(dst, src, bytes);
}

/* The groups of the scoped forms (_warp, _block): a block is one thread here, so a group is the
 * calling thread; it is its own leader, meets nobody, and its group copy is its own. */
SHMEM_ARCH_INLINE int shmem_arch_leader_warp(void) { return 1; }
SHMEM_ARCH_INLINE int shmem_arch_leader_block(void) { return 1; }
SHMEM_ARCH_INLINE void shmem_arch_sync_warp(void) {}
SHMEM_ARCH_INLINE void shmem_arch_sync_block(void) {}
SHMEM_ARCH_INLINE void shmem_arch_copy_warp(void *dst, const void *src, size_t bytes) {
    shmem_arch_copy(dst, src, bytes);
}
SHMEM_ARCH_INLINE void shmem_arch_copy_block(void *dst, const void *src, size_t bytes) {
    shmem_arch_copy(dst, src, bytes);
}

/* Fences: acquire, release, and the system scope (every earlier load and store of this thread
 * is visible to every PE before any later one). */
SHMEM_ARCH_INLINE void shmem_arch_fence_acquire(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
SHMEM_ARCH_INLINE void shmem_arch_fence_release(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
SHMEM_ARCH_INLINE void shmem_arch_fence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* Atomics on 4- and 8-byte words, sequentially consistent unless the name says otherwise. */
#define SHMEM_ARCH_ATOMICS_(SUFFIX, T)                                                             \
    SHMEM_ARCH_INLINE T shmem_arch_load_acquire_##SUFFIX(const T *p) {                             \
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);                                               \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_load_##SUFFIX(const T *p) {                                     \
        return __atomic_load_n(p, __ATOMIC_SEQ_CST);                                               \
    }                                                                                              \
    SHMEM_ARCH_INLINE void shmem_arch_store_release_##SUFFIX(T *p, T v) {                          \
        __atomic_store_n(p, v, __ATOMIC_RELEASE);                                                  \
    }                                                                                              \
    SHMEM_ARCH_INLINE void shmem_arch_store_##SUFFIX(T *p, T v) {                                  \
        __atomic_store_n(p, v, __ATOMIC_SEQ_CST);                                                  \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_fetch_add_##SUFFIX(T *p, T v) {                                 \
        return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);                                         \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_fetch_and_##SUFFIX(T *p, T v) {                                 \
        return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);                                         \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_fetch_or_##SUFFIX(T *p, T v) {                                  \
        return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);                                          \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_fetch_xor_##SUFFIX(T *p, T v) {                                 \
        return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);                                         \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_swap_##SUFFIX(T *p, T v) {                                      \
        return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);                                        \
    }                                                                                              \
    /* Returns the old value; stores `desired` only where it equalled `expected`. */               \
    SHMEM_ARCH_INLINE T shmem_arch_cas_##SUFFIX(T *p, T expected, T desired) {                     \
        __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
        return expected;                                                                           \
    }

SHMEM_ARCH_ATOMICS_(u32, uint32_t)
SHMEM_ARCH_ATOMICS_(u64, uint64_t)

/* One element of any size: an acquire load (the typed waits), and a plain load and store of
 * memory another PE may hold (p, g and the strided forms). */
#define SHMEM_ARCH_LOAD_ACQUIRE(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define SHMEM_ARCH_LOAD_ELEM(p) (*(p))
#define SHMEM_ARCH_STORE_ELEM(p, v) ((void)(*(p) = (v)))

/* One wait's progress through the waiting policy; start each wait from SHMEM_ARCH_WAIT_INIT. */
typedef struct shmem_arch_wait {
    uint32_t spins; /* pauses spent so far */
    uint32_t pad_;
    uint64_t yielding_since_ns; /* the library's policy: when it began yielding (0: not yet) */
    uint64_t nap_ns;            /* the library's policy: its last nap (0: none yet) */
} shmem_arch_wait;
#define SHMEM_ARCH_WAIT_INIT                                                                       \
    { 0, 0, 0, 0 }

/* The library's waiting policy, the one every host wait follows: transport progress, yields,
 * then naps that grow to a bound and are stamped where peers can see them, so a long kernel
 * wait neither burns a core nor looks like a computing PE to a peer's stuck-job check. */
void shmemx_cpu_kernel_snooze(shmem_arch_wait *wait);

/* One step of a spin-wait: the caller loops on its condition and calls this between two checks
 * with its own wait state. A few pause instructions first (a block on another core answers
 * within them), then the library's waiting policy, so that a kernel of more blocks than cores,
 * or PEs sharing cores, still progress. */
#define SHMEM_ARCH_SPINS_BEFORE_YIELD 64u
SHMEM_ARCH_INLINE void shmem_arch_spin(shmem_arch_wait *wait) {
    if (wait->spins < SHMEM_ARCH_SPINS_BEFORE_YIELD) {
        ++wait->spins;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield" ::: "memory");
#endif
    } else {
        shmemx_cpu_kernel_snooze(wait);
    }
}

/* Barrier among the blocks of this PE's current launch (every block must call it). Orders
 * every store of a block before the barrier before every load of another block after it. */
SHMEM_ARCH_INLINE void shmem_arch_block_barrier(void) {
    shmemx_cpu_group *g = shmemx_cpu_block_g.group;
    if (g == NULL || g->blocks <= 1) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        return;
    }
    uint32_t gen = __atomic_load_n(&g->generation, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&g->arrived, 1u, __ATOMIC_ACQ_REL) == g->blocks) {
        __atomic_store_n(&g->arrived, 0u, __ATOMIC_RELAXED);
        __atomic_store_n(&g->generation, gen + 1u, __ATOMIC_RELEASE);
        return;
    }
    shmem_arch_wait wait = SHMEM_ARCH_WAIT_INIT;
    while (__atomic_load_n(&g->generation, __ATOMIC_ACQUIRE) == gen) shmem_arch_spin(&wait);
}

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_ARCH_CPU_H */
