/*
 * spec_constants.c: the constants of OpenSHMEM 1.5 (library constants, thread levels,
 * comparisons, signal operations, context options, allocation hints, team configuration mask,
 * work and sync array sizes, version and vendor) used from C the way programs use them, and
 * shmem_pcontrol called before, during and with the extra arguments a tool may take. The
 * static assertions fail the build; the rest exits 1 on the first failed check.
 */
#include <shmem.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

_Static_assert(SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION == 5, "OpenSHMEM 1.5");
_Static_assert(sizeof SHMEM_VENDOR_STRING <= SHMEM_MAX_NAME_LEN, "vendor string fits");
_Static_assert(SHMEM_THREAD_SINGLE < SHMEM_THREAD_FUNNELED &&
                   SHMEM_THREAD_FUNNELED < SHMEM_THREAD_SERIALIZED &&
                   SHMEM_THREAD_SERIALIZED < SHMEM_THREAD_MULTIPLE,
               "thread levels in increasing order of support");
_Static_assert(SHMEM_SYNC_SIZE >= SHMEM_BCAST_SYNC_SIZE &&
                   SHMEM_SYNC_SIZE >= SHMEM_BARRIER_SYNC_SIZE &&
                   SHMEM_SYNC_SIZE >= SHMEM_REDUCE_SYNC_SIZE &&
                   SHMEM_SYNC_SIZE >= SHMEM_COLLECT_SYNC_SIZE &&
                   SHMEM_SYNC_SIZE >= SHMEM_ALLTOALL_SYNC_SIZE &&
                   SHMEM_SYNC_SIZE >= SHMEM_ALLTOALLS_SYNC_SIZE,
               "SHMEM_SYNC_SIZE serves every collective");
_Static_assert(SHMEM_REDUCE_MIN_WRKDATA_SIZE > 0, "reduction work arrays have a minimum");
/* Option bits are distinct single bits, so programs may OR them. */
_Static_assert((SHMEM_CTX_SERIALIZED & SHMEM_CTX_PRIVATE) == 0 &&
                   (SHMEM_CTX_SERIALIZED & SHMEM_CTX_NOSTORE) == 0 &&
                   (SHMEM_CTX_PRIVATE & SHMEM_CTX_NOSTORE) == 0,
               "context options are distinct bits");
_Static_assert(SHMEM_MALLOC_ATOMICS_REMOTE != 0 && SHMEM_MALLOC_SIGNAL_REMOTE != 0 &&
                   (SHMEM_MALLOC_ATOMICS_REMOTE & SHMEM_MALLOC_SIGNAL_REMOTE) == 0,
               "allocation hints are distinct bits");
_Static_assert(SHMEM_TEAM_NUM_CONTEXTS != 0, "team configuration mask bit");

/* Arrays sized and initialised the way collective programs declare them. */
static long psync[SHMEM_SYNC_SIZE];
static long barrier_sync[SHMEM_BARRIER_SYNC_SIZE] = {SHMEM_SYNC_VALUE};
static double pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];

/* Each switch fails to compile if two of its constants are equal. */
static const char *cmp_name(int cmp) {
    switch (cmp) {
    case SHMEM_CMP_EQ: return "eq";
    case SHMEM_CMP_NE: return "ne";
    case SHMEM_CMP_GT: return "gt";
    case SHMEM_CMP_GE: return "ge";
    case SHMEM_CMP_LT: return "lt";
    case SHMEM_CMP_LE: return "le";
    default: return NULL;
    }
}

static int signal_op_known(int op) {
    switch (op) {
    case SHMEM_SIGNAL_SET:
    case SHMEM_SIGNAL_ADD: return 1;
    default: return 0;
    }
}

static int ctx_options_known(long options) {
    switch (options) {
    case SHMEM_CTX_SERIALIZED:
    case SHMEM_CTX_PRIVATE:
    case SHMEM_CTX_NOSTORE: return 1;
    default: return 0;
    }
}

int main(void) {
    shmem_pcontrol(0); /* before shmem_init: allowed */
    shmem_init();
    shmem_pcontrol(1);
    shmem_pcontrol(2);
    shmem_pcontrol(3, "tool-defined", 42, 1.5);

    int major = 0, minor = 0;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION);
    CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0 && strlen(name) < SHMEM_MAX_NAME_LEN);

    int provided = -1;
    shmem_query_thread(&provided);
    CHECK(provided >= SHMEM_THREAD_SINGLE && provided <= SHMEM_THREAD_MULTIPLE);

    int cmps[] = {SHMEM_CMP_EQ, SHMEM_CMP_NE, SHMEM_CMP_GT,
                  SHMEM_CMP_GE, SHMEM_CMP_LT, SHMEM_CMP_LE};
    for (unsigned i = 0; i < sizeof cmps / sizeof cmps[0]; i++) CHECK(cmp_name(cmps[i]) != NULL);
    CHECK(signal_op_known(SHMEM_SIGNAL_SET) && signal_op_known(SHMEM_SIGNAL_ADD));
    CHECK(ctx_options_known(SHMEM_CTX_PRIVATE));

    for (int i = 0; i < SHMEM_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    CHECK(barrier_sync[0] == SHMEM_SYNC_VALUE && psync[SHMEM_SYNC_SIZE - 1] == SHMEM_SYNC_VALUE);
    CHECK(pwrk[0] == 0.0);

    /* Every hint, alone and combined, gives a usable symmetric block. */
    long hints[] = {0, SHMEM_MALLOC_ATOMICS_REMOTE, SHMEM_MALLOC_SIGNAL_REMOTE,
                    SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE};
    for (unsigned i = 0; i < sizeof hints / sizeof hints[0]; i++) {
        long *p = shmem_malloc_with_hints(sizeof(long), hints[i]);
        CHECK(p != NULL);
        shmem_free(p);
    }
    shmem_pcontrol(0);
    shmem_finalize();
    return 0;
}
