/* bad_pe.c [CASE]: a put to a PE that does not exist ends the job with a message naming it; with
 * no bytes to move too (a zero-length transfer is valid whatever its addresses, not whatever its
 * PE). CASE: none (8 bytes), zero (shmem_putmem of 0 bytes at NULL), ctx_zero
 * (shmem_ctx_getmem_nbi of 0 bytes), signal_zero (shmem_putmem_signal of 0 bytes). */
#include <shmem.h>
#include <stdint.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    shmem_init();
    long *x = shmem_malloc(sizeof(long));
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    long v = 1;
    int bad = shmem_n_pes();
    shmem_barrier_all();
    if (shmem_my_pe() == shmem_n_pes() - 1) {
        if (strcmp(c, "zero") == 0) {
            shmem_putmem(NULL, NULL, 0, bad);
        } else if (strcmp(c, "ctx_zero") == 0) {
            shmem_ctx_getmem_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, bad);
        } else if (strcmp(c, "signal_zero") == 0) {
            shmem_putmem_signal(NULL, NULL, 0, sig, 1, SHMEM_SIGNAL_SET, bad);
        } else {
            shmem_putmem(x, &v, sizeof v, bad);
        }
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
