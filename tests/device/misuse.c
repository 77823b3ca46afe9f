/* misuse.c <case>: kernel-side misuse ends the job with one line naming the call, the argument
 * and its value (tests/device/CMakeLists.txt holds the expected lines).
 *   unmapped      a put to PE 1 while SHMEM_TEST_LOOPBACK=odd reaches it through the transport
 *   amo_transport an AMO on PE 0 (mapped) while a transport is in use
 *   barrier_unmapped  a kernel-side barrier_all while SHMEM_TEST_LOOPBACK=odd reaches PE 1
 *                 through the transport (no base is published for it)
 *   not_symmetric a put to a stack address
 *   bad_pe        a put to PE n_pes
 *   bad_pe_zero   a put of no bytes (NULL addresses) to PE n_pes: no bytes, still a bad PE
 *   bad_stride    an iput with a destination stride of 0
 *   bad_cmp       a typed wait with a comparison operator out of range
 *   outside       a kernel-side call outside a kernel
 *   blocks        a launch of 0 blocks (the launch returns -1)
 *   nested        a launch from inside a kernel (that launch returns -1) */
#include <shmem.h>
#include <shmem/device.h>
#include <shmem/launch.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char *which;
static int64_t *target;
static int nested_rc;

static void nothing(void *p) { (void)p; }

static void kernel(void *p) {
    (void)p;
    int64_t v = 1, local = 0;
    if (strcmp(which, "barrier_unmapped") == 0) aclshmem_barrier_all();  // every block calls it
    if (aclshmemx_block_idx() != 0) return;
    if (strcmp(which, "nested") == 0) nested_rc = shmemx_cpu_launch(nothing, NULL, 1);
    if (strcmp(which, "unmapped") == 0) aclshmem_putmem(target, &v, sizeof v, 1);
    if (strcmp(which, "amo_transport") == 0) aclshmem_int64_atomic_add(target, 1, 0);
    if (strcmp(which, "not_symmetric") == 0) aclshmem_putmem(&local, &v, sizeof v, 0);
    if (strcmp(which, "bad_pe") == 0) aclshmem_int64_p(target, v, aclshmem_n_pes());
    if (strcmp(which, "bad_pe_zero") == 0) aclshmem_getmem_nbi(NULL, NULL, 0, aclshmem_n_pes());
    if (strcmp(which, "bad_stride") == 0) aclshmem_int64_iput(target, &v, 0, 1, 2, 0);
    if (strcmp(which, "bad_cmp") == 0) aclshmem_int64_wait_until(target, 42, 0);
}

int main(int argc, char **argv) {
    which = argc > 1 ? argv[1] : "";
    shmem_init();
    target = shmem_calloc(1, sizeof *target);
    if (strcmp(which, "outside") == 0) printf("%d\n", aclshmem_my_pe());
    int rc = shmemx_cpu_launch(kernel, NULL, strcmp(which, "blocks") == 0 ? 0 : 2);
    shmem_barrier_all();
    shmem_finalize();
    return rc == 0 && nested_rc == 0 ? 0 : 1;
}
