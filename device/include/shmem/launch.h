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
 * Block 0 runs on the calling thread, block i > 0 on the i-th thread of the process's launch
 * pool: started by the first launch that needs it, parked between launches, joined by
 * shmem_finalize (so a block's thread-local variables outlive a launch). Blocks may be more than
 * the cores: kernel-side waits yield, then nap. Blocks of one launch must all reach each
 * kernel-side barrier, and the PEs' kernels the same sequence of barriers. One launch runs at a
 * time per process.
 *
 * Returns 0 when every block ran; -1 (logged: the call, the argument and its value) when the
 * library is not running, `kernel` is NULL, `blocks` is not in [1, 4096], it is called from
 * inside a kernel or while another thread's launch runs, or the threads cannot be started (then
 * no block ran). */
int shmemx_cpu_launch(shmemx_cpu_kernel_t kernel, void *args, int blocks);

/* The number a kernel names `team` by (aclshmem_team_t of shmem/device.h: its slot in the job's
 * team table; 0 for the world), or -1 when `team` is not a live team of this PE or its PEs are
 * no arithmetic progression (a list shmemx_team_create made, which the table does not hold).
 * Declared here with a void pointer so this header needs no host header: pass a shmem_team_t. */
int shmemx_team_kernel_id(const void *team);

/* The job state a kernel on this PE's NPU or GPU reads (the npu and cuda devices): the device
 * address of a copy of the host's, refreshed by this call (teams made since,
 * aclshmemx_set_mte_config's scratch area), with peers' heaps at their device addresses and no
 * host memory in it. Pass it to the kernel as an argument; the AscendC entry hands it to
 * shmemx_ascendc_set_job, a CUDA kernel's threads to shmemx_cuda_set_job. NULL when the heap is not
 * on an accelerator (CPU kernels read the host's state directly), before start-up, or when the copy
 * fails (logged). */
const void *shmemx_job_state_device(void);

/* Most blocks of one launch. */
#define SHMEMX_CPU_LAUNCH_MAX_BLOCKS 4096

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_LAUNCH_H */
