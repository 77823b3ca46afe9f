/*
 * header_c99.c: <shmem.h> and <pshmem.h> in strict C99 (-std=c99 -pedantic -Werror), where the
 * type-generic names do not exist and the deprecated routines must not warn unless called.
 * Runs a typed put around the ring and a profiling twin, each PE checking what it received.
 */
#include <pshmem.h>
#include <shmem.h>
#include <stdio.h>

int main(void) {
    static long ring[2];
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    long mine = 100 + me;
    shmem_long_put(&ring[0], &mine, 1, right);
    pshmem_long_p(&ring[1], mine + 1, right);
    shmem_barrier_all();
    if (ring[0] != 100 + left || ring[1] != 101 + left) {
        fprintf(stderr, "PE %d: got %ld %ld from PE %d\n", me, ring[0], ring[1], left);
        shmem_global_exit(1);
    }
    shmem_finalize();
    return 0;
}
