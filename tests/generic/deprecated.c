/*
 * deprecated.c: the routines and constants OpenSHMEM 1.5 lists as deprecated, used the old
 * way: start_pes with no shmem_finalize (the library finalizes at exit), _my_pe, shmalloc and
 * friends, the pre-1.4 AMO names typed and generic, shmem_wait and the cache routines, with
 * their profiling twins. Each PE checks what its left neighbour did to it. Built with
 * -Wno-deprecated-declarations: every call here is deprecated on purpose.
 */
#include <pshmem.h>
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"

static int me;

int main(void) {
    start_pes(0);
    me = _my_pe();
    int npes = _num_pes();
    CHECK(me == shmem_my_pe() && npes == shmem_n_pes() && p_my_pe() == me);
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;

    /* Constants under their old names. */
    CHECK(_SHMEM_CMP_EQ == SHMEM_CMP_EQ && _SHMEM_CMP_NE == SHMEM_CMP_NE);
    CHECK(_SHMEM_CMP_GT == SHMEM_CMP_GT && _SHMEM_CMP_GE == SHMEM_CMP_GE);
    CHECK(_SHMEM_CMP_LT == SHMEM_CMP_LT && _SHMEM_CMP_LE == SHMEM_CMP_LE);
    CHECK(_SHMEM_MAJOR_VERSION == 1 && _SHMEM_MINOR_VERSION == 5);
    CHECK(_SHMEM_SYNC_VALUE == SHMEM_SYNC_VALUE && _SHMEM_MAX_NAME_LEN == SHMEM_MAX_NAME_LEN);
    CHECK(_SHMEM_BARRIER_SYNC_SIZE >= 1 && _SHMEM_BCAST_SYNC_SIZE >= 1);
    CHECK(_SHMEM_COLLECT_SYNC_SIZE >= 1 && _SHMEM_REDUCE_SYNC_SIZE >= 1);
    CHECK(_SHMEM_REDUCE_MIN_WRKDATA_SIZE >= 1 && sizeof(_SHMEM_VENDOR_STRING) > 1);

    /* Memory. */
    long *a = shmalloc(8 * sizeof(long));
    int *flags = shmemalign(256, 4 * sizeof(int));
    double *d = pshmalloc(2 * sizeof(double));
    CHECK(a != NULL && flags != NULL && d != NULL && (uintptr_t)flags % 256 == 0);
    a = shrealloc(a, 16 * sizeof(long));
    CHECK(a != NULL);
    for (int i = 0; i < 16; i++) a[i] = 0;
    for (int i = 0; i < 4; i++) flags[i] = 0;
    d[0] = d[1] = 0.0;
    shmem_clear_cache_inv();
    shmem_set_cache_inv();
    shmem_set_cache_line_inv(a);
    shmem_clear_cache_line_inv(a);
    shmem_udcflush();
    shmem_udcflush_line(a);
    shmem_pcontrol(1);
    shmem_pcontrol(2, "user event");
    shmem_barrier_all();

    /* Typed AMOs under the pre-1.4 names, into the right PE. */
    shmem_long_set(&a[0], 40, right);
    shmem_long_add(&a[0], me, right);
    shmem_long_inc(&a[0], right);
    CHECK(shmem_long_fadd(&a[1], 5, right) == 0);
    CHECK(shmem_long_finc(&a[1], right) == 5);
    CHECK(shmem_long_cswap(&a[1], 6, 60 + me, right) == 6);
    CHECK(shmem_long_swap(&a[2], 7, right) == 0);
    CHECK(shmem_long_fetch(&a[2], right) == 7);
    shmem_double_set(&d[0], 0.5 + me, right);
    CHECK(shmem_double_swap(&d[1], 2.5, right) == 0.0);
    CHECK(pshmem_int_finc(&flags[1], right) == 0);
    shmem_int_add(&flags[2], 3, right);

    /* The same through the deprecated generic names (C11). */
    CHECK(shmem_fadd(&a[4], 2L, right) == 0);
    shmem_add(&a[4], 3L, right);
    shmem_inc(&a[4], right);
    CHECK(shmem_finc(&a[4], right) == 6);
    CHECK(shmem_cswap(&a[4], 7L, 70L + me, right) == 7);
    shmem_set(&a[5], 11L, right);
    CHECK(shmem_swap(&a[5], 12L, right) == 11);
    CHECK(shmem_fetch(&a[5], right) == 12);
    shmem_quiet();

    /* shmem_wait: released by the left PE's store into this PE's flag. */
    shmem_int_p(&flags[0], 1, right);
    shmem_int_wait(&flags[0], 0);
    shmem_long_p(&a[6], 1, right);
    shmem_wait(&a[6], 0);
    shmem_long_p(&a[7], 2, right);
    (shmem_wait_until)(&a[7], SHMEM_CMP_EQ, 2); /* the long function, not the generic macro */
    shmem_barrier_all();

    CHECK(a[0] == 41 + left && a[1] == 60 + left && a[2] == 7 && flags[2] == 3);
    CHECK(a[4] == 70 + left && a[5] == 12 && flags[0] == 1 && flags[1] == 1);
    CHECK(d[0] == 0.5 + left && d[1] == 2.5);
    shmem_barrier_all();

    shfree(d);
    pshfree(flags);
    shfree(a);
    if (me == 0) printf("deprecated routines: ok on %d PEs\n", npes);
    return 0; /* no shmem_finalize: start_pes finalizes at exit */
}
