/* check.h: CHECK(cond) for the multi-PE C programs: on failure, prints the PE, the place and the
 * condition, then ends the whole job with status 1 so no peer waits in a barrier forever. */
#ifndef SHMEM_TEST_MP_CHECK_H
#define SHMEM_TEST_MP_CHECK_H

#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s\n", shmem_my_pe(), __FILE__, __LINE__, \
                    #cond);                                                                        \
            shmem_global_exit(1);                                                                  \
        }                                                                                          \
    } while (0)

/* Whether this run puts the heap on an accelerator (SHMEM_DEVICE=npu or cuda, the tests' npu and
 * cuda twins): calls that behave differently there (memory kinds, on-stream calls) check for it. */
static inline int on_accelerator(void) {
    const char *d = getenv("SHMEM_DEVICE");
    return d != NULL && (strcmp(d, "npu") == 0 || strcmp(d, "cuda") == 0);
}

#endif /* SHMEM_TEST_MP_CHECK_H */
