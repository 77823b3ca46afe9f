/* api.cpp: every family of the kernel-side API called from AscendC kernels, as a kernel written
 * against CANN's device headers calls it: `extern "C" __global__ __aicore__` entries taking
 * GM_ADDR arguments, __gm__ pointers, CANN's half and bfloat16_t. ctest ascendc.compile compiles
 * it against the declaration-only stand-in of kernel_operator.h (tests/ascendc/), with warnings
 * as errors; a build with CANN also compiles it with bisheng for an AI core. Not run here: no
 * NPU. */
#include <shmem/device.h>

/* The buffers the host passes (symmetric, in device memory). */
struct api_args {
    __gm__ int64_t *data;  /* n_pes * 64 */
    __gm__ int64_t *back;  /* n_pes * 64 */
    __gm__ half *halves;   /* 64 */
    __gm__ bfloat16_t *bf; /* 64 */
    __gm__ int32_t *sig32;
    __gm__ uint64_t *sig64;
    __gm__ uint32_t *word;
    __gm__ int64_t *count;
};

/* Reads the argument block the host wrote (its first bytes hold the pointers above). */
__aicore__ static inline api_args api_load_args(GM_ADDR args) {
    __gm__ const api_args *a = reinterpret_cast<__gm__ const api_args *>(args);
    api_args copy;
    copy.data = a->data;
    copy.back = a->back;
    copy.halves = a->halves;
    copy.bf = a->bf;
    copy.sig32 = a->sig32;
    copy.sig64 = a->sig64;
    copy.word = a->word;
    copy.count = a->count;
    return copy;
}

/* Puts and gets of every form, to the next PE and back. */
extern "C" __global__ __aicore__ void shmem_ascendc_api_rma(GM_ADDR job, GM_ADDR args) {
    shmemx_ascendc_set_job(job);
    const api_args a = api_load_args(args);
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int next = (me + 1) % n;
    size_t lo = (size_t)aclshmemx_block_idx() * 8;
    __gm__ int64_t *mine = a.data + (size_t)me * 64 + lo;
    aclshmem_putmem(mine, mine, 8 * sizeof(int64_t), next);
    aclshmem_putmem_nbi(mine, mine, 8 * sizeof(int64_t), next);
    aclshmem_getmem(a.back + lo, mine, 8 * sizeof(int64_t), next);
    aclshmem_getmem_nbi(a.back + lo, mine, 8 * sizeof(int64_t), next);
    aclshmem_put_int64_mem(mine, mine, 8, next);
    aclshmem_get_int64_mem_nbi(a.back + lo, mine, 8, next);
    aclshmem_put_half_mem(a.halves, a.halves, 64, next);
    aclshmem_get_bfloat16_mem(a.bf, a.bf, 64, next);
    aclshmem_int64_p(mine, aclshmem_int64_g(mine, next) + 1, next);
    aclshmem_int64_iput(a.back, a.data, 2, 1, 16, next);
    aclshmem_int64_iget(a.back, a.data, 1, 2, 16, next);
    non_contiguous_copy_param rows = {4, 8, 16, 16};
    aclshmem_put_int64_mem(a.back, a.data, rows, next);
    aclshmem_get_int64_mem_nbi(a.back, a.data, rows, next);
    __gm__ void *peer = aclshmem_ptr(a.data, next);
    if (peer != nullptr) aclshmem_quiet();
    aclshmem_fence();
    aclshmem_barrier_all();
}

/* AMOs, signals, waits and the barriers of every shape. */
extern "C" __global__ __aicore__ void shmem_ascendc_api_sync(GM_ADDR job, GM_ADDR args) {
    shmemx_ascendc_set_job(job);
    const api_args a = api_load_args(args);
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int next = (me + 1) % n;
    int64_t old = aclshmem_int64_atomic_fetch_add(a.count, 1, 0);
    aclshmem_int64_atomic_add(a.count, old, 0);
    (void)aclshmem_uint32_atomic_compare_swap(a.word, 0u, (uint32_t)me, next);
    (void)aclshmem_uint32_atomic_fetch_or(a.word, 1u, next);
    aclshmem_uint32_atomic_xor(a.word, 2u, next);
    (void)aclshmem_uint32_atomic_swap(a.word, aclshmem_uint32_atomic_fetch(a.word, next), next);
    aclshmem_uint32_atomic_set(a.word, 0u, next);
    aclshmem_putmem_signal(a.data, a.data, 64, a.sig32, 1, ACLSHMEM_SIGNAL_ADD, next);
    aclshmemx_signal_op(a.sig32, 1, ACLSHMEM_SIGNAL_ADD, next);
    (void)aclshmem_signal_wait_until(a.sig32, ACLSHMEM_CMP_GE, 2);
    aclshmemx_putmem_signal_u64(a.data, a.data, 64, a.sig64, 1, ACLSHMEM_SIGNAL_SET, next);
    (void)aclshmemx_signal_wait_until_u64(a.sig64, ACLSHMEM_CMP_EQ, 1);
    (void)aclshmemx_signal_fetch_u64(a.sig64);
    aclshmem_int64_wait_until(a.count, ACLSHMEM_CMP_GE, 1);
    if (aclshmem_uint32_test(a.word, ACLSHMEM_CMP_NE, 7u)) aclshmem_uint32_wait(a.word, 7u);
    aclshmem_sync(ACLSHMEM_TEAM_WORLD);
    aclshmem_barrier(ACLSHMEM_TEAM_WORLD);
    aclshmemx_barrier_vec(ACLSHMEM_TEAM_WORLD);
    (void)aclshmem_team_translate_pe(ACLSHMEM_TEAM_WORLD, me, ACLSHMEM_TEAM_WORLD);
    (void)aclshmem_team_my_pe(ACLSHMEM_TEAM_WORLD);
    (void)aclshmem_team_n_pes(ACLSHMEM_TEAM_WORLD);
    aclshmem_sync_all();
    aclshmemx_barrier_all_vec();
}
