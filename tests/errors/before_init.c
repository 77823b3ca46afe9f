/* before_init.c: a call before shmem_init says so instead of crashing. */
#include <shmem.h>

int main(void) { return shmem_n_pes(); }
