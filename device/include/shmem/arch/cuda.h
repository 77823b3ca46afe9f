/* shmem/arch/cuda.h: the CUDA architecture of the kernel-side API.
 *
 * A kernel is a CUDA kernel, `__global__ void k(const void *job, ...)`, launched by the host on
 * a CUDA stream; a block is a CUDA thread block, and the routines of shmem/device.h are called
 * by threads, as NVSHMEM's are. This file gives the primitives shmem/device.h is written over:
 * - Scopes: the plain routines (aclshmem_putmem, p, g, AMOs, signals, waits, quiet, fence) are
 *   the calling thread's; the _warp and _block forms are called by every thread of a full warp
 *   or of the block with the same arguments, and the group shares the work (the copy's bytes
 *   are strided over the group's threads, 16-byte vectors where source and destination allow).
 * - Memory a kernel reaches is the GPU's global memory: its own heap and, mapped into its
 *   address space, the heaps of the PEs sharing the node's GPUs. Signal words and the barrier's
 *   flags are written with release and read with acquire at system scope (PTX st.release.sys /
 *   ld.acquire.sys), so that a PE that sees a signal's new value also sees the data put before
 *   it, as NVSHMEM's signals; AMOs are the atomicAdd_system family between two
 *   __threadfence_system (sequentially consistent, as the CPU's).
 * - A spin-wait backs off with __nanosleep; a wait that never ends is ended by the host's
 *   bounded synchronisation of the stream.
 * - The barrier among the blocks of a launch is __syncthreads in each block and a counter in
 *   this file's device memory across blocks: every block of the launch must be resident at
 *   once (the cooperative-launch rule: launch with cudaLaunchCooperativeKernel, or with at most
 *   as many blocks as fit on the GPU together), and one such kernel runs at a time per PE.
 * - The job state is the device copy of the host's that the runtime keeps in GPU memory: the
 *   host passes its address (shmemx_job_state_device(), shmem/launch.h) as a kernel argument
 *   and the kernel's entry hands it to shmemx_cuda_set_job, in every thread, before any other
 *   call (as an AscendC entry hands it to shmemx_ascendc_set_job on every core).
 * - A misuse prints its one line with the device printf and traps: the launch fails and the
 *   stream reports it.
 *
 * It includes the CUDA toolkit's own headers (through nvcc) and nothing of the library's host
 * side; C++ only, compiled by nvcc (or clang in CUDA mode) for sm_70 or newer (the PTX memory
 * model's acquire and release). CI compiles it with nvcc on every run (ctest cuda.compile). */
#ifndef SHMEM_ARCH_CUDA_H
#define SHMEM_ARCH_CUDA_H

#ifndef __cplusplus
#error "shmem/arch/cuda.h: CUDA kernels are C++: compile the kernel's file with nvcc as .cu"
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
#error "shmem/arch/cuda.h: needs sm_70 or newer (acquire and release at system scope)"
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../job_state.h"

#define SHMEM_ARCH_CUDA 1
/* Qualifiers of kernel-side routines and of the memory they reach (global memory is the
 * default address space of a CUDA pointer). */
#define SHMEM_ARCH_INLINE static __device__ __forceinline__ __attribute__((unused))
#define SHMEM_ARCH_COLD static __device__ __noinline__ __attribute__((cold, noreturn, unused))
#define SHMEM_ARCH_GM
/* CUDA's 2-byte floating-point types: the element types of aclshmem_put_half_mem & co. */
#define SHMEM_ARCH_HALF __half
#define SHMEM_ARCH_BFLOAT16 __nv_bfloat16

/* Threads in a warp: the group of the _warp forms. */
#define SHMEM_CUDA_WARP 32u

/* ---- The calling thread and its groups ---------------------------------------------------- */

/* The calling thread's index in its block, the block's thread count, the block's index in the
 * grid and the grid's block count, all linear (x fastest), whatever the launch's shape. */
SHMEM_ARCH_INLINE uint32_t shmem_cuda_thread_(void) {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
SHMEM_ARCH_INLINE uint32_t shmem_cuda_threads_(void) {
    return blockDim.x * blockDim.y * blockDim.z;
}
SHMEM_ARCH_INLINE int32_t shmem_arch_block_idx(void) {
    return (int32_t)(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
}
SHMEM_ARCH_INLINE int32_t shmem_arch_block_num(void) {
    return (int32_t)(gridDim.x * gridDim.y * gridDim.z);
}

/* 1 in the one thread of its warp / block that runs the group's single steps (a signal after a
 * group's put, a block's share of a barrier across PEs). */
SHMEM_ARCH_INLINE int shmem_arch_leader_warp(void) {
    return (shmem_cuda_thread_() & (SHMEM_CUDA_WARP - 1)) == 0;
}
SHMEM_ARCH_INLINE int shmem_arch_leader_block(void) { return shmem_cuda_thread_() == 0; }

/* The threads of the calling warp / block meet; every earlier store of one is visible to the
 * others after it. */
SHMEM_ARCH_INLINE void shmem_arch_sync_warp(void) { __syncwarp(); }
SHMEM_ARCH_INLINE void shmem_arch_sync_block(void) { __syncthreads(); }

/* ---- Failure ------------------------------------------------------------------------------ */

/* Ends the kernel with "call: invalid argument arg=value: why (kernel block b of n, thread t)":
 * the line goes to the device printf buffer (printed at the stream's next synchronisation),
 * then the thread traps and the launch fails with an illegal-instruction error. */
SHMEM_ARCH_COLD void shmem_arch_fail(const char *call, const char *arg, long long value,
                                     const char *why) {
    printf("%s: invalid argument %s=%lld: %s (kernel block %d of %d, thread %u)\n", call, arg,
           value, why, (int)shmem_arch_block_idx(), (int)shmem_arch_block_num(),
           (unsigned)shmem_cuda_thread_());
    __trap();
    __builtin_unreachable();
}
SHMEM_ARCH_COLD void shmem_arch_fail_addr(const char *call, const char *arg, const void *addr,
                                          const char *why) {
    printf("%s: invalid argument %s=%p: %s (kernel block %d of %d, thread %u)\n", call, arg, addr,
           why, (int)shmem_arch_block_idx(), (int)shmem_arch_block_num(),
           (unsigned)shmem_cuda_thread_());
    __trap();
    __builtin_unreachable();
}

/* ---- The job state ------------------------------------------------------------------------ */

/* The device copy of the job state the kernels of this file read: set by shmemx_cuda_set_job.
 * One per module (each kernel file has its own); zero until the first call. Every thread of a
 * launch writes the same address, so a thread reads back what it wrote. */
static __device__ __attribute__((unused)) const shmem_job_state *shmem_cuda_job_g;

/* Gives the calling thread's kernel the job state: `job` is the device address of the copy the
 * host passed as a kernel argument (shmemx_job_state_device()). The kernel's entry calls it
 * first, in every thread. A state of another layout (a kernel built against other headers than
 * the library's) ends the kernel. */
SHMEM_ARCH_INLINE void shmemx_cuda_set_job(const void *job) {
    const shmem_job_state *s = (const shmem_job_state *)job;
    if (s == nullptr) {
        shmem_arch_fail("shmemx_cuda_set_job", "job", 0,
                        "is NULL: pass shmemx_job_state_device() of the host");
    }
    const uint32_t *head = (const uint32_t *)job;
    if (head[0] != sizeof(shmem_job_state)) {
        shmem_arch_fail("shmemx_cuda_set_job", "job->size", head[0],
                        "is not this header's sizeof(shmem_job_state)");
    }
    if (head[1] != SHMEM_JOB_STATE_VERSION) {
        shmem_arch_fail("shmemx_cuda_set_job", "job->version", head[1],
                        "is not this header's SHMEM_JOB_STATE_VERSION");
    }
    shmem_cuda_job_g = s;
}

/* The job state the calling thread reads; none set yet ends the kernel. */
SHMEM_ARCH_INLINE const shmem_job_state *shmem_arch_job(const char *call) {
    const shmem_job_state *job = shmem_cuda_job_g;
    if (__builtin_expect(job == nullptr, 0)) {
        shmem_arch_fail(call, "job", 0,
                        "is not set: the kernel's entry calls shmemx_cuda_set_job first");
    }
    return job;
}

/* ---- Loads and stores of words other threads or PEs write --------------------------------- */

/* Acquire loads and release stores at system scope (every GPU and CPU of the node), by size.
 * 1- and 2-byte loads land in a 16-bit register, as PTX has no 8-bit one. */
SHMEM_ARCH_INLINE uint16_t shmem_cuda_ld_acquire_8_(const void *p) {
    uint16_t v;
    asm volatile("ld.acquire.sys.u8 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
    return v;
}
SHMEM_ARCH_INLINE uint16_t shmem_cuda_ld_acquire_16_(const void *p) {
    uint16_t v;
    asm volatile("ld.acquire.sys.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
    return v;
}
SHMEM_ARCH_INLINE uint32_t shmem_cuda_ld_acquire_32_(const void *p) {
    uint32_t v;
    asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
SHMEM_ARCH_INLINE uint64_t shmem_cuda_ld_acquire_64_(const void *p) {
    unsigned long long v;
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return (uint64_t)v;
}
SHMEM_ARCH_INLINE void shmem_cuda_st_release_32_(void *p, uint32_t v) {
    asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
SHMEM_ARCH_INLINE void shmem_cuda_st_release_64_(void *p, uint64_t v) {
    asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"((unsigned long long)v) : "memory");
}

/* One element of any of the API's types (1, 2, 4 or 8 bytes, __half and __nv_bfloat16 too):
 * an acquire load (the typed waits), and a load and a store that go to memory now (p, g and
 * the strided forms: volatile, so neither is kept in a register or merged with another). */
template <typename T>
SHMEM_ARCH_INLINE T shmem_cuda_load_acquire_(const T *p) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                  "shmem/arch/cuda.h: elements are 1, 2, 4 or 8 bytes");
    T v;
    if constexpr (sizeof(T) == 1) {
        uint8_t b = (uint8_t)shmem_cuda_ld_acquire_8_(p);
        memcpy(&v, &b, 1);
    } else if constexpr (sizeof(T) == 2) {
        uint16_t b = shmem_cuda_ld_acquire_16_(p);
        memcpy(&v, &b, 2);
    } else if constexpr (sizeof(T) == 4) {
        uint32_t b = shmem_cuda_ld_acquire_32_(p);
        memcpy(&v, &b, 4);
    } else {
        uint64_t b = shmem_cuda_ld_acquire_64_(p);
        memcpy(&v, &b, 8);
    }
    return v;
}

/* The unsigned word of an element's size. */
template <size_t N>
struct shmem_cuda_bits_;
template <>
struct shmem_cuda_bits_<1> {
    typedef uint8_t type;
};
template <>
struct shmem_cuda_bits_<2> {
    typedef uint16_t type;
};
template <>
struct shmem_cuda_bits_<4> {
    typedef uint32_t type;
};
template <>
struct shmem_cuda_bits_<8> {
    typedef uint64_t type;
};

template <typename T>
SHMEM_ARCH_INLINE T shmem_cuda_load_elem_(const T *p) {
    typedef typename shmem_cuda_bits_<sizeof(T)>::type B;
    B b = *(const volatile B *)p;
    T v;
    memcpy(&v, &b, sizeof(T));
    return v;
}
template <typename T, typename V>
SHMEM_ARCH_INLINE void shmem_cuda_store_elem_(T *p, V value) {
    typedef typename shmem_cuda_bits_<sizeof(T)>::type B;
    const T v = (T)value;
    B b;
    memcpy(&b, &v, sizeof(T));
    *(volatile B *)p = b;
}

#define SHMEM_ARCH_LOAD_ACQUIRE(p) shmem_cuda_load_acquire_(p)
#define SHMEM_ARCH_LOAD_ELEM(p) shmem_cuda_load_elem_(p)
#define SHMEM_ARCH_STORE_ELEM(p, v) shmem_cuda_store_elem_((p), (v))

/* ---- Copies ------------------------------------------------------------------------------- */

/* Copy of [src, src + bytes) to dst by the `size` threads of a group, this one being `rank`:
 * the widest unit (16, 8, 4 or 1 bytes) in which source and destination are aligned alike,
 * thread `rank` moving units rank, rank + size, ... (neighbouring threads, neighbouring units:
 * coalesced), and the few bytes before the first and after the last unit likewise. */
template <typename U>
SHMEM_ARCH_INLINE void shmem_cuda_copy_units_(char *dst, const char *src, size_t units,
                                              uint32_t rank, uint32_t size) {
    U *d = (U *)dst;
    const U *s = (const U *)src;
#pragma unroll 4
    for (size_t i = rank; i < units; i += size) d[i] = s[i];
}

SHMEM_ARCH_INLINE void shmem_cuda_copy_(void *dst, const void *src, size_t bytes, uint32_t rank,
                                        uint32_t size) {
    char *d = (char *)dst;
    const char *s = (const char *)src;
    const uintptr_t skew = (uintptr_t)d ^ (uintptr_t)s;
    const size_t unit = (skew & 15u) == 0  ? 16u
                        : (skew & 7u) == 0 ? 8u
                        : (skew & 3u) == 0 ? 4u
                                           : 1u;
    size_t head = (unit - ((uintptr_t)d & (unit - 1u))) & (unit - 1u);
    if (head > bytes) head = bytes;
    for (size_t i = rank; i < head; i += size) d[i] = s[i];
    const size_t units = (bytes - head) / unit;
    switch (unit) {
    case 16: shmem_cuda_copy_units_<uint4>(d + head, s + head, units, rank, size); break;
    case 8: shmem_cuda_copy_units_<uint2>(d + head, s + head, units, rank, size); break;
    case 4: shmem_cuda_copy_units_<uint32_t>(d + head, s + head, units, rank, size); break;
    default: shmem_cuda_copy_units_<uint8_t>(d + head, s + head, units, rank, size); break;
    }
    for (size_t i = head + units * unit + rank; i < bytes; i += size) d[i] = s[i];
}

/* Copy of a span by the calling thread; complete (in this thread's program order) when it
 * returns. The ranges must not overlap. */
SHMEM_ARCH_INLINE void shmem_arch_copy(void *dst, const void *src, size_t bytes) {
    shmem_cuda_copy_(dst, src, bytes, 0, 1);
}
/* The same by the threads of the calling warp (all 32 call it with the same arguments) or of
 * the calling block (all its threads): they meet first, so the source holds what any of them
 * wrote, and after, so the copy is complete for every one of them when it returns. */
SHMEM_ARCH_INLINE void shmem_arch_copy_warp(void *dst, const void *src, size_t bytes) {
    __syncwarp();
    shmem_cuda_copy_(dst, src, bytes, shmem_cuda_thread_() & (SHMEM_CUDA_WARP - 1),
                     SHMEM_CUDA_WARP);
    __syncwarp();
}
SHMEM_ARCH_INLINE void shmem_arch_copy_block(void *dst, const void *src, size_t bytes) {
    __syncthreads();
    shmem_cuda_copy_(dst, src, bytes, shmem_cuda_thread_(), shmem_cuda_threads_());
    __syncthreads();
}

/* ---- Fences and atomics ------------------------------------------------------------------- */

/* Fences of the calling thread: acquire and release at system scope, and the full one (every
 * earlier load and store of this thread is visible to every PE before any later one). */
SHMEM_ARCH_INLINE void shmem_arch_fence_acquire(void) {
    asm volatile("fence.acq_rel.sys;" ::: "memory");
}
SHMEM_ARCH_INLINE void shmem_arch_fence_release(void) {
    asm volatile("fence.acq_rel.sys;" ::: "memory");
}
SHMEM_ARCH_INLINE void shmem_arch_fence_system(void) { __threadfence_system(); }

/* CUDA's atomics take unsigned int and unsigned long long; the API's words are uint32_t and
 * uint64_t (unsigned long on LP64). */
typedef unsigned long long shmem_cuda_ull_;
static_assert(sizeof(shmem_cuda_ull_) == sizeof(uint64_t), "unsigned long long is 64 bits");

/* Atomics on 4- and 8-byte words at system scope, sequentially consistent: a relaxed atomic of
 * CUDA's between two full fences. */
#define SHMEM_CUDA_ATOMICS_(SUFFIX, T, C)                                                          \
    SHMEM_ARCH_INLINE T shmem_arch_load_acquire_##SUFFIX(const T *p) {                             \
        return shmem_cuda_load_acquire_(p);                                                        \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_load_##SUFFIX(const T *p) {                                     \
        __threadfence_system();                                                                    \
        return shmem_cuda_load_acquire_(p);                                                        \
    }                                                                                              \
    SHMEM_ARCH_INLINE void shmem_arch_store_release_##SUFFIX(T *p, T v) {                          \
        if (sizeof(T) == 4) {                                                                      \
            shmem_cuda_st_release_32_(p, (uint32_t)v);                                             \
        } else {                                                                                   \
            shmem_cuda_st_release_64_(p, (uint64_t)v);                                             \
        }                                                                                          \
    }                                                                                              \
    SHMEM_ARCH_INLINE void shmem_arch_store_##SUFFIX(T *p, T v) {                                  \
        __threadfence_system();                                                                    \
        shmem_arch_store_release_##SUFFIX(p, v);                                                   \
        __threadfence_system();                                                                    \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_fetch_add_##SUFFIX(T *p, T v) {                                 \
        __threadfence_system();                                                                    \
        T old = (T)atomicAdd_system((C *)p, (C)v);                                                 \
        __threadfence_system();                                                                    \
        return old;                                                                                \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_fetch_and_##SUFFIX(T *p, T v) {                                 \
        __threadfence_system();                                                                    \
        T old = (T)atomicAnd_system((C *)p, (C)v);                                                 \
        __threadfence_system();                                                                    \
        return old;                                                                                \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_fetch_or_##SUFFIX(T *p, T v) {                                  \
        __threadfence_system();                                                                    \
        T old = (T)atomicOr_system((C *)p, (C)v);                                                  \
        __threadfence_system();                                                                    \
        return old;                                                                                \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_fetch_xor_##SUFFIX(T *p, T v) {                                 \
        __threadfence_system();                                                                    \
        T old = (T)atomicXor_system((C *)p, (C)v);                                                 \
        __threadfence_system();                                                                    \
        return old;                                                                                \
    }                                                                                              \
    SHMEM_ARCH_INLINE T shmem_arch_swap_##SUFFIX(T *p, T v) {                                      \
        __threadfence_system();                                                                    \
        T old = (T)atomicExch_system((C *)p, (C)v);                                                \
        __threadfence_system();                                                                    \
        return old;                                                                                \
    }                                                                                              \
    /* Returns the old value; stores `desired` only where it equalled `expected`. */               \
    SHMEM_ARCH_INLINE T shmem_arch_cas_##SUFFIX(T *p, T expected, T desired) {                     \
        __threadfence_system();                                                                    \
        T old = (T)atomicCAS_system((C *)p, (C)expected, (C)desired);                              \
        __threadfence_system();                                                                    \
        return old;                                                                                \
    }

SHMEM_CUDA_ATOMICS_(u32, uint32_t, unsigned int)
SHMEM_CUDA_ATOMICS_(u64, uint64_t, shmem_cuda_ull_)

/* ---- Waiting and the block barrier -------------------------------------------------------- */

/* One wait's progress; start each wait from SHMEM_ARCH_WAIT_INIT. */
typedef struct shmem_arch_wait {
    uint32_t spins;  /* checks so far */
    uint32_t nap_ns; /* the last __nanosleep (0: none yet) */
} shmem_arch_wait;
#define SHMEM_ARCH_WAIT_INIT                                                                       \
    { 0, 0 }

/* One step of a spin-wait, between two checks of the caller's condition: a few checks back to
 * back (a peer that answers at once is seen at once), then naps that double up to a bound, so
 * that a long wait leaves the SM's issue slots and the memory system to the threads that work,
 * and is seen within about the bound once its word changes. */
#define SHMEM_CUDA_SPINS_BEFORE_NAP 16u
#define SHMEM_CUDA_NAP_MIN_NS 32u
#define SHMEM_CUDA_NAP_MAX_NS 1024u
SHMEM_ARCH_INLINE void shmem_arch_spin(shmem_arch_wait *wait) {
    if (wait->spins < SHMEM_CUDA_SPINS_BEFORE_NAP) {
        ++wait->spins;
        return;
    }
    uint32_t ns = wait->nap_ns == 0 ? SHMEM_CUDA_NAP_MIN_NS : wait->nap_ns * 2u;
    if (ns > SHMEM_CUDA_NAP_MAX_NS) ns = SHMEM_CUDA_NAP_MAX_NS;
    wait->nap_ns = ns;
    __nanosleep(ns);
}

/* The barrier among the blocks of one launch: arrivals, and the barriers completed. In this
 * file's device memory (zero when the module loads; the last block to arrive resets the
 * count), so one kernel that uses it runs at a time per PE. */
struct shmem_cuda_grid_ {
    unsigned int arrived;
    unsigned int generation;
};
static __device__ __attribute__((unused)) shmem_cuda_grid_ shmem_cuda_grid_g;

/* Barrier among the blocks of this launch: every thread of every block calls it, and every
 * block must be resident at once (cooperative launch, or no more blocks than fit). Orders
 * every store of a block before the barrier before every load of another block after it. */
SHMEM_ARCH_INLINE void shmem_arch_block_barrier(void) {
    __syncthreads();
    const uint32_t blocks = (uint32_t)shmem_arch_block_num();
    if (blocks > 1 && shmem_arch_leader_block()) {
        shmem_cuda_grid_ *g = &shmem_cuda_grid_g;
        const uint32_t gen = shmem_cuda_ld_acquire_32_(&g->generation);
        /* Fences on both sides of the arrival: this block's stores leave before it counts,
         * and the last to arrive, which releases the others, has seen every block's. */
        __threadfence();
        const uint32_t before = atomicAdd(&g->arrived, 1u);
        __threadfence();
        if (before == blocks - 1u) {
            atomicExch(&g->arrived, 0u);
            shmem_cuda_st_release_32_(&g->generation, gen + 1u);
        } else {
            shmem_arch_wait wait = SHMEM_ARCH_WAIT_INIT;
            while (shmem_cuda_ld_acquire_32_(&g->generation) == gen) shmem_arch_spin(&wait);
        }
    }
    __syncthreads();
}

#endif /* SHMEM_ARCH_CUDA_H */
