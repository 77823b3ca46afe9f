/*
 * launch_fault.c CASE: a job started by a launcher other than shmemrun in which one PE fails in
 * a given way after shmem_init, while the others wait in a barrier (or, put_loop_kill_last,
 * put to every PE in a loop). PE 0's store must end every PE promptly, whatever the launcher
 * does about failed processes (tests/launchers/CMakeLists.txt holds the expected statuses and
 * messages). Two cases fail nothing themselves: wait_cut (every PE waits, in a barrier or
 * for a word nobody writes, while tests/multinode cuts a node off) and compute_last SECONDS (the
 * last PE computes that long without calling the library while the others wait; the job must end
 * normally).
 */
#include <shmem.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int is(const char *name, const char *want) { return strcmp(name, want) == 0; }

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Every PE puts to every other PE, round after round, each round completed by quiet; the last
 * PE (in a job across nodes, one on another node than PE 0) dies after 100 rounds. The others
 * are then mid put loop: the job must end them; one still putting after 60 s fails (status 3).
 * First every PE checks the words the others wrote, so the loop runs on a working data path. */
static int put_loop_kill_last(int me, int n) {
    long *slot = shmem_calloc((size_t)n, sizeof(long));
    for (int pe = 0; pe < n; pe++) shmem_long_p(&slot[me], me + 1, pe);
    shmem_barrier_all();
    for (int pe = 0; pe < n; pe++) {
        if (slot[pe] != pe + 1) {
            printf("launch_fault: PE %d: slot %d holds %ld, want %d\n", me, pe, slot[pe], pe + 1);
            return 2;
        }
    }
    shmem_barrier_all();
    double start = now();
    for (long round = 1;; round++) {
        if (me == n - 1 && round == 100) raise(SIGKILL);
        for (int pe = 0; pe < n; pe++) shmem_long_p(&slot[me], round, pe);
        shmem_quiet();
        if (now() - start > 60) {
            printf("launch_fault: PE %d still putting after 60 s (round %ld)\n", me, round);
            return 3;
        }
    }
}

/* The last PE computes for `seconds` without calling the library while the others wait in a
 * barrier: a PE busy that long is not taken for dead, and the job ends normally. */
static int compute_last(int me, int n, double seconds) {
    if (me == n - 1) {
        volatile double x = 0;
        double start = now();
        while (now() - start < seconds) {
            for (int i = 0; i < 100000; i++) x += 1e-9 * i;
        }
    }
    shmem_barrier_all();
    if (me == 0)
        printf("launch_fault: PE %d computed for %.0f s; the job went on\n", n - 1, seconds);
    shmem_finalize();
    return 0;
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    shmem_init();
    int me = shmem_my_pe();
    /* Past this barrier every PE is done with shmem_init: the others wait in the next one. */
    shmem_barrier_all();

    if (is(c, "kill_after_init") && me == 1) raise(SIGKILL);
    /* The last PE: in a job across nodes, one on another node than PE 0. */
    if (is(c, "kill_last") && me == shmem_n_pes() - 1) raise(SIGKILL);
    if (is(c, "kill_pe0") && me == 0) raise(SIGKILL);
    if (is(c, "put_loop_kill_last")) return put_loop_kill_last(me, shmem_n_pes());
    if (is(c, "compute_last")) return compute_last(me, shmem_n_pes(), argc > 2 ? atof(argv[2]) : 1);
    /* The others wait in the barrier below, the last PE for a word nobody writes: the test
     * cuts a node off meanwhile. */
    if (is(c, "wait_cut")) {
        static long never;
        if (me == 0) {
            printf("launch_fault: every PE waits in a barrier or shmem_wait_until\n");
            fflush(stdout);
        }
        if (me == shmem_n_pes() - 1) shmem_long_wait_until(&never, SHMEM_CMP_NE, 0);
    }
    if (is(c, "exit_without_finalize") && me == 1) return 0; /* the others wait below */
    if (is(c, "exit_without_finalize_pe0") && me == 0) return 0;
    if (is(c, "global_exit") && me == 1) shmem_global_exit(7);
    if (is(c, "global_exit_0") && me == 1) shmem_global_exit(0);
    if (is(c, "global_exit_pe0") && me == 0) shmem_global_exit(5);
    /* 0 in the 8 bits of an exit status: every PE must still fail. */
    if (is(c, "global_exit_256") && me == 1) shmem_global_exit(256);
    /* The library itself stops the job after an argument error. */
    if (is(c, "bad_argument") && me == 1) shmem_putmem(&c, &c, 1, -1);

    /* Only the failure above can end this barrier early; without it every PE finishes. */
    shmem_barrier_all();
    if (me == 0) printf("launch_fault: case '%s' finished normally\n", c);
    shmem_finalize();
    return 0;
}
