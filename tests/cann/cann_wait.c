/* cann_wait.c: CANN's host waits and tests at N PEs (under shmemrun). For every CANN wait type,
 * each PE sets four variables of the next PE (5, 6, 7, 8, one p at a time, after checking that
 * the tests see nothing yet) and waits on its own with every wait form, then checks every test
 * form's res_out; aclshmem_signal_wait_until on a put-with-signal; refusals (bad cmp, NULL
 * res_out, the on-stream form) return at once. Prints "PE x of n: CANN waits checked". */
#include <aclshmem.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"

static int me, npes, next;

#define CHECK_TYPE(NAME, TYPE)                                                                     \
    static void check_##NAME(void) {                                                               \
        TYPE *v = (TYPE *)aclshmem_calloc(4, sizeof(TYPE));                                        \
        CHECK(v != NULL);                                                                          \
        int r = -1;                                                                                \
        size_t res = 0, idx[4] = {9, 9, 9, 9};                                                     \
        aclshmem_##NAME##_test(v, ACLSHMEM_CMP_EQ, (TYPE)5, &r);                                   \
        CHECK(r == 0);                                                                             \
        aclshmem_##NAME##_test_any(v, 4, NULL, ACLSHMEM_CMP_GT, (TYPE)0, &res);                    \
        CHECK(res == SIZE_MAX);                                                                    \
        shmem_barrier_all();                                                                       \
        for (int i = 0; i < 4; i++) aclshmem_##NAME##_p(v + i, (TYPE)(5 + i), next);               \
        shmem_quiet();                                                                             \
        /* every wait form on this PE's variables */                                               \
        aclshmem_##NAME##_wait_until(v, ACLSHMEM_CMP_EQ, (TYPE)5);                                 \
        aclshmem_##NAME##_wait(v + 1, (TYPE)0);                                                    \
        aclshmem_##NAME##_wait_until_all(v, 4, NULL, ACLSHMEM_CMP_GE, (TYPE)5);                    \
        int st[4] = {1, 0, 1, 1};                                                                  \
        aclshmem_##NAME##_wait_until_any(v, 4, st, ACLSHMEM_CMP_GE, (TYPE)5, &res);                \
        CHECK(res == 1);                                                                           \
        aclshmem_##NAME##_wait_until_some(v, 4, idx, NULL, ACLSHMEM_CMP_GT, (TYPE)6, &res);        \
        CHECK(res == 2 && idx[0] == 2 && idx[1] == 3);                                             \
        TYPE all[4] = {5, 6, 7, 8}, third[4] = {0, 0, 7, 0}, odd[4] = {5, 0, 7, 0};                \
        aclshmem_##NAME##_wait_until_all_vector(v, 4, NULL, ACLSHMEM_CMP_EQ, all);                 \
        int skip0[4] = {1, 0, 0, 0};                                                               \
        aclshmem_##NAME##_wait_until_any_vector(v, 4, skip0, ACLSHMEM_CMP_EQ, third, &res);        \
        CHECK(res == 2);                                                                           \
        aclshmem_##NAME##_wait_until_some_vector(v, 4, idx, NULL, ACLSHMEM_CMP_EQ, odd, &res);     \
        CHECK(res == 2 && idx[0] == 0 && idx[1] == 2);                                             \
        /* an empty set returns at once */                                                         \
        int none[4] = {1, 1, 1, 1};                                                                \
        aclshmem_##NAME##_wait_until_any(v, 4, none, ACLSHMEM_CMP_EQ, (TYPE)99, &res);             \
        CHECK(res == SIZE_MAX);                                                                    \
        aclshmem_##NAME##_wait_until_some(v, 4, idx, none, ACLSHMEM_CMP_EQ, (TYPE)99, &res);       \
        CHECK(res == 0);                                                                           \
        aclshmem_##NAME##_wait_until_all(v, 4, none, ACLSHMEM_CMP_EQ, (TYPE)99);                   \
        /* every test form */                                                                      \
        aclshmem_##NAME##_test(v + 3, ACLSHMEM_CMP_EQ, (TYPE)8, &r);                               \
        CHECK(r == 1);                                                                             \
        aclshmem_##NAME##_test(v + 3, ACLSHMEM_CMP_LT, (TYPE)8, &r);                               \
        CHECK(r == 0);                                                                             \
        aclshmem_##NAME##_test_any(v, 4, NULL, ACLSHMEM_CMP_NE, (TYPE)5, &res);                    \
        CHECK(res == 1);                                                                           \
        aclshmem_##NAME##_test_any(v, 4, NULL, ACLSHMEM_CMP_EQ, (TYPE)99, &res);                   \
        CHECK(res == SIZE_MAX);                                                                    \
        aclshmem_##NAME##_test_some(v, 4, idx, NULL, ACLSHMEM_CMP_LE, (TYPE)6, &res);              \
        CHECK(res == 2 && idx[0] == 0 && idx[1] == 1);                                             \
        aclshmem_##NAME##_test_all_vector(v, 4, NULL, ACLSHMEM_CMP_EQ, all, &r);                   \
        CHECK(r == 1);                                                                             \
        aclshmem_##NAME##_test_all_vector(v, 4, NULL, ACLSHMEM_CMP_EQ, odd, &r);                   \
        CHECK(r == 0);                                                                             \
        aclshmem_##NAME##_test_all_vector(v, 4, st, ACLSHMEM_CMP_EQ, all, &r);                     \
        CHECK(r == 1);                                                                             \
        aclshmem_##NAME##_test_any_vector(v, 4, NULL, ACLSHMEM_CMP_EQ, third, &res);               \
        CHECK(res == 2);                                                                           \
        aclshmem_##NAME##_test_some_vector(v, 4, idx, skip0, ACLSHMEM_CMP_EQ, odd, &res);          \
        CHECK(res == 1 && idx[0] == 2);                                                            \
        /* refusals: a bad cmp waits for nothing; a test reports nothing */                        \
        aclshmem_##NAME##_wait_until(v, 6, (TYPE)42);                                              \
        aclshmem_##NAME##_wait_until_all(v, 4, NULL, -1, (TYPE)42);                                \
        aclshmem_##NAME##_test(v, 9, (TYPE)5, &r);                                                 \
        CHECK(r == 0);                                                                             \
        aclshmem_##NAME##_test_any(v, 4, NULL, 7, (TYPE)5, &res);                                  \
        CHECK(res == SIZE_MAX);                                                                    \
        aclshmem_##NAME##_test_some(v, 4, idx, NULL, ACLSHMEM_CMP_EQ, (TYPE)5, NULL);              \
        shmem_barrier_all();                                                                       \
        aclshmem_free(v);                                                                          \
    }
ACLSHMEMI_P2P_TYPES(CHECK_TYPE)

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    next = (me + 1) % npes;

#define RUN_TYPE(NAME, TYPE) check_##NAME();
    ACLSHMEMI_P2P_TYPES(RUN_TYPE)
#undef RUN_TYPE

    /* The int32_t signal of put-with-signal. */
    int32_t *sig = (int32_t *)aclshmem_calloc(1, sizeof(int32_t));
    long *data = (long *)aclshmem_calloc(1, sizeof(long));
    CHECK(sig != NULL && data != NULL);
    long mine = 1000 + me;
    aclshmemx_putmem_signal(data, &mine, sizeof mine, sig, 3, ACLSHMEM_SIGNAL_ADD, next);
    aclshmem_signal_wait_until(sig, ACLSHMEM_CMP_GE, 3);
    CHECK(*data == 1000 + (me + npes - 1) % npes);
    aclshmem_signal_wait_until(sig, 17, 3); /* refused: returns */
    /* Without the npu device, refused: returns (tests/accel covers it on streams). */
    if (!on_accelerator()) aclshmemx_signal_wait_until_on_stream(sig, ACLSHMEM_CMP_EQ, 99, NULL);
    shmem_barrier_all();
    aclshmem_free(data);
    aclshmem_free(sig);

    printf("PE %d of %d: CANN waits checked\n", me, npes);
    fflush(stdout);
    shmem_finalize();
    return 0;
}
