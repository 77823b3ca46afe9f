/*
 * sma_env.c: reports the symmetric heap size the job got, to check that the deprecated
 * SMA_SYMMETRIC_SIZE is read when SHMEM_SYMMETRIC_SIZE is unset and loses when both are set.
 * Prints "heap holds 3 MiB: yes|no" (PE 0) and exits 0.
 */
#include <shmem.h>
#include <stdio.h>

int main(void) {
    shmem_init();
    void *p = shmem_malloc(3 << 20);
    if (shmem_my_pe() == 0) printf("heap holds 3 MiB: %s\n", p != NULL ? "yes" : "no");
    shmem_free(p);
    shmem_finalize();
    return 0;
}
