/* bad_heap_size.c: run with SHMEM_SYMMETRIC_SIZE=lots; init names the variable and value. */
#include <shmem.h>

int main(void) {
    shmem_init();
    shmem_finalize();
    return 0;
}
