/*
 * launch_fault.c CASE: a job started by a launcher other than shmemrun in which one PE fails in
 * a given way after shmem_init, while the others wait in a barrier. PE 0's store must end every
 * PE promptly, whatever the launcher does about failed processes (tests/launchers/CMakeLists.txt
 * holds the expected statuses and messages).
 */
#include <shmem.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static int is(const char *name, const char *want) { return strcmp(name, want) == 0; }

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
