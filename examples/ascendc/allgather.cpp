/*
 * allgather.cpp: the allgather operator's kernel (examples/allgather/allgather.c) written as an
 * AscendC kernel for an Ascend NPU's AI cores.
 *
 * The same algorithm: every PE holds `count` floats in `input`; each block pushes its slice
 * into every PE's `output` with a put-with-signal (the signal counts the slices that have
 * arrived from this PE), then waits until every PE's slices have arrived. The host launches it
 * on an ACL stream with the job state's device address first:
 *
 *   shmem_allgather_ascendc<<<blocks, nullptr, stream>>>(job, args);
 *
 * where `args` points to a struct allgather_ascendc_args in device memory. With CANN found
 * (ASCEND_HOME_PATH), CMake compiles it with bisheng for the AI core; without, ctest
 * ascendc.compile checks it against the declaration-only stand-in of AscendC. It has not run
 * on an NPU.
 */
#include <shmem/device.h>

/* What the host writes to device memory before the launch. */
struct allgather_ascendc_args {
    __gm__ const float *input; /* symmetric: count floats */
    __gm__ float *output;      /* symmetric: npes * count floats */
    __gm__ int32_t *arrived;   /* symmetric: npes counters, slices received from each PE */
    uint64_t count;
    int32_t round; /* 1 for the first launch, then 2, ...: the counters never need a reset */
};

extern "C" __global__ __aicore__ void shmem_allgather_ascendc(GM_ADDR job, GM_ADDR args) {
    shmemx_ascendc_set_job(job);
    __gm__ const allgather_ascendc_args *a =
        reinterpret_cast<__gm__ const allgather_ascendc_args *>(args);
    __gm__ const float *input = a->input;
    __gm__ float *output = a->output;
    __gm__ int32_t *arrived = a->arrived;
    const size_t count = a->count;
    const int32_t round = a->round;

    int me = aclshmem_my_pe(), npes = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    size_t lo = count * (size_t)b / (size_t)nb, hi = count * (size_t)(b + 1) / (size_t)nb;
    /* Starting with the next PE, so the PEs do not all write to PE 0 first. */
    for (int k = 1; k <= npes; k++) {
        int pe = (me + k) % npes;
        aclshmem_putmem_signal(output + (size_t)me * count + lo, input + lo,
                               (hi - lo) * sizeof(float), &arrived[me], 1, ACLSHMEM_SIGNAL_ADD, pe);
    }
    /* Every block of every PE signals once per round, empty slices too. */
    for (int pe = 0; pe < npes; pe++) {
        aclshmem_signal_wait_until(&arrived[pe], ACLSHMEM_CMP_GE, round * nb);
    }
}
