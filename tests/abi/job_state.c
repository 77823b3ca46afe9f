/* job_state.c: shmem/job_state.h is plain C, and the library starts only when the runtime's
 * job state has the header's layout field for field (shmem_init compares them and stops the
 * job naming the first field that differs). Every PE then checks that what the state gives
 * the data path works: every peer is mapped (shmem_ptr), a put and a get reach each of them. */
#include <shmem.h>
#include <shmem/job_state.h>
#include <stdio.h>
#include <stdlib.h>

/* The header compiles as C with fixed-size fields only: its size is the same for every
 * compiler of this ABI (LP64: ten 4-byte fields and twenty-three 8-byte ones, no padding). The
 * transport table likewise: two 4-byte fields, then two pointers and eight functions. */
_Static_assert(sizeof(shmem_job_state) == 10 * 4 + 23 * 8, "job state size");
/* Version 3 appended the control segment's fields; version 4 the device heap's, then the
 * AscendC scratch area's, at the end: no earlier field moved. */
_Static_assert(SHMEM_JOB_STATE_VERSION == 4, "job state version");
_Static_assert(offsetof(shmem_job_state, control_bases) ==
                   offsetof(shmem_job_state, amo_bases) + sizeof(void *),
               "control fields appended");
_Static_assert(offsetof(shmem_job_state, heap_on_device) ==
                   offsetof(shmem_job_state, control_teams) + 8,
               "device fields after the control fields");
_Static_assert(offsetof(shmem_job_state, mte_ub_offset) ==
                   offsetof(shmem_job_state, heap_device_bases) + 8,
               "scratch area fields after the device fields");
_Static_assert(offsetof(shmem_job_state, mte_event_id) + 4 == sizeof(shmem_job_state),
               "scratch area fields last");
_Static_assert(sizeof(shmem_transport_ops) == 2 * 4 + 10 * 8, "transport table size");
_Static_assert(offsetof(shmem_transport_ops, size) == 0, "transport table size first");
_Static_assert(offsetof(shmem_job_state, size) == 0, "size first");
/* What a put or get to a mapped peer reads, n_pes to bases, fits the first 64 bytes: the one
 * cache line the runtime aligns the instance to. */
_Static_assert(offsetof(shmem_job_state, bases) + sizeof(void *) <= 64, "hot fields in one line");
_Static_assert(sizeof(shmem_job_team) == 16, "team entry size");

static long cell;

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int n = shmem_n_pes();
    int bad = 0;
    for (int pe = 0; pe < n; pe++) {
        /* NULL is right only for a PE the loopback test transport reaches. */
        if (shmem_ptr(&cell, pe) == NULL && (pe == me || getenv("SHMEM_TEST_LOOPBACK") == NULL)) {
            fprintf(stderr, "PE %d: shmem_ptr(&cell, %d) is NULL: PE %d not mapped\n", me, pe, pe);
            bad = 1;
        }
    }
    shmem_long_p(&cell, 100 + me, (me + 1) % n);
    shmem_barrier_all();
    long want = 100 + (me + n - 1) % n;
    if (cell != want) {
        fprintf(stderr, "PE %d: cell=%ld, want %ld\n", me, cell, want);
        bad = 1;
    }
    long got = shmem_long_g(&cell, (me + 1) % n);
    if (got != 100 + me) {
        fprintf(stderr, "PE %d: get from PE %d gave %ld, want %d\n", me, (me + 1) % n, got,
                100 + me);
        bad = 1;
    }
    shmem_finalize();
    return bad;
}
