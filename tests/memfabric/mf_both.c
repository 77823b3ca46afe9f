/* mf_both.c: Big Memory and Share Memory on one config store URL in the same processes, as a
 * program that uses both families does: every rank initialises both with the same URL (rank 0
 * asks both to serve it), creates a Big Memory pool and a Share Memory window, writes into the
 * next rank's pool segment with smem_bm_copy and into the next rank's window slot with a CPU
 * store, meets through Share Memory's barrier and checks what the previous rank wrote, in
 * both; then Share Memory's allgather of every rank's Big Memory rank. Usage: mf_both <ranks>
 * (forked ranks). A watchdog ends a job that hangs. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <smem/host/smem.h>
#include <smem/host/smem_bm.h>
#include <smem/host/smem_shm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RANKS 8
#define MF_TEST_MAX_RANKS MAX_RANKS
#include "mf_test.h"
#define WATCHDOG_S 90
#define SEGMENT (2u << 20)

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "mf_both: rank %u: %s:%d: %s failed (last error: %s)\n", me, __FILE__, \
                    __LINE__, #cond, smem_get_last_err_msg());                                     \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static uint32_t me;

static uint64_t word(uint32_t writer, uint32_t i) {
    return ((uint64_t)(writer + 1) << 32) | (i * 2654435761u);
}

static int run_rank(const char *url, uint32_t n, uint32_t rank) {
    me = rank;
    uint32_t next = (rank + 1) % n, prev = (rank + n - 1) % n;
    CHECK(smem_init(0) == 0);

    smem_bm_config_t bc;
    CHECK(smem_bm_config_init(&bc) == 0);
    bc.autoRanking = false;
    bc.rankId = (uint16_t)rank;
    CHECK(smem_bm_init(url, n, 0, &bc) == 0);
    CHECK(smem_bm_get_rank_id() == rank);

    smem_shm_config_t sc;
    CHECK(smem_shm_config_init(&sc) == 0);
    sc.shmInitTimeout = 30;
    sc.controlOperationTimeout = 30;
    /* Rank 0 asks Share Memory to serve the URL too: the store its Big Memory serves is kept. */
    CHECK(smem_shm_init(url, n, rank, 0, &sc) == 0);
    if (failures) {
        return 1;
    }

    smem_bm_create_option_t o;
    memset(&o, 0, sizeof o);
    o.maxDramSize = SEGMENT;
    o.localDRAMSize = SEGMENT;
    o.dataOpType = SMEMB_DATA_OP_SDMA;
    o.dramShmFd = -1;
    smem_bm_t bm = smem_bm_create2(0, &o);
    CHECK(bm != NULL);
    void *gva = NULL;
    /* Id 0 in both families: their objects are kept apart. */
    smem_shm_t shm = smem_shm_create(0, n, rank, SEGMENT, SMEMS_DATA_OP_MTE, 0, &gva);
    CHECK(shm != NULL && gva != NULL);
    if (failures) {
        return 1;
    }
    CHECK(smem_bm_join(bm, 0) == 0);
    CHECK(smem_shm_control_barrier(shm) == 0); /* every rank joined its pool */

    enum { WORDS = 1024 };
    uint64_t src[WORDS];
    for (uint32_t i = 0; i < WORDS; i++) {
        src[i] = word(rank, i);
    }
    smem_copy_params p = {src, smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_HOST, (uint16_t)next),
                          sizeof src};
    CHECK(p.dest != NULL && smem_bm_copy(bm, &p, SMEMB_COPY_H2G, 0) == 0);
    volatile uint64_t *slot = (volatile uint64_t *)((char *)gva + (size_t)next * SEGMENT);
    for (uint32_t i = 0; i < WORDS; i++) {
        slot[i] = ~word(rank, i);
    }
    CHECK(smem_shm_control_barrier(shm) == 0);

    const uint64_t *pool = smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_HOST, (uint16_t)rank);
    const volatile uint64_t *mine =
        (const volatile uint64_t *)((char *)gva + (size_t)rank * SEGMENT);
    uint32_t bad_pool = 0, bad_slot = 0;
    for (uint32_t i = 0; i < WORDS; i++) {
        bad_pool += pool[i] != word(prev, i);
        bad_slot += mine[i] != ~word(prev, i);
    }
    CHECK(bad_pool == 0);
    CHECK(bad_slot == 0);

    uint32_t send = smem_bm_get_rank_id(), all[MAX_RANKS];
    CHECK(smem_shm_control_allgather(shm, (const char *)&send, sizeof send, (char *)all,
                                     (uint32_t)(sizeof send * n)) == 0);
    for (uint32_t r = 0; r < n; r++) {
        CHECK(all[r] == r);
    }
    CHECK(smem_shm_control_barrier(shm) == 0); /* nobody destroys before all have read */

    smem_bm_destroy(bm);
    CHECK(smem_shm_destroy(shm, 0) == 0);
    smem_bm_uninit(0);
    smem_shm_uninit(0);
    smem_uninit();
    if (failures == 0) {
        printf("mf_both: rank %u: pool and window checked\n", rank);
    }
    return failures == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    long n = argc == 2 ? strtol(argv[1], NULL, 10) : 0;
    if (n < 1 || n > MAX_RANKS) {
        fprintf(stderr, "usage: mf_both <ranks 1..%d>\n", MAX_RANKS);
        return 2;
    }
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%u", free_port());
    signal(SIGALRM, watchdog);
    alarm(WATCHDOG_S);
    n_children = (uint32_t)n;
    for (uint32_t r = 0; r < (uint32_t)n; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            watchdog(0);
        }
        if (pid == 0) {
            alarm(0);
            _exit(run_rank(url, (uint32_t)n, r));
        }
        children[r] = pid;
    }
    int bad = 0;
    for (uint32_t r = 0; r < (uint32_t)n; r++) {
        int st = 0;
        if (waitpid(children[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "mf_both: rank %u ended with status %#x\n", r, st);
            bad = 1;
        }
        children[r] = 0;
    }
    alarm(0);
    printf("mf_both: %ld ranks: %s\n", n, bad ? "FAILED" : "OK");
    return bad;
}
