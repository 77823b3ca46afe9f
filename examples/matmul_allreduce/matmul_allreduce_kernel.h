/*
 * matmul_allreduce_kernel.h: the fused matmul_allreduce kernel and the symmetric buffers it
 * runs on, C = sum over PEs of (A_pe x B_pe). The operator's program (matmul_allreduce.c) and
 * the benchmark (bench/matmul.c) both include this file, so both run the same kernel. It owns
 * the tiling, the buffers and one launch; the caller owns the inputs, the clock and the checks.
 *
 * Every PE holds its own A (M x K) and B (K x N), row-major; afterwards every PE holds
 * C = sum_pe A_pe x B_pe in `c`, row-major M x N. The output is cut into TM x TN tiles. Block b
 * of every PE takes tiles b, b + blocks, b + 2 * blocks, ...; its g-th tile is owned (reduced)
 * by PE g % npes. A block computes each tile another PE owns with cblas_sgemm and sends it at
 * once to the owner with a signal: the first other PE's product lands in the owner's C tile
 * itself, each further PE's in a staging slot. Where the owner's memory is mapped here
 * (aclshmem_ptr: PEs of one machine) the sgemm writes it there directly, so the product is the
 * put; otherwise it goes through a scratch tile and aclshmem_putmem. An owned tile waits until
 * every other PE's product has arrived; the owner then adds the staged ones and its own
 * product on top (sgemm with beta = 1: its share is never copied) and sends the finished tile
 * to every other PE's C, raising their `reduced` signal. A block finishes an owned tile one
 * group of tiles late (mm_kernel), so its contributions have arrived by then; every tile
 * crosses the memory bus once to its owner and once from it to each other PE.
 *
 * Must never: allocate or free inside the kernel, or reuse `c` or the staging slots before
 * every PE has left the launch (the caller puts a barrier between launches).
 */
#ifndef SHMEM_EXAMPLES_MATMUL_ALLREDUCE_KERNEL_H
#define SHMEM_EXAMPLES_MATMUL_ALLREDUCE_KERNEL_H

#include <cblas.h>
#include <shmem.h>
#include <shmem/device.h>
#include <shmem/launch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Default tile: 1024 x 1024 (cut to the matrix). OpenBLAS packs each call's panels of A and B
 * afresh, so the tiles of a product pack (1/TM + 1/TN) x M x N x K floats in all: with 128 x 256
 * tiles that costs more than the whole allreduce at K=2048, with 1024 x 1024 the tiles run as
 * fast as one sgemm of the whole product. Fewer tiles also mean fewer signals to wait for; at
 * M=1024, N=8192 there are still 8, enough to keep every PE busy while tiles travel. */
#define MM_DEFAULT_TILE_M 1024
#define MM_DEFAULT_TILE_N 1024

struct mm_args {
    const float *a, *b; /* local: M x K and K x N */
    float *c;           /* symmetric: the result, M x N row-major */
    float *stage;       /* symmetric: per owned tile, a slot for each other PE but the first */
    float *scratch;     /* local: one tile per block */
    int32_t *arrived;   /* symmetric: per tile, contributions received by its owner */
    int32_t *reduced;   /* symmetric: per tile, the round whose sum has landed here */
    int m, k, n, tm, tn, tiles_n, tiles, blocks;
    int puts_only; /* nonzero: never store through aclshmem_ptr (the path of unmapped PEs) */
    int32_t round; /* 1 for the first launch, then 2, ...: the signals never need a reset */
};

static inline size_t mm_tile_elems(const struct mm_args *a) {
    return (size_t)a->tm * (size_t)a->tn;
}

/* Tile t's first row and column, and its extent (edge tiles are smaller). */
static inline void mm_tile_box(const struct mm_args *a, int t, int *r0, int *c0, int *rows,
                               int *cols) {
    *r0 = t / a->tiles_n * a->tm;
    *c0 = t % a->tiles_n * a->tn;
    *rows = a->m - *r0 < a->tm ? a->m - *r0 : a->tm;
    *cols = a->n - *c0 < a->tn ? a->n - *c0 : a->tn;
}

/* Where tile t's contribution from PE src lands on its owner, and that buffer's leading
 * dimension: the first other PE (owner + 1) writes the owner's C tile itself, which the owner
 * then adds its product to; each further PE has a compact slot in `stage`. */
static inline float *mm_landing(const struct mm_args *a, int t, int owner, int npes, int src,
                                int *ld) {
    int r0, c0, rows, cols;
    mm_tile_box(a, t, &r0, &c0, &rows, &cols);
    int peer = (src - owner - 1 + npes) % npes;
    if (peer == 0) {
        *ld = a->n;
        return a->c + (size_t)r0 * (size_t)a->n + (size_t)c0;
    }
    int nb = a->blocks, g = t / nb;
    size_t owned = (size_t)(g / npes) * (size_t)nb + (size_t)(t % nb);
    *ld = cols;
    return a->stage + (owned * (size_t)(npes - 2) + (size_t)(peer - 1)) * mm_tile_elems(a);
}

/* out (leading dimension ldo) = beta * out + A[tile rows, :] x B[:, tile cols]. */
static inline void mm_tile_gemm(const struct mm_args *a, int t, float beta, float *out, int ldo) {
    int r0, c0, rows, cols;
    mm_tile_box(a, t, &r0, &c0, &rows, &cols);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, cols, a->k, 1.0f,
                a->a + (size_t)r0 * (size_t)a->k, a->k, a->b + c0, a->n, beta, out, ldo);
}

/* Copies rows x cols floats (leading dimensions ldd, lds) to symmetric `dst` on `pe`: with
 * plain stores where `pe`'s memory is mapped here (aclshmem_ptr), else, or with `puts_only`,
 * with puts. */
static inline void mm_put_rows(float *dst, int ldd, const float *src, int lds, int rows, int cols,
                               int pe, int puts_only) {
    float *direct = puts_only ? NULL : aclshmem_ptr(dst, pe);
    size_t row = (size_t)cols * sizeof(float);
    if (ldd == cols && lds == cols) { /* one contiguous span */
        row *= (size_t)rows;
        rows = 1;
    }
    for (int r = 0; r < rows; r++) {
        float *d = (direct ? direct : dst) + (size_t)r * (size_t)ldd;
        const float *s = src + (size_t)r * (size_t)lds;
        if (direct) {
            memcpy(d, s, row);
        } else {
            aclshmem_putmem(d, s, row, pe);
        }
    }
}

/* A tile owned by another PE: its product goes to its landing place on the owner, then the
 * owner's `arrived` counter is raised. Where the owner's memory is mapped here the sgemm
 * writes it there directly (the product is the put); else it is computed into `scratch` and
 * put. */
static inline void mm_send_tile(const struct mm_args *a, int t, int owner, int me, int npes,
                                float *scratch) {
    int r0, c0, rows, cols, ld;
    mm_tile_box(a, t, &r0, &c0, &rows, &cols);
    float *land = mm_landing(a, t, owner, npes, me, &ld);
    float *direct = a->puts_only ? NULL : aclshmem_ptr(land, owner);
    if (direct) {
        mm_tile_gemm(a, t, 0.0f, direct, ld);
    } else {
        mm_tile_gemm(a, t, 0.0f, scratch, cols);
        mm_put_rows(land, ld, scratch, cols, rows, cols, owner, 1);
    }
    aclshmem_fence(); /* the tile before the signal */
    aclshmemx_signal_op(&a->arrived[t], 1, ACLSHMEM_SIGNAL_ADD, owner);
}

/* Owned tile t, every other PE's contribution in: its C tile already holds the first one; the
 * others are added, then this PE's product on top (sgemm with beta = 1), and the finished tile
 * goes to every other PE's C (the next PE first) with its `reduced` signal. */
static inline void mm_finish_owned(const struct mm_args *a, int t, int me, int npes) {
    int r0, c0, rows, cols;
    mm_tile_box(a, t, &r0, &c0, &rows, &cols);
    float *ct = a->c + (size_t)r0 * (size_t)a->n + (size_t)c0;
    for (int k = 2; k < npes; k++) {
        int ld;
        const float *s = mm_landing(a, t, me, npes, (me + k) % npes, &ld);
        for (int r = 0; r < rows; r++)
            cblas_saxpy(cols, 1.0f, s + (size_t)r * (size_t)ld, 1, ct + (size_t)r * (size_t)a->n,
                        1);
    }
    mm_tile_gemm(a, t, npes > 1 ? 1.0f : 0.0f, ct, a->n);
    for (int k = 1; k < npes; k++) {
        int pe = (me + k) % npes;
        mm_put_rows(ct, a->n, ct, a->n, rows, cols, pe, a->puts_only);
        aclshmem_fence(); /* the rows before the signal */
        aclshmemx_signal_op(&a->reduced[t], a->round, ACLSHMEM_SIGNAL_SET, pe);
    }
}

/* Finishes this block's owned tile of group j (its g-th tiles j * npes ... j * npes + npes - 1
 * hold one tile of every PE), if the group has one: waits for the other PEs' products of it
 * first. */
static inline void mm_finish_group(const struct mm_args *a, int j, int b, int me, int npes,
                                   int32_t want) {
    int t = b + a->blocks * (j * npes + me);
    if (t >= a->tiles) return;
    aclshmem_signal_wait_until(&a->arrived[t], ACLSHMEM_CMP_GE, want);
    mm_finish_owned(a, t, me, npes);
}

/* The kernel: one launch computes C on every PE (see the top of this file). A block works
 * through its tiles in groups of npes, one owned by each PE: it sends the group's tiles that
 * other PEs own, then finishes its own tile of the group before, whose other products were
 * sent while it computed this group's, so on PEs that run at the same pace nobody waits. */
static void mm_kernel(void *p) {
    const struct mm_args *a = p;
    int me = aclshmem_my_pe(), npes = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    int32_t want = a->round * (npes - 1);
    float *scratch = a->scratch + (size_t)b * mm_tile_elems(a);
    int mine = (a->tiles - b + nb - 1) / nb; /* this block's tiles */
    int groups = (mine + npes - 1) / npes;
    for (int j = 0; j < groups; j++) {
        for (int k = 1; k < npes; k++) {
            int owner = (me + k) % npes, t = b + nb * (j * npes + owner);
            if (t < a->tiles) mm_send_tile(a, t, owner, me, npes, scratch);
        }
        if (j > 0) mm_finish_group(a, j - 1, b, me, npes, want);
    }
    if (groups > 0) mm_finish_group(a, groups - 1, b, me, npes, want);
    /* This block's tiles owned by other PEs have all landed here. */
    for (int t = b; t < a->tiles; t += nb) {
        if (t / nb % npes != me)
            aclshmem_signal_wait_until(&a->reduced[t], ACLSHMEM_CMP_GE, a->round);
    }
}

/* Allocates the buffers for A (m x k) and B (k x n) at `a_mat`, `b_mat` (local, kept by the
 * caller) with tm x tn tiles and `blocks` blocks per PE. Collective (shmem_malloc). Returns 0,
 * or -1 with a message naming `prog` when memory runs out. */
static int mm_setup(struct mm_args *a, const char *prog, const float *a_mat, const float *b_mat,
                    int m, int k, int n, int tm, int tn, int blocks) {
    int npes = shmem_n_pes();
    memset(a, 0, sizeof *a);
    a->a = a_mat;
    a->b = b_mat;
    a->m = m;
    a->k = k;
    a->n = n;
    a->tm = tm < m ? tm : m;
    a->tn = tn < n ? tn : n;
    a->tiles_n = (n + a->tn - 1) / a->tn;
    a->tiles = (m + a->tm - 1) / a->tm * a->tiles_n;
    a->blocks = blocks;
    size_t te = mm_tile_elems(a);
    /* Owned tiles per PE: ceil(ceil(tiles / blocks) / npes) groups of `blocks` tiles. */
    size_t groups =
        ((size_t)(a->tiles + blocks - 1) / (size_t)blocks + (size_t)npes - 1) / (size_t)npes;
    size_t slots = npes > 2 ? groups * (size_t)blocks * (size_t)(npes - 2) : 0;
    a->scratch = malloc((size_t)blocks * te * sizeof(float));
    /* shmem_malloc(0) may return NULL; one element keeps the one-PE case uniform. */
    a->stage = shmem_malloc((slots ? slots * te : 1) * sizeof(float));
    a->c = shmem_malloc((size_t)m * (size_t)n * sizeof(float));
    a->arrived = shmem_calloc((size_t)a->tiles, sizeof(int32_t));
    a->reduced = shmem_calloc((size_t)a->tiles, sizeof(int32_t));
    if (!a->scratch || !a->stage || !a->c || !a->arrived || !a->reduced) {
        fprintf(stderr, "%s: PE %d: out of memory for M=%d K=%d N=%d (tile %dx%d, %d blocks)\n",
                prog, shmem_my_pe(), m, k, n, a->tm, a->tn, blocks);
        return -1;
    }
    return 0;
}

/* One launch: C on every PE. The caller holds a barrier before it (buffers reused). Returns
 * shmemx_cpu_launch's status. */
static int mm_run(struct mm_args *a) {
    a->round++;
    return shmemx_cpu_launch(mm_kernel, a, a->blocks);
}

/* Frees what mm_setup allocated. Collective. */
static void mm_teardown(struct mm_args *a) {
    shmem_free(a->reduced);
    shmem_free(a->arrived);
    shmem_free(a->c);
    shmem_free(a->stage);
    free(a->scratch);
    memset(a, 0, sizeof *a);
}

#endif /* SHMEM_EXAMPLES_MATMUL_ALLREDUCE_KERNEL_H */
