/* shmem/arch.h: picks the architecture the kernel-side API (shmem/device.h) is compiled for.
 *
 * Each architecture is one header under arch/ giving the same primitives: shmem_arch_copy,
 * the shmem_arch_* atomics on 4- and 8-byte words, the element loads and stores
 * (SHMEM_ARCH_LOAD_ACQUIRE, SHMEM_ARCH_LOAD_ELEM, SHMEM_ARCH_STORE_ELEM), the fences,
 * shmem_arch_spin, the block index and count, shmem_arch_block_barrier, shmem_arch_job (the
 * job state a kernel reads), shmem_arch_fail / shmem_arch_fail_addr (end the job with one line)
 * and the qualifiers SHMEM_ARCH_INLINE / SHMEM_ARCH_COLD / SHMEM_ARCH_GM (the memory a kernel
 * reaches), and the groups of the scoped forms (shmem_arch_copy_warp / _block,
 * shmem_arch_sync_warp / _block, shmem_arch_leader_warp / _block: a group is one thread where
 * a block is). The CPU one (arch/cpu.h) runs everywhere; the CUDA one (arch/cuda.h) is chosen
 * by nvcc (__CUDACC__ in its host and device passes alike, __CUDA_ARCH__ in the device pass);
 * the AscendC one (arch/ascendc.h) by CANN's compile modes: bisheng -xcce (__CCE__ in its
 * host and device passes alike, so a kernel's file sees one architecture; __CCE_AICORE__ in
 * the device pass), and the CPU-debug build of AscendC kernels (__CCE_KT_TEST__,
 * ASCENDC_CPU_DEBUG). */
#ifndef SHMEM_ARCH_H
#define SHMEM_ARCH_H

#if defined(__CUDACC__) || defined(__CUDA_ARCH__)
/* Blocks are CUDA thread blocks; the plain routines are a thread's, the _warp and _block forms
 * a warp's or a block's; the job state is a device copy of the host's. */
#include "arch/cuda.h"
#elif defined(__CCE__) || defined(__CCE_AICORE__) || defined(__CCE_KT_TEST__) ||                   \
    defined(ASCENDC_CPU_DEBUG)
/* Blocks are AI cores (GetBlockIdx/GetBlockNum), the copy a core's MTE staged through UB. */
#include "arch/ascendc.h"
#else
#include "arch/cpu.h"
#endif

#endif /* SHMEM_ARCH_H */
