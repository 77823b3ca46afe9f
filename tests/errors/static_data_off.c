/* static_data_off.c: with SHMEM_SYMMETRIC_DATA=0 a put to a static variable ends the job with a
 * message saying why, instead of writing the wrong memory. */
#include <shmem.h>

static long target[4];

int main(void) {
    shmem_init();
    long v = 1;
    if (shmem_my_pe() == 0) shmem_putmem(&target[1], &v, sizeof v, shmem_n_pes() - 1);
    shmem_barrier_all();
    shmem_finalize();
    return (int)target[1];
}
