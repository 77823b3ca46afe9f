/*
 * hello.c: the startup benchmark's program. scripts/bench.sh times the whole launch,
 * `shmemrun -n N hello` against `oshrun -np N hello`, from fork to the launcher's exit:
 * launcher start, shmem_init, one barrier, shmem_finalize, teardown. Each PE prints one line,
 * which bench.sh counts. Sweep: hello.sweep (its arguments are bench.sh's: launches per round).
 */
#include <shmem.h>
#include <stdio.h>

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    shmem_barrier_all();
    printf("hello from PE %d of %d\n", me, npes);
    shmem_finalize();
    return 0;
}
