/*
 * amo.c: atomic memory operations from PE 0 on an element of PE 1, 32-bit (unsigned int) and
 * 64-bit (unsigned long): the types for which OpenSHMEM 1.4 and 1.5 both define every
 * operation below (shmem_uint_atomic_*, shmem_ulong_atomic_*).
 *
 * latency (ns per call, one call at a time):
 *   fetch swap compare_swap fetch_add fetch_inc fetch_and fetch_or fetch_xor   blocking call
 *   set+quiet add+quiet                                                        call + quiet
 * rate (Mops/s, calls back to back, one shmem_quiet at the end of the trial):
 *   set add                                                                    1.4 and 1.5
 *   fetch_nbi swap_nbi compare_swap_nbi fetch_add_nbi fetch_inc_nbi
 *   fetch_and_nbi fetch_or_nbi fetch_xor_nbi                                   1.5 only
 * (the blocking fetching calls' rate is 1e3 / their latency: one call at a time by definition)
 *
 * Every fetched value is compared with a local model of the element, and PE 1 checks the
 * element's final value after every trial. Sweep: amo.sweep.
 */
#include "common.h"

static unsigned int static_u32[16] __attribute__((aligned(64)));
static unsigned long static_u64[8] __attribute__((aligned(64)));

static bench_opts_t opt;
static int me, npes;
static double samples[BENCH_MAX_TRIALS];

enum op {
    /* fetching */
    FETCH,
    SWAP,
    CSWAP,
    FETCH_ADD,
    FETCH_INC,
    FETCH_AND,
    FETCH_OR,
    FETCH_XOR,
    /* non-fetching */
    SET,
    ADD,
    NOPS
};
static const char *const op_names[NOPS] = {"fetch",     "swap",      "compare_swap", "fetch_add",
                                           "fetch_inc", "fetch_and", "fetch_or",     "fetch_xor",
                                           "set",       "add"};

/* The operand of call i, and the element after it, for element value `m` before it. */
#define OPERAND(T, op, base, i)                                                                    \
    ((op) == FETCH_AND   ? (T) ~((T)1 << ((i) % (sizeof(T) * 8)))                                  \
     : (op) == FETCH_OR  ? (T)((T)1 << (((i)*7) % (sizeof(T) * 8)))                                \
     : (op) == FETCH_XOR ? (T)((unsigned long)(i)*0x9E3779B97F4A7C15ul)                            \
                         : (T)((base) + (i) + 1))
#define NEXT(T, op, m, x)                                                                          \
    ((op) == FETCH                                           ? (m)                                 \
     : (op) == FETCH_ADD || (op) == FETCH_INC || (op) == ADD ? (T)((m) + 1)                        \
     : (op) == FETCH_AND                                     ? (T)((m) & (x))                      \
     : (op) == FETCH_OR                                      ? (T)((m) | (x))                      \
     : (op) == FETCH_XOR                                     ? (T)((m) ^ (x))                      \
                                                             : (x)) /* swap, compare_swap, set */

/* One program body per type: TN is the OpenSHMEM type name (uint, ulong). The switch is
 * outside the timed loops; each loop calls exactly one routine. `mode` 0: latency, 1: rate
 * (back to back), 2: rate of the 1.5 nbi fetching form. Returns ns per call, or -1 where the
 * form does not exist in this library. */
#define DEFINE_AMO(T, TN)                                                                          \
    static T model_##TN(enum op op, T base, long n) {                                              \
        T m = base;                                                                                \
        for (long i = 0; i < n; i++) m = NEXT(T, op, m, OPERAND(T, op, base, i));                  \
        return m;                                                                                  \
    }                                                                                              \
    static double loop_##TN(enum op op, int mode, T *dst, T base, long iters, T *fetched,          \
                            long *bad) {                                                           \
        T m = base;                                                                                \
        long b = 0;                                                                                \
        double t0 = bench_now_ns();                                                                \
        switch (op) {                                                                              \
        case FETCH:                                                                                \
            if (mode == 2) goto nbi;                                                               \
            for (long i = 0; i < iters; i++) b += shmem_##TN##_atomic_fetch(dst, 1) != m;          \
            break;                                                                                 \
        case SWAP:                                                                                 \
            if (mode == 2) goto nbi;                                                               \
            for (long i = 0; i < iters; i++) {                                                     \
                T x = OPERAND(T, SWAP, base, i);                                                   \
                b += shmem_##TN##_atomic_swap(dst, x, 1) != m;                                     \
                m = x;                                                                             \
            }                                                                                      \
            break;                                                                                 \
        case CSWAP:                                                                                \
            if (mode == 2) goto nbi;                                                               \
            for (long i = 0; i < iters; i++) {                                                     \
                T x = OPERAND(T, CSWAP, base, i);                                                  \
                b += shmem_##TN##_atomic_compare_swap(dst, m, x, 1) != m;                          \
                m = x;                                                                             \
            }                                                                                      \
            break;                                                                                 \
        case FETCH_ADD:                                                                            \
            if (mode == 2) goto nbi;                                                               \
            for (long i = 0; i < iters; i++) b += shmem_##TN##_atomic_fetch_add(dst, 1, 1) != m++; \
            break;                                                                                 \
        case FETCH_INC:                                                                            \
            if (mode == 2) goto nbi;                                                               \
            for (long i = 0; i < iters; i++) b += shmem_##TN##_atomic_fetch_inc(dst, 1) != m++;    \
            break;                                                                                 \
        case FETCH_AND:                                                                            \
        case FETCH_OR:                                                                             \
        case FETCH_XOR:                                                                            \
            if (mode == 2) goto nbi;                                                               \
            for (long i = 0; i < iters; i++) {                                                     \
                T x = OPERAND(T, op, base, i), r;                                                  \
                if (op == FETCH_AND)                                                               \
                    r = shmem_##TN##_atomic_fetch_and(dst, x, 1);                                  \
                else if (op == FETCH_OR)                                                           \
                    r = shmem_##TN##_atomic_fetch_or(dst, x, 1);                                   \
                else                                                                               \
                    r = shmem_##TN##_atomic_fetch_xor(dst, x, 1);                                  \
                b += r != m;                                                                       \
                m = NEXT(T, op, m, x);                                                             \
            }                                                                                      \
            break;                                                                                 \
        case SET:                                                                                  \
            if (mode == 0)                                                                         \
                for (long i = 0; i < iters; i++) {                                                 \
                    shmem_##TN##_atomic_set(dst, OPERAND(T, SET, base, i), 1);                     \
                    shmem_quiet();                                                                 \
                }                                                                                  \
            else {                                                                                 \
                for (long i = 0; i < iters; i++)                                                   \
                    shmem_##TN##_atomic_set(dst, OPERAND(T, SET, base, i), 1);                     \
                shmem_quiet();                                                                     \
            }                                                                                      \
            break;                                                                                 \
        case ADD:                                                                                  \
            if (mode == 0)                                                                         \
                for (long i = 0; i < iters; i++) {                                                 \
                    shmem_##TN##_atomic_add(dst, 1, 1);                                            \
                    shmem_quiet();                                                                 \
                }                                                                                  \
            else {                                                                                 \
                for (long i = 0; i < iters; i++) shmem_##TN##_atomic_add(dst, 1, 1);               \
                shmem_quiet();                                                                     \
            }                                                                                      \
            break;                                                                                 \
        default: break;                                                                            \
        }                                                                                          \
        *bad += b;                                                                                 \
        return (bench_now_ns() - t0) / (double)iters;                                              \
    nbi:                                                                                           \
        (void)fetched;                                                                             \
        return NBI_LOOP_##TN(op, dst, base, iters, fetched, bad, t0);                              \
    }

#if SHMEM_MINOR_VERSION >= 5
#define HAVE_NBI_AMO 1
/* 1.5: the fetching AMOs' non-blocking forms, each result to its own slot of `fetched`, all
 * completed by one shmem_quiet; the results are checked after the clock stops. */
#define DEFINE_NBI(T, TN)                                                                          \
    static double NBI_LOOP_##TN(enum op op, T *dst, T base, long iters, T *fetched, long *bad,     \
                                double t0) {                                                       \
        (void)t0;                                                                                  \
        T m = base;                                                                                \
        t0 = bench_now_ns();                                                                       \
        switch (op) {                                                                              \
        case FETCH:                                                                                \
            for (long i = 0; i < iters; i++) shmem_##TN##_atomic_fetch_nbi(&fetched[i], dst, 1);   \
            break;                                                                                 \
        case SWAP:                                                                                 \
            for (long i = 0; i < iters; i++)                                                       \
                shmem_##TN##_atomic_swap_nbi(&fetched[i], dst, OPERAND(T, SWAP, base, i), 1);      \
            break;                                                                                 \
        case CSWAP:                                                                                \
            /* conditions from the model: each swap succeeds only if all before it landed */       \
            for (long i = 0; i < iters; i++)                                                       \
                shmem_##TN##_atomic_compare_swap_nbi(&fetched[i], dst,                             \
                                                     i ? OPERAND(T, CSWAP, base, i - 1) : base,    \
                                                     OPERAND(T, CSWAP, base, i), 1);               \
            break;                                                                                 \
        case FETCH_ADD:                                                                            \
            for (long i = 0; i < iters; i++)                                                       \
                shmem_##TN##_atomic_fetch_add_nbi(&fetched[i], dst, 1, 1);                         \
            break;                                                                                 \
        case FETCH_INC:                                                                            \
            for (long i = 0; i < iters; i++)                                                       \
                shmem_##TN##_atomic_fetch_inc_nbi(&fetched[i], dst, 1);                            \
            break;                                                                                 \
        case FETCH_AND:                                                                            \
            for (long i = 0; i < iters; i++)                                                       \
                shmem_##TN##_atomic_fetch_and_nbi(&fetched[i], dst,                                \
                                                  OPERAND(T, FETCH_AND, base, i), 1);              \
            break;                                                                                 \
        case FETCH_OR:                                                                             \
            for (long i = 0; i < iters; i++)                                                       \
                shmem_##TN##_atomic_fetch_or_nbi(&fetched[i], dst, OPERAND(T, FETCH_OR, base, i),  \
                                                 1);                                               \
            break;                                                                                 \
        case FETCH_XOR:                                                                            \
            for (long i = 0; i < iters; i++)                                                       \
                shmem_##TN##_atomic_fetch_xor_nbi(&fetched[i], dst,                                \
                                                  OPERAND(T, FETCH_XOR, base, i), 1);              \
            break;                                                                                 \
        default: return -1;                                                                        \
        }                                                                                          \
        shmem_quiet();                                                                             \
        double ns = (bench_now_ns() - t0) / (double)iters;                                         \
        /* AMOs on one element are atomic and, from one PE with no fence, may land in any order;   \
         * this library and every shm transport apply them in order, which the check assumes. */   \
        for (long i = 0; i < iters; i++) {                                                         \
            T x = OPERAND(T, op, base, i);                                                         \
            *bad += fetched[i] != m;                                                               \
            m = NEXT(T, op, m, x);                                                                 \
        }                                                                                          \
        return ns;                                                                                 \
    }
#else
#define HAVE_NBI_AMO 0
#define DEFINE_NBI(T, TN)                                                                          \
    static double NBI_LOOP_##TN(enum op op, T *dst, T base, long iters, T *fetched, long *bad,     \
                                double t0) {                                                       \
        (void)op, (void)dst, (void)base, (void)iters, (void)fetched, (void)bad, (void)t0;          \
        return -1;                                                                                 \
    }
#endif

DEFINE_NBI(unsigned int, uint)
DEFINE_NBI(unsigned long, ulong)
DEFINE_AMO(unsigned int, uint)
DEFINE_AMO(unsigned long, ulong)

static const char *form_of(enum op op, int mode, int bits, char *buf, size_t len) {
    const char *tn = bits == 32 ? "uint" : "ulong";
    const char *base = op_names[op];
    if (mode == 2)
        snprintf(buf, len, "shmem_%s_atomic_%s_nbi*iters+shmem_quiet", tn, base);
    else if (mode == 1)
        snprintf(buf, len, "shmem_%s_atomic_%s*iters+shmem_quiet", tn, base);
    else if (op == SET || op == ADD)
        snprintf(buf, len, "shmem_%s_atomic_%s+shmem_quiet", tn, base);
    else
        snprintf(buf, len, "shmem_%s_atomic_%s", tn, base);
    return buf;
}

static void run(enum op op, int mode, int bits, const char *placement, void *elem) {
    const long iters = opt.iters;
    void *fetched = NULL;
    if (mode == 2 && me == 0 && !(fetched = calloc((size_t)iters, sizeof(unsigned long))))
        bench_die("out of memory");
    for (int t = -opt.warmup; t < opt.trials; t++) {
        const unsigned long base = 0x1000ul * (unsigned long)(t + opt.warmup + 1) + 3;
        if (me == 1) {
            if (bits == 32)
                *(unsigned int *)elem = (unsigned int)base;
            else
                *(unsigned long *)elem = base;
        }
        shmem_barrier_all();
        long bad = 0;
        if (me == 0) {
            if (t >= 0) BENCH_CG_TOGGLE();
            double ns = bits == 32
                            ? loop_uint(op, mode, elem, (unsigned int)base, iters, fetched, &bad)
                            : loop_ulong(op, mode, elem, base, iters, fetched, &bad);
            if (t >= 0) {
                BENCH_CG_TOGGLE();
                samples[t] = ns;
            }
            if (ns < 0) bench_die("%s: no such form in this library", op_names[op]);
        }
        shmem_barrier_all();
        if (bad)
            bench_die("%s (%d-bit): %ld of %ld fetched values were wrong", op_names[op], bits, bad,
                      iters);
        if (me == 1) {
            unsigned long got, want;
            if (bits == 32) {
                got = *(unsigned int *)elem;
                want = model_uint(op, (unsigned int)base, iters);
            } else {
                got = *(unsigned long *)elem;
                want = model_ulong(op, base, iters);
            }
            if (got != want)
                bench_die("%s (%d-bit): element holds %#lx after the trial, expected %#lx",
                          op_names[op], bits, got, want);
        }
    }
    free(fetched);
    if (me != 0) return;
    char name[48], form[96];
    snprintf(name, sizeof name, "%s%s%s", op_names[op], mode == 2 ? "_nbi" : "",
             mode == 0 && (op == SET || op == ADD) ? "+quiet" : "");
    bench_fig_t f = {"amo",
                     name,
                     form_of(op, mode, bits, form, sizeof form),
                     mode ? "rate" : "latency",
                     mode ? "Mops/s" : "ns",
                     npes,
                     (size_t)bits / 8,
                     placement,
                     bench_alignment(elem),
                     0,
                     0,
                     0,
                     iters,
                     opt.trials};
    bench_cg_dump(&f, iters * opt.trials);
    if (mode) bench_to_rate(samples, opt.trials, 1e3); /* calls per ns * 1e3 = Mops/s */
    bench_emit(&f, bench_stats(samples, opt.trials));
}

int main(int argc, char **argv) {
    me = bench_start();
    npes = shmem_n_pes();
    bench_parse(&opt, argc, argv,
                "fetch,set,swap,compare_swap,fetch_add,add,fetch_inc,fetch_and,fetch_or,fetch_xor",
                "4,8", 32u << 20);
    if (npes < 2) bench_die("needs at least 2 PEs, got %d", npes);
    /* --mode: latency, rate or both (default). */
    const int lat = !opt.mode[0] || !strcmp(opt.mode, "latency") || !strcmp(opt.mode, "both");
    const int rate = !opt.mode[0] || !strcmp(opt.mode, "rate") || !strcmp(opt.mode, "both");
    if (!lat && !rate) bench_die("--mode must be latency, rate or both");
    int ops[NOPS], nops = 0;
    for (int k = 0; k < opt.nops; k++) {
        int found = -1;
        for (int j = 0; j < NOPS; j++)
            if (!strcmp(opt.ops[k], op_names[j])) found = j;
        if (found < 0) bench_die("unknown op '%s'", opt.ops[k]);
        ops[nops++] = found;
    }
    for (int pl = 0; pl < opt.nplacements; pl++) {
        const char *placement = opt.placements[pl];
        const int heap = !strcmp(placement, "heap");
        char *area = heap ? shmem_align(64, 64) : NULL;
        if (heap && !area) bench_die("shmem_align(64, 64) failed");
        for (int s = 0; s < opt.nsizes; s++) {
            const int bits = (int)opt.sizes[s] * 8;
            if (bits != 32 && bits != 64) bench_die("size %zu: only 4 and 8 bytes", opt.sizes[s]);
            void *elem = heap ? (void *)area : bits == 32 ? (void *)static_u32 : (void *)static_u64;
            for (int k = 0; k < nops; k++) {
                const enum op op = (enum op)ops[k];
                if (lat) run(op, 0, bits, placement, elem);
                if (rate && (op == SET || op == ADD))
                    run(op, 1, bits, placement, elem);
                else if (rate && HAVE_NBI_AMO)
                    run(op, 2, bits, placement, elem);
            }
        }
        if (heap) shmem_free(area);
    }
    shmem_finalize();
    return 0;
}
