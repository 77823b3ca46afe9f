/* kernels.c: the kernel-side API on the CPU architecture, at every PE count it is registered
 * with and with the block count given as argv[1].
 *
 * Each kernel runs on every PE with B blocks; every block checks the data it is responsible
 * for, counts its mistakes in `errors` and prints the first few; the host side fails the PE
 * when any block found one. A hang is a failure through shmemrun's and ctest's watchdogs. */
#include <dirent.h>
#include <shmem.h>
#include <shmem/device.h>
#include <shmem/launch.h>
#include <shmemx.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define K 64      /* elements per block's chunk */
#define ROUNDS 20 /* rounds of the barrier and signal kernels */

typedef struct args {
    int64_t *data;        /* n_pes * B chunks of K */
    int64_t *back;        /* the same shape: what gets read back */
    int32_t *small;       /* n_pes * B: one-element puts */
    int64_t *count;       /* AMO counter (on PE 0) */
    int64_t *owner;       /* compare_swap target (on PE 0) */
    int64_t *wins;        /* successful compare_swaps (on PE 0) */
    uint64_t *bits;       /* or/xor/and target (on every PE) */
    uint32_t *word;       /* set/fetch/swap target (on every PE) */
    int32_t *sig32;       /* CANN signal: ADD by every block of the previous PE */
    uint64_t *sig64;      /* one OpenSHMEM signal per block: SET */
    int64_t *msg;         /* n_pes * B chunks of K: signalled puts */
    int64_t *tcount;      /* team barrier counter (on the team's PE 0) */
    int32_t *zsig;        /* n_pes: signals of zero-byte put-with-signal, one per sender */
    aclshmem_team_t team; /* a team made on the host, or -1 where this PE is not in it */
    int team_start, team_stride, team_size;
} args;

/* <aclshmem.h> and shmem/device.h declare the same CANN names: the one host routine this file
 * needs from the former, as CANN declares it. */
#ifdef __cplusplus
extern "C" {
#endif
int aclshmemx_set_mte_config(uint64_t offset, uint32_t ub_size, uint32_t event_id);
#ifdef __cplusplus
}
#endif

static int errors; /* mistakes found by any block of this PE */

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (__atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED) < 10) {                           \
                fprintf(stderr, "PE %d block %d: ", aclshmem_my_pe(), aclshmemx_block_idx());      \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static int64_t value(int pe, int block, int i, int round) {
    return ((int64_t)round << 40) | ((int64_t)pe << 24) | ((int64_t)block << 12) | i;
}

static void queries(void *p) {
    (void)p;
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    CHECK(me == shmem_my_pe() && n == shmem_n_pes(), "my_pe %d n_pes %d", me, n);
    CHECK(aclshmem_team_my_pe(ACLSHMEM_TEAM_WORLD) == me, "team_my_pe(world)");
    CHECK(aclshmem_team_n_pes(ACLSHMEM_TEAM_WORLD) == n, "team_n_pes(world)");
    CHECK(aclshmem_team_translate_pe(ACLSHMEM_TEAM_WORLD, n - 1, ACLSHMEM_TEAM_WORLD) == n - 1,
          "team_translate_pe");
    CHECK(aclshmem_team_translate_pe(ACLSHMEM_TEAM_WORLD, n, ACLSHMEM_TEAM_WORLD) == -1,
          "team_translate_pe of a PE outside the team");
    CHECK(aclshmem_team_n_pes(-1) == -1 && aclshmem_team_my_pe(1000000) == -1, "invalid team");
    CHECK(aclshmemx_block_idx() >= 0 && aclshmemx_block_idx() < aclshmemx_block_num(), "idx");
    /* The scratch area main set: in the state every kernel reads (the AscendC architecture
     * stages its copies through it; the CPU one only carries it). */
    const shmem_job_state *job = shmem_arch_job("queries");
    CHECK(job->mte_ub_offset == 64 * 1024 && job->mte_ub_size == 8 * 1024 && job->mte_event_id == 3,
          "mte config %llu %u %u", (unsigned long long)job->mte_ub_offset, job->mte_ub_size,
          job->mte_event_id);
}

/* put, p and put_nbi to the next PE, a barrier, then each block checks what the previous PE's
 * same block put here and gets it back from the next PE. */
static void rma(void *p) {
    args *a = (args *)p;
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    int64_t src[K];
    for (int i = 0; i < K; i++) src[i] = value(me, b, i, 1);
    int64_t *chunk = a->data + ((size_t)me * nb + b) * K;
    if (b % 2 == 0) {
        aclshmem_put_int64_mem(chunk, src, K, next);
    } else {
        aclshmem_putmem_nbi(chunk, src, sizeof src, next);
    }
    aclshmem_int32_p(a->small + me * nb + b, (int32_t)(me * 1000 + b), next);
    aclshmem_quiet();
    aclshmem_barrier_all();

    const int64_t *got = a->data + ((size_t)prev * nb + b) * K;
    for (int i = 0; i < K; i++) {
        CHECK(got[i] == value(prev, b, i, 1), "data[%d] = %lld from PE %d", i, (long long)got[i],
              prev);
    }
    CHECK(a->small[prev * nb + b] == prev * 1000 + b, "p from PE %d: %d", prev,
          a->small[prev * nb + b]);
    int64_t *back = a->back + ((size_t)me * nb + b) * K;
    if (b % 2 == 0) {
        aclshmem_get_int64_mem(back, chunk, K, next);
    } else {
        aclshmem_getmem_nbi(back, chunk, K * sizeof(int64_t), next);
        aclshmem_quiet();
    }
    for (int i = 0; i < K; i++) {
        CHECK(back[i] == value(me, b, i, 1), "get back[%d] = %lld", i, (long long)back[i]);
    }
    CHECK(aclshmem_int32_g(a->small + me * nb + b, next) == me * 1000 + b, "g from PE %d", next);
    CHECK(aclshmem_ptr(a->data, next) != NULL, "ptr of a mapped PE");
    /* Into this block's own chunk, checked above: no other block touches it. */
    aclshmem_double_p((double *)back, 0.5, me);
    CHECK(aclshmem_double_g((double *)back, me) == 0.5, "double p/g on this PE");
}

/* Transfers of no bytes, NULL addresses, to every PE: every contiguous form (plain, nbi,
 * typed, the warp's and block's) moves nothing and ends nothing; each put-with-signal form still
 * adds 1 to the receiver's zsig[sender], so every PE then sees blocks * kZeroSignals from each
 * PE. */
enum { kZeroSignals = 6 };
static void zero_length(void *p) {
    args *a = (args *)p;
    int me = aclshmem_my_pe(), n = aclshmem_n_pes(), nb = aclshmemx_block_num();
    for (int pe = 0; pe < n; pe++) {
        aclshmem_putmem(NULL, NULL, 0, pe);
        aclshmem_getmem(NULL, NULL, 0, pe);
        aclshmem_putmem_nbi(NULL, NULL, 0, pe);
        aclshmem_getmem_nbi(NULL, NULL, 0, pe);
        aclshmem_put_int64_mem(NULL, NULL, 0, pe);
        aclshmem_get_int64_mem(NULL, NULL, 0, pe);
        aclshmem_put_float_mem_nbi(NULL, NULL, 0, pe);
        aclshmem_get_float_mem_nbi(NULL, NULL, 0, pe);
        aclshmem_int64_iput(NULL, NULL, 1, 1, 0, pe);
        aclshmemx_putmem_warp(NULL, NULL, 0, pe);
        aclshmemx_getmem_block(NULL, NULL, 0, pe);
        aclshmemx_putmem_nbi_block(NULL, NULL, 0, pe);
        int32_t *sig = a->zsig + me;
        aclshmem_putmem_signal(NULL, NULL, 0, sig, 1, ACLSHMEM_SIGNAL_ADD, pe);
        aclshmem_putmem_signal_nbi(NULL, NULL, 0, sig, 1, ACLSHMEM_SIGNAL_ADD, pe);
        aclshmemx_putmem_signal_warp(NULL, NULL, 0, sig, 1, ACLSHMEM_SIGNAL_ADD, pe);
        aclshmemx_putmem_signal_block(NULL, NULL, 0, sig, 1, ACLSHMEM_SIGNAL_ADD, pe);
        aclshmemx_putmem_signal_nbi_warp(NULL, NULL, 0, sig, 1, ACLSHMEM_SIGNAL_ADD, pe);
        aclshmemx_putmem_signal_nbi_block(NULL, NULL, 0, sig, 1, ACLSHMEM_SIGNAL_ADD, pe);
    }
    aclshmem_quiet();
    for (int from = 0; from < n; from++) {
        int32_t got =
            aclshmem_signal_wait_until(a->zsig + from, ACLSHMEM_CMP_GE, nb * kZeroSignals);
        CHECK(got == nb * kZeroSignals, "zero-byte put-with-signal from PE %d: %d of %d", from, got,
              nb * kZeroSignals);
    }
    aclshmem_barrier_all();
}

/* Every AMO, from every block of every PE at once. */
static void amo(void *p) {
    args *a = (args *)p;
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    int id = me * nb + b, total = n * nb;

    aclshmem_int64_atomic_fetch_add(a->count, 3, 0);
    aclshmem_int64_atomic_inc(a->count, 0);
    (void)aclshmem_int64_atomic_fetch_inc(a->count, 0);
    aclshmem_int64_atomic_add(a->count, -1, 0);
    if (aclshmem_int64_atomic_compare_swap(a->owner, -1, id, 0) == -1) {
        aclshmem_int64_atomic_add(a->wins, 1, 0);
    }
    for (int pe = 0; pe < n; pe++) {
        aclshmem_uint64_atomic_or(a->bits, (uint64_t)1 << id, pe);
        (void)aclshmem_uint64_atomic_fetch_xor(a->bits, (uint64_t)1 << (32 + id % 32), pe);
        (void)aclshmem_uint64_atomic_fetch_xor(a->bits, (uint64_t)1 << (32 + id % 32), pe);
    }
    if (b == 0) aclshmem_uint32_atomic_set(a->word, (uint32_t)me, (me + 1) % n);
    aclshmem_barrier_all();

    CHECK(aclshmem_int64_atomic_fetch(a->count, 0) == 4LL * total, "count %lld, want %lld",
          (long long)aclshmem_int64_atomic_fetch(a->count, 0), 4LL * total);
    CHECK(aclshmem_int64_atomic_fetch(a->wins, 0) == 1, "compare_swap winners %lld",
          (long long)aclshmem_int64_atomic_fetch(a->wins, 0));
    int64_t owner = aclshmem_int64_atomic_fetch(a->owner, 0);
    CHECK(owner >= 0 && owner < total, "owner %lld", (long long)owner);
    uint64_t want = total == 64 ? ~(uint64_t)0 : (((uint64_t)1 << total) - 1);
    CHECK(*a->bits == want, "bits %#llx, want %#llx", (unsigned long long)*a->bits,
          (unsigned long long)want);
    CHECK(*a->word == (uint32_t)((me + n - 1) % n), "set: word %u", *a->word);
    aclshmem_barrier_all();
    if (b == 0) {
        uint32_t old = aclshmem_uint32_atomic_swap(a->word, 7u, me);
        CHECK(old == (uint32_t)((me + n - 1) % n), "swap returned %u", old);
        CHECK(aclshmem_uint32_atomic_fetch_and(a->word, 3u, me) == 7u, "fetch_and");
        CHECK(*a->word == 3u, "and: word %u", *a->word);
    }
}

/* Signalled puts: each round every block puts its chunk to the next PE with an int32 ADD on
 * that PE's sig32 and a uint64 SET on the block's own sig64 word; the receiving block waits on
 * both and checks the chunk. A barrier between rounds keeps a chunk from being overwritten
 * before it is read. */
static void signals(void *p) {
    args *a = (args *)p;
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    for (int r = 1; r <= ROUNDS; r++) {
        int64_t src[K];
        for (int i = 0; i < K; i++) src[i] = value(me, b, i, r);
        int64_t *dst = a->msg + (size_t)b * K;
        if (r % 2) {
            aclshmem_putmem_signal(dst, src, sizeof src, a->sig32, 1, ACLSHMEM_SIGNAL_ADD, next);
        } else {
            aclshmem_putmem_signal_nbi(dst, src, sizeof src, a->sig32, 1, ACLSHMEM_SIGNAL_ADD,
                                       next);
        }
        aclshmemx_signal_op_u64(a->sig64 + b, (uint64_t)r, ACLSHMEM_SIGNAL_SET, next);
        int32_t s = aclshmem_signal_wait_until(a->sig32, ACLSHMEM_CMP_GE, r * nb);
        CHECK(s >= r * nb, "sig32 %d", s);
        uint64_t s64 = aclshmemx_signal_wait_until_u64(a->sig64 + b, ACLSHMEM_CMP_EQ, (uint64_t)r);
        CHECK(s64 == (uint64_t)r, "sig64 %llu", (unsigned long long)s64);
        for (int i = 0; i < K; i++) {
            CHECK(a->msg[(size_t)b * K + i] == value(prev, b, i, r), "round %d msg[%d]", r, i);
        }
        aclshmem_sync_all();
    }
    CHECK(aclshmemx_signal_fetch_u64(a->sig64 + b) == ROUNDS, "signal_fetch");
}

/* NVSHMEM's _warp and _block forms: on the CPU a group is the calling block, so each is the
 * thread form, and the same data must arrive. Runs after `signals` (sig32 at ROUNDS * nb,
 * sig64[b] at ROUNDS on every PE). */
static void scoped(void *p) {
    args *a = (args *)p;
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    int64_t src[K];
    for (int i = 0; i < K; i++) src[i] = value(me, b, i, 2);
    int64_t *chunk = a->data + ((size_t)me * nb + b) * K;
    switch (b % 4) {
    case 0: aclshmemx_putmem_block(chunk, src, sizeof src, next); break;
    case 1: aclshmemx_put_int64_mem_warp(chunk, src, K, next); break;
    case 2: aclshmemx_putmem_nbi_warp(chunk, src, sizeof src, next); break;
    default: aclshmemx_put_int64_mem_nbi_block(chunk, src, K, next); break;
    }
    aclshmem_quiet();
    aclshmem_barrier_all();
    const int64_t *got = a->data + ((size_t)prev * nb + b) * K;
    for (int i = 0; i < K; i++) {
        CHECK(got[i] == value(prev, b, i, 2), "scoped put: data[%d] = %lld from PE %d", i,
              (long long)got[i], prev);
    }
    int64_t *back = a->back + ((size_t)me * nb + b) * K;
    switch (b % 4) {
    case 0: aclshmemx_getmem_block(back, chunk, sizeof src, next); break;
    case 1: aclshmemx_get_int64_mem_warp(back, chunk, K, next); break;
    case 2: aclshmemx_getmem_nbi_warp(back, chunk, sizeof src, next); break;
    default: aclshmemx_get_int64_mem_nbi_block(back, chunk, K, next); break;
    }
    aclshmem_quiet();
    for (int i = 0; i < K; i++) {
        CHECK(back[i] == value(me, b, i, 2), "scoped get: back[%d] = %lld", i, (long long)back[i]);
    }

    /* Signalled puts: an int32 ADD by every block, then a uint64 SET on the block's own word. */
    int64_t *dst = a->msg + (size_t)b * K;
    int r = ROUNDS + 1;
    for (int i = 0; i < K; i++) src[i] = value(me, b, i, r);
    if (b % 2 == 0) {
        aclshmemx_putmem_signal_block(dst, src, sizeof src, a->sig32, 1, ACLSHMEM_SIGNAL_ADD, next);
    } else {
        aclshmemx_putmem_signal_nbi_warp(dst, src, sizeof src, a->sig32, 1, ACLSHMEM_SIGNAL_ADD,
                                         next);
    }
    int32_t s = aclshmem_signal_wait_until(a->sig32, ACLSHMEM_CMP_GE, r * nb);
    CHECK(s >= r * nb, "scoped sig32 %d", s);
    for (int i = 0; i < K; i++) {
        CHECK(dst[i] == value(prev, b, i, r), "scoped signal: msg[%d] = %lld", i,
              (long long)dst[i]);
    }
    aclshmem_sync_all();
    r = ROUNDS + 2;
    for (int i = 0; i < K; i++) src[i] = value(me, b, i, r);
    if (b % 2 == 0) {
        aclshmemx_putmem_signal_u64_warp(dst, src, sizeof src, a->sig64 + b, (uint64_t)r,
                                         ACLSHMEM_SIGNAL_SET, next);
    } else {
        aclshmemx_putmem_signal_u64_block(dst, src, sizeof src, a->sig64 + b, (uint64_t)r,
                                          ACLSHMEM_SIGNAL_SET, next);
    }
    uint64_t s64 = aclshmemx_signal_wait_until_u64(a->sig64 + b, ACLSHMEM_CMP_EQ, (uint64_t)r);
    CHECK(s64 == (uint64_t)r, "scoped sig64 %llu", (unsigned long long)s64);
    for (int i = 0; i < K; i++) {
        CHECK(dst[i] == value(prev, b, i, r), "scoped signal u64: msg[%d] = %lld", i,
              (long long)dst[i]);
    }
    aclshmem_sync_all();
}

/* Barriers: each round every block adds to PE 0's counter; after barrier_all every block must
 * see all of the round's additions, and none of the next round's before the second barrier. */
static void barriers(void *p) {
    args *a = (args *)p;
    int n = aclshmem_n_pes(), nb = aclshmemx_block_num();
    for (int r = 1; r <= ROUNDS; r++) {
        aclshmem_int64_atomic_add(a->wins, 1, 0);
        aclshmem_barrier_all();
        int64_t c = aclshmem_int64_atomic_fetch(a->wins, 0);
        CHECK(c == (int64_t)r * n * nb, "round %d: counter %lld, want %lld", r, (long long)c,
              (long long)r * n * nb);
        aclshmem_sync_all();
    }
}

/* Strided and (C++) 2-D copies to the next PE, typed waits and tests: block b puts column b
 * of a K x nb matrix (row-major, stride nb) into the next PE's, then raises its flag there; the
 * receiving block waits on its flag and checks its column, then gets it back with iget. */
static void strided(void *p) {
    args *a = (args *)p;
    int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    int b = aclshmemx_block_idx(), nb = aclshmemx_block_num();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    int64_t col[K];
    for (int i = 0; i < K; i++) col[i] = value(me, b, i, 2);
    CHECK(aclshmem_int32_test(a->small + b, ACLSHMEM_CMP_LT, 0) == 0, "test: flags are 0 or 1");
    aclshmem_int64_iput(a->msg + b, col, nb, 1, K, next);
    aclshmem_fence();
    aclshmem_int32_atomic_set(a->small + b, 1, next);
    aclshmem_int32_wait_until(a->small + b, ACLSHMEM_CMP_EQ, 1);
    aclshmem_int32_wait(a->small + b, 0);
    CHECK(aclshmem_int32_test(a->small + b, ACLSHMEM_CMP_GT, 0) == 1, "test after");
    for (int i = 0; i < K; i++) {
        CHECK(a->msg[(size_t)i * nb + b] == value(prev, b, i, 2), "iput row %d", i);
    }
    /* The next PE's column b is this block's own iput, complete when it returned. */
    int64_t back[2 * K];
    aclshmem_int64_iget(back, a->msg + b, 2, nb, K, next);
    for (int i = 0; i < K; i++) CHECK(back[2 * i] == value(me, b, i, 2), "iget %d", i);
#ifdef __cplusplus
    /* Rows r of block b's 4 x 8 tile: columns 8b .. 8b + 7 of a 4 x 8nb matrix on the next PE. */
    int64_t tile[4 * 8];
    for (int i = 0; i < 4 * 8; i++) tile[i] = value(me, b, i, 3);
    non_contiguous_copy_param cp = {4, 8, 8, (uint32_t)(8 * nb)};
    aclshmem_barrier_all();
    aclshmem_put_int64_mem(a->back + 8 * b, tile, cp, next);
    aclshmem_barrier_all();
    for (int r = 0; r < 4; r++) {
        for (int c = 0; c < 8; c++) {
            CHECK(a->back[(size_t)r * 8 * nb + 8 * b + c] == value(prev, b, r * 8 + c, 3),
                  "2-D put row %d col %d", r, c);
        }
    }
    int64_t got[4 * 8];
    non_contiguous_copy_param gp = {4, 8, (uint32_t)(8 * nb), 8};
    aclshmem_get_int64_mem_nbi(got, a->back + 8 * b, gp, next);
    aclshmem_quiet();
    for (int i = 0; i < 4 * 8; i++) CHECK(got[i] == value(me, b, i, 3), "2-D get %d", i);
#endif
}

/* A team barrier: each round every block of every member adds to the counter on the team's
 * PE 0; after aclshmem_barrier(team) every block must see the round's additions. */
static void team_barriers(void *p) {
    args *a = (args *)p;
    int me = aclshmem_my_pe(), nb = aclshmemx_block_num();
    int rank = (me - a->team_start) / (a->team_stride ? a->team_stride : 1);
    CHECK(aclshmem_team_my_pe(a->team) == rank, "team_my_pe %d, want %d",
          aclshmem_team_my_pe(a->team), rank);
    CHECK(aclshmem_team_n_pes(a->team) == a->team_size, "team_n_pes");
    CHECK(aclshmem_team_translate_pe(a->team, rank, ACLSHMEM_TEAM_WORLD) == me, "translate");
    CHECK(aclshmem_team_translate_pe(ACLSHMEM_TEAM_WORLD, me, a->team) == rank, "translate back");
    for (int r = 1; r <= ROUNDS; r++) {
        aclshmem_int64_atomic_add(a->tcount, 1, a->team_start);
        if (r % 2) {
            aclshmem_barrier(a->team);
        } else {
            aclshmemx_barrier_vec(a->team);
        }
        int64_t c = aclshmem_int64_atomic_fetch(a->tcount, a->team_start);
        CHECK(c == (int64_t)r * a->team_size * nb, "team round %d: counter %lld, want %lld", r,
              (long long)c, (long long)r * a->team_size * nb);
        aclshmem_sync(a->team);
    }
}

/* Splits the world into PEs start, start + 2, ... and runs team_barriers on them. A second
 * call after the first team is destroyed reuses its slot. */
static void run_team(args *a, int start, int blocks);

/* Runs kernel `k` on this PE and fails the PE on a mistake; no barrier after it. */
static void launch_here(const char *name, shmemx_cpu_kernel_t k, args *a, int blocks) {
    if (shmemx_cpu_launch(k, a, blocks) != 0) {
        fprintf(stderr, "PE %d: %s: launch failed\n", shmem_my_pe(), name);
        shmem_global_exit(1);
    }
    if (errors) {
        fprintf(stderr, "PE %d: %s: %d mistakes\n", shmem_my_pe(), name, errors);
        shmem_global_exit(1);
    }
}

/* Runs kernel `k` on every PE, then a host barrier. */
static void launch(const char *name, shmemx_cpu_kernel_t k, args *a, int blocks) {
    launch_here(name, k, a, blocks);
    shmem_barrier_all();
}

int main(int argc, char **argv) {
    int blocks = argc > 1 ? atoi(argv[1]) : 4;
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (n * blocks > 32) {
        if (me == 0) fprintf(stderr, "at most 32 blocks in all (the AMO kernel's bit masks)\n");
        shmem_global_exit(1);
    }
    size_t chunks = (size_t)n * blocks * K;
    args a = {
        .data = (int64_t *)shmem_calloc(chunks, sizeof(int64_t)),
        .back = (int64_t *)shmem_calloc(chunks, sizeof(int64_t)),
        .small = (int32_t *)shmem_calloc((size_t)n * blocks, sizeof(int32_t)),
        .count = (int64_t *)shmem_calloc(1, sizeof(int64_t)),
        .owner = (int64_t *)shmem_malloc(sizeof(int64_t)),
        .wins = (int64_t *)shmem_calloc(1, sizeof(int64_t)),
        .bits = (uint64_t *)shmem_calloc(1, sizeof(uint64_t)),
        .word = (uint32_t *)shmem_calloc(1, sizeof(uint32_t)),
        .sig32 = (int32_t *)shmem_calloc(1, sizeof(int32_t)),
        .sig64 = (uint64_t *)shmem_calloc((size_t)blocks, sizeof(uint64_t)),
        .msg = (int64_t *)shmem_calloc((size_t)blocks * K, sizeof(int64_t)),
        .tcount = (int64_t *)shmem_calloc(1, sizeof(int64_t)),
        .zsig = (int32_t *)shmem_calloc((size_t)n, sizeof(int32_t)),
        .team = -1,
        .team_start = 0,
        .team_stride = 0,
        .team_size = 0,
    };
    *a.owner = -1;
    if (aclshmemx_set_mte_config(64 * 1024, 8 * 1024, 3) != 0) {
        fprintf(stderr, "PE %d: aclshmemx_set_mte_config refused a valid area\n", me);
        shmem_global_exit(1);
    }
    shmem_barrier_all();

    launch("queries", queries, &a, blocks);
    launch("rma", rma, &a, blocks);
    launch("zero_length", zero_length, &a, blocks);
    launch("amo", amo, &a, blocks);
    *a.wins = 0;
    shmem_barrier_all();
    launch("signals", signals, &a, blocks);
    launch("scoped", scoped, &a, blocks);
    launch("barriers", barriers, &a, blocks);
    for (int i = 0; i < n * blocks; i++) a.small[i] = 0;
    shmem_barrier_all();
    launch("strided", strided, &a, blocks);
    /* Launches one after another keep the barrier's epochs in step: once more, with one block. */
    *a.wins = 0;
    shmem_barrier_all();
    launch("barriers, 1 block", barriers, &a, 1);
    /* Teams of every other PE; the third split takes a slot an earlier team left. */
    run_team(&a, 0, blocks);
    run_team(&a, 1, blocks);
    run_team(&a, 0, blocks);
    if (me == 0) printf("kernels: %d PEs x %d blocks: ok\n", n, blocks);
    shmem_finalize();
    /* shmem_finalize joins the threads that ran blocks 1 .. B-1: only main's is left. */
    int threads = 0;
    DIR *tasks = opendir("/proc/self/task");
    for (struct dirent *e; tasks != NULL && (e = readdir(tasks)) != NULL;) {
        if (e->d_name[0] != '.') threads++;
    }
    if (tasks != NULL) closedir(tasks);
    if (threads != 1) {
        fprintf(stderr, "PE %d: %d threads left after shmem_finalize, want 1\n", me, threads);
        return 1;
    }
    return 0;
}

static void run_team(args *a, int start, int blocks) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    int size = (n - start + 1) / 2;
    shmem_team_t team = SHMEM_TEAM_INVALID;
    if (size > 0) shmem_team_split_strided(SHMEM_TEAM_WORLD, start, 2, size, NULL, 0, &team);
    *a->tcount = 0;
    shmem_barrier_all();
    if (team != SHMEM_TEAM_INVALID) {
        a->team = shmemx_team_kernel_id(team);
        a->team_start = start;
        a->team_stride = 2;
        a->team_size = size;
        if (a->team <= 0) {
            fprintf(stderr, "PE %d: shmemx_team_kernel_id gave %d\n", me, a->team);
            shmem_global_exit(1);
        }
        launch_here("team barriers", team_barriers, a, blocks);
        shmem_team_destroy(team);
    } else if (shmemx_team_kernel_id(team) != -1) {
        fprintf(stderr, "PE %d: shmemx_team_kernel_id of no team is not -1\n", me);
        shmem_global_exit(1);
    }
    /* A team of a list that is no progression is not in the table kernels read: no number. */
    static const int list[3] = {0, 1, 3};
    if (start == 0 && n >= 4 && me != 2) {
        shmem_team_t l = SHMEM_TEAM_INVALID;
        if (shmemx_team_create(list, 3, NULL, 0, &l) != 0 || shmemx_team_kernel_id(l) != -1) {
            fprintf(stderr, "PE %d: a list team has kernel id %d, want -1\n", me,
                    shmemx_team_kernel_id(l));
            shmem_global_exit(1);
        }
        shmem_team_destroy(l);
    }
    shmem_barrier_all();
}
