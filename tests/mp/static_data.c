/*
 * static_data.c: global and static variables are symmetric (OpenSHMEM 1.5 §3.2). Puts and gets
 * on a static array, a global array, an initialised global (.data) whose value survives the
 * move to shared memory, a .bss global, and 1 MiB arrays; shmem_ptr and shmem_addr_accessible
 * on a static variable. Targets are the next PE and a strided one; each PE checks what a peer
 * wrote. Exits 0 on success; prints the first failure and exits 1.
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define BIG (1 << 20)

static long x[8];
long g[1024];
long with_value[4] = {11, 22, 33, 44}; /* .data */
long in_bss;                           /* .bss */
static unsigned char big_src[BIG];
static unsigned char big_dst[BIG];
static unsigned char big_got[BIG];

static unsigned char pattern(int pe, size_t i) {
    return (unsigned char)((pe * 131 + i * 7) & 0xff);
}

int main(void) {
    /* The initialiser was in place before shmem_init and is still there after the move. */
    CHECK(with_value[0] == 11 && with_value[3] == 44);
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    int stride = npes / 2 > 0 ? npes / 2 : 1;
    int far = (me + stride) % npes, far_src = (me + npes - stride) % npes;
    CHECK(with_value[0] == 11 && with_value[1] == 22 && with_value[2] == 33 && with_value[3] == 44);

    /* Puts to next and to the strided peer, into disjoint places. */
    long v = 1000 + me;
    shmem_putmem(&x[3], &v, sizeof v, next);
    long row[512];
    for (int i = 0; i < 512; i++) row[i] = me * 10000 + i;
    shmem_putmem(&g[0], row, sizeof row, next);
    for (int i = 0; i < 512; i++) row[i] = me * 10000 + 5000 + i;
    shmem_putmem(&g[512], row, sizeof row, far);
    v = 2000 + me;
    shmem_putmem(&in_bss, &v, sizeof v, far);
    shmem_barrier_all();
    CHECK(x[3] == 1000 + prev);
    CHECK(in_bss == 2000 + far_src);
    for (int i = 0; i < 512; i++) {
        CHECK(g[i] == prev * 10000 + i);
        CHECK(g[512 + i] == far_src * 10000 + 5000 + i);
    }

    /* Gets: every PE changes its .data global, then reads the peers'. */
    with_value[1] = 3000 + me;
    shmem_barrier_all();
    long got[4];
    shmem_getmem(got, with_value, sizeof got, next);
    CHECK(got[0] == 11 && got[1] == 3000 + next && got[2] == 33 && got[3] == 44);
    shmem_getmem(got, with_value, sizeof got, far);
    CHECK(got[1] == 3000 + far);
    shmem_getmem(&v, &x[3], sizeof v, far); /* far's x[3] came from far's previous PE */
    CHECK(v == 1000 + (far + npes - 1) % npes);
    shmem_barrier_all();

    /* shmem_ptr and shmem_addr_accessible on a static variable; a stack variable is not. */
    long on_stack = 0;
    CHECK(shmem_addr_accessible(&x[5], next) == 1);
    CHECK(shmem_addr_accessible(&in_bss, far) == 1);
    CHECK(shmem_addr_accessible(&on_stack, next) == 0);
    CHECK(shmem_ptr(&on_stack, next) == NULL);
    long *peer_x = shmem_ptr(&x[5], next);
    CHECK(peer_x != NULL || getenv("SHMEM_TEST_LOOPBACK") != NULL); /* NULL: a transport PE */
    CHECK(shmem_ptr(&x[5], me) == &x[5]);
    if (peer_x != NULL) {
        *peer_x = 4000 + me;
    } else {
        shmem_long_p(&x[5], 4000 + me, next);
    }
    shmem_barrier_all();
    CHECK(x[5] == 4000 + prev);

    /* 1 MiB: put my pattern into next's big_dst, get far's big_src. */
    for (size_t i = 0; i < BIG; i++) big_src[i] = pattern(me, i);
    shmem_barrier_all();
    shmem_putmem(big_dst, big_src, BIG, next);
    shmem_getmem(big_got, big_src, BIG, far);
    for (size_t i = 0; i < BIG; i++) CHECK(big_got[i] == pattern(far, i));
    shmem_barrier_all();
    for (size_t i = 0; i < BIG; i++) CHECK(big_dst[i] == pattern(prev, i));

    shmem_finalize();
    return 0;
}
