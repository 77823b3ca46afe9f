/* long_wait.c: a kernel that waits long does not burn its core.
 *
 * PE 1's host sleeps 1.5 s, then signals PE 0; PE 0's kernel (2 blocks, both waiting on the
 * signal) measures the process's CPU time across the wait. Kernel-side waits follow the
 * library's waiting policy (spin, yield, then naps), so the wait costs a few tens of
 * milliseconds of CPU, not the 1.5 s (or its share of a busy machine) a yielding loop takes. */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <shmem/device.h>
#include <shmem/launch.h>

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define WAIT_S 1.5
#define MAX_CPU_S 0.4

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void waiter(void *p) {
    uint64_t *sig = p;
    aclshmemx_signal_wait_until_u64(sig, ACLSHMEM_CMP_EQ, 7);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), status = 0;
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    shmem_barrier_all();
    if (me == 1) {
        struct timespec nap = {(time_t)WAIT_S, (long)((WAIT_S - (time_t)WAIT_S) * 1e9)};
        nanosleep(&nap, NULL);
        shmem_uint64_atomic_set(sig, 7, 0);
    } else if (me == 0) {
        double wall = clock_s(CLOCK_MONOTONIC), cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (shmemx_cpu_launch(waiter, sig, 2) != 0) status = 1;
        wall = clock_s(CLOCK_MONOTONIC) - wall;
        cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu;
        printf("PE 0: the kernel waited %.3f s and used %.3f s of CPU\n", wall, cpu);
        if (wall < WAIT_S * 0.9) {
            printf("PE 0: FAILED: the wait ended before the signal was sent\n");
            status = 1;
        } else if (cpu > MAX_CPU_S) {
            printf("PE 0: FAILED: more than %.1f s of CPU for one wait\n", MAX_CPU_S);
            status = 1;
        }
    }
    shmem_barrier_all();
    shmem_free(sig);
    shmem_finalize();
    return status;
}
