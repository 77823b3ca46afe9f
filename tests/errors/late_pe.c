/* late_pe.c: the last PE starts shmem_init long after the others, which give up waiting for it
 * at SHMEM_INIT_TIMEOUT and must name it and the step it had not reached. */
#include <shmem.h>
#include <stdlib.h>
#include <unistd.h>

int main(void) {
    const char *rank = getenv("SHMEM_RUN_RANK"), *size = getenv("SHMEM_RUN_SIZE");
    if (rank != NULL && size != NULL && atoi(rank) == atoi(size) - 1) sleep(60);
    shmem_init();
    shmem_finalize();
    return 0;
}
