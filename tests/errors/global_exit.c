/* global_exit.c: one PE calls shmem_global_exit(7) while the others wait in a barrier; the
 * whole job ends with status 7. */
#include <shmem.h>

int main(void) {
    shmem_init();
    if (shmem_my_pe() == shmem_n_pes() - 1) shmem_global_exit(7);
    shmem_barrier_all();
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
