/* shmem/launch.h: the host call that runs a CPU kernel (the kernel-side API, shmem/device.h).
 *
 * A host-side declaration beside the kernel-side headers, because it names the kernel's
 * shape; it includes nothing. */
#ifndef SHMEM_LAUNCH_H
#define SHMEM_LAUNCH_H

#ifdef __cplusplus
extern "C" {
#endif

/* A kernel: one block's work. Every block of a launch gets the same `args`. */
typedef void (*shmemx_cpu_kernel_t)(void *args);

/* Runs `kernel(args)` as `blocks` blocks on threads of this process and returns when every
 * block has returned: the CPU analogue of CUDA's `kernel<<<blocks, 1>>>(args)` followed by a
 * stream synchronisation, and of AscendC's `kernel<<<blocks, nullptr, stream>>>`. Inside, each
 * block reads its index and the count with aclshmemx_block_idx() / aclshmemx_block_num().
 * Block 0 runs on the calling thread. Blocks may be more than the cores: kernel-side waits
 * yield. Blocks of one launch must all reach each kernel-side barrier; launches on one PE
 * must not overlap (one at a time per process), and every PE of the job calls it the same
 * number of times when its kernels hold kernel-side barriers.
 *
 * Returns 0 when every block ran; -1 (logged: the call, the argument and its value) when the
 * library is not running, `kernel` is NULL, `blocks` is not in [1, 4096], it is called from
 * inside a kernel, or the threads cannot be started (then no block ran). */
int shmemx_cpu_launch(shmemx_cpu_kernel_t kernel, void *args, int blocks);

/* Most blocks of one launch. */
#define SHMEMX_CPU_LAUNCH_MAX_BLOCKS 4096

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_LAUNCH_H */
