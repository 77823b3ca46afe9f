/*
 * bench/matmul_mpi.c: matmul_allreduce the sequential MPI way, cblas_sgemm then Open MPI's
 * MPI_Allreduce (MPI_FLOAT, MPI_SUM), on the inputs and with the options of bench/matmul.c
 * (matmul_common.h). Built with mpicc and run with mpirun by scripts/bench.sh; every rank pins
 * itself like an OpenSHMEM bench program (bench_pin) and runs one BLAS thread.
 *
 * Figures per shape (ns per operation, barrier to barrier):
 *   seq_mpi        cblas_sgemm of the whole product, then MPI_Allreduce
 *   allreduce_mpi  MPI_Allreduce alone (of the same M x N floats)
 * The two alternate inside a trial; the result is spot-checked against the inputs' formula.
 */
#define BENCH_NO_SHMEM 1
#include <mpi.h>

#include "common.h"
#include "matmul_common.h"

enum { SEQ, REDUCE, NFIG };
static const char *const fig_name[NFIG] = {"seq_mpi", "allreduce_mpi"};
static const char *const fig_form[NFIG] = {"cblas_sgemm+MPI_Allreduce", "MPI_Allreduce"};

static int me, npes;

static void run_shape(const mm_opts_t *o, const mm_shape_t *s) {
    size_t mn = (size_t)s->m * (size_t)s->n;
    if (mn > (size_t)INT32_MAX)
        bench_die("%dx%dx%d: M x N is above MPI's int count", s->m, s->k, s->n);
    float *a = malloc((size_t)s->m * (size_t)s->k * sizeof(float));
    float *b = malloc((size_t)s->k * (size_t)s->n * sizeof(float));
    float *part = malloc(mn * sizeof(float));
    float *sum = malloc(mn * sizeof(float));
    if (!a || !b || !part || !sum) bench_die("out of memory for %dx%dx%d", s->m, s->k, s->n);
    mm_fill(me, s, a, b);
    static double t[NFIG][BENCH_MAX_TRIALS];
    for (int trial = 0; trial < o->warmup + o->trials; trial++) {
        for (int j = 0; j < NFIG; j++) {
            int fig = (j + trial) % NFIG;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = bench_now_ns();
            if (fig == SEQ)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->m, s->n, s->k, 1.0f, a,
                            s->k, b, s->n, 0.0f, part, s->n);
            if (MPI_Allreduce(part, sum, (int)mn, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) !=
                MPI_SUCCESS)
                bench_die("MPI_Allreduce failed");
            MPI_Barrier(MPI_COMM_WORLD);
            if (trial >= o->warmup) t[fig][trial - o->warmup] = bench_now_ns() - t0;
        }
        if (trial == 0) mm_spot_check("seq_mpi", s, npes, sum);
    }
    if (me == 0)
        for (int fig = 0; fig < NFIG; fig++)
            mm_emit(fig_name[fig], fig_form[fig], npes, s, t[fig], o->trials);
    free(sum);
    free(part);
    free(b);
    free(a);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &npes);
    bench_me = me;
    bench_pin(me);
#ifdef OPENBLAS_VERSION
    openblas_set_num_threads(1);
#endif
#ifdef OMPI_MAJOR_VERSION
    snprintf(bench_lib, sizeof bench_lib, "Open MPI %d.%d.%d", OMPI_MAJOR_VERSION,
             OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION);
#else
    snprintf(bench_lib, sizeof bench_lib, "MPI");
#endif
    mm_opts_t o;
    mm_parse(&o, argc, argv);
    for (int s = 0; s < o.nshapes; s++) run_shape(&o, &o.shapes[s]);
    MPI_Finalize();
    return 0;
}
