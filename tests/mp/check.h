/* check.h: CHECK(cond) for the multi-PE C programs: on failure, prints the PE, the place and the
 * condition, then ends the whole job with status 1 so no peer waits in a barrier forever. */
#ifndef SHMEM_TEST_MP_CHECK_H
#define SHMEM_TEST_MP_CHECK_H

#include <shmem.h>
#include <stdio.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s\n", shmem_my_pe(), __FILE__, __LINE__, \
                    #cond);                                                                        \
            shmem_global_exit(1);                                                                  \
        }                                                                                          \
    } while (0)

#endif /* SHMEM_TEST_MP_CHECK_H */
