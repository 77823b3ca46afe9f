/* api.cu: every family of the kernel-side API called from CUDA kernels, at every scope it has:
 * the calling thread's forms, a warp's and a block's (NVSHMEM's _warp and _block), with CUDA's
 * __half and __nv_bfloat16 among the element types. ctest cuda.compile compiles it with nvcc for
 * sm_90, warnings as errors. Not run here: no GPU. */
#include <shmem/device.h>

/* The buffers the host passes (symmetric, in GPU memory). */
struct api_args {
    int64_t *data;     /* n_pes * 64 */
    int64_t *back;     /* n_pes * 64 */
    __half *halves;    /* 64 */
    __nv_bfloat16 *bf; /* 64 */
    float *floats;     /* 64 */
    int32_t *sig32;
    uint64_t *sig64;
    uint32_t *word;
    int64_t *count;
    int16_t *flag16;
};

/* Puts and gets of every form from single threads: each thread of the block moves one slice. */
__global__ void shmem_cuda_api_rma_thread(const void *job, api_args a) {
    shmemx_cuda_set_job(job);
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int next = (me + 1) % n;
    size_t lo = ((size_t)aclshmemx_block_idx() * blockDim.x + threadIdx.x) % 8;
    int64_t *mine = a.data + (size_t)me * 64 + lo;
    aclshmem_putmem(mine, mine, sizeof(int64_t), next);
    aclshmem_putmem_nbi(mine, mine, sizeof(int64_t), next);
    aclshmem_getmem(a.back + lo, mine, sizeof(int64_t), next);
    aclshmem_getmem_nbi(a.back + lo, mine, sizeof(int64_t), next);
    aclshmem_put_int64_mem(mine, mine, 1, next);
    aclshmem_get_int64_mem_nbi(a.back + lo, mine, 1, next);
    aclshmem_put_half_mem(a.halves, a.halves, 64, next);
    aclshmem_get_bfloat16_mem(a.bf, a.bf, 64, next);
    aclshmem_half_p(a.halves + lo, aclshmem_half_g(a.halves + lo, next), next);
    aclshmem_bfloat16_p(a.bf + lo, aclshmem_bfloat16_g(a.bf + lo, next), next);
    aclshmem_int64_p(mine, aclshmem_int64_g(mine, next) + 1, next);
    aclshmem_int64_iput(a.back, a.data, 2, 1, 16, next);
    aclshmem_int64_iget(a.back, a.data, 1, 2, 16, next);
    aclshmem_half_iput(a.halves, a.halves, 2, 1, 16, next);
    non_contiguous_copy_param rows = {4, 8, 16, 16};
    aclshmem_put_int64_mem(a.back, a.data, rows, next);
    aclshmem_get_int64_mem_nbi(a.back, a.data, rows, next);
    void *peer = aclshmem_ptr(a.data, next);
    if (peer != nullptr) aclshmem_quiet();
    aclshmem_fence();
    aclshmem_barrier_all();
}

/* The same moves by a warp and by a block, each group calling with one set of arguments. */
__global__ void shmem_cuda_api_rma_groups(const void *job, api_args a) {
    shmemx_cuda_set_job(job);
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int next = (me + 1) % n;
    int64_t *mine = a.data + (size_t)me * 64;
    size_t warp = threadIdx.x / 32u;
    aclshmemx_putmem_warp(mine + warp, mine + warp, sizeof(int64_t), next);
    aclshmemx_getmem_warp(a.back + warp, mine + warp, sizeof(int64_t), next);
    aclshmemx_putmem_nbi_warp(mine, mine, 64 * sizeof(int64_t), next);
    aclshmemx_getmem_nbi_warp(a.back, mine, 64 * sizeof(int64_t), next);
    aclshmemx_put_float_mem_warp(a.floats, a.floats, 64, next);
    aclshmemx_get_half_mem_nbi_warp(a.halves, a.halves, 64, next);
    aclshmemx_put_bfloat16_mem_nbi_warp(a.bf, a.bf, 64, next);
    aclshmemx_get_uint8_mem_warp((uint8_t *)a.back, (const uint8_t *)mine, 7, next);
    aclshmemx_putmem_signal_warp(mine, mine, 64, a.sig32, 1, ACLSHMEM_SIGNAL_ADD, next);
    aclshmemx_putmem_signal_nbi_warp(mine, mine, 64, a.sig32, 1, ACLSHMEM_SIGNAL_ADD, next);
    aclshmemx_putmem_signal_u64_warp(mine, mine, 64, a.sig64, 1, ACLSHMEM_SIGNAL_SET, next);

    aclshmemx_putmem_block(mine, mine, 64 * sizeof(int64_t), next);
    aclshmemx_getmem_block(a.back, mine, 64 * sizeof(int64_t), next);
    aclshmemx_putmem_nbi_block((char *)mine + 3, (const char *)mine + 5, 200, next);
    aclshmemx_getmem_nbi_block(a.back, mine, 64 * sizeof(int64_t), next);
    aclshmemx_put_int64_mem_block(mine, mine, 64, next);
    aclshmemx_get_double_mem_block((double *)a.back, (const double *)mine, 64, next);
    aclshmemx_put_half_mem_nbi_block(a.halves, a.halves, 64, next);
    aclshmemx_get_bfloat16_mem_nbi_block(a.bf, a.bf, 64, next);
    aclshmemx_putmem_signal_block(mine, mine, 64, a.sig32, 1, ACLSHMEM_SIGNAL_SET, next);
    aclshmemx_putmem_signal_nbi_block(mine, mine, 64, a.sig32, 1, ACLSHMEM_SIGNAL_ADD, next);
    aclshmemx_putmem_signal_u64_block(mine, mine, 64, a.sig64, 2, ACLSHMEM_SIGNAL_SET, next);
    aclshmem_quiet();
    aclshmem_sync_all();
}

/* AMOs, signals, waits, team queries and the barriers of every shape. */
__global__ void shmem_cuda_api_sync(const void *job, api_args a) {
    shmemx_cuda_set_job(job);
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int next = (me + 1) % n;
    if (threadIdx.x == 0) {
        int64_t old = aclshmem_int64_atomic_fetch_add(a.count, 1, 0);
        aclshmem_int64_atomic_add(a.count, old, 0);
        aclshmem_int64_atomic_inc(a.count, 0);
        (void)aclshmem_int64_atomic_fetch_inc(a.count, 0);
        (void)aclshmem_uint32_atomic_compare_swap(a.word, 0u, (uint32_t)me, next);
        (void)aclshmem_uint32_atomic_fetch_or(a.word, 1u, next);
        (void)aclshmem_uint64_atomic_fetch_and(a.sig64, 3u, next);
        aclshmem_uint32_atomic_xor(a.word, 2u, next);
        aclshmem_int32_atomic_and(a.sig32, 7, next);
        (void)aclshmem_uint32_atomic_swap(a.word, aclshmem_uint32_atomic_fetch(a.word, next), next);
        aclshmem_uint32_atomic_set(a.word, 0u, next);
        aclshmem_putmem_signal(a.data, a.data, 64, a.sig32, 1, ACLSHMEM_SIGNAL_ADD, next);
        aclshmem_putmem_signal_nbi(a.data, a.data, 64, a.sig32, 1, ACLSHMEM_SIGNAL_ADD, next);
        aclshmemx_signal_op(a.sig32, 1, ACLSHMEM_SIGNAL_ADD, next);
        (void)aclshmem_signal_wait_until(a.sig32, ACLSHMEM_CMP_GE, 3);
        aclshmemx_putmem_signal_u64(a.data, a.data, 64, a.sig64, 1, ACLSHMEM_SIGNAL_SET, next);
        aclshmemx_signal_op_u64(a.sig64, 1, ACLSHMEM_SIGNAL_ADD, next);
        (void)aclshmemx_signal_wait_until_u64(a.sig64, ACLSHMEM_CMP_EQ, 1);
        (void)aclshmemx_signal_fetch_u64(a.sig64);
        aclshmem_int64_wait_until(a.count, ACLSHMEM_CMP_GE, 1);
        aclshmem_int16_wait_until(a.flag16, ACLSHMEM_CMP_NE, 0);
        aclshmem_int8_wait_until((int8_t *)a.flag16, ACLSHMEM_CMP_GT, 0);
        aclshmem_uint8_p((uint8_t *)a.flag16 + 1, aclshmem_uint8_g((uint8_t *)a.flag16, next),
                         next);
        if (aclshmem_uint32_test(a.word, ACLSHMEM_CMP_NE, 7u)) aclshmem_uint32_wait(a.word, 7u);
        (void)aclshmem_team_translate_pe(ACLSHMEM_TEAM_WORLD, me, ACLSHMEM_TEAM_WORLD);
        (void)aclshmem_team_my_pe(ACLSHMEM_TEAM_WORLD);
        (void)aclshmem_team_n_pes(ACLSHMEM_TEAM_WORLD);
    }
    aclshmem_sync(ACLSHMEM_TEAM_WORLD);
    aclshmem_barrier(ACLSHMEM_TEAM_WORLD);
    aclshmemx_barrier_vec(ACLSHMEM_TEAM_WORLD);
    aclshmem_sync_all();
    aclshmemx_barrier_all_vec();
}
