/*
 * static_data_fork.c: a fork()ed child of a PE gets its own copy of the global variables, as
 * fork promises, although they live in shared memory: the child's setenv (glibc keeps
 * `environ` in the executable's .bss once the program refers to it) and its writes to a global
 * do not reach the parent, the parent's writes after the fork do not reach the child, and
 * peers' puts into that global still reach the parent afterwards.
 * Exits 0 on success; prints the first failure and exits 1.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

extern char **environ; /* referring to it copy-relocates it into this executable's .bss */

long shared_global = 42;
long written_after_fork = 1;
static long from_peer[2];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    CHECK(getenv("SHMEM_FORK_TEST") == NULL);
    char **environ_before = environ;

    fflush(NULL);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        /* No library calls and _exit: this process is not a PE. The parent writes
         * written_after_fork right after the fork; give it time, then look. */
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
        int ok = written_after_fork == 1;
        ok = ok && setenv("SHMEM_FORK_TEST", "child", 1) == 0;
        shared_global = 7;
        from_peer[0] = -1;
        ok = ok && strcmp(getenv("SHMEM_FORK_TEST"), "child") == 0 && shared_global == 7;
        _exit(ok ? 0 : 3);
    }
    written_after_fork = 2;
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(environ == environ_before);
    CHECK(getenv("SHMEM_FORK_TEST") == NULL);
    CHECK(shared_global == 42);
    CHECK(from_peer[0] == 0);

    /* The parent's globals are still symmetric after the fork. */
    shmem_barrier_all();
    long v[2] = {100 + me, 200 + me};
    shmem_putmem(from_peer, v, sizeof v, next);
    shmem_putmem(&shared_global, &v[1], sizeof v[1], next);
    shmem_barrier_all();
    CHECK(from_peer[0] == 100 + prev && from_peer[1] == 200 + prev);
    CHECK(shared_global == 200 + prev);

    shmem_finalize();
    return 0;
}
