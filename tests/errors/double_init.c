/* double_init.c: shmem_init twice is an error naming the call. */
#include <shmem.h>

int main(void) {
    shmem_init();
    shmem_init();
    shmem_finalize();
    return 0;
}
