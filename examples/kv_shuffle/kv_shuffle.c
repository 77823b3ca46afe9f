/*
 * kv_shuffle.c: a pairwise KV-cache block exchange written as a kernel.
 *
 * There are `total` KV blocks of `bsize` floats. Global block j is held by PE holder(j) and
 * belongs to PE owner(j); the mapping is uneven and drawn from a seed (utils/gen_data.py draws
 * the same one). Each PE holds its blocks in global order; afterwards each PE holds the blocks
 * it owns, in global order. The kernel runs as `blocks` blocks per PE: block b sends held blocks
 * b, b + B, ... to their owners with a put-with-signal (the signal counts arrived KV blocks on
 * the owner), then waits until all the KV blocks this PE owns have arrived.
 *
 *   kv_shuffle_op [--total T] [--bsize S] [--blocks B] [--seed N] [--iters I] [--data DIR]
 *
 * With --data, PE r reads DIR/input_pe<r>.bin (its held blocks) and writes DIR/output_pe<r>.bin
 * (its owned blocks) for verify_result.py; without it the block contents come from a
 * formula and every PE checks its own output. Exit status 0 when the run (and the check)
 * succeeded.
 */
#include <limits.h>
#include <shmem.h>
#include <shmem/device.h>
#include <shmem/launch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_util.h"

#define PROG "kv_shuffle_op"

struct kv_args {
    const float *held;       /* symmetric: the held KV blocks, in global order */
    float *owned;            /* symmetric: the owned KV blocks, in global order */
    int32_t *arrived;        /* symmetric: KV blocks received by this PE */
    const int *send_owner;   /* per held block: its owner */
    const size_t *send_slot; /* per held block: its index among the owner's blocks */
    size_t n_held, n_owned, bsize;
    int32_t round; /* 1 for the first launch, then 2, ...: the counter never needs a reset */
};

static void kv_shuffle_kernel(void *p) {
    struct kv_args *a = p;
    size_t b = (size_t)aclshmemx_block_idx(), nb = (size_t)aclshmemx_block_num();
    for (size_t i = b; i < a->n_held; i += nb) {
        aclshmem_putmem_signal(a->owned + a->send_slot[i] * a->bsize, a->held + i * a->bsize,
                               a->bsize * sizeof(float), a->arrived, 1, ACLSHMEM_SIGNAL_ADD,
                               a->send_owner[i]);
    }
    aclshmem_signal_wait_until(a->arrived, ACLSHMEM_CMP_GE, a->round * (int32_t)a->n_owned);
}

/* The mapping, as utils/gen_data.py draws it: a 64-bit LCG (Knuth's MMIX constants), its top
 * 31 bits per draw. The owner is skewed towards low PEs (the smaller of two draws). */
static uint32_t lcg_next(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*s >> 33);
}

static void draw_mapping(uint64_t seed, size_t total, int npes, int *holder, int *owner) {
    uint64_t s = seed;
    for (size_t j = 0; j < total; j++) {
        holder[j] = (int)(lcg_next(&s) % (uint32_t)npes);
        uint32_t x = lcg_next(&s) % (uint32_t)npes, y = lcg_next(&s) % (uint32_t)npes;
        owner[j] = (int)(x < y ? x : y);
    }
}

static float kv_value(size_t j, size_t i) {
    return (float)(j % 1009) * 8.0f + (float)(i % 7) * 0.125f;
}

int main(int argc, char **argv) {
    long total = 64, bsize = 256, blocks = 4, seed = 1, iters = 1;
    const char *data = NULL;
    const struct op_option options[] = {
        OP_LONG("--total", 1L << 20, &total),
        OP_LONG("--bsize", 1L << 20, &bsize),
        OP_LONG("--blocks", SHMEMX_CPU_LAUNCH_MAX_BLOCKS, &blocks),
        OP_LONG("--seed", LONG_MAX, &seed),
        OP_LONG("--iters", 1000, &iters),
        OP_TEXT("--data", &data),
    };
    if (op_parse_options(PROG, argc, argv, options, sizeof options / sizeof options[0]) != 0)
        return 2;

    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    size_t t = (size_t)total, bs = (size_t)bsize;
    int *holder = malloc(t * sizeof(int)), *owner = malloc(t * sizeof(int));
    int *send_owner = malloc(t * sizeof(int));
    size_t *send_slot = malloc(t * sizeof(size_t)), *filled = calloc((size_t)npes, sizeof(size_t));
    if (holder == NULL || owner == NULL || send_owner == NULL || send_slot == NULL ||
        filled == NULL) {
        fprintf(stderr, "kv_shuffle_op: PE %d: out of memory for %zu blocks\n", me, t);
        shmem_global_exit(1);
    }
    draw_mapping((uint64_t)seed, t, npes, holder, owner);
    /* Each held block goes to the next free slot of its owner, in global order. The heap
     * buffers are symmetric, so every PE allocates the largest counts over all PEs. */
    size_t n_held = 0, n_owned = 0, max_held = 0, max_owned = 0;
    {
        size_t *held_by = calloc((size_t)npes, sizeof(size_t));
        if (held_by == NULL) shmem_global_exit(1);
        for (size_t j = 0; j < t; j++) {
            if (holder[j] == me) {
                send_owner[n_held] = owner[j];
                send_slot[n_held] = filled[owner[j]];
                n_held++;
            }
            filled[owner[j]]++;
            held_by[holder[j]]++;
        }
        n_owned = filled[me];
        for (int pe = 0; pe < npes; pe++) {
            if (filled[pe] > max_owned) max_owned = filled[pe];
            if (held_by[pe] > max_held) max_held = held_by[pe];
        }
        free(held_by);
    }
    float *held = shmem_malloc((max_held ? max_held : 1) * bs * sizeof(float));
    float *owned = shmem_calloc((max_owned ? max_owned : 1) * bs, sizeof(float));
    int32_t *arrived = shmem_calloc(1, sizeof(int32_t));
    if (held == NULL || owned == NULL || arrived == NULL) {
        fprintf(stderr, "kv_shuffle_op: PE %d: shmem_malloc of %zu floats failed\n", me,
                (max_held + max_owned) * bs);
        shmem_global_exit(1);
    }
    if (data != NULL) {
        if (op_file_io(PROG, data, "input", me, held, n_held * bs * sizeof(float), 0) != 0)
            shmem_global_exit(1);
    } else {
        for (size_t j = 0, h = 0; j < t; j++) {
            if (holder[j] != me) continue;
            for (size_t i = 0; i < bs; i++) held[h * bs + i] = kv_value(j, i);
            h++;
        }
    }
    shmem_barrier_all();

    struct kv_args args = {held, owned, arrived, send_owner, send_slot, n_held, n_owned, bs, 0};
    for (long it = 0; it < iters; it++) {
        args.round = (int32_t)(it + 1);
        if (shmemx_cpu_launch(kv_shuffle_kernel, &args, (int)blocks) != 0) shmem_global_exit(1);
    }

    int status = 0;
    if (data != NULL) {
        if (op_file_io(PROG, data, "output", me, owned, n_owned * bs * sizeof(float), 1) != 0)
            status = 1;
    } else {
        size_t bad = 0;
        for (size_t j = 0, o = 0; j < t; j++) {
            if (owner[j] != me) continue;
            for (size_t i = 0; i < bs; i++) bad += owned[o * bs + i] != kv_value(j, i);
            o++;
        }
        if (bad != 0) {
            printf("kv_shuffle_op: PE %d: FAILED, %zu of %zu values wrong\n", me, bad,
                   n_owned * bs);
            status = 1;
        } else {
            printf(
                "kv_shuffle_op: PE %d: held %zu, owns %zu of %zu KV blocks, all verified "
                "(%ld blocks)\n",
                me, n_held, n_owned, t, blocks);
        }
    }
    shmem_barrier_all();
    shmem_free(arrived);
    shmem_free(owned);
    shmem_free(held);
    free(filled);
    free(send_slot);
    free(send_owner);
    free(owner);
    free(holder);
    shmem_finalize();
    return status;
}
