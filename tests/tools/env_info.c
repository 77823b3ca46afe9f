/* A 1-PE job that only starts and ends: under SHMEM_INFO=1 it prints the runtime's table of
 * environment variables, from which scripts/env-table.py writes docs/environment.md's. */
#include <shmem.h>

int main(void) {
    shmem_init();
    shmem_finalize();
    return 0;
}
