/*
 * faulty.c CASE: a job in which one PE fails in a given way; the rest must be ended promptly
 * with a message naming the PE (tests/faults/CMakeLists.txt holds the expectations). Every PE
 * writes its pid into $SHMEM_TEST_PID_DIR so the test can check that none survives.
 */
#include <shmem.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* This process's rank as its launcher gives it (shmemrun, Open MPI, Slurm, Hydra), before init. */
static const char *launcher_rank(void) {
    static const char *const vars[] = {"SHMEM_RUN_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                                       "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL) return v;
    }
    return NULL;
}

static void record_pid(const char *suffix) {
    const char *dir = getenv("SHMEM_TEST_PID_DIR");
    const char *rank = launcher_rank();
    if (dir == NULL) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/pe%s%s.pid", dir, rank ? rank : "0", suffix);
    FILE *f = fopen(path, "w");
    if (f == NULL) return;
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
}

static int is(const char *name, const char *want) { return strcmp(name, want) == 0; }

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    const char *rank = launcher_rank();
    int victim = rank != NULL && atoi(rank) == 1;
    record_pid("");

    if (is(c, "kill_during_init") && victim) raise(SIGKILL);
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *x = shmem_calloc(1024, sizeof(long));

    if (is(c, "kill_during_barrier")) {
        if (victim) raise(SIGKILL);
        shmem_barrier_all();
    }
    if (is(c, "kill_during_put_loop")) {
        /* Everyone puts to everyone; PE 1 dies partway. The loop is bounded so a missed
         * death shows as a timeout of the launcher, not a stuck test. */
        long src[1024] = {0};
        for (long i = 0; i < 200000000L; i++) {
            shmem_long_put(x, src, 1024, (int)(i % npes));
            if (victim && i == 20000) raise(SIGKILL);
        }
    }
    if (is(c, "exit_without_finalize")) {
        if (victim) return 0; /* leaves without shmem_finalize while the others wait */
        shmem_barrier_all();
    }
    if (is(c, "global_exit_256")) {
        /* 256 is 0 in the 8 bits of an exit status; the job must still fail. */
        if (victim) shmem_global_exit(256);
        shmem_barrier_all();
    }
    if (is(c, "hang")) {
        /* Waits for a value nobody writes: only the launcher's --timeout ends it. */
        shmem_long_wait_until(&x[0], SHMEM_CMP_EQ, 42);
    }
    if (is(c, "barrier_forever")) {
        for (;;) shmem_barrier_all();
    }
    if (is(c, "barrier_forever_forked")) {
        /* A helper process of the PE's own, which nothing but the PE's end should end. */
        pid_t child = fork();
        if (child == 0) {
            record_pid(".child");
            for (;;) pause();
        }
        if (child < 0) {
            perror("faulty: fork");
            return 1;
        }
        for (;;) shmem_barrier_all();
    }
    shmem_barrier_all();
    if (me == 0) printf("faulty: case '%s' finished normally\n", c);
    shmem_finalize();
    return 0;
}
