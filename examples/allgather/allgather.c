/*
 * allgather.c: an allgather operator written as a kernel (push, signal, pull).
 *
 * Every PE holds `count` floats; afterwards every PE holds all PEs' inputs, PE r's at
 * [r * count, (r + 1) * count). The kernel runs as `blocks` blocks per PE: each block pushes its
 * slice of the input into every PE's output with a put-with-signal (the signal counts the slices
 * that have arrived from that PE), then waits until every PE's slices have arrived; the host
 * then reads (pulls) the output from its own symmetric heap.
 *
 *   allgather_op [--count N] [--blocks B] [--iters I] [--data DIR]
 *
 * With --data, PE r reads DIR/input_pe<r>.bin (count float32) and writes DIR/output_pe<r>.bin
 * (npes * count float32) for verify_result.py; without it the inputs come from a formula
 * and every PE checks its own output. Exit status 0 when the run (and the check) succeeded.
 */
#include <limits.h>
#include <shmem.h>
#include <shmem/device.h>
#include <shmem/launch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_util.h"

#define PROG "allgather_op"

struct allgather_args {
    const float *input; /* symmetric: count floats */
    float *output;      /* symmetric: npes * count floats */
    int32_t *arrived;   /* symmetric: npes counters, slices received from each PE */
    size_t count;
    int32_t round; /* 1 for the first launch, then 2, ...: the counters never need a reset */
};

/* One block: push this block's slice to every PE (starting with the next one, so the PEs do
 * not all write to PE 0 first), then wait for every PE's slices. */
static void allgather_kernel(void *p) {
    struct allgather_args *a = p;
    int me = aclshmem_my_pe(), npes = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    size_t lo = a->count * (size_t)b / (size_t)nb, hi = a->count * (size_t)(b + 1) / (size_t)nb;
    for (int k = 1; k <= npes; k++) {
        int pe = (me + k) % npes;
        aclshmem_putmem_signal(a->output + (size_t)me * a->count + lo, a->input + lo,
                               (hi - lo) * sizeof(float), &a->arrived[me], 1, ACLSHMEM_SIGNAL_ADD,
                               pe);
    }
    /* Every block of every PE signals once per round, empty slices too. */
    for (int pe = 0; pe < npes; pe++) {
        aclshmem_signal_wait_until(&a->arrived[pe], ACLSHMEM_CMP_GE, a->round * nb);
    }
}

static float input_value(int pe, size_t i) { return (float)pe * 1000.0f + (float)(i % 997); }

int main(int argc, char **argv) {
    long count = 4096, blocks = 4, iters = 1;
    const char *data = NULL;
    const struct op_option options[] = {
        OP_LONG("--count", 1L << 26, &count),
        OP_LONG("--blocks", SHMEMX_CPU_LAUNCH_MAX_BLOCKS, &blocks),
        OP_LONG("--iters", INT_MAX / SHMEMX_CPU_LAUNCH_MAX_BLOCKS, &iters),
        OP_TEXT("--data", &data),
    };
    if (op_parse_options(PROG, argc, argv, options, sizeof options / sizeof options[0]) != 0)
        return 2;

    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    size_t n = (size_t)count;
    float *input = shmem_malloc(n * sizeof(float));
    float *output = shmem_calloc((size_t)npes * n, sizeof(float));
    int32_t *arrived = shmem_calloc((size_t)npes, sizeof(int32_t));
    if (input == NULL || output == NULL || arrived == NULL) {
        fprintf(stderr, "allgather_op: PE %d: shmem_malloc of %zu floats failed\n", me,
                (size_t)(npes + 1) * n);
        shmem_global_exit(1);
    }
    if (data != NULL) {
        if (op_file_io(PROG, data, "input", me, input, n * sizeof(float), 0) != 0)
            shmem_global_exit(1);
    } else {
        for (size_t i = 0; i < n; i++) input[i] = input_value(me, i);
    }
    shmem_barrier_all();

    struct allgather_args args = {input, output, arrived, n, 0};
    for (long it = 0; it < iters; it++) {
        args.round = (int32_t)(it + 1);
        if (shmemx_cpu_launch(allgather_kernel, &args, (int)blocks) != 0) shmem_global_exit(1);
    }

    int status = 0;
    if (data != NULL) {
        if (op_file_io(PROG, data, "output", me, output, (size_t)npes * n * sizeof(float), 1) != 0)
            status = 1;
    } else {
        size_t bad = 0;
        for (int pe = 0; pe < npes; pe++) {
            for (size_t i = 0; i < n; i++) bad += output[(size_t)pe * n + i] != input_value(pe, i);
        }
        if (bad != 0) {
            printf("allgather_op: PE %d: FAILED, %zu of %zu values wrong\n", me, bad,
                   (size_t)npes * n);
            status = 1;
        } else {
            printf("allgather_op: PE %d: %zu values from %d PEs verified (%ld blocks)\n", me,
                   (size_t)npes * n, npes, blocks);
        }
    }
    shmem_barrier_all();
    shmem_free(arrived);
    shmem_free(output);
    shmem_free(input);
    shmem_finalize();
    return status;
}
