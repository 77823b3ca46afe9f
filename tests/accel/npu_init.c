/* npu_init.c: start-up and one put over the npu device; the fault tests make ACL fail under it
 * (ACL_STANDIN_FAIL) or take ACL away, and check that start-up stops with a clear message. */
#include <shmem.h>
#include <stdio.h>

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int *x = shmem_calloc(1, sizeof(int));
    shmem_int_p(x, me + 1, (me + 1) % n);
    shmem_barrier_all();
    int got = shmem_int_g(x, me);
    int want = (me + n - 1) % n + 1;
    if (got != want) {
        fprintf(stderr, "PE %d: got %d, expected %d\n", me, got, want);
        shmem_global_exit(1);
    }
    shmem_free(x);
    if (me == 0) printf("npu_init: %d PEs started and checked\n", n);
    shmem_finalize();
    return 0;
}
