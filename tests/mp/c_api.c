/*
 * c_api.c: every routine of the first API slice called from C99, each PE checking data that
 * another PE wrote. Exits 0 on success; prints the first failure and exits 1.
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes;

    int major, minor;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION);
    CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0);

    long *a = shmem_malloc(64 * sizeof(long));
    long *b = shmem_calloc(64, sizeof(long));
    long *c = shmem_align(4096, 64 * sizeof(long));
    long *d = shmem_malloc_with_hints(64 * sizeof(long), SHMEM_MALLOC_SIGNAL_REMOTE);
    CHECK(a && b && c && d && ((uintptr_t)c % 4096) == 0);
    CHECK(shmem_addr_accessible(a, next) && shmem_pe_accessible(next));

    long src[64];
    for (int i = 0; i < 64; i++) src[i] = me * 100 + i;
    shmem_putmem(a, src, sizeof src, next);
    shmem_putmem_nbi(b, src, sizeof src, next);
    shmem_quiet();
    shmem_barrier_all();
    for (int i = 0; i < 64; i++) CHECK(a[i] == prev * 100 + i && b[i] == prev * 100 + i);

    long got[64];
    shmem_getmem(got, a, sizeof got, next); /* next's a holds my own values */
    for (int i = 0; i < 64; i++) CHECK(got[i] == me * 100 + i);
    shmem_getmem_nbi(got, b, sizeof got, prev);
    shmem_quiet();
    for (int i = 0; i < 64; i++) CHECK(got[i] == ((prev + npes - 1) % npes) * 100 + i);

    /* NULL only for a PE reached through a transport: a test transport's choice, or a PE on
       another node (the multi-node harness says where the PEs run). */
    long *peer_c = shmem_ptr(c, next);
    if (peer_c != NULL) {
        peer_c[5] = 5000 + me;
    } else {
        CHECK(getenv("SHMEM_TEST_LOOPBACK") != NULL || getenv("SHMEM_TEST_UCX") != NULL ||
              getenv("MULTINODE_LAYOUT") != NULL);
        shmem_long_p(&c[5], 5000 + me, next);
    }
    shmem_fence();
    shmem_sync_all();
    CHECK(c[5] == 5000 + prev);

    d = shmem_realloc(d, 1 << 16);
    CHECK(d != NULL);
    shmem_free(d);
    shmem_free(c);
    shmem_free(b);
    shmem_free(a);
    shmem_finalize();
    return 0;
}
