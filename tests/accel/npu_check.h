/* npu_check.h: CHECK(cond, fmt, ...) for the npu tests: on failure, prints the PE, the place, the
 * condition and what was found, then ends the whole job (status 1), so no peer waits forever.
 * `check_pe` is the PE to name (set it once known; -1 before). A program not linked with the
 * library defines NPU_CHECK_NO_SHMEM first: a failure then exits this process only. */
#ifndef SHMEM_TEST_NPU_CHECK_H
#define SHMEM_TEST_NPU_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#ifdef NPU_CHECK_NO_SHMEM
#define NPU_CHECK_END() exit(1)
#else
#include <shmem.h>
#define NPU_CHECK_END() shmem_global_exit(1)
#endif

static int check_pe = -1;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", check_pe, __FILE__, __LINE__,      \
                    #cond);                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            NPU_CHECK_END();                                                                       \
        }                                                                                          \
    } while (0)

#endif /* SHMEM_TEST_NPU_CHECK_H */
