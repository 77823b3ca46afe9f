/* not_symmetric.c: a put whose target is a stack address ends the job with a clear message. */
#include <shmem.h>

int main(void) {
    shmem_init();
    long on_stack = 0, v = 1;
    if (shmem_my_pe() == 0) shmem_putmem(&on_stack, &v, sizeof v, shmem_n_pes() - 1);
    shmem_barrier_all();
    shmem_finalize();
    return (int)on_stack;
}
