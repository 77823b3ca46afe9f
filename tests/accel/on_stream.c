/* on_stream.c: CANN's on-stream calls over the npu device (run with SHMEM_DEVICE=npu over the ACL
 * stand-in) or, built with SHMEM_TEST_CUDA, over the cuda device (SHMEM_DEVICE=cuda over the
 * CUDA driver's stand-in: there the signal ADD and the waits other than EQ and GE are the
 * library's stream kernels, which the stand-in runs as host models). Every PE checks, through the
 * host's gets, what its left neighbour's streams wrote into its heap, and that nothing enqueued on
 * a stream happens before the stream reaches it:
 *   1. a put on a stream held by a host function (a gate) is not visible until the gate opens;
 *   2. signal operations on a stream (SET, then ADD) on the right neighbour;
 *   3. a put enqueued after signal_wait_until_on_stream waits for the signal: EQ, then the other
 *      comparisons (NE, LT, LE, GT, GE) on a signal that goes negative, then above the value;
 *   4. barrier_all_on_stream orders every PE's stream put before every PE's stream get;
 *   5. quiet_on_stream, barrier_on_stream(team) and the argument checks;
 *   6. the kernels' copy of the job state in device memory (shmemx_job_state_device);
 *   7. work left on a stream destroyed before shmem_finalize has run when finalize returns. */
#include <aclshmem.h>
#include <shmem.h>
#include <shmem/job_state.h>
#include <shmem/launch.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "npu_check.h"

/* The device API's streams and copies, for the test's own use. */
#ifdef SHMEM_TEST_CUDA
#include "cuda_standin.h"
#define ON_GPU 1
typedef CUstream test_stream;
static int stream_create(test_stream *s) { return (int)cuStreamCreate(s, 0); }
static int stream_sync(test_stream s) { return (int)cuStreamSynchronize(s); }
static int stream_destroy(test_stream s) { return (int)cuStreamDestroy(s); }
static int host_func(test_stream s, void (*f)(void *), void *arg) {
    return (int)cuLaunchHostFunc(s, f, arg);
}
static int to_host(void *dst, const void *src, size_t n) {
    return (int)cuMemcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n);
}
#else
#include "acl_standin.h"
#define ON_GPU 0
typedef aclrtStream test_stream;
static int stream_create(test_stream *s) { return aclrtCreateStream(s); }
static int stream_sync(test_stream s) { return aclrtSynchronizeStream(s); }
static int stream_destroy(test_stream s) { return aclrtDestroyStream(s); }
static int host_func(test_stream s, void (*f)(void *), void *arg) {
    return aclrtLaunchHostFunc(s, f, arg);
}
static int to_host(void *dst, const void *src, size_t n) {
    return aclrtMemcpy(dst, n, src, n, ACL_MEMCPY_DEVICE_TO_HOST);
}
#endif

#define N 4096

static int me, npes;

static atomic_int gate;
static atomic_int late_done;

/* Work a stream still holds when the program destroys it and finalizes. */
static void late(void *arg) {
    (void)arg;
    usleep(200000);
    atomic_store(&late_done, 1);
}

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
    me = check_pe = shmem_my_pe();
    npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;

    unsigned char *src = aclshmem_calloc(1, N); /* device memory: this PE's pattern */
    unsigned char *dst = aclshmem_calloc(1, N);
    unsigned char *dst2 = aclshmem_calloc(1, N);
    unsigned char *dst3 = aclshmem_calloc(1, N);
    unsigned char *tmp = aclshmem_calloc(1, N);
    unsigned char *dst4 = aclshmem_calloc(1, N);
    unsigned char *dst5 = aclshmem_calloc(1, N);
    int32_t *sig = aclshmem_calloc(3, sizeof(int32_t));
    CHECK(src && dst && dst2 && dst3 && dst4 && dst5 && tmp && sig, "allocation failed");
    CHECK(aclshmem_ptr(dst, right) != NULL, "aclshmem_ptr gives the neighbour's device address");
    unsigned char mine[N];
    for (size_t i = 0; i < N; i++) mine[i] = pattern(me, i);
    shmem_putmem(src, mine, N, me);

    test_stream stream = NULL;
    CHECK(stream_create(&stream) == 0, "creating a stream");
    shmem_barrier_all();

    /* 1. Held stream: the put is not there before the gate opens. */
    atomic_store(&gate, 0);
    CHECK(host_func(stream, hold, NULL) == 0, "launching a host function");
    aclshmemx_putmem_on_stream(dst, src, N, right, stream);
    usleep(50000);
    CHECK(all_zero(dst, N, right), "a put on a held stream landed before the stream reached it");
    atomic_store(&gate, 1);
    CHECK(stream_sync(stream) == 0, "synchronizing the stream");
    CHECK(holds_pattern(dst, N, right, me), "the stream's put did not land on PE %d", right);
    shmem_barrier_all();
    CHECK(holds_pattern(dst, N, me, left), "PE %d's put on its stream is not here", left);

    /* 2. Signal operations on a stream: a SET, then ADDs, one of them negative. */
    aclshmemx_signal_op_on_stream(&sig[0], 99, ACLSHMEM_SIGNAL_SET, right, stream);
    aclshmemx_signal_op_on_stream(&sig[0], 5, ACLSHMEM_SIGNAL_SET, right, stream);
    aclshmemx_signal_op_on_stream(&sig[0], 9, ACLSHMEM_SIGNAL_ADD, right, stream);
    aclshmemx_signal_op_on_stream(&sig[0], -2, ACLSHMEM_SIGNAL_ADD, right, stream);
    CHECK(stream_sync(stream) == 0, "synchronizing the stream");
    shmem_barrier_all();
    int32_t v = 0;
    shmem_getmem(&v, &sig[0], sizeof v, me);
    CHECK(v == 12, "signal is %d, expected 12 from PE %d's stream", v, left);

    /* 3. A put behind a signal wait on the stream waits for the signal (set by the left PE). */
    aclshmemx_signal_wait_until_on_stream(&sig[1], ACLSHMEM_CMP_EQ, 1, stream);
    aclshmemx_putmem_on_stream(dst2, src, N, right, stream);
    usleep(50000);
    CHECK(all_zero(dst2, N, right), "a put behind an unmet signal wait landed");
    shmem_barrier_all(); /* every PE has checked before any signal is set */
    shmem_int32_atomic_set(&sig[1], 1, right);
    CHECK(stream_sync(stream) == 0, "synchronizing the stream");
    shmem_barrier_all();
    CHECK(holds_pattern(dst2, N, me, left), "PE %d's put behind its signal wait is not here", left);

    /* The other comparisons on sig[2] (0 at first): NE 0 holds the stream until the left PE sets
     * -3, after which LT 0, LE -3 and GT -4 hold at once; then GT 5 holds it again until 6, where
     * GE 6 holds at once. */
    aclshmemx_signal_wait_until_on_stream(&sig[2], ACLSHMEM_CMP_NE, 0, stream);
    aclshmemx_signal_wait_until_on_stream(&sig[2], ACLSHMEM_CMP_LT, 0, stream);
    aclshmemx_signal_wait_until_on_stream(&sig[2], ACLSHMEM_CMP_LE, -3, stream);
    aclshmemx_signal_wait_until_on_stream(&sig[2], ACLSHMEM_CMP_GT, -4, stream);
    aclshmemx_putmem_on_stream(dst4, src, N, right, stream);
    aclshmemx_signal_wait_until_on_stream(&sig[2], ACLSHMEM_CMP_GT, 5, stream);
    aclshmemx_signal_wait_until_on_stream(&sig[2], ACLSHMEM_CMP_GE, 6, stream);
    aclshmemx_putmem_on_stream(dst5, src, N, right, stream);
    usleep(50000);
    CHECK(all_zero(dst4, N, right), "a put behind an unmet NE wait landed");
    shmem_barrier_all();
    shmem_int32_atomic_set(&sig[2], -3, right);
    for (int i = 0; i < 30000 && !holds_pattern(dst4, N, right, me); i++) usleep(1000);
    CHECK(holds_pattern(dst4, N, right, me),
          "the put behind NE, LT, LE, GT waits on a -3 did not land");
    usleep(50000);
    CHECK(all_zero(dst5, N, right), "a put behind an unmet GT wait landed");
    shmem_barrier_all(); /* every PE has checked before any signal moves on */
    shmem_int32_atomic_set(&sig[2], 6, right);
    CHECK(stream_sync(stream) == 0, "synchronizing the stream");
    shmem_barrier_all();
    CHECK(holds_pattern(dst5, N, me, left), "PE %d's put behind its GT, GE waits is not here",
          left);

    /* 4. Put, barrier on the stream, then get on the stream: the get sees the left PE's put. */
    aclshmemx_putmem_on_stream(dst3, src, N, right, stream);
    aclshmemx_barrier_all_on_stream(stream);
    aclshmemx_getmem_on_stream(tmp, dst3, N, me, stream);
    aclshmemx_quiet_on_stream(stream);
    CHECK(stream_sync(stream) == 0, "synchronizing the stream");
    CHECK(holds_pattern(tmp, N, me, left), "the get after barrier_all_on_stream missed PE %d's put",
          left);

    /* 5. A team barrier on a stream, and refused arguments (logged, nothing enqueued). */
    aclshmemx_barrier_on_stream(ACLSHMEM_TEAM_WORLD, stream);
    aclshmemx_barrier_on_stream(4242, stream);
    aclshmemx_putmem_on_stream(mine, src, N, right, stream); /* dst not symmetric */
    aclshmemx_putmem_on_stream(dst, src, N, npes, stream);   /* pe outside the job */
    aclshmemx_signal_op_on_stream(&sig[0], 1, 9, right, stream);
    CHECK(stream_sync(stream) == 0, "synchronizing the stream");
    v = 0;
    shmem_getmem(&v, &sig[0], sizeof v, right);
    CHECK(v == 12, "a refused signal op changed PE %d's signal to %d", right, v);

    /* 6. The job state as this PE's kernels read it: a device copy whose arrays are device
     * memory too, with every PE's heap at the address aclshmem_ptr gives. */
    CHECK(aclshmemx_set_mte_config(64 * 1024, 8192, 3) == 0, "aclshmemx_set_mte_config");
    const void *dev = shmemx_job_state_device();
    CHECK(dev != NULL, "shmemx_job_state_device is NULL on an accelerator");
    shmem_job_state st;
    CHECK(to_host(&st, dev, sizeof st) == 0, "reading the device copy of the job state");
    CHECK(st.size == sizeof st && st.version == SHMEM_JOB_STATE_VERSION, "size %u version %u",
          st.size, st.version);
    CHECK(st.my_pe == me && st.n_pes == npes && st.heap_on_device == (ON_GPU ? 2 : 1) &&
              st.transport == NULL,
          "my_pe %d n_pes %d heap_on_device %d", st.my_pe, st.n_pes, st.heap_on_device);
    CHECK(st.mte_ub_offset == 64 * 1024 && st.mte_ub_size == 8192 && st.mte_event_id == 3,
          "scratch area %lu/%u/%u", (unsigned long)st.mte_ub_offset, st.mte_ub_size,
          st.mte_event_id);
    uintptr_t *bases = malloc(2 * sizeof(uintptr_t) * (size_t)npes);
    CHECK(to_host(bases, st.bases, 2 * sizeof(uintptr_t) * (size_t)npes) == 0,
          "reading the device copy's bases");
    char *heap = aclshmemx_get_heap_base(DEVICE_SIDE);
    CHECK(heap != NULL && st.heap_base == (uintptr_t)heap, "heap base");
    for (int pe = 0; pe < npes; pe++) {
        CHECK(bases[2 * pe] == (uintptr_t)aclshmem_ptr(heap, pe), "PE %d's heap base %#lx", pe,
              (unsigned long)bases[2 * pe]);
        CHECK(bases[2 * pe + 1] == 0, "PE %d's static data in the device copy", pe);
    }
    free(bases);

    CHECK(stream_destroy(stream) == 0, "destroying the stream");
    shmem_barrier_all();

    /* 7. Work left on a stream the program destroys before finalize (CUDA's destroy returns at
     * once, the work still runs): finalize waits for it, without the destroyed handle. */
    int32_t *late_sig = aclshmem_calloc(1, sizeof(int32_t));
    test_stream last = NULL;
    CHECK(late_sig != NULL && stream_create(&last) == 0, "a last stream");
    CHECK(host_func(last, late, NULL) == 0, "launching a host function");
    aclshmemx_signal_op_on_stream(late_sig, 1, ACLSHMEM_SIGNAL_ADD, me, last);
    CHECK(stream_destroy(last) == 0, "destroying the last stream");

    aclshmem_free(sig);
    aclshmem_free(tmp);
    aclshmem_free(dst5);
    aclshmem_free(dst4);
    aclshmem_free(dst3);
    aclshmem_free(dst2);
    aclshmem_free(dst);
    aclshmem_free(src);
    shmem_finalize();
    if (!atomic_load(&late_done)) {
        fprintf(stderr, "PE %d: shmem_finalize returned before its destroyed stream's work ran\n",
                me);
        return 1;
    }
    if (me == 0) printf("on_stream: %d PEs checked\n", npes);
    return 0;
}
