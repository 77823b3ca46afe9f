/* on_stream.c: CANN's on-stream calls over the npu device (run with SHMEM_DEVICE=npu over the ACL
 * stand-in). Every PE checks, through the host's gets, what its left neighbour's streams wrote
 * into its heap, and that nothing enqueued on a stream happens before the stream reaches it:
 *   1. a put on a stream held by a host function (a gate) is not visible until the gate opens;
 *   2. signal operations on a stream add up on the right neighbour;
 *   3. a put enqueued after signal_wait_until_on_stream waits for the signal;
 *   4. barrier_all_on_stream orders every PE's stream put before every PE's stream get;
 *   5. quiet_on_stream, barrier_on_stream(team) and the argument checks. */
#include <aclshmem.h>
#include <shmem.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acl_standin.h"

#define N 4096

static int me, npes;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", me, __FILE__, __LINE__, #cond);    \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            shmem_global_exit(1);                                                                  \
        }                                                                                          \
    } while (0)

static atomic_int gate;

/* Holds its stream until `gate` opens (at most 30 s, then the job fails). */
static void hold(void *arg) {
    (void)arg;
    for (int i = 0; i < 30000 && !atomic_load(&gate); i++) usleep(1000);
    if (!atomic_load(&gate)) {
        fprintf(stderr, "PE %d: the gate never opened\n", me);
        shmem_global_exit(1);
    }
}

static unsigned char pattern(int pe, size_t i) { return (unsigned char)(pe * 31 + i * 7 + 1); }

/* Whether `n` bytes of `sym` on `pe` (read with a host get) are `pe_of`'s pattern. */
static int holds_pattern(const void *sym, size_t n, int pe, int pe_of) {
    unsigned char *got = malloc(n);
    shmem_getmem(got, sym, n, pe);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) ok = got[i] == pattern(pe_of, i);
    free(got);
    return ok;
}

static int all_zero(const void *sym, size_t n, int pe) {
    unsigned char *got = malloc(n);
    shmem_getmem(got, sym, n, pe);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) ok = got[i] == 0;
    free(got);
    return ok;
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;

    unsigned char *src = aclshmem_calloc(1, N); /* device memory: this PE's pattern */
    unsigned char *dst = aclshmem_calloc(1, N);
    unsigned char *dst2 = aclshmem_calloc(1, N);
    unsigned char *dst3 = aclshmem_calloc(1, N);
    unsigned char *tmp = aclshmem_calloc(1, N);
    int32_t *sig = aclshmem_calloc(2, sizeof(int32_t));
    CHECK(src && dst && dst2 && dst3 && tmp && sig, "allocation failed");
    CHECK(aclshmem_ptr(dst, right) != NULL, "aclshmem_ptr gives the neighbour's device address");
    unsigned char mine[N];
    for (size_t i = 0; i < N; i++) mine[i] = pattern(me, i);
    shmem_putmem(src, mine, N, me);

    aclrtStream stream = NULL;
    CHECK(aclrtCreateStream(&stream) == 0, "aclrtCreateStream");
    shmem_barrier_all();

    /* 1. Held stream: the put is not there before the gate opens. */
    atomic_store(&gate, 0);
    CHECK(aclrtLaunchHostFunc(stream, hold, NULL) == 0, "aclrtLaunchHostFunc");
    aclshmemx_putmem_on_stream(dst, src, N, right, stream);
    usleep(50000);
    CHECK(all_zero(dst, N, right), "a put on a held stream landed before the stream reached it");
    atomic_store(&gate, 1);
    CHECK(aclrtSynchronizeStream(stream) == 0, "aclrtSynchronizeStream");
    CHECK(holds_pattern(dst, N, right, me), "the stream's put did not land on PE %d", right);
    shmem_barrier_all();
    CHECK(holds_pattern(dst, N, me, left), "PE %d's put on its stream is not here", left);

    /* 2. Signal operations on a stream. */
    aclshmemx_signal_op_on_stream(&sig[0], 5, ACLSHMEM_SIGNAL_ADD, right, stream);
    aclshmemx_signal_op_on_stream(&sig[0], 7, ACLSHMEM_SIGNAL_ADD, right, stream);
    CHECK(aclrtSynchronizeStream(stream) == 0, "aclrtSynchronizeStream");
    shmem_barrier_all();
    int32_t v = 0;
    shmem_getmem(&v, &sig[0], sizeof v, me);
    CHECK(v == 12, "signal is %d, expected 12 (5 + 7 from PE %d's stream)", v, left);

    /* 3. A put behind a signal wait on the stream waits for the signal (set by the left PE). */
    aclshmemx_signal_wait_until_on_stream(&sig[1], ACLSHMEM_CMP_EQ, 1, stream);
    aclshmemx_putmem_on_stream(dst2, src, N, right, stream);
    usleep(50000);
    CHECK(all_zero(dst2, N, right), "a put behind an unmet signal wait landed");
    shmem_barrier_all(); /* every PE has checked before any signal is set */
    shmem_int32_atomic_set(&sig[1], 1, right);
    CHECK(aclrtSynchronizeStream(stream) == 0, "aclrtSynchronizeStream");
    shmem_barrier_all();
    CHECK(holds_pattern(dst2, N, me, left), "PE %d's put behind its signal wait is not here", left);

    /* 4. Put, barrier on the stream, then get on the stream: the get sees the left PE's put. */
    aclshmemx_putmem_on_stream(dst3, src, N, right, stream);
    aclshmemx_barrier_all_on_stream(stream);
    aclshmemx_getmem_on_stream(tmp, dst3, N, me, stream);
    aclshmemx_quiet_on_stream(stream);
    CHECK(aclrtSynchronizeStream(stream) == 0, "aclrtSynchronizeStream");
    CHECK(holds_pattern(tmp, N, me, left), "the get after barrier_all_on_stream missed PE %d's put",
          left);

    /* 5. A team barrier on a stream, and refused arguments (logged, nothing enqueued). */
    aclshmemx_barrier_on_stream(ACLSHMEM_TEAM_WORLD, stream);
    aclshmemx_barrier_on_stream(4242, stream);
    aclshmemx_putmem_on_stream(mine, src, N, right, stream); /* dst not symmetric */
    aclshmemx_putmem_on_stream(dst, src, N, npes, stream);   /* pe outside the job */
    aclshmemx_signal_op_on_stream(&sig[0], 1, 9, right, stream);
    CHECK(aclrtSynchronizeStream(stream) == 0, "aclrtSynchronizeStream");
    v = 0;
    shmem_getmem(&v, &sig[0], sizeof v, right);
    CHECK(v == 12, "a refused signal op changed PE %d's signal to %d", right, v);

    CHECK(aclrtDestroyStream(stream) == 0, "aclrtDestroyStream");
    shmem_barrier_all();
    aclshmem_free(sig);
    aclshmem_free(tmp);
    aclshmem_free(dst3);
    aclshmem_free(dst2);
    aclshmem_free(dst);
    aclshmem_free(src);
    if (me == 0) printf("on_stream: %d PEs checked\n", npes);
    shmem_finalize();
    return 0;
}
