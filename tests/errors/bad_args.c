/*
 * bad_args.c CASE: one bad call per case, made by the last PE of a 2-PE job (the other PE waits
 * in a barrier, so the job must be ended for it too). tests/errors/CMakeLists.txt holds the
 * message each case must produce. Cases whose routine returns an error (NULL) exit with
 * status 3 after checking it.
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is(const char *name, const char *want) { return strcmp(name, want) == 0; }

/* Routines that return NULL on bad input: the case passes only if NULL really came back. */
static void expect_null(void *p) {
    if (p != NULL) {
        fprintf(stderr, "bad_args: expected NULL, got %p\n", p);
        exit(2);
    }
    exit(3);
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    long v = 1;
    int provided;

    /* Cases about the library's state come first. */
    if (is(c, "malloc_before_init")) expect_null(shmem_malloc(64));
    if (is(c, "init_thread_bad_level")) shmem_init_thread(7, &provided);
    if (is(c, "info_null")) {
        int minor;
        shmem_info_get_version(NULL, &minor);
    }
    if (is(c, "barrier_after_finalize")) {
        shmem_init();
        shmem_finalize();
        shmem_barrier_all();
        return 0;
    }

    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes(), peer = (me + 1) % npes;
    long *x = shmem_calloc(64, sizeof(long));
    long on_stack[4] = {0};

    /* Collective routines: every PE makes the bad call. */
    if (is(c, "free_interior")) shmem_free(x + 8);
    if (is(c, "free_stack")) shmem_free(on_stack);
    if (is(c, "double_free")) {
        void *p = shmem_malloc(64);
        shmem_free(p);
        shmem_free(p);
    }
    if (is(c, "realloc_stack")) expect_null(shmem_realloc(on_stack, 64));
    if (is(c, "align_not_power_of_two")) expect_null(shmem_align(48, 64));
    if (is(c, "malloc_exhausted")) expect_null(shmem_malloc(2 << 20)); /* heap is 1M here */
    if (is(c, "calloc_overflow")) expect_null(shmem_calloc(SIZE_MAX / 8, 16));
    if (is(c, "asymmetric_malloc")) {
        void *p = shmem_malloc(me == 0 ? 64 : 128); /* differs between PEs */
        shmem_free(p);
        return 0;
    }
    if (me != npes - 1) { /* the other PEs wait for the bad call to end the job */
        shmem_barrier_all();
        shmem_barrier_all();
        fprintf(stderr, "bad_args: PE %d passed the barrier\n", me);
        return 2;
    }

    if (is(c, "put_negative_pe")) shmem_putmem(x, &v, sizeof v, -1);
    if (is(c, "p_pe_too_big")) shmem_long_p(x, v, npes);
    if (is(c, "put_libc_malloc_dest")) {
        int *heap = malloc(64);
        int src[4] = {0};
        shmem_int_put(heap, src, 4, peer);
    }
    if (is(c, "put_off_heap_end")) {
        /* SHMEM_SYMMETRIC_SIZE=1M and x is the first block, at the heap's start: 64 bytes
         * starting 16 bytes before the heap's end. */
        char *end = (char *)x + (1 << 20);
        char src[64] = {0};
        shmem_putmem(end - 16, src, sizeof src, peer);
    }
    if (is(c, "get_null_dest")) shmem_getmem(NULL, x, 8, peer);
    if (is(c, "put_null_source")) shmem_putmem_nbi(x, NULL, 8, peer);
    if (is(c, "put_size_overflow")) shmem_long_put(x, on_stack, SIZE_MAX / 4, peer);
    if (is(c, "get_negative_size")) shmem_getmem(on_stack, x, (size_t)-1, peer);
    if (is(c, "iput_stride_overflow")) shmem_long_iput(x, on_stack, PTRDIFF_MAX, 1, 3, peer);
    if (is(c, "iget_stack_source")) shmem_iget32(x, on_stack, 1, 1, 4, peer);
    if (is(c, "amo_misaligned")) shmem_long_atomic_add((long *)((char *)x + 1), 1, peer);
    if (is(c, "amo_pe_too_big")) shmem_int_atomic_fetch_add((int *)x, 1, npes);
    if (is(c, "amo_nbi_null_fetch")) shmem_long_atomic_fetch_nbi(NULL, x, peer);
    if (is(c, "amo_stack_target")) shmem_uint64_atomic_fetch_xor((uint64_t *)on_stack, 1, peer);
    if (is(c, "wait_bad_cmp")) shmem_long_wait_until(x, 99, 0);
    if (is(c, "test_not_symmetric")) shmem_int_test((int *)on_stack, SHMEM_CMP_EQ, 0);
    if (is(c, "ptr_bad_pe")) shmem_ptr(x, -5);
    if (is(c, "wait_all_null_ivars")) shmem_long_wait_until_all(NULL, 3, NULL, SHMEM_CMP_EQ, 0);
    if (is(c, "test_any_bad_cmp")) shmem_int_test_any((int *)x, 2, NULL, 0, 0);
    if (is(c, "wait_some_null_indices")) {
        shmem_long_wait_until_some(x, 2, NULL, NULL, SHMEM_CMP_EQ, 0);
    }
    if (is(c, "test_all_vector_null_values")) {
        shmem_long_test_all_vector(x, 2, NULL, SHMEM_CMP_EQ, NULL);
    }
    if (is(c, "wait_any_stack_ivars"))
        shmem_long_wait_until_any(on_stack, 4, NULL, SHMEM_CMP_EQ, 0);
    if (is(c, "lock_stack")) shmem_set_lock(on_stack);
    if (is(c, "lock_misaligned")) shmem_set_lock((long *)((char *)x + 4));
    if (is(c, "clear_lock_not_held")) shmem_clear_lock(x);
    if (is(c, "set_lock_twice")) {
        shmem_set_lock(x);
        shmem_set_lock(x);
    }
    fprintf(stderr, "bad_args: case '%s' did not end the job\n", c);
    return 2;
}
