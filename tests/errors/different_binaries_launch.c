/* different_binaries_launch.c: runs variant a of different_binaries on even PEs and variant b on
 * odd ones (by shmemrun's SHMEM_RUN_RANK), so one job runs two different executables. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void) {
    const char *rank = getenv("SHMEM_RUN_RANK");
    const char *path = rank != NULL && atoi(rank) % 2 == 1 ? BINARY_B : BINARY_A;
    execl(path, path, (char *)NULL);
    perror(path);
    return 2;
}
