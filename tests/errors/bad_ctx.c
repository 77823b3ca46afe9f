/*
 * bad_ctx.c CASE: one bad use of a context or a signal per case, made by the last PE of the job
 * (the others wait in a barrier, so the job must be ended for them too). tests/errors/
 * CMakeLists.txt holds the message each case must produce. Routines that report the error by
 * their return value (context creation) exit with status 3 once the return value is checked.
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int is(const char *name, const char *want) { return strcmp(name, want) == 0; }

/* Creation failed as it must: non-zero, and the handle set to SHMEM_CTX_INVALID. */
static void expect_failed(int rc, shmem_ctx_t ctx) {
    if (rc == 0 || ctx != SHMEM_CTX_INVALID) {
        fprintf(stderr, "bad_ctx: creation returned %d with ctx=%p\n", rc, (void *)ctx);
        exit(2);
    }
    exit(3);
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes(), peer = (me + 1) % npes;
    long *x = shmem_calloc(64, sizeof(long));
    uint64_t *sig = shmem_calloc(8, sizeof(uint64_t));
    long src[4] = {0};
    if (me != npes - 1) {
        shmem_barrier_all();
        shmem_barrier_all();
        fprintf(stderr, "bad_ctx: PE %d passed the barrier\n", me);
        return 2;
    }

    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    if (is(c, "create_unknown_option")) expect_failed(shmem_ctx_create(1L << 12, &ctx), ctx);
    if (is(c, "team_create_unknown_option")) {
        expect_failed(shmem_team_create_ctx(SHMEM_TEAM_SHARED, SHMEM_CTX_PRIVATE | 0x40, &ctx),
                      ctx);
    }
    if (is(c, "put_invalid_ctx")) shmem_ctx_putmem(SHMEM_CTX_INVALID, x, src, 8, peer);
    if (is(c, "amo_invalid_ctx")) shmem_ctx_long_atomic_add(SHMEM_CTX_INVALID, x, 1, peer);
    if (is(c, "get_invalid_ctx")) shmem_ctx_long_g(SHMEM_CTX_INVALID, x, peer);
    /* Handles that are not contexts, whether or not they point at readable memory: a small
     * integer, an unmapped page, a pointer into a live context, a static array. */
    if (is(c, "wild_ctx_p")) shmem_ctx_long_p((shmem_ctx_t)0x1234, x, 1, peer);
    if (is(c, "wild_ctx_quiet")) shmem_ctx_quiet((shmem_ctx_t)0x1234);
    if (is(c, "wild_ctx_fence")) shmem_ctx_fence((shmem_ctx_t)0x1234);
    if (is(c, "wild_ctx_get_team")) {
        shmem_team_t team;
        shmem_ctx_get_team((shmem_ctx_t)0x1234, &team);
    }
    if (is(c, "wild_ctx_destroy")) shmem_ctx_destroy((shmem_ctx_t)0x1234);
    if (is(c, "wild_ctx_signal")) {
        shmem_ctx_putmem_signal((shmem_ctx_t)0x1234, x, src, 8, sig, 1, SHMEM_SIGNAL_SET, peer);
    }
    if (is(c, "unmapped_ctx_amo")) {
        void *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED) return 2;
        fprintf(stderr, "bad_ctx: unmapped page at %p\n", page);
        shmem_ctx_long_atomic_fetch_add((shmem_ctx_t)page, x, 1, peer);
    }
    if (is(c, "inside_ctx_put")) {
        shmem_ctx_create(0, &ctx);
        shmem_ctx_putmem((shmem_ctx_t)((char *)ctx + 8), x, src, 8, peer);
    }
    if (is(c, "static_ctx_get")) {
        static long fake[8] = {2, 0, 1, 1, 0, 0, 0, 0}; /* reads as a live context of 2 PEs */
        shmem_ctx_long_g((shmem_ctx_t)fake, x, peer);
    }
    if (is(c, "amo_destroyed_ctx")) {
        shmem_ctx_create(0, &ctx);
        shmem_ctx_destroy(ctx);
        shmem_ctx_long_atomic_add(ctx, x, 1, peer);
    }
    if (is(c, "destroy_twice")) {
        shmem_ctx_create(SHMEM_CTX_SERIALIZED, &ctx);
        shmem_ctx_destroy(ctx);
        shmem_ctx_destroy(ctx);
    }
    if (is(c, "destroy_default")) shmem_ctx_destroy(SHMEM_CTX_DEFAULT);
    if (is(c, "ctx_pe_too_big")) {
        shmem_team_create_ctx(SHMEM_TEAM_SHARED, 0, &ctx);
        shmem_ctx_int_p(ctx, (int *)x, 1, shmem_team_n_pes(SHMEM_TEAM_SHARED));
    }
    if (is(c, "ctx_pe_negative")) shmem_ctx_long_g(SHMEM_CTX_DEFAULT, x, -1);
    if (is(c, "not_a_ctx")) {
        static long fake[8];
        shmem_ctx_destroy((shmem_ctx_t)fake);
    }
    if (is(c, "get_team_null")) shmem_ctx_get_team(SHMEM_CTX_DEFAULT, NULL);
    if (is(c, "put_signal_bad_op")) shmem_putmem_signal(x, src, 8, sig, 1, 7, peer);
    if (is(c, "ctx_put_signal_bad_op")) {
        shmem_ctx_long_put_signal_nbi(SHMEM_CTX_DEFAULT, x, src, 1, sig, 1, 0, peer);
    }
    if (is(c, "put_signal_overlap"))
        shmem_long_put_signal(x, src, 4, (uint64_t *)(x + 2), 1, SHMEM_SIGNAL_SET, peer);
    if (is(c, "put_signal_stack_sig")) {
        uint64_t local = 0;
        shmem_putmem_signal(x, src, 8, &local, 1, SHMEM_SIGNAL_ADD, peer);
    }
    if (is(c, "put_signal_misaligned_sig")) {
        shmem_putmem_signal(x, src, 8, (uint64_t *)((char *)sig + 4), 1, SHMEM_SIGNAL_SET, peer);
    }
    if (is(c, "signal_wait_bad_cmp")) shmem_signal_wait_until(sig, 0, 1);
    if (is(c, "signal_fetch_stack")) {
        uint64_t local = 0;
        shmem_signal_fetch(&local);
    }
    fprintf(stderr, "bad_ctx: case '%s' did not end the job\n", c);
    return 2;
}
