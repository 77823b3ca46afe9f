/*
 * bench/matmul.c: matmul_allreduce (C = sum over PEs of A_pe x B_pe, float32, every PE ends
 * with C) on this library: the fused kernel of examples/matmul_allreduce (included from there,
 * not copied) against the sequential form, cblas_sgemm then the host shmem_float_sum_reduce.
 * Its MPI counterpart is matmul_mpi.c; options and records in matmul_common.h.
 *
 * Figures per shape (ns per operation, barrier to barrier):
 *   fused            one launch of the kernel (--blocks blocks, --tile tiles)
 *   seq_shmem        cblas_sgemm of the whole product, then shmem_float_sum_reduce
 *   gemm             cblas_sgemm alone
 *   allreduce_shmem  shmem_float_sum_reduce alone (of the same M x N floats)
 * Inside a trial the four run back to back, in an order that rotates from trial to trial.
 * The fused result is compared with the sequential one in full, and both are spot-checked
 * against the inputs' formula; any mismatch ends the program with status 2.
 */
#include "common.h"
#include "matmul_allreduce_kernel.h"
#include "matmul_common.h"

enum { FUSED, SEQ, GEMM, REDUCE, NFIG };
static const char *const fig_name[NFIG] = {"fused", "seq_shmem", "gemm", "allreduce_shmem"};
static const char *const fig_form[NFIG] = {
    "shmemx_cpu_launch(matmul_allreduce kernel)",
    "cblas_sgemm+shmem_float_sum_reduce",
    "cblas_sgemm",
    "shmem_float_sum_reduce",
};

static int me, npes;

/* OpenBLAS threads for the next calls (the kernel's blocks run one each). */
static void blas_threads(int n) {
#ifdef OPENBLAS_VERSION
    openblas_set_num_threads(n);
#else
    (void)n;
#endif
}

static void run_shape(const mm_opts_t *o, const mm_shape_t *s, int blocks) {
    size_t mn = (size_t)s->m * (size_t)s->n;
    float *a = malloc((size_t)s->m * (size_t)s->k * sizeof(float));
    float *b = malloc((size_t)s->k * (size_t)s->n * sizeof(float));
    float *part = shmem_malloc(mn * sizeof(float));
    float *sum = shmem_malloc(mn * sizeof(float));
    struct mm_args op;
    if (!a || !b || !part || !sum ||
        mm_setup(&op, "bench", a, b, s->m, s->k, s->n, o->tm ? o->tm : MM_DEFAULT_TILE_M,
                 o->tn ? o->tn : MM_DEFAULT_TILE_N, blocks) != 0)
        bench_die("out of memory for %dx%dx%d", s->m, s->k, s->n);
    mm_fill(me, s, a, b);
    static double t[NFIG][BENCH_MAX_TRIALS];
    for (int trial = 0; trial < o->warmup + o->trials; trial++) {
        for (int j = 0; j < NFIG; j++) {
            int fig = (j + trial) % NFIG;
            shmem_barrier_all();
            double t0 = bench_now_ns();
            switch (fig) {
            case FUSED:
                if (mm_run(&op) != 0) bench_die("shmemx_cpu_launch failed");
                break;
            case SEQ:
            case GEMM:
                blas_threads(blocks);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->m, s->n, s->k, 1.0f, a,
                            s->k, b, s->n, 0.0f, part, s->n);
                blas_threads(1);
                if (fig == GEMM) break;
                /* fall through */
            case REDUCE:
                if (shmem_float_sum_reduce(SHMEM_TEAM_WORLD, sum, part, mn) != 0)
                    bench_die("shmem_float_sum_reduce failed");
                break;
            }
            shmem_barrier_all();
            if (trial >= o->warmup) t[fig][trial - o->warmup] = bench_now_ns() - t0;
        }
        if (trial == 0) { /* part and sum hold the sequential result now, op.c the fused one */
            mm_spot_check("seq_shmem", s, npes, sum);
            for (size_t i = 0; i < mn; i++)
                if (!(fabsf(op.c[i] - sum[i]) <= 1e-5f * (float)s->k * (float)npes + 1e-6f))
                    bench_die("fused %dx%dx%d: C[%zu] = %g, sequential %g", s->m, s->k, s->n, i,
                              (double)op.c[i], (double)sum[i]);
        }
    }
    if (me == 0)
        for (int fig = 0; fig < NFIG; fig++)
            mm_emit(fig_name[fig], fig_form[fig], npes, s, t[fig], o->trials);
    shmem_barrier_all();
    mm_teardown(&op);
    shmem_free(sum);
    shmem_free(part);
    free(b);
    free(a);
}

int main(int argc, char **argv) {
    me = bench_start();
    npes = shmem_n_pes();
    mm_opts_t o;
    mm_parse(&o, argc, argv);
    /* Blocks default to the CPUs this PE may run on: 1 when pinned (bench_start pins each PE
     * to one CPU; a launch's threads inherit that). The sequential figures get as many BLAS
     * threads as the kernel has blocks (each block runs one), so both use the same CPUs. */
    cpu_set_t mask;
    int mine = sched_getaffinity(0, sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : 1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (mine >= cpus && cpus / npes < mine) mine = cpus / npes; /* unpinned: a share */
    int blocks = o.blocks ? o.blocks : (mine > 1 ? mine : 1);
#ifdef OPENBLAS_VERSION
    openblas_set_num_threads(1);
#endif
    for (int s = 0; s < o.nshapes; s++) run_shape(&o, &o.shapes[s], blocks);
    shmem_finalize();
    return 0;
}
