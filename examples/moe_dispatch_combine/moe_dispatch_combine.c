/*
 * moe_dispatch_combine.c: a mixture-of-experts layer's communication and expert compute, fused
 * in one kernel.
 *
 * Every PE holds T tokens of hidden size H (float32, row-major). There are E experts, E / npes
 * on each PE (expert e lives on PE e / (E / npes)); expert e is a matrix W_e (H x H) and
 * expert_e(x) = x W_e. Each token t has k distinct expert ids and k gate weights; afterwards
 * every PE holds out[t] = sum_j gate[t][j] * expert_{id[t][j]}(x[t]) for its own tokens.
 *
 * The kernel runs as B blocks on every PE (the same B on every PE: a signal counts the sender
 * blocks). Block b takes tokens [b * T / B, (b + 1) * T / B), so a block may have none.
 *
 * 1. Counts. Every block scans all of this PE's routing (T x k ids, cheap next to the rows):
 *    the copies per expert of the whole PE, and of the tokens before its own range. The blocks
 *    between them put the PE's row of counts (E int32) to every PE with a put-with-signal that
 *    sets count_sig[me] to the launch's round, and every block waits until every PE's row has
 *    arrived. From then on every PE knows the whole npes x E count matrix, so every offset
 *    below is computed, identically, by the PE that writes and the PE that reads: no host
 *    collective and no atomics.
 * 2. Dispatch. An owner's receive buffer holds its experts one after the other; expert e's rows
 *    are grouped by source PE, then by the source's block, then in token order. A block puts
 *    each (token, expert) copy of its range straight to its row there, then, for every expert
 *    (with or without rows from it), adds 1 to the owner's arrived[expert] signal, after a
 *    fence, so an expert is complete when npes * B sender blocks have signalled.
 * 3. Expert compute. Block b computes this PE's experts b, b + B, ...: it waits until the
 *    expert's rows are all in, multiplies them by W_e with one cblas_sgemm, and puts each
 *    source PE's rows of the result back to it with a put-with-signal that sets that PE's
 *    returned[e] to the round (also when the source sent none, so nobody waits for a zero).
 *    On the source, the rows of expert e sit after those of experts 0 .. e - 1, in the order
 *    it sent them.
 * 4. Combine. Each block waits for the experts its PE used, then forms out[t] for its tokens
 *    (cblas_saxpy of the returned rows with the gates).
 * No host barrier and no block barrier inside; a launch's signals are compared with its round
 * (1, 2, ...), so nothing is reset between launches. Only the count rows are kept twice (by
 * the round's parity): a PE may begin the next launch, and put its new counts, while another
 * still reads this launch's; it cannot get two launches ahead, since a launch waits for every
 * PE's counts. The receive and return buffers need no second copy: nobody writes them in the
 * next launch before every PE has begun it, that is, finished this one.
 *
 *   moe_dispatch_combine_op [--tokens T] [--hidden H] [--experts E] [--topk K] [--blocks B]
 *                           [--iters I] [--seed S] [--data DIR] [--no-host-barrier]
 *
 * The routing is drawn per PE from --seed (utils/gen_data.py draws the same): k distinct
 * experts per token, expert e with weight E - e (low experts get more), and, where k allows
 * it, PE 0 routes no token to the last PE's experts. Without --data the tokens and the routing
 * are drawn afresh for every launch (seed, seed + 1, ...), so that a launch that read what an
 * earlier one left behind fails the check. With --data, PE r reads DIR/x_pe<r>.bin (T x H
 * float32), DIR/ids_pe<r>.bin (T x k int32), DIR/gates_pe<r>.bin (T x k float32) and every
 * DIR/weights_pe<q>.bin (PE q's E / npes experts, H x H float32 each), and writes
 * DIR/output_pe<r>.bin (T x H float32) for verify_result.py. Either way every PE compares
 * its output of every launch with a sequential host computation (per token and expert,
 * cblas_sgemv, then the gated sum) within a float tolerance, and PE 0 prints the best times of
 * both. The launches are timed between host barriers; --no-host-barrier lets each PE begin its
 * next launch as soon as its previous one (and its check) is done, as a kernel stream would.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <shmem.h>
#include <shmem/device.h>
#include <shmem/launch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_util.h"

#define PROG "moe_dispatch_combine_op"

struct moe_args {
    const float *x;     /* local: T x H tokens */
    const int32_t *ids; /* local: T x k expert ids */
    const float *gates; /* local: T x k gate weights */
    const float *w;     /* local: this PE's experts, E / npes matrices of H x H */
    float *recv;        /* symmetric: received rows, by expert, source PE, block, token */
    float *ret;         /* symmetric: this PE's rows back from the experts, by expert */
    float *y;           /* local: expert outputs, laid out as recv */
    float *out;         /* local: T x H result */
    int32_t *counts;    /* symmetric: [2][npes][E] copies per (source PE, expert) */
    int32_t *count_sig; /* symmetric: [npes] the round whose counts PE s put here */
    int32_t *arrived;   /* symmetric: [E / npes] sender blocks done with a local expert */
    int32_t *returned;  /* symmetric: [E] the round whose rows of expert e came back */
    size_t *scratch;    /* local: 3 x E per block */
    int32_t *row;       /* local: E per block, this PE's counts as put */
    int tokens, hidden, experts, topk, per_pe; /* per_pe: experts on each PE */
    int32_t round; /* 1 for the first launch, then 2, ...: the signals never need a reset */
};

/* Rows of expert e that come before source PE `src`'s, and before expert e on its owner. */
static size_t rows_before(const int32_t *cnt, int npes, int n_exp, int per_pe, int e, int src) {
    size_t r = 0;
    for (int f = e / per_pe * per_pe; f < e; f++) {
        for (int s = 0; s < npes; s++) r += (size_t)cnt[(size_t)s * n_exp + f];
    }
    for (int s = 0; s < src; s++) r += (size_t)cnt[(size_t)s * n_exp + e];
    return r;
}

static void moe_kernel(void *p) {
    const struct moe_args *a = p;
    int me = aclshmem_my_pe(), npes = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    int n_exp = a->experts, k = a->topk, per_pe = a->per_pe;
    size_t h = (size_t)a->hidden, row_bytes = h * sizeof(float);
    int32_t *cnt = a->counts + (size_t)(a->round & 1) * (size_t)npes * (size_t)n_exp;
    size_t *tot = a->scratch + (size_t)b * 3 * (size_t)n_exp, *pre = tot + n_exp,
           *cur = pre + n_exp;
    int t0 = (int)((long long)a->tokens * b / nb), t1 = (int)((long long)a->tokens * (b + 1) / nb);

    /* 1. This PE's copies per expert, and those of the tokens before this block's range. */
    for (int e = 0; e < n_exp; e++) tot[e] = pre[e] = 0;
    for (int t = 0; t < a->tokens; t++) {
        for (int j = 0; j < k; j++) {
            int e = a->ids[(size_t)t * k + j];
            tot[e]++;
            if (t < t0) pre[e]++;
        }
    }
    int32_t *row = a->row + (size_t)b * n_exp;
    for (int e = 0; e < n_exp; e++) row[e] = (int32_t)tot[e];
    for (int pe = b; pe < npes; pe += nb) {
        aclshmem_putmem_signal(cnt + (size_t)me * n_exp, row, (size_t)n_exp * sizeof(int32_t),
                               &a->count_sig[me], a->round, ACLSHMEM_SIGNAL_SET, pe);
    }
    for (int s = 0; s < npes; s++) {
        aclshmem_signal_wait_until(&a->count_sig[s], ACLSHMEM_CMP_GE, a->round);
    }

    /* 2. Dispatch this block's copies to their rows on the experts' owners. */
    for (int e = 0; e < n_exp; e++) cur[e] = rows_before(cnt, npes, n_exp, per_pe, e, me) + pre[e];
    for (int t = t0; t < t1; t++) {
        for (int j = 0; j < k; j++) {
            int e = a->ids[(size_t)t * k + j];
            aclshmem_putmem(a->recv + cur[e]++ * h, a->x + (size_t)t * h, row_bytes, e / per_pe);
        }
    }
    aclshmem_fence();
    for (int i = 0; i < n_exp; i++) {
        int e = ((me + 1) * per_pe + i) % n_exp; /* the next PE's experts first, this PE's last */
        aclshmemx_signal_op(&a->arrived[e % per_pe], 1, ACLSHMEM_SIGNAL_ADD, e / per_pe);
    }

    /* 3. This PE's experts b, b + B, ...: compute, then return each source PE's rows. */
    for (int local = b; local < per_pe; local += nb) {
        int e = me * per_pe + local;
        aclshmem_signal_wait_until(&a->arrived[local], ACLSHMEM_CMP_GE, a->round * npes * nb);
        size_t first = rows_before(cnt, npes, n_exp, per_pe, e, 0);
        size_t rows = rows_before(cnt, npes, n_exp, per_pe, e, npes) - first;
        if (rows > 0) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)h, (int)h, 1.0f,
                        a->recv + first * h, (int)h, a->w + (size_t)local * h * h, (int)h, 0.0f,
                        a->y + first * h, (int)h);
        }
        for (int i = 1; i <= npes; i++) {
            int s = (me + i) % npes; /* the other PEs first, this one last */
            size_t from = rows_before(cnt, npes, n_exp, per_pe, e, s);
            size_t to = 0; /* where s keeps expert e's rows: after its experts 0 .. e - 1 */
            for (int f = 0; f < e; f++) to += (size_t)cnt[(size_t)s * n_exp + f];
            aclshmem_putmem_signal(a->ret + to * h, a->y + from * h,
                                   (size_t)cnt[(size_t)s * n_exp + e] * row_bytes, &a->returned[e],
                                   a->round, ACLSHMEM_SIGNAL_SET, s);
        }
    }

    /* 4. Combine this block's tokens from the rows that came back. */
    size_t before = 0;
    for (int e = 0; e < n_exp; e++) {
        if (tot[e] > 0) {
            aclshmem_signal_wait_until(&a->returned[e], ACLSHMEM_CMP_GE, a->round);
        }
        cur[e] = before + pre[e];
        before += tot[e];
    }
    for (int t = t0; t < t1; t++) {
        float *o = a->out + (size_t)t * h;
        memset(o, 0, row_bytes);
        for (int j = 0; j < k; j++) {
            int e = a->ids[(size_t)t * k + j];
            cblas_saxpy((int)h, a->gates[(size_t)t * k + j], a->ret + cur[e]++ * h, 1, o, 1);
        }
    }
}

/* The routing's random numbers: a 64-bit LCG (Knuth's MMIX constants), its top 31 bits. */
static uint32_t lcg_next(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*s >> 33);
}

/* PE pe's routing, as utils/gen_data.py draws it: per token, k distinct experts, each drawn
 * with weight E - e among those left (skewed to low experts), then k integer weights in
 * [1, 1000] normalised to sum 1. PE 0 avoids the last PE's experts when k leaves room. */
static void draw_routing(uint64_t seed, int pe, int npes, int tokens, int n_exp, int k,
                         int32_t *ids, float *gates, unsigned char *taken) {
    uint64_t s = seed + (uint64_t)pe * 0x9E3779B97F4A7C15ULL;
    int per_pe = n_exp / npes;
    int avoid = pe == 0 && npes > 1 && k <= n_exp - per_pe ? npes - 1 : -1;
    for (int t = 0; t < tokens; t++) {
        uint32_t left = 0;
        for (int e = 0; e < n_exp; e++) {
            taken[e] = e / per_pe == avoid;
            if (!taken[e]) left += (uint32_t)(n_exp - e);
        }
        for (int j = 0; j < k; j++) {
            uint32_t r = lcg_next(&s) % left;
            int e = 0;
            for (;; e++) {
                if (taken[e]) continue;
                if (r < (uint32_t)(n_exp - e)) break;
                r -= (uint32_t)(n_exp - e);
            }
            ids[(size_t)t * k + j] = e;
            taken[e] = 1;
            left -= (uint32_t)(n_exp - e);
        }
        /* Integers in [1, 1000], exact in a float until normalised. */
        float *g = gates + (size_t)t * k;
        uint32_t sum = 0;
        for (int j = 0; j < k; j++) {
            uint32_t raw = 1 + lcg_next(&s) % 1000;
            sum += raw;
            g[j] = (float)raw;
        }
        for (int j = 0; j < k; j++) g[j] = (float)((double)g[j] / (double)sum);
    }
}

/* A deterministic value in [-1, 1), different per seed, stream and index. */
static float input_value(uint64_t seed, uint64_t stream, size_t i) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ (stream << 40) ^ (i + 1);
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    return (float)(x % 2048) / 1024.0f - 1.0f;
}

/* -1 with a message when some token of PE pe's routing is not k distinct experts of [0, E). */
static int check_routing(const char *what, int pe, int tokens, int n_exp, int k,
                         const int32_t *ids) {
    for (int t = 0; t < tokens; t++) {
        for (int j = 0; j < k; j++) {
            int32_t e = ids[(size_t)t * k + j];
            const char *why = e < 0 || e >= n_exp ? "is not an expert" : NULL;
            for (int i = 0; i < j && why == NULL; i++) {
                if (ids[(size_t)t * k + i] == e) why = "is chosen twice";
            }
            if (why != NULL) {
                fprintf(stderr, "%s: PE %d: %s: token %d: expert id %d %s (experts 0..%d)\n", PROG,
                        pe, what, t, (int)e, why, n_exp - 1);
                return -1;
            }
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    int tokens = 64, hidden = 128, n_exp = 8, k = 2, blocks = 4, iters = 1, seed = 1;
    int no_host_barrier = 0;
    const char *data = NULL;
    const struct op_option options[] = {
        OP_INT("--tokens", 1 << 20, &tokens),
        OP_INT("--hidden", 8192, &hidden),
        OP_INT("--experts", 1024, &n_exp),
        OP_INT("--topk", 1024, &k),
        OP_INT("--blocks", SHMEMX_CPU_LAUNCH_MAX_BLOCKS, &blocks),
        OP_INT("--iters", 1 << 16, &iters),
        OP_INT("--seed", INT_MAX, &seed),
        OP_TEXT("--data", &data),
        OP_FLAG("--no-host-barrier", &no_host_barrier),
    };
    if (op_parse_options(PROG, argc, argv, options, sizeof options / sizeof options[0]) != 0)
        return 2;
    int host_barrier = !no_host_barrier;
    if (k > n_exp) {
        fprintf(stderr, "%s: invalid argument --topk=%d: more than the %d experts\n", PROG, k,
                n_exp);
        return 2;
    }
#ifdef OPENBLAS_VERSION
    /* The kernel's blocks are the parallelism; one BLAS thread each. */
    openblas_set_num_threads(1);
#endif

    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    if (n_exp % npes != 0) {
        if (me == 0) {
            fprintf(stderr, "%s: invalid argument --experts=%d: not a multiple of the %d PEs\n",
                    PROG, n_exp, npes);
        }
        shmem_finalize();
        return 2;
    }
    if ((long long)iters * npes * blocks > INT32_MAX) {
        if (me == 0) {
            fprintf(stderr,
                    "%s: invalid argument --iters=%d: iters x PEs x blocks passes INT32_MAX, the "
                    "signals' range\n",
                    PROG, iters);
        }
        shmem_finalize();
        return 2;
    }
    int per_pe = n_exp / npes;
    /* An owner receives at most min(k, E / npes) copies of each token of each PE. */
    size_t cap = (size_t)npes * (size_t)tokens * (size_t)(k < per_pe ? k : per_pe);
    if (cap > INT_MAX) {
        if (me == 0) {
            fprintf(stderr,
                    "%s: invalid argument --tokens=%d: an expert could receive %zu rows, more "
                    "than BLAS's int\n",
                    PROG, tokens, cap);
        }
        shmem_finalize();
        return 2;
    }
    size_t h = (size_t)hidden, tk = (size_t)tokens * (size_t)k, th = (size_t)tokens * h;
    size_t hh = h * h, e_all = (size_t)n_exp;
    float *x = malloc(th * sizeof(float));
    int32_t *ids = malloc(tk * sizeof(int32_t));
    float *gates = malloc(tk * sizeof(float));
    float *w = malloc(e_all * hh * sizeof(float)); /* every expert, for the host reference */
    float *y = malloc(cap * h * sizeof(float));
    float *out = malloc(th * sizeof(float));
    float *ref = malloc(th * sizeof(float));
    float *tmp = malloc(h * sizeof(float));
    size_t *scratch = malloc((size_t)blocks * 3 * e_all * sizeof(size_t));
    int32_t *row = malloc((size_t)blocks * e_all * sizeof(int32_t));
    unsigned char *taken = malloc(e_all);
    float *recv = shmem_malloc(cap * h * sizeof(float));
    float *ret = shmem_malloc(tk * h * sizeof(float));
    int32_t *counts = shmem_calloc(2 * (size_t)npes * e_all, sizeof(int32_t));
    int32_t *count_sig = shmem_calloc((size_t)npes, sizeof(int32_t));
    int32_t *arrived = shmem_calloc((size_t)per_pe, sizeof(int32_t));
    int32_t *returned = shmem_calloc(e_all, sizeof(int32_t));
    if (!x || !ids || !gates || !w || !y || !out || !ref || !tmp || !scratch || !row || !taken ||
        !recv || !ret || !counts || !count_sig || !arrived || !returned) {
        fprintf(stderr, "%s: PE %d: out of memory for T=%d H=%d E=%d k=%d on %d PEs\n", PROG, me,
                tokens, hidden, n_exp, k, npes);
        shmem_global_exit(1);
    }
    if (data != NULL) {
        if (op_file_io(PROG, data, "x", me, x, th * sizeof(float), 0) != 0 ||
            op_file_io(PROG, data, "ids", me, ids, tk * sizeof(int32_t), 0) != 0 ||
            op_file_io(PROG, data, "gates", me, gates, tk * sizeof(float), 0) != 0) {
            shmem_global_exit(1);
        }
        for (int q = 0; q < npes; q++) {
            if (op_file_io(PROG, data, "weights", q, w + (size_t)q * per_pe * hh,
                           (size_t)per_pe * hh * sizeof(float), 0) != 0) {
                shmem_global_exit(1);
            }
        }
        char what[4096 + 32];
        snprintf(what, sizeof what, "%s/ids_pe%d.bin", data, me);
        if (check_routing(what, me, tokens, n_exp, k, ids) != 0) shmem_global_exit(1);
    } else {
        /* Scaled so that an expert's output stays near the size of its input. */
        float scale = 1.0f / sqrtf((float)hidden);
        for (size_t e = 0; e < e_all; e++) {
            for (size_t i = 0; i < hh; i++) {
                w[e * hh + i] = scale * input_value((uint64_t)seed, 1u << 20 | e, i);
            }
        }
    }
    double wmax = 0;
    for (size_t i = 0; i < e_all * hh; i++) wmax = fmax(wmax, fabs((double)w[i]));

    struct moe_args args = {.x = x,
                            .ids = ids,
                            .gates = gates,
                            .w = w + (size_t)me * per_pe * hh,
                            .recv = recv,
                            .ret = ret,
                            .y = y,
                            .out = out,
                            .counts = counts,
                            .count_sig = count_sig,
                            .arrived = arrived,
                            .returned = returned,
                            .scratch = scratch,
                            .row = row,
                            .tokens = tokens,
                            .hidden = hidden,
                            .experts = n_exp,
                            .topk = k,
                            .per_pe = per_pe,
                            .round = 0};
    double fused = 1e30, sequential = 1e30, tol = 0;
    size_t bad = 0, first = 0;
    int bad_launch = -1;
    float got = 0, want = 0;
    for (int it = 0; it < iters; it++) {
        if (data == NULL) {
            /* Fresh tokens and routing for every launch (launch 0's routing is gen_data's), so
             * that a launch reading what an earlier one left behind is caught. */
            uint64_t s = (uint64_t)seed + (uint64_t)it;
            draw_routing(s, me, npes, tokens, n_exp, k, ids, gates, taken);
            for (size_t i = 0; i < th; i++) x[i] = input_value(s, (uint64_t)me, i);
        }
        if (host_barrier || it == 0) shmem_barrier_all();
        double t0 = op_now();
        args.round = it + 1;
        if (shmemx_cpu_launch(moe_kernel, &args, blocks) != 0) shmem_global_exit(1);
        double dt = op_now() - t0;
        fused = dt < fused ? dt : fused;

        /* The sequential reference on the host: every copy of every token through its
         * expert, one at a time. */
        t0 = op_now();
        for (int t = 0; t < tokens; t++) {
            float *r = ref + (size_t)t * h;
            memset(r, 0, h * sizeof(float));
            for (int j = 0; j < k; j++) {
                int e = ids[(size_t)t * k + j];
                cblas_sgemv(CblasRowMajor, CblasTrans, hidden, hidden, 1.0f, w + (size_t)e * hh,
                            hidden, x + (size_t)t * h, 1, 0.0f, tmp, 1);
                cblas_saxpy(hidden, gates[(size_t)t * k + j], tmp, 1, r, 1);
            }
        }
        dt = op_now() - t0;
        sequential = dt < sequential ? dt : sequential;

        /* Gated sums (gates sum to 1) of H products each, added in another order: a bound
         * relative to the largest product. */
        double xmax = 0;
        for (size_t i = 0; i < th; i++) xmax = fmax(xmax, fabs((double)x[i]));
        double tol_it = 1e-5 * (double)hidden * wmax * xmax + 1e-6;
        tol = tol_it > tol ? tol_it : tol;
        for (size_t i = 0; i < th; i++) {
            if (!(fabs((double)out[i] - (double)ref[i]) <= tol_it) && bad++ == 0) {
                bad_launch = it;
                first = i;
                got = out[i];
                want = ref[i];
            }
        }
    }
    /* Rows this PE received from each PE in the last launch (its share of the count matrix). */
    char from[256] = "";
    const int32_t *cnt = counts + (size_t)(args.round & 1) * (size_t)npes * e_all;
    for (int s = 0, len = 0; s < npes && len < (int)sizeof from - 16; s++) {
        long rows = 0;
        for (int e = me * per_pe; e < (me + 1) * per_pe; e++) rows += cnt[(size_t)s * e_all + e];
        len += snprintf(from + len, sizeof from - (size_t)len, "%s%ld", s ? " " : "", rows);
    }
    int status = 0;
    if (bad != 0) {
        printf(
            "%s: PE %d: FAILED, %zu of %zu values (%d launches) differ from the sequential result "
            "by more than %g, first in launch %d at token %zu column %zu: %g, expected %g\n",
            PROG, me, bad, th * (size_t)iters, iters, tol, bad_launch + 1, first / h, first % h,
            (double)got, (double)want);
        status = 1;
    } else {
        printf(
            "%s: PE %d: T=%d H=%d E=%d k=%d on %d PEs, %d blocks, %d launches, rows received from "
            "each PE [%s] in the last: matches the sequential result within %g\n",
            PROG, me, tokens, hidden, n_exp, k, npes, blocks, iters, from, tol);
    }
    if (data != NULL && op_file_io(PROG, data, "output", me, out, th * sizeof(float), 1) != 0) {
        status = 1;
    }
    if (me == 0) {
        printf("%s: fused %.3f ms (best of %d), sequential %.3f ms\n", PROG, fused * 1e3, iters,
               sequential * 1e3);
    }
    shmem_barrier_all();
    shmem_free(returned);
    shmem_free(arrived);
    shmem_free(count_sig);
    shmem_free(counts);
    shmem_free(ret);
    shmem_free(recv);
    free(taken);
    free(row);
    free(scratch);
    free(tmp);
    free(ref);
    free(out);
    free(y);
    free(w);
    free(gates);
    free(ids);
    free(x);
    shmem_finalize();
    return status;
}
