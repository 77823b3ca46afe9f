/* after_finalize.c: a put after shmem_finalize is refused with a clear message. */
#include <shmem.h>

int main(void) {
    shmem_init();
    long *x = shmem_malloc(sizeof(long));
    long v = 1;
    int pe = shmem_my_pe();
    shmem_finalize();
    shmem_putmem(x, &v, sizeof v, pe);
    return 0;
}
