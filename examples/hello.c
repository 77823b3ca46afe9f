/*
 * hello.c: the smallest shmem program. Each PE tells its right-hand neighbour its number and
 * prints what it heard from the left.
 *
 *   shmemrun -n 2 ./hello
 */
#include <shmem.h>
#include <stdio.h>

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    int *heard = shmem_malloc(sizeof(int));
    shmem_putmem(heard, &me, sizeof me, (me + 1) % npes);
    shmem_barrier_all();
    printf("hello from PE %d of %d; PE %d said hello to me\n", me, npes, *heard);
    int ok = *heard == (me + npes - 1) % npes;
    shmem_free(heard);
    shmem_finalize();
    return ok ? 0 : 1;
}
