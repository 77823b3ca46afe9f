/* past_heap_end.c: a get running past the end of a symmetric block and the heap is refused. */
#include <shmem.h>
#include <stdint.h>

int main(void) {
    shmem_init();
    char *p = shmem_malloc(64);
    static char sink[128];
    /* Start inside the heap, run far beyond its end. */
    if (shmem_my_pe() == 0) shmem_getmem(sink, p, SIZE_MAX / 2, shmem_n_pes() - 1);
    shmem_barrier_all();
    shmem_finalize();
    return sink[0];
}
