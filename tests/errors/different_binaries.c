/*
 * different_binaries.c: built twice (variants a and b, so their build-ids differ) and started by
 * different_binaries_launch.c, which runs one or the other by PE. Heap targets still work across
 * the two; a put to a static variable ends the job saying the PEs run different executables.
 */
#include <shmem.h>
#include <stdio.h>

static long target[4];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    long *heap = shmem_malloc(sizeof(long));
    long v = 100 + me;
    shmem_putmem(heap, &v, sizeof v, next);
    shmem_barrier_all();
    if (*heap != 100 + prev) {
        fprintf(stderr, "PE %d (variant %s): heap put from PE %d gave %ld\n", me,
                SHMEM_TEST_VARIANT, prev, *heap);
        shmem_global_exit(3);
    }
    shmem_barrier_all();
    shmem_putmem(&target[1], &v, sizeof v, next);
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
