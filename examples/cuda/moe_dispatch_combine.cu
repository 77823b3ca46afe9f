/*
 * moe_dispatch_combine.cu: a mixture-of-experts layer's communication and expert compute, fused
 * in one CUDA kernel: the operator of examples/moe_dispatch_combine as a program for NVIDIA
 * GPUs, the symmetric heap in GPU memory.
 *
 * Built by examples/cuda/CMakeLists.txt (nvcc, against an installed shmem); run as
 *
 *   SHMEM_DEVICE=cuda shmemrun -n 2 ./moe_dispatch_combine_cuda [--tokens T] [--hidden H]
 *       [--experts E] [--topk K] [--blocks B] [--iters I] [--seed S] [--no-host-barrier]
 *       [--timeout S]
 *
 * Defaults: T=64 H=128 E=8 k=2 (the C example's), as many blocks as the cooperative-launch rule
 * allows and there are tokens, 1 launch, seed 1, a 60 s bound on each launch. Every PE prints
 * "moe_dispatch_combine_cuda: PE <r>: T=.. H=.. E=.. k=.. on <n> PEs, <b> blocks, <i> launches,
 * rows received from each PE [..] in the last: matches the host reference within <tol>" when
 * every launch's output is right (else a FAILED line naming the first wrong value, and the exit
 * status is 1); PE 0 then prints the kernel's best time.
 *
 * The algorithm is the C kernel's. Every PE holds T tokens of hidden size H (float32, row-major,
 * GPU memory). There are E experts, E / npes on each PE (expert e lives on PE e / (E / npes));
 * expert e is a matrix W_e (H x H) and expert_e(x) = x W_e. Each token has k distinct expert ids
 * and k gate weights; afterwards every PE holds out[t] = sum_j gate[t][j] *
 * expert_{id[t][j]}(x[t]) for its own tokens. Block b takes tokens [b * T / B, (b + 1) * T / B).
 * 1. Counts. Every block counts all of this PE's routing (shared-memory atomics): the copies
 *    per expert of the whole PE, and of the tokens before its own range. Blocks b < npes put the
 *    PE's row of counts to PE b, b + B, ... with a block-wide put-with-signal that sets
 *    count_sig[me] to the launch's round; every block waits (thread 0, then the block) for every
 *    PE's row. From then on every PE knows the whole npes x E count matrix, and every offset
 *    below is computed identically by the PE that writes and the PE that reads.
 * 2. Dispatch. An owner's receive buffer holds its experts one after the other; expert e's rows
 *    are grouped by source PE, then by the source's block, then in token order. Thread 0 gives
 *    each (token, expert) copy of the block's range its row there, then the block's warps put
 *    the copies (a warp-wide put each); every thread fences, the block meets, and for every
 *    expert (with or without rows from this block) one thread adds 1 to the owner's
 *    arrived[expert] signal: an expert is complete when npes * B sender blocks have signalled.
 * 3. Expert compute. Block b computes this PE's experts b, b + B, ...: it waits until the
 *    expert's rows are all in, multiplies them by W_e with its tile GEMM, and puts each source
 *    PE's rows of the result back to it with a block-wide put-with-signal that sets that PE's
 *    returned[e] to the round (also when the source sent none).
 * 4. Combine. Each block waits for the experts its PE used, thread 0 finds each copy's row
 *    among those that came back, and the block forms out[t] for its tokens, a thread per value.
 * No block barrier inside; a launch's signals are compared with its round, so nothing is reset
 * between launches; only the count rows are kept twice (by the round's parity), as in the C
 * example, whose header says why that suffices without a host barrier between launches.
 *
 * The routing and the values are the C example's (its draw_routing and input_value, drawn
 * afresh for every launch from seed, seed + 1, ...; the weights from --seed), so a launch that
 * read what an earlier one left behind fails the check. Every PE computes its tokens' reference
 * on the host after every launch (per token and expert, x W_e, then the gated sum, plain loops)
 * and compares within the C example's tolerance, 1e-5 * H * max|W| * max|x| + 1e-6. The
 * launches are timed between host barriers; --no-host-barrier lets each PE begin its next
 * launch as soon as its previous one (and its check) is done, as a stream of kernels would.
 *
 * Launch rule: blocks wait for every PE's counts and for other PEs' blocks' rows, so every
 * block of every PE sharing the GPU must be resident at once (the cooperative-launch rule of
 * shmem/arch/cuda.h): the block count is capped by cudaOccupancyMaxActiveBlocksPerMultiprocessor
 * x SMs / PEs per GPU (common.cuh; the kernel's dynamic shared memory, 3 x E words, counted), and
 * --blocks above it is refused. Every PE must launch the same count (the signals count sender
 * blocks). Several PEs on one GPU run at once under CUDA MPS. ctest cuda.compile compiles this
 * file with nvcc for sm_90; it has not run on a GPU.
 */
#include <limits.h>

#include "common.cuh"

#define PROG "moe_dispatch_combine_cuda"

/* The kernel's arguments, passed by value. */
struct moe_args {
    const float *x;     /* GPU memory: T x H tokens */
    const int32_t *ids; /* GPU memory: T x k expert ids */
    const float *gates; /* GPU memory: T x k gate weights */
    const float *w;     /* GPU memory: this PE's experts, E / npes matrices of H x H */
    float *recv;        /* symmetric: received rows, by expert, source PE, block, token */
    float *ret;         /* symmetric: this PE's rows back from the experts, by expert */
    float *y;           /* GPU memory: expert outputs, laid out as recv */
    float *out;         /* GPU memory: T x H result */
    int32_t *counts;    /* symmetric: [2][npes][E] copies per (source PE, expert) */
    int32_t *count_sig; /* symmetric: [npes] the round whose counts PE s put here */
    int32_t *arrived;   /* symmetric: [E / npes] sender blocks done with a local expert */
    int32_t *returned;  /* symmetric: [E] the round whose rows of expert e came back */
    int32_t *row;       /* GPU memory: E per block, this PE's counts as put */
    size_t *slot;       /* GPU memory: T x k, per copy its row on the owner, then in `ret` */
    int tokens, hidden, experts, topk, per_pe; /* per_pe: experts on each PE */
    int32_t round; /* 1 for the first launch, then 2, ...: the signals never need a reset */
};

/* Rows of expert e that come before source PE `src`'s, and before expert e on its owner. */
static __device__ size_t moe_rows_before(const int32_t *cnt, int npes, int n_exp, int per_pe, int e,
                                         int src) {
    size_t r = 0;
    for (int f = e / per_pe * per_pe; f < e; f++) {
        for (int s = 0; s < npes; s++) r += (size_t)cnt[(size_t)s * n_exp + f];
    }
    for (int s = 0; s < src; s++) r += (size_t)cnt[(size_t)s * n_exp + e];
    return r;
}

__global__ void __launch_bounds__(OP_THREADS)
    moe_dispatch_combine_cuda(const void *job, moe_args a) {
    shmemx_cuda_set_job(job);
    /* tot[E], pre[E], cur[E]: this PE's copies per expert, those before this block's tokens,
     * and a running row per expert. */
    extern __shared__ unsigned int moe_shared[];
    const int me = aclshmem_my_pe(), npes = aclshmem_n_pes();
    const int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    const int n_exp = a.experts, k = a.topk, per_pe = a.per_pe, tid = (int)threadIdx.x;
    const size_t h = (size_t)a.hidden, row_bytes = h * sizeof(float);
    unsigned int *tot = moe_shared, *pre = tot + n_exp, *cur = pre + n_exp;
    int32_t *cnt = a.counts + (size_t)(a.round & 1) * (size_t)npes * (size_t)n_exp;
    const int t0 = (int)((long long)a.tokens * b / nb);
    const int t1 = (int)((long long)a.tokens * (b + 1) / nb);

    /* 1. This PE's copies per expert, and those of the tokens before this block's range. */
    for (int e = tid; e < n_exp; e += OP_THREADS) tot[e] = pre[e] = 0;
    __syncthreads();
    const size_t copies = (size_t)a.tokens * (size_t)k;
    for (size_t i = (size_t)tid; i < copies; i += OP_THREADS) {
        const int e = a.ids[i];
        atomicAdd(&tot[e], 1u);
        if (i < (size_t)t0 * (size_t)k) atomicAdd(&pre[e], 1u);
    }
    __syncthreads();
    int32_t *row = a.row + (size_t)b * n_exp;
    for (int e = tid; e < n_exp; e += OP_THREADS) row[e] = (int32_t)tot[e];
    /* The put's copy begins with the block meeting: `row` is complete. */
    for (int pe = b; pe < npes; pe += nb) {
        aclshmemx_putmem_signal_block(cnt + (size_t)me * n_exp, row,
                                      (size_t)n_exp * sizeof(int32_t), &a.count_sig[me], a.round,
                                      ACLSHMEM_SIGNAL_SET, pe);
    }
    if (tid == 0) {
        for (int s = 0; s < npes; s++) {
            aclshmem_signal_wait_until(&a.count_sig[s], ACLSHMEM_CMP_GE, a.round);
        }
    }
    __syncthreads();

    /* 2. Dispatch this block's copies to their rows on the experts' owners. */
    for (int e = tid; e < n_exp; e += OP_THREADS) {
        cur[e] = (unsigned int)moe_rows_before(cnt, npes, n_exp, per_pe, e, me) + pre[e];
    }
    __syncthreads();
    if (tid == 0) {
        for (size_t i = (size_t)t0 * k; i < (size_t)t1 * k; i++) a.slot[i] = cur[a.ids[i]]++;
    }
    __syncthreads();
    const int warp = tid / 32, warps = OP_THREADS / 32;
    for (size_t i = (size_t)t0 * k + (size_t)warp; i < (size_t)t1 * k; i += (size_t)warps) {
        const int e = a.ids[i];
        aclshmemx_putmem_warp(a.recv + a.slot[i] * h, a.x + i / (size_t)k * h, row_bytes,
                              e / per_pe);
    }
    aclshmem_fence();
    __syncthreads();
    for (int i = tid; i < n_exp; i += OP_THREADS) {
        int e = ((me + 1) * per_pe + i) % n_exp; /* the next PE's experts first, this PE's last */
        aclshmemx_signal_op(&a.arrived[e % per_pe], 1, ACLSHMEM_SIGNAL_ADD, e / per_pe);
    }

    /* 3. This PE's experts b, b + B, ...: compute, then return each source PE's rows. */
    for (int local = b; local < per_pe; local += nb) {
        const int e = me * per_pe + local;
        op_block_wait_ge(&a.arrived[local], a.round * npes * nb);
        const size_t first = moe_rows_before(cnt, npes, n_exp, per_pe, e, 0);
        const size_t rows = moe_rows_before(cnt, npes, n_exp, per_pe, e, npes) - first;
        if (rows > 0) {
            op_block_gemm((int)rows, (int)h, (int)h, a.recv + first * h, h,
                          a.w + (size_t)local * h * h, h, a.y + first * h, h, 0.0f);
        }
        for (int i = 1; i <= npes; i++) {
            const int s = (me + i) % npes; /* the other PEs first, this one last */
            const size_t from = moe_rows_before(cnt, npes, n_exp, per_pe, e, s);
            size_t to = 0; /* where s keeps expert e's rows: after its experts 0 .. e - 1 */
            for (int f = 0; f < e; f++) to += (size_t)cnt[(size_t)s * n_exp + f];
            aclshmemx_putmem_signal_block(a.ret + to * h, a.y + from * h,
                                          (size_t)cnt[(size_t)s * n_exp + e] * row_bytes,
                                          &a.returned[e], a.round, ACLSHMEM_SIGNAL_SET, s);
        }
    }

    /* 4. Combine this block's tokens from the rows that came back. */
    if (tid == 0) {
        unsigned int before = 0;
        for (int e = 0; e < n_exp; e++) {
            if (tot[e] > 0) aclshmem_signal_wait_until(&a.returned[e], ACLSHMEM_CMP_GE, a.round);
            cur[e] = before + pre[e];
            before += tot[e];
        }
        for (size_t i = (size_t)t0 * k; i < (size_t)t1 * k; i++) a.slot[i] = cur[a.ids[i]]++;
    }
    __syncthreads();
    const size_t values = (size_t)(t1 - t0) * h;
    for (size_t i = (size_t)tid; i < values; i += OP_THREADS) {
        const size_t t = (size_t)t0 + i / h, col = i % h;
        float v = 0.0f;
        for (int j = 0; j < k; j++) {
            const size_t c = t * (size_t)k + (size_t)j;
            v += a.gates[c] * a.ret[a.slot[c] * h + col];
        }
        a.out[t * h + col] = v;
    }
}

/* The routing's random numbers: a 64-bit LCG (Knuth's MMIX constants), its top 31 bits. */
static uint32_t lcg_next(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*s >> 33);
}

/* PE pe's routing, as the C example (and its utils/gen_data.py) draws it: per token, k distinct
 * experts, each drawn with weight E - e among those left (skewed to low experts), then k
 * integer weights in [1, 1000] normalised to sum 1. PE 0 avoids the last PE's experts when k
 * leaves room. */
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

/* A deterministic value in [-1, 1), different per seed, stream and index (the C example's). */
static float input_value(uint64_t seed, uint64_t stream, size_t i) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ (stream << 40) ^ (i + 1);
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    return (float)(x % 2048) / 1024.0f - 1.0f;
}

int main(int argc, char **argv) {
    int tokens = 64, hidden = 128, n_exp = 8, k = 2, blocks = 0, iters = 1, seed = 1;
    int no_host_barrier = 0, timeout_s = 60;
    const struct op_option options[] = {
        OP_INT("--tokens", 1 << 20, &tokens),   OP_INT("--hidden", 8192, &hidden),
        OP_INT("--experts", 1024, &n_exp),      OP_INT("--topk", 1024, &k),
        OP_INT("--blocks", 1 << 20, &blocks),   OP_INT("--iters", 1 << 16, &iters),
        OP_INT("--seed", INT_MAX, &seed),       OP_FLAG("--no-host-barrier", &no_host_barrier),
        OP_INT("--timeout", 86400, &timeout_s),
    };
    if (op_parse_options(PROG, argc, argv, options, sizeof options / sizeof options[0]) != 0)
        return 2;
    if (k > n_exp) {
        fprintf(stderr, PROG ": invalid argument --topk=%d: more than the %d experts\n", k, n_exp);
        return 2;
    }

    op_gpu g;
    op_cuda_start(&g, PROG, timeout_s);
    const int me = g.me, npes = g.npes;
    if (n_exp % npes != 0) {
        if (me == 0) {
            fprintf(stderr, PROG ": invalid argument --experts=%d: not a multiple of the %d PEs\n",
                    n_exp, npes);
        }
        shmem_global_exit(2);
    }
    const size_t smem = 3 * (size_t)n_exp * sizeof(unsigned int);
    const int nb =
        op_cuda_blocks(&g, blocks, op_cuda_fit(&g, moe_dispatch_combine_cuda, smem), tokens);
    if ((long long)iters * npes * nb > INT32_MAX) {
        if (me == 0) {
            fprintf(stderr,
                    PROG
                    ": invalid argument --iters=%d: iters x PEs x blocks (%d) passes "
                    "INT32_MAX, the signals' range\n",
                    iters, nb);
        }
        shmem_global_exit(2);
    }
    const int per_pe = n_exp / npes;
    /* An owner receives at most min(k, E / npes) copies of each token of each PE. */
    size_t cap = (size_t)npes * (size_t)tokens * (size_t)(k < per_pe ? k : per_pe);
    if (cap > INT_MAX) {
        if (me == 0) {
            fprintf(stderr,
                    PROG
                    ": invalid argument --tokens=%d: an expert could receive %zu rows, more "
                    "than an int\n",
                    tokens, cap);
        }
        shmem_global_exit(2);
    }
    const size_t h = (size_t)hidden, tk = (size_t)tokens * (size_t)k, th = (size_t)tokens * h;
    const size_t hh = h * h, e_all = (size_t)n_exp;
    float *x = (float *)malloc(th * sizeof(float));
    int32_t *ids = (int32_t *)malloc(tk * sizeof(int32_t));
    float *gates = (float *)malloc(tk * sizeof(float));
    float *w = (float *)malloc(e_all * hh * sizeof(float)); /* every expert, for the reference */
    float *out = (float *)malloc(th * sizeof(float));
    double *ref = (double *)malloc(h * sizeof(double));
    double *tmp = (double *)malloc(h * sizeof(double));
    int32_t *cnt_host = (int32_t *)malloc((size_t)npes * e_all * sizeof(int32_t));
    unsigned char *taken = (unsigned char *)malloc(e_all);
    if (!x || !ids || !gates || !w || !out || !ref || !tmp || !cnt_host || !taken) {
        fprintf(stderr, PROG ": PE %d: out of host memory for T=%d H=%d E=%d k=%d on %d PEs\n", me,
                tokens, hidden, n_exp, k, npes);
        shmem_global_exit(1);
    }
    /* Scaled so that an expert's output stays near the size of its input. */
    float scale = 1.0f / sqrtf((float)hidden);
    for (size_t e = 0; e < e_all; e++) {
        for (size_t i = 0; i < hh; i++) {
            w[e * hh + i] = scale * input_value((uint64_t)seed, 1u << 20 | e, i);
        }
    }
    double wmax = 0;
    for (size_t i = 0; i < e_all * hh; i++) wmax = fmax(wmax, fabs((double)w[i]));

    moe_args args;
    memset(&args, 0, sizeof args);
    float *x_gpu = (float *)op_gpu_alloc(th * sizeof(float));
    int32_t *ids_gpu = (int32_t *)op_gpu_alloc(tk * sizeof(int32_t));
    float *gates_gpu = (float *)op_gpu_alloc(tk * sizeof(float));
    float *w_gpu = (float *)op_gpu_alloc((size_t)per_pe * hh * sizeof(float));
    args.y = (float *)op_gpu_alloc(cap * h * sizeof(float));
    args.out = (float *)op_gpu_alloc(th * sizeof(float));
    args.row = (int32_t *)op_gpu_alloc((size_t)nb * e_all * sizeof(int32_t));
    args.slot = (size_t *)op_gpu_alloc(tk * sizeof(size_t));
    args.recv = (float *)op_sym_alloc(cap * h * sizeof(float));
    args.ret = (float *)op_sym_alloc(tk * h * sizeof(float));
    args.counts = (int32_t *)op_sym_alloc(2 * (size_t)npes * e_all * sizeof(int32_t));
    args.count_sig = (int32_t *)op_sym_alloc((size_t)npes * sizeof(int32_t));
    args.arrived = (int32_t *)op_sym_alloc((size_t)per_pe * sizeof(int32_t));
    args.returned = (int32_t *)op_sym_alloc(e_all * sizeof(int32_t));
    op_fill_gpu(&g, args.counts, 0, 2 * (size_t)npes * e_all * sizeof(int32_t));
    op_fill_gpu(&g, args.count_sig, 0, (size_t)npes * sizeof(int32_t));
    op_fill_gpu(&g, args.arrived, 0, (size_t)per_pe * sizeof(int32_t));
    op_fill_gpu(&g, args.returned, 0, e_all * sizeof(int32_t));
    op_to_gpu(&g, w_gpu, w + (size_t)me * per_pe * hh, (size_t)per_pe * hh * sizeof(float));
    args.x = x_gpu;
    args.ids = ids_gpu;
    args.gates = gates_gpu;
    args.w = w_gpu;
    args.tokens = tokens;
    args.hidden = hidden;
    args.experts = n_exp;
    args.topk = k;
    args.per_pe = per_pe;

    double best = 1e30, tol = 0;
    size_t bad = 0, first = 0;
    int bad_launch = -1;
    float got = 0, want = 0;
    for (int it = 0; it < iters; it++) {
        /* Fresh tokens and routing for every launch (launch 0's as the C example's). */
        uint64_t s = (uint64_t)seed + (uint64_t)it;
        draw_routing(s, me, npes, tokens, n_exp, k, ids, gates, taken);
        for (size_t i = 0; i < th; i++) x[i] = input_value(s, (uint64_t)me, i);
        op_to_gpu(&g, x_gpu, x, th * sizeof(float));
        op_to_gpu(&g, ids_gpu, ids, tk * sizeof(int32_t));
        op_to_gpu(&g, gates_gpu, gates, tk * sizeof(float));
        if (!no_host_barrier || it == 0) shmem_barrier_all();
        args.round = it + 1;
        op_launch_begin(&g);
        moe_dispatch_combine_cuda<<<nb, OP_THREADS, smem, g.stream>>>(g.job, args);
        double ms = op_launch_end(&g);
        best = ms < best ? ms : best;
        op_from_gpu(&g, out, args.out, th * sizeof(float));

        /* The reference on the host: every copy of every token through its expert, in double;
         * gated sums (gates sum to 1) of H products each, added in another order: a bound
         * relative to the largest product. */
        double xmax = 0;
        for (size_t i = 0; i < th; i++) xmax = fmax(xmax, fabs((double)x[i]));
        double tol_it = 1e-5 * (double)hidden * wmax * xmax + 1e-6;
        tol = tol_it > tol ? tol_it : tol;
        for (int t = 0; t < tokens; t++) {
            const float *xt = x + (size_t)t * h;
            for (size_t c = 0; c < h; c++) ref[c] = 0;
            for (int j = 0; j < k; j++) {
                const float *we = w + (size_t)ids[(size_t)t * k + j] * hh;
                for (size_t c = 0; c < h; c++) tmp[c] = 0;
                for (size_t i = 0; i < h; i++) {
                    const double xi = (double)xt[i];
                    for (size_t c = 0; c < h; c++) tmp[c] += xi * (double)we[i * h + c];
                }
                const double gate = (double)gates[(size_t)t * k + j];
                for (size_t c = 0; c < h; c++) ref[c] += gate * tmp[c];
            }
            for (size_t c = 0; c < h; c++) {
                const float o = out[(size_t)t * h + c];
                if (!(fabs((double)o - ref[c]) <= tol_it) && bad++ == 0) {
                    bad_launch = it;
                    first = (size_t)t * h + c;
                    got = o;
                    want = (float)ref[c];
                }
            }
        }
    }
    /* Rows this PE received from each PE in the last launch (its share of the count matrix). */
    op_from_gpu(&g, cnt_host, args.counts + (size_t)(args.round & 1) * (size_t)npes * e_all,
                (size_t)npes * e_all * sizeof(int32_t));
    char from[256] = "";
    for (int src = 0, len = 0; src < npes && len < (int)sizeof from - 16; src++) {
        long rows = 0;
        for (int e = me * per_pe; e < (me + 1) * per_pe; e++) {
            rows += cnt_host[(size_t)src * e_all + e];
        }
        len += snprintf(from + len, sizeof from - (size_t)len, "%s%ld", src ? " " : "", rows);
    }
    int status = 0;
    if (bad != 0) {
        printf(PROG
               ": PE %d: FAILED, %zu of %zu values (%d launches) differ from the host "
               "reference by more than %g, first in launch %d at token %zu column %zu: %g, "
               "expected %g\n",
               me, bad, th * (size_t)iters, iters, tol, bad_launch + 1, first / h, first % h,
               (double)got, (double)want);
        status = 1;
    } else {
        printf(PROG
               ": PE %d: T=%d H=%d E=%d k=%d on %d PEs, %d blocks, %d launches, rows "
               "received from each PE [%s] in the last: matches the host reference within "
               "%g\n",
               me, tokens, hidden, n_exp, k, npes, nb, iters, from, tol);
    }
    shmem_barrier_all();
    if (me == 0) {
        printf(PROG ": kernel %.3f ms (best of %d), %d blocks, %d PE(s) on GPU %d\n", best, iters,
               nb, g.sharing, g.device);
    }
    shmem_free(args.returned);
    shmem_free(args.arrived);
    shmem_free(args.count_sig);
    shmem_free(args.counts);
    shmem_free(args.ret);
    shmem_free(args.recv);
    OP_CUDA(cudaFree(args.slot));
    OP_CUDA(cudaFree(args.row));
    OP_CUDA(cudaFree(args.out));
    OP_CUDA(cudaFree(args.y));
    OP_CUDA(cudaFree(w_gpu));
    OP_CUDA(cudaFree(gates_gpu));
    OP_CUDA(cudaFree(ids_gpu));
    OP_CUDA(cudaFree(x_gpu));
    free(taken);
    free(cnt_host);
    free(tmp);
    free(ref);
    free(out);
    free(w);
    free(gates);
    free(ids);
    free(x);
    op_cuda_stop(&g);
    return status;
}
