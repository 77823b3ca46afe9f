/* shmem/arch.h: picks the architecture the kernel-side API (shmem/device.h) is compiled for.
 *
 * Each architecture is one header under arch/ giving the same primitives: shmem_arch_copy,
 * the shmem_arch_* atomics on 4- and 8-byte words, the fences, shmem_arch_spin, the block
 * index and count, shmem_arch_block_barrier, shmem_arch_job (the job state a kernel reads) and
 * the qualifiers SHMEM_ARCH_INLINE / SHMEM_ARCH_COLD. Only the CPU one exists today. */
#ifndef SHMEM_ARCH_H
#define SHMEM_ARCH_H

#if defined(__CUDACC__) || defined(__CUDA_ARCH__)
/* arch/cuda.h: blocks are CUDA blocks, the copy is a warp's or a block's, the job state a
 * device copy of the host's. */
#error "shmem/device.h: the CUDA architecture is not provided yet; build kernels for the CPU"
#elif defined(__CCE_KT_TEST__) || defined(__CCE_AICORE__) || defined(ASCENDC_CPU_DEBUG)
/* arch/ascendc.h: blocks are AI cores (GetBlockIdx/GetBlockNum), the copy a core's MTE. */
#error "shmem/device.h: the AscendC architecture is not provided yet; build kernels for the CPU"
#else
#include "arch/cpu.h"
#endif

#endif /* SHMEM_ARCH_H */
