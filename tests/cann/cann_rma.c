/* cann_rma.c: CANN's host data plane at N PEs (under shmemrun): symmetric allocation with and
 * without a memory kind, the heap base, aclshmem_ptr, and for every CANN host type the put/get
 * (blocking and _nbi), p/g and put-with-signal (SET and ADD on an int32_t signal, blocking and
 * _nbi), then the byte forms. Every PE puts to the next PE and checks what the previous one put
 * into its own memory; refused calls (before start-up, a PE outside the job, the other memory kind,
 * a bad sig_op, the on-stream form) must return without moving data or ending the job. The scratch
 * area of AscendC kernels (aclshmemx_set_mte_config) is taken or refused by its bounds. Prints
 * "PE x of n: CANN data plane checked" at the end. */
#include <aclshmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define K 37 /* elements per transfer: not a multiple of any vector width */

static int me, npes, next, prev;

/* The value PE `pe` puts at element i (fits every type, int8 and char included). */
#define VAL(TYPE, pe, i, salt) ((TYPE)((pe)*16 + ((i) % 13) + (salt) + 1))

#define CHECK_TYPE(NAME, TYPE)                                                                     \
    static void check_##NAME(void) {                                                               \
        TYPE *dst = (TYPE *)aclshmem_calloc(4 * K, sizeof(TYPE));                                  \
        uint8_t *sig = (uint8_t *)aclshmem_calloc(1, sizeof(int32_t));                             \
        CHECK(dst != NULL && sig != NULL);                                                         \
        TYPE src[K], got[K];                                                                       \
        for (int i = 0; i < K; i++) src[i] = VAL(TYPE, me, i, 0);                                  \
        /* put and put_nbi into the next PE */                                                     \
        aclshmem_put_##NAME##_mem(dst, src, K, next);                                              \
        aclshmem_put_##NAME##_mem_nbi(dst + K, src, K, next);                                      \
        shmem_quiet();                                                                             \
        /* the symmetric source of the gets, and p */                                              \
        for (int i = 0; i < K; i++) dst[2 * K + i] = VAL(TYPE, me, i, 1);                          \
        aclshmem_##NAME##_p(dst + 3 * K, VAL(TYPE, me, 5, 2), next);                               \
        shmem_barrier_all();                                                                       \
        for (int i = 0; i < K; i++) {                                                              \
            CHECK(dst[i] == VAL(TYPE, prev, i, 0));                                                \
            CHECK(dst[K + i] == VAL(TYPE, prev, i, 0));                                            \
        }                                                                                          \
        CHECK(dst[3 * K] == VAL(TYPE, prev, 5, 2));                                                \
        CHECK(aclshmem_##NAME##_g(dst + 3 * K, next) == VAL(TYPE, me, 5, 2));                      \
        memset(got, 0, sizeof got);                                                                \
        aclshmem_get_##NAME##_mem(got, dst + 2 * K, K, next);                                      \
        for (int i = 0; i < K; i++) CHECK(got[i] == VAL(TYPE, next, i, 1));                        \
        memset(got, 0, sizeof got);                                                                \
        aclshmem_get_##NAME##_mem_nbi(got, dst + 2 * K, K, next);                                  \
        shmem_quiet();                                                                             \
        for (int i = 0; i < K; i++) CHECK(got[i] == VAL(TYPE, next, i, 1));                        \
        shmem_barrier_all();                                                                       \
        /* put-with-signal: SET 5, then _nbi with ADD 3; the data is there when the signal is */   \
        for (int i = 0; i < K; i++) src[i] = VAL(TYPE, me, i, 3);                                  \
        aclshmem_put_##NAME##_mem_signal(dst, src, K, sig, 5, ACLSHMEM_SIGNAL_SET, next);          \
        shmem_int32_wait_until((int32_t *)sig, SHMEM_CMP_GE, 5);                                   \
        for (int i = 0; i < K; i++) CHECK(dst[i] == VAL(TYPE, prev, i, 3));                        \
        for (int i = 0; i < K; i++) src[i] = VAL(TYPE, me, i, 4);                                  \
        aclshmem_put_##NAME##_mem_signal_nbi(dst + K, src, K, sig, 3, ACLSHMEM_SIGNAL_ADD, next);  \
        shmem_int32_wait_until((int32_t *)sig, SHMEM_CMP_EQ, 8);                                   \
        for (int i = 0; i < K; i++) CHECK(dst[K + i] == VAL(TYPE, prev, i, 4));                    \
        shmem_quiet();                                                                             \
        shmem_barrier_all();                                                                       \
        /* a bad sig_op moves nothing */                                                           \
        aclshmem_put_##NAME##_mem_signal(dst, src, K, sig, 1, 7, next);                            \
        aclshmem_put_##NAME##_mem_signal_nbi(dst, src, K, sig, 1, -1, next);                       \
        shmem_barrier_all();                                                                       \
        CHECK(*(int32_t *)sig == 8);                                                               \
        for (int i = 0; i < K; i++) CHECK(dst[i] == VAL(TYPE, prev, i, 3));                        \
        shmem_barrier_all();                                                                       \
        aclshmem_free(sig);                                                                        \
        aclshmem_free(dst);                                                                        \
    }
ACLSHMEMI_HOST_TYPES(CHECK_TYPE)

static void check_bytes(void) {
    enum { N = 1000 };
    unsigned char *buf = (unsigned char *)aclshmem_calloc(3, N);
    int32_t *sig = (int32_t *)aclshmem_calloc(2, sizeof(int32_t));
    CHECK(buf != NULL && sig != NULL);
    unsigned char src[N], got[N];
    for (int i = 0; i < N; i++) src[i] = (unsigned char)(me * 31 + i);
    aclshmem_putmem(buf, src, N, next);
    aclshmem_putmem_nbi(buf + N, src, N, next);
    shmem_quiet();
    memcpy(buf + 2 * N, src, N);
    shmem_barrier_all();
    for (int i = 0; i < N; i++) {
        CHECK(buf[i] == (unsigned char)(prev * 31 + i));
        CHECK(buf[N + i] == (unsigned char)(prev * 31 + i));
    }
    aclshmem_getmem(got, buf + 2 * N, N, next);
    for (int i = 0; i < N; i++) CHECK(got[i] == (unsigned char)(next * 31 + i));
    memset(got, 0, N);
    aclshmem_getmem_nbi(got, buf + 2 * N, N, next);
    shmem_quiet();
    for (int i = 0; i < N; i++) CHECK(got[i] == (unsigned char)(next * 31 + i));
    shmem_barrier_all();

    for (int i = 0; i < N; i++) src[i] = (unsigned char)(me * 7 + i);
    aclshmemx_putmem_signal(buf, src, N, sig, -4, ACLSHMEM_SIGNAL_SET, next);
    shmem_int32_wait_until(sig, SHMEM_CMP_EQ, -4);
    for (int i = 0; i < N; i++) CHECK(buf[i] == (unsigned char)(prev * 7 + i));
    aclshmemx_putmem_signal_nbi(buf + N, src, N, sig + 1, 2, ACLSHMEM_SIGNAL_ADD, next);
    aclshmemx_putmem_signal_nbi(buf + N, src, N, sig + 1, 2, ACLSHMEM_SIGNAL_ADD, next);
    shmem_int32_wait_until(sig + 1, SHMEM_CMP_EQ, 4);
    for (int i = 0; i < N; i++) CHECK(buf[N + i] == (unsigned char)(prev * 7 + i));
    shmem_quiet();
    shmem_barrier_all();

    /* Refused: a PE outside the job, a bad sig_op, the on-stream form. Nothing moves. */
    memset(src, 0xee, N);
    aclshmem_putmem(buf, src, N, npes);
    aclshmem_putmem_nbi(buf, src, N, -1);
    aclshmem_getmem(got, buf, N, npes + 5);
    aclshmem_getmem_nbi(got, buf, N, -2);
    aclshmemx_putmem_signal(buf, src, N, sig, 99, 2, next);
    aclshmemx_putmem_signal_nbi(buf, src, N, sig, 99, ACLSHMEM_SIGNAL_SET, npes);
    aclshmem_int32_p((int32_t *)buf, 99, npes);
    CHECK(aclshmem_int32_g((int32_t *)buf, npes) == 0);
    CHECK(aclshmem_double_g((double *)buf, -1) == 0.0);
    memset(got, 0x11, N);
    if (!on_accelerator()) { /* refused without the npu device (tests/accel covers it on streams) */
        aclshmemx_getmem_on_stream(got, buf, N, next, NULL);
        for (int i = 0; i < N; i++) CHECK(got[i] == 0x11);
    }
    shmem_barrier_all();
    for (int i = 0; i < N; i++) CHECK(buf[i] == (unsigned char)(prev * 7 + i));
    CHECK(sig[0] == -4 && sig[1] == 4);
    shmem_barrier_all();
    aclshmem_free(sig);
    aclshmem_free(buf);
}

/* The heap's memory kind in this job (DEVICE_SIDE when the npu device holds it) and the other
 * one, which every allocation by kind refuses. */
static aclshmem_mem_type_t heap_kind(void) { return on_accelerator() ? DEVICE_SIDE : HOST_SIDE; }

static void check_memory(void) {
    const aclshmem_mem_type_t HEAP = heap_kind();
    const aclshmem_mem_type_t OTHER = HEAP == HOST_SIDE ? DEVICE_SIDE : HOST_SIDE;
    /* Allocation (collective: every PE makes the same calls, refused ones included). */
    CHECK(aclshmem_malloc(0) == NULL);
    CHECK(aclshmem_align(3, 64) == NULL);
    CHECK(aclshmemx_malloc(64, OTHER) == NULL);
    CHECK(aclshmemx_calloc(4, 4, OTHER) == NULL);
    CHECK(aclshmemx_align(64, 64, OTHER) == NULL);
    CHECK(aclshmemx_malloc(64, (aclshmem_mem_type_t)7) == NULL);
    CHECK(aclshmemx_get_heap_base(OTHER) == NULL);

    char *base = (char *)aclshmemx_get_heap_base(HEAP);
    CHECK(base != NULL);
    long *m = (long *)aclshmem_malloc(8 * sizeof(long));
    int *c = (int *)aclshmem_calloc(100, sizeof(int));
    char *a = (char *)aclshmem_align(4096, 100);
    char *xm = (char *)aclshmemx_malloc(64, HEAP);
    int *xc = (int *)aclshmemx_calloc(50, sizeof(int), HEAP);
    char *xa = (char *)aclshmemx_align(256, 10, HEAP);
    CHECK(m && c && a && xm && xc && xa);
    CHECK((char *)m >= base && (char *)c >= base && a >= base && xm >= base);
    CHECK((uintptr_t)a % 4096 == 0 && (uintptr_t)xa % 256 == 0);
    for (int i = 0; i < 100; i++) CHECK(c[i] == 0);
    for (int i = 0; i < 50; i++) CHECK(xc[i] == 0);

    /* aclshmem_ptr: this PE's own memory is itself; no address for a PE outside the job. */
    CHECK(aclshmem_ptr(m, me) == m);
    CHECK(aclshmem_ptr(m, npes) == NULL);
    CHECK(aclshmem_ptr(m, -1) == NULL);
    /* Where the next PE is load/store reachable, a store through its address lands there. */
    m[0] = -1;
    shmem_barrier_all();
    long *peer = (long *)aclshmem_ptr(m, next);
    if (peer != NULL) {
        *peer = me;
        CHECK(shmem_long_atomic_fetch(m, next) == me);
    } else {
        shmem_long_p(m, me, next);
    }
    shmem_barrier_all();
    CHECK(m[0] == prev);
    shmem_barrier_all();

    aclshmem_free(NULL);
    aclshmemx_free(NULL, HEAP);
    aclshmemx_free(xa, HEAP);
    aclshmemx_free(xc, HEAP);
    aclshmemx_free(xm, HEAP);
    aclshmem_free(a);
    aclshmem_free(c);
    aclshmem_free(m);
}

/* The AscendC kernels' scratch area: a valid one is recorded, each bad argument refused (the
 * recorded values reaching a kernel: tests/device/kernels.c). */
static void check_mte_config(void) {
    CHECK(aclshmemx_set_mte_config(0, 32, 0) == ACLSHMEM_SUCCESS);
    CHECK(aclshmemx_set_mte_config(176 * 1024, 16 * 1024, 7) == ACLSHMEM_SUCCESS);
    CHECK(aclshmemx_set_mte_config(0, 0, 0) == ACLSHMEM_INVALID_PARAM);
    CHECK(aclshmemx_set_mte_config(0, 16, 0) == ACLSHMEM_INVALID_PARAM);
    CHECK(aclshmemx_set_mte_config(0, 4100, 0) == ACLSHMEM_INVALID_PARAM);
    CHECK(aclshmemx_set_mte_config(0, UINT32_MAX, 0) == ACLSHMEM_INVALID_PARAM);
    CHECK(aclshmemx_set_mte_config(8, 4096, 0) == ACLSHMEM_INVALID_PARAM);
    CHECK(aclshmemx_set_mte_config(UINT64_MAX, 4096, 0) == ACLSHMEM_INVALID_PARAM);
    CHECK(aclshmemx_set_mte_config(0, 4096, 8) == ACLSHMEM_INVALID_PARAM);
    CHECK(aclshmemx_set_mte_config(0, 4096, UINT32_MAX) == ACLSHMEM_INVALID_PARAM);
}

int main(void) {
    /* Before start-up every routine refuses and returns. */
    CHECK(aclshmemx_set_mte_config(0, 4096, 0) == ACLSHMEM_NOT_INITED);
    CHECK(aclshmem_malloc(64) == NULL);
    CHECK(aclshmemx_malloc(64, HOST_SIDE) == NULL);
    CHECK(aclshmemx_get_heap_base(HOST_SIDE) == NULL);
    CHECK(aclshmem_ptr(&me, 0) == NULL);
    aclshmem_putmem(&me, &me, sizeof me, 0);

    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    next = (me + 1) % npes;
    prev = (me + npes - 1) % npes;

    check_memory();
    check_mte_config();
#define RUN_TYPE(NAME, TYPE) check_##NAME();
    ACLSHMEMI_HOST_TYPES(RUN_TYPE)
#undef RUN_TYPE
    check_bytes();

    printf("PE %d of %d: CANN data plane checked\n", me, npes);
    fflush(stdout);
    shmem_finalize();
    CHECK(aclshmem_malloc(64) == NULL);
    return 0;
}
