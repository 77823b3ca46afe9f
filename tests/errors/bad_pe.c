/* bad_pe.c: a put to a PE that does not exist ends the job with a message naming it. */
#include <shmem.h>

int main(void) {
    shmem_init();
    long *x = shmem_malloc(sizeof(long));
    long v = 1;
    shmem_barrier_all();
    if (shmem_my_pe() == shmem_n_pes() - 1) shmem_putmem(x, &v, sizeof v, shmem_n_pes());
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
