/* mf_shm.c: memfabric_hybrid's Share Memory (smem_shm.h) against libmf_smem.so, as memfabric's
 * SHM example and tests call it, with its ranks as forked processes or as separate programs.
 *
 *   mf_shm fork <ranks>              the ranks are forked children of this process
 *   mf_shm spawn <ranks>             the ranks are this program started anew (exec) per rank
 *   mf_shm rank <url> <ranks> <rank> [one-node]
 *                                    one rank of a job whose store is at <url> (rank 0 serves
 *                                    it): what spawn runs per rank (one-node: every rank is on
 *                                    this node), and what a job across hosts or network
 *                                    namespaces runs on each; each rank stores into the slot
 *                                    of the next rank of its node
 *   mf_shm store <ranks>             forked ranks started before their store, which this
 *                                    process serves a second later (smem_create_config_store;
 *                                    startConfigStoreServer off): the ranks retry to connect
 *   mf_shm kill <ranks> <victim>     forked ranks; <victim> kills itself (SIGKILL) after the
 *                                    create (rank 0: the store's host): the others' next calls
 *                                    fail with -1 in bounded time, and their destroy works
 *   mf_shm errors                    argument errors of every function: codes and last error
 *   mf_shm npu <ranks>               forked ranks on the npu device (SHMEM_DEVICE=npu, over the
 *                                    ACL stand-in): windows in NPU memory, reached by aclrtMemcpy
 *                                    (mf_shm_npu.c), the kernel-side block's device copy
 *                                    (`kill` runs on the npu device too when SHMEM_DEVICE says so)
 *
 * Per rank: init (twice), create (collective; a second create of the id fails at once), the
 * window (a CPU store into the next rank's slot, seen by it), the rank getters and
 * topology_can_reach, the extra context read back through the kernel-side getters on the CPU
 * architecture (mf_shm_kernel.c), rank-ordered allgather, odd/even and first/second
 * subgroups, the atomic value allocator (distinct values, release then realloc), exit
 * handlers (every rank's fires with the status), destroy, uninit. A watchdog ends a job that
 * hangs; exit status 0 when every check held. */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <smem/host/smem.h>
#include <smem/host/smem_shm.h>
#include <smem/host/smemx_shm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mf_shm_kernel.h"

#define SLOT_BYTES (2u << 20)
#define WATCHDOG_S 100
#define MAX_RANKS 16
#define MF_TEST_MAX_RANKS MAX_RANKS
#include "mf_test.h"

static int failures;
static int my_rank = -1;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: FAIL %s:%d: %s (last error: '%s')\n", my_rank, __FILE__,     \
                    __LINE__, #cond, smem_get_last_err_msg());                                     \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static int last_error_has(const char *a, const char *b) {
    const char *e = smem_get_last_err_msg();
    return strstr(e, a) != NULL && (b == NULL || strstr(e, b) != NULL);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A port of 127.0.0.1 free a moment ago. */

/* Mappings and descriptors of this process that are an SHM object's slots (memfd "mf-shm-<id>"):
 * none once its objects are destroyed. */
static int slots_left(void) {
    int n = 0;
    char line[512];
    FILE *maps = fopen("/proc/self/maps", "r");
    while (maps != NULL && fgets(line, sizeof line, maps) != NULL) {
        n += strstr(line, "mf-shm-") != NULL;
    }
    if (maps != NULL) {
        fclose(maps);
    }
    DIR *fds = opendir("/proc/self/fd");
    struct dirent *e;
    while (fds != NULL && (e = readdir(fds)) != NULL) {
        char path[64], target[256];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len > 0) {
            target[len] = '\0';
            n += strstr(target, "mf-shm-") != NULL;
        }
    }
    if (fds != NULL) {
        closedir(fds);
    }
    return n;
}

/* Whether the ranks' store is served by the process that starts them (mf_shm store). */
static int external_store;
/* Whether every rank is on this node (fork, spawn, store; `rank ... one-node`). */
static int one_node = 1;

static void config(smem_shm_config_t *c) {
    smem_shm_config_init(c);
    c->shmInitTimeout = 30;
    c->controlOperationTimeout = 30;
    c->startConfigStoreServer = !external_store;
}

static volatile sig_atomic_t exit_status = -1;
static void on_exit_status(int status) { exit_status = status; }

/* The subgroup calls of memfabric's ShiftPutGet example. */
static void subgroups(smem_shm_t h, uint32_t n, uint32_t r) {
    uint32_t odd = r % 2;
    uint32_t parity_size = (n + (odd ? 0 : 1)) / 2;
    CHECK(smem_shm_subgroup_barrier(h, odd ? "odd" : "even", parity_size, r / 2) == 0);
    CHECK(smem_shm_subgroup_barrier(h, odd ? "odd" : "even", parity_size, r / 2) == 0);
    uint32_t half = n / 2;
    int lower = r < half;
    uint32_t size = lower ? half : n - half;
    uint32_t local = lower ? r : r - half;
    uint64_t mine = 1000 + r, got[MAX_RANKS];
    memset(got, 0, sizeof got);
    if (size > 0) {
        CHECK(smem_shm_subgroup_allgather(h, lower ? "first" : "second", size, local,
                                          (const char *)&mine, 8, (char *)got, 8 * size) == 0);
        for (uint32_t i = 0; i < size; i++) {
            CHECK(got[i] == 1000 + (lower ? i : half + i));
        }
    }
}

/* Values distinct across ranks; released, the lowest comes back. */
static void atomics(smem_shm_t h, uint32_t n, uint32_t r) {
    uint32_t v = UINT32_MAX, all[MAX_RANKS];
    CHECK(smem_shm_atomic_alloc_value(h, 1024, &v) == 0);
    CHECK(v < n);
    CHECK(smem_shm_control_allgather(h, (const char *)&v, 4, (char *)all, 4 * n) == 0);
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = i + 1; j < n; j++) {
            CHECK(all[i] != all[j]);
        }
    }
    CHECK(smem_shm_atomic_release_value(h, (int32_t)v) == 0);
    CHECK(smem_shm_atomic_release_value(h, (int32_t)v) == -2007);
    CHECK(last_error_has("smem_shm_atomic_release_value", "value="));
    CHECK(smem_shm_control_barrier(h) == 0);
    if (r == 0) {
        uint32_t again = UINT32_MAX;
        CHECK(smem_shm_atomic_alloc_value(h, 1024, &again) == 0);
        CHECK(again == 0);
        CHECK(smem_shm_atomic_alloc_value(h, 1, &v) == -1); /* 0 is taken: none below 1 */
        CHECK(smem_shm_atomic_release_value(h, (int32_t)again) == 0);
    }
    CHECK(smem_shm_control_barrier(h) == 0);
}

static int run_rank(const char *url, uint32_t n, uint32_t r) {
    my_rank = (int)r;
    smem_shm_config_t c;
    config(&c);
    CHECK(smem_init(0) == 0);
    CHECK(smem_shm_init(url, n, r, (uint16_t)r, &c) == 0);
    CHECK(smem_shm_init(url, n, r, (uint16_t)r, &c) == 0); /* a repeat: 0, nothing changes */
    void *gva = NULL;
    smem_shm_t h = smem_shm_create(0, n, r, SLOT_BYTES, SMEMS_DATA_OP_MTE, 0, &gva);
    CHECK(h != NULL && gva != NULL);
    if (h == NULL) {
        return 1;
    }

    void *other = NULL;
    CHECK(smem_shm_create(0, n, r, SLOT_BYTES, SMEMS_DATA_OP_MTE, 0, &other) == NULL);
    CHECK(last_error_has("smem_shm_create", "0") && other == NULL);
    CHECK(smem_shm_get_global_rank(h) == r);
    CHECK(smem_shm_get_global_rank_size(h) == n);
    /* The ranks of this node, this one's included, by rank: their slots are mapped here. */
    uint32_t local[MAX_RANKS], n_local = 0, me = 0;
    for (uint32_t p = 0; p < n; p++) {
        uint32_t reach = 0;
        CHECK(smem_shm_topology_can_reach(h, p, &reach) == 0);
        CHECK(reach == SMEMS_DATA_OP_MTE || (!one_node && reach == SMEMS_DATA_OP_RDMA));
        if (reach == SMEMS_DATA_OP_MTE) {
            me = p == r ? n_local : me;
            local[n_local++] = p;
        }
    }
    CHECK(n_local >= 1 && local[me] == r);
    printf("rank %u: %u of %u ranks on this node\n", r, n_local, n);

    /* The extra context, read back through the kernel-side getters. */
    char ctx[32];
    snprintf(ctx, sizeof ctx, "1234567890123456-%u", r);
    struct mf_shm_kernel_view k;
    mf_shm_kernel_read(0, &k);
    CHECK(k.rank == r && k.rank_size == n && k.symmetric_size == SLOT_BYTES);
    CHECK(k.context == NULL && k.context_size == 0 && k.qp_info == NULL);
    CHECK(smem_shm_set_extra_context(h, ctx, (uint32_t)strlen(ctx) + 1) == 0);
    mf_shm_kernel_read(0, &k);
    CHECK(k.context_size == strlen(ctx) + 1 && k.context != NULL &&
          strcmp((const char *)k.context, ctx) == 0);
    CHECK(mf_shm_kernel_rank_default() == n);
    mf_shm_kernel_read(1, &k);
    CHECK(k.rank == UINT32_MAX && k.rank_size == UINT32_MAX && k.context == NULL);
    mf_shm_kernel_read(64, &k);
    CHECK(k.rank == UINT32_MAX && k.symmetric_size == 0);

    /* The window: a CPU store into the slot of the next rank of this node (the host form of an
     * MTE kernel); on one node, the next rank. */
    CHECK(slots_left() >= (int)n_local); /* every slot of this node is mapped here */
    uint32_t next = local[(me + 1) % n_local], prev = local[(me + n_local - 1) % n_local];
    char *base = (char *)gva;
    volatile uint64_t *into = (volatile uint64_t *)(base + (size_t)next * SLOT_BYTES);
    into[0] = 0xabc000u + r;
    memset(base + (size_t)next * SLOT_BYTES + 4096, (int)(r + 1), 4096);
    into[SLOT_BYTES / 8 - 1] = 0x5eed0000u + r; /* the slot's last word */
    CHECK(smem_shm_control_barrier(h) == 0);
    volatile uint64_t *mine = (volatile uint64_t *)(base + (size_t)r * SLOT_BYTES);
    CHECK(mine[0] == 0xabc000u + prev);
    CHECK(mine[SLOT_BYTES / 8 - 1] == 0x5eed0000u + prev);
    CHECK((unsigned char)base[(size_t)r * SLOT_BYTES + 4096 + 4095] == prev + 1);

    /* Rank-ordered allgather; a receive size other than sendSize * rankSize is refused. */
    uint64_t send = 7 * r + 1, recv[MAX_RANKS];
    CHECK(smem_shm_control_allgather(h, (const char *)&send, 8, (char *)recv, 8 * n) == 0);
    for (uint32_t i = 0; i < n; i++) {
        CHECK(recv[i] == 7 * i + 1);
    }
    CHECK(smem_shm_control_allgather(h, (const char *)&send, 8, (char *)recv, 8 * n + 1) == -2000);
    CHECK(last_error_has("smem_shm_control_allgather", "recvSize="));

    subgroups(h, n, r);
    atomics(h, n, r);

    /* Exit handlers: one per object; every rank's fires with the status, none exits. */
    CHECK(smem_shm_register_exit(h, on_exit_status) == 0);
    CHECK(smem_shm_register_exit(h, on_exit_status) == -1);
    CHECK(last_error_has("smem_shm_register_exit", "registered already"));
    CHECK(smem_shm_control_barrier(h) == 0);
    if (r == 0) {
        smem_shm_global_exit(h, 42);
    }
    double until = now_s() + 20;
    while (exit_status == -1 && now_s() < until) {
        usleep(10000);
    }
    CHECK(exit_status == 42);
    CHECK(smem_shm_control_barrier(h) == 0);

    /* The last rank destroys first: the others' next collective fails, naming it. */
    if (r != n - 1) {
        char want[32];
        snprintf(want, sizeof want, "rank %u", n - 1);
        CHECK(smem_shm_control_barrier(h) == -1);
        CHECK(last_error_has("smem_shm_control_barrier", want));
        CHECK(smem_shm_subgroup_barrier(h, "after", n - 1, r) == -1);
    }
    CHECK(smem_shm_destroy(h, 0) == 0);
    CHECK(smem_shm_destroy(h, 0) == -2007);
    CHECK(last_error_has("smem_shm_destroy", "handle="));
    CHECK(smem_shm_control_barrier(h) == -2000);
    CHECK(slots_left() == 0);
    smem_shm_uninit(0);
    smem_uninit();
    if (failures == 0) {
        printf("rank %u of %u: OK\n", r, n);
    }
    return failures == 0 ? 0 : 1;
}

/* One rank on the npu device: the window is NPU memory that this process reaches by
 * aclrtMemcpy only (under ACL_STANDIN_STRICT=1 a CPU access by the library would crash), the
 * kernel-side block a device copy. Then creates and destroys, an uninit and a new init: with
 * ACL_STANDIN_HBM_BYTES holding the block and one slot, a slot or block left behind fails. */
static int run_npu_rank(const char *url, uint32_t n, uint32_t r) {
    my_rank = (int)r;
    smem_shm_config_t c;
    config(&c);
    CHECK(smem_shm_init(url, n, r, (uint16_t)(r % 2), &c) == 0);
    const void *block = smemx_shm_meta_block();
    void *gva = NULL;
    smem_shm_t h = smem_shm_create(0, n, r, SLOT_BYTES, SMEMS_DATA_OP_MTE, 0, &gva);
    CHECK(h != NULL && gva != NULL);
    if (h == NULL) {
        return 1;
    }
    CHECK(smemx_shm_meta_block() == block);
    for (uint32_t p = 0; p < n; p++) {
        uint32_t reach = 0;
        CHECK(smem_shm_topology_can_reach(h, p, &reach) == 0 && reach == SMEMS_DATA_OP_MTE);
    }

    /* What a kernel reads, from the device copy. */
    struct mf_shm_kernel_view k;
    CHECK(mf_npu_kernel_read(block, 0, &k) == 0);
    CHECK(k.rank == r && k.rank_size == n && k.symmetric_size == SLOT_BYTES);
    CHECK(k.context == NULL && k.context_size == 0 && k.qp_info == NULL);
    char ctx[32], back[32];
    snprintf(ctx, sizeof ctx, "npu-context-%u", r);
    CHECK(smem_shm_set_extra_context(h, ctx, (uint32_t)strlen(ctx) + 1) == 0);
    CHECK(mf_npu_kernel_read(block, 0, &k) == 0);
    CHECK(k.context_size == strlen(ctx) + 1 && k.context != NULL);
    CHECK(k.context != NULL && mf_npu_read(back, k.context, k.context_size) == 0 &&
          strcmp(back, ctx) == 0);
    CHECK(mf_npu_kernel_read(block, 1, &k) == 0 && k.rank == UINT32_MAX);

    /* The window: this rank copies into the next rank's slot at gva + next * size (the host
     * form of an MTE kernel's store), the next rank reads its own slot. */
    uint32_t next = (r + 1) % n, prev = (r + n - 1) % n;
    char *base = (char *)gva;
    uint64_t first = 0xabc000u + r, last = 0x5eed0000u + r;
    unsigned char page[4096];
    memset(page, (int)(r + 1), sizeof page);
    char *into = base + (size_t)next * SLOT_BYTES;
    CHECK(mf_npu_write(into, &first, 8) == 0);
    CHECK(mf_npu_write(into + 4096, page, sizeof page) == 0);
    CHECK(mf_npu_write(into + SLOT_BYTES - 8, &last, 8) == 0);
    CHECK(smem_shm_control_barrier(h) == 0);
    char *mine = base + (size_t)r * SLOT_BYTES;
    uint64_t got = 0;
    CHECK(mf_npu_read(&got, mine, 8) == 0 && got == 0xabc000u + prev);
    CHECK(mf_npu_read(&got, mine + SLOT_BYTES - 8, 8) == 0 && got == 0x5eed0000u + prev);
    memset(page, 0, sizeof page);
    CHECK(mf_npu_read(page, mine + 4096, sizeof page) == 0 && page[0] == prev + 1 &&
          page[4095] == prev + 1);
    /* Every slot reads the same here as in its owner (rank 0's, as every rank sees it). */
    CHECK(mf_npu_read(&got, base, 8) == 0 && got == 0xabc000u + (n - 1));

    uint64_t send = 7 * r + 1, recv[MAX_RANKS];
    CHECK(smem_shm_control_allgather(h, (const char *)&send, 8, (char *)recv, 8 * n) == 0);
    for (uint32_t i = 0; i < n; i++) {
        CHECK(recv[i] == 7 * i + 1);
    }
    CHECK(smem_shm_control_barrier(h) == 0);
    CHECK(smem_shm_destroy(h, 0) == 0);
    CHECK(mf_npu_kernel_read(block, 0, &k) == 0 && k.rank == UINT32_MAX && k.context == NULL);

    /* Nothing left behind: one object after another, then a new init. */
    for (uint32_t id = 1; id <= 3; id++) {
        h = smem_shm_create(id, n, r, SLOT_BYTES, SMEMS_DATA_OP_MTE, 0, &gva);
        CHECK(h != NULL);
        if (h == NULL) {
            return 1;
        }
        CHECK(smem_shm_control_barrier(h) == 0);
        CHECK(smem_shm_destroy(h, 0) == 0);
    }
    smem_shm_uninit(0);
    CHECK(smem_shm_init(url, n, r, (uint16_t)(r % 2), &c) == 0);
    h = smem_shm_create(4, n, r, SLOT_BYTES, SMEMS_DATA_OP_MTE, 0, &gva);
    CHECK(h != NULL);
    if (h != NULL) {
        CHECK(mf_npu_kernel_read(smemx_shm_meta_block(), 4, &k) == 0 && k.rank == r);
        CHECK(smem_shm_control_barrier(h) == 0);
        CHECK(smem_shm_destroy(h, 0) == 0);
    }
    smem_shm_uninit(0);
    if (failures == 0) {
        printf("rank %u of %u on the npu device: OK\n", r, n);
    }
    return failures == 0 ? 0 : 1;
}

/* A member (or the store's host) killed: the others' calls fail with -1, nothing hangs. */
static int run_kill(const char *url, uint32_t n, uint32_t r, uint32_t victim) {
    my_rank = (int)r;
    smem_shm_config_t c;
    config(&c);
    CHECK(smem_shm_init(url, n, r, 0, &c) == 0);
    void *gva = NULL;
    smem_shm_t h = smem_shm_create(3, n, r, SLOT_BYTES, SMEMS_DATA_OP_MTE, 0, &gva);
    CHECK(h != NULL);
    if (h == NULL) {
        return 1;
    }
    CHECK(smem_shm_control_barrier(h) == 0);
    if (r == victim) {
        /* The others finish reading the barrier first (rank 0 hosts the store they read). */
        usleep(500000);
        kill(getpid(), SIGKILL);
    }
    usleep(800000);
    double t0 = now_s();
    int rc = smem_shm_control_barrier(h);
    CHECK(rc == -1);
    CHECK(now_s() - t0 < 25);
    char want[32];
    snprintf(want, sizeof want, "rank %u", victim);
    if (victim != 0) {
        CHECK(last_error_has("smem_shm_control_barrier", want));
    } else {
        CHECK(last_error_has("smem_shm_control_barrier", NULL));
    }
    fprintf(stderr, "rank %u: after rank %u's death: %s\n", r, victim, smem_get_last_err_msg());
    uint64_t v = r, all[MAX_RANKS];
    CHECK(smem_shm_control_allgather(h, (const char *)&v, 8, (char *)all, 8 * n) == -1);
    CHECK(smem_shm_destroy(h, 0) == 0);
    CHECK(slots_left() == 0); /* the killed rank's slot too */
    smem_shm_uninit(0);
    CHECK(now_s() - t0 < 60);
    if (failures == 0) {
        printf("rank %u of %u: OK after rank %u was killed\n", r, n, victim);
    }
    return failures == 0 ? 0 : 1;
}

/* Argument errors: memfabric's codes, and a last error naming the call, argument and value. */
static int run_errors(void) {
    my_rank = 0;
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%u", free_port());
    smem_shm_config_t c;
    config(&c);
    void *gva = NULL;
    uint32_t v = 0;
    char buf[16];
    /* Before init: create is NULL, the others refuse a handle of no object. */
    CHECK(smem_shm_create(0, 1, 0, SLOT_BYTES, SMEMS_DATA_OP_MTE, 0, &gva) == NULL);
    CHECK(last_error_has("smem_shm_create", "not initialised"));
    CHECK(smem_shm_init(NULL, 1, 0, 0, &c) == -2000);
    CHECK(smem_shm_init(url, 0, 0, 0, &c) == -2000 &&
          last_error_has("smem_shm_init", "worldSize=0"));
    CHECK(smem_shm_init(url, 1025, 0, 0, &c) == -2000);
    CHECK(smem_shm_init(url, 2, 2, 0, &c) == -2000 && last_error_has("smem_shm_init", "rankId=2"));
    CHECK(smem_shm_init(url, 1, 0, 0, NULL) == -2000 &&
          last_error_has("smem_shm_init", "config=NULL"));
    CHECK(smem_shm_init("tcp://0.0.0.0:5000", 1, 0, 0, &c) == -2000);
    CHECK(last_error_has("smem_shm_init", "0.0.0.0"));
    CHECK(smem_shm_init(url, 1, 0, 0, &c) == 0);

    CHECK(smem_shm_create(64, 1, 0, SLOT_BYTES, SMEMS_DATA_OP_MTE, 0, &gva) == NULL);
    CHECK(last_error_has("smem_shm_create", "id=64"));
    CHECK(smem_shm_create(0, 0, 0, SLOT_BYTES, SMEMS_DATA_OP_MTE, 0, &gva) == NULL);
    CHECK(last_error_has("smem_shm_create", "rankSize=0"));
    CHECK(smem_shm_create(0, 1025, 0, SLOT_BYTES, SMEMS_DATA_OP_MTE, 0, &gva) == NULL);
    CHECK(smem_shm_create(0, 2, 2, SLOT_BYTES, SMEMS_DATA_OP_MTE, 0, &gva) == NULL);
    CHECK(last_error_has("smem_shm_create", "rankId=2"));
    CHECK(smem_shm_create(0, 1, 0, 4096, SMEMS_DATA_OP_MTE, 0, &gva) == NULL);
    CHECK(last_error_has("smem_shm_create", "symmetricSize=4096"));
    CHECK(smem_shm_create(0, 1, 0, (64ULL << 30) + SLOT_BYTES, SMEMS_DATA_OP_MTE, 0, &gva) == NULL);
    CHECK(smem_shm_create(0, 1, 0, SLOT_BYTES, (smem_shm_data_op_type)8, 0, &gva) == NULL);
    CHECK(last_error_has("smem_shm_create", "dataOpType=8"));
    CHECK(smem_shm_create(0, 1, 0, SLOT_BYTES, SMEMS_DATA_OP_MTE, 0, NULL) == NULL);
    CHECK(last_error_has("smem_shm_create", "gva=NULL"));

    smem_shm_t h = smem_shm_create(5, 1, 0, SLOT_BYTES, SMEMS_DATA_OP_RDMA, 0, &gva);
    CHECK(h != NULL);
    if (h == NULL) {
        return 1;
    }
    smem_shm_t bogus = (smem_shm_t)(uintptr_t)0x1234;
    CHECK(smem_shm_destroy(NULL, 0) == -2000);
    CHECK(smem_shm_destroy(bogus, 0) == -2007 &&
          last_error_has("smem_shm_destroy", "handle=0x1234"));
    CHECK(smem_shm_set_extra_context(h, NULL, 4) == -2000);
    CHECK(smem_shm_set_extra_context(h, buf, 0) == -2000 &&
          last_error_has("set_extra_context", "size=0"));
    CHECK(smem_shm_set_extra_context(h, buf, 65537) == -2000);
    CHECK(smem_shm_set_extra_context(bogus, buf, 4) == -2000);
    CHECK(smem_shm_get_global_rank(NULL) == UINT32_MAX);
    CHECK(smem_shm_get_global_rank(bogus) == UINT32_MAX);
    CHECK(smem_shm_get_global_rank_size(bogus) == UINT32_MAX);
    CHECK(smem_shm_control_barrier(NULL) == -2000);
    CHECK(smem_shm_control_allgather(h, NULL, 4, buf, 4) == -2000);
    CHECK(smem_shm_control_allgather(h, buf, 0, buf, 0) == -2000);
    CHECK(smem_shm_control_allgather(h, buf, 65537, buf, 65537) == -2000);
    CHECK(smem_shm_control_allgather(h, buf, 4, buf, 8) == -2000);
    CHECK(last_error_has("smem_shm_control_allgather", "recvSize=8"));
    CHECK(smem_shm_control_allgather(h, buf, 4, buf + 4, 4) == 0);
    CHECK(smem_shm_subgroup_barrier(h, NULL, 1, 0) == -2000);
    CHECK(smem_shm_subgroup_barrier(
              h, "0123456789012345678901234567890123456789012345678901234567890123", 1, 0) ==
          -2000);
    CHECK(last_error_has("smem_shm_subgroup_barrier", "key="));
    CHECK(smem_shm_subgroup_barrier(h, "k", 1, 1) == -2000 &&
          last_error_has("subgroup_barrier", "rankId=1"));
    CHECK(smem_shm_subgroup_barrier(h, "k", 2, 0) == -2000 &&
          last_error_has("subgroup_barrier", "rankSize=2"));
    CHECK(smem_shm_subgroup_barrier(h, "k", 1, 0) == 0);
    CHECK(smem_shm_subgroup_allgather(h, "k", 1, 0, buf, 4, buf + 4, 5) == -2000);
    CHECK(smem_shm_subgroup_allgather(h, "k", 1, 0, buf, 4, buf + 4, 4) == 0);
    uint32_t reach = 0;
    CHECK(smem_shm_topology_can_reach(h, 0, NULL) == -2000);
    CHECK(smem_shm_topology_can_reach(h, 1, &reach) == -2000 &&
          last_error_has("can_reach", "remoteRank=1"));
    CHECK(smem_shm_topology_can_reach(h, 0, &reach) == 0 && reach == SMEMS_DATA_OP_MTE);
    CHECK(smem_shm_atomic_alloc_value(h, 1025, &v) == -2000 &&
          last_error_has("alloc_value", "limit=1025"));
    CHECK(smem_shm_atomic_alloc_value(h, 4, NULL) == -2000);
    CHECK(smem_shm_atomic_alloc_value(h, 0, &v) == -1);
    CHECK(smem_shm_atomic_release_value(h, 3) == -2007);
    CHECK(smem_shm_atomic_release_value(h, -1) == -2007);
    CHECK(smem_shm_register_exit(h, NULL) == -2000 && last_error_has("register_exit", "exit=NULL"));
    CHECK(smem_shm_register_exit(bogus, on_exit_status) == -2000);
    smem_shm_global_exit(bogus, 1);
    CHECK(last_error_has("smem_shm_global_exit", "handle="));
    CHECK(smem_shm_destroy(h, 0) == 0);
    smem_shm_uninit(0);
    smem_shm_uninit(0); /* not initialised: a line in the log */
    if (failures == 0) {
        printf("argument errors: OK\n");
    }
    return failures == 0 ? 0 : 1;
}

/* Waits for every child; 0 when each exited 0, or, for `victim`, was killed. */
static int reap(int victim) {
    int bad = 0;
    for (uint32_t i = 0; i < n_children; i++) {
        int st = 0;
        if (waitpid(children[i], &st, 0) < 0) {
            bad = 1;
            continue;
        }
        children[i] = 0;
        int ok = (int)i == victim ? WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL
                                  : WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (!ok) {
            fprintf(stderr, "mf_shm: rank %u ended with status %#x\n", i, st);
            bad = 1;
        }
    }
    return bad;
}

/* Whether the forked ranks run on the npu device (mf_shm npu). */
static int on_npu;

/* Runs the job with `n` ranks: forked (`spawn` 0) or started anew from `self`. */
static int job(const char *self, uint32_t n, int spawn, int victim) {
    char url[64], ranks[16], rank[16];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%u", free_port());
    snprintf(ranks, sizeof ranks, "%u", n);
    signal(SIGALRM, watchdog);
    alarm(WATCHDOG_S);
    n_children = n;
    for (uint32_t r = 0; r < n; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            watchdog(0);
        }
        if (pid == 0) {
            alarm(0);
            if (spawn) {
                snprintf(rank, sizeof rank, "%u", r);
                execl(self, self, "rank", url, ranks, rank, "one-node", (char *)NULL);
                perror("exec");
                _exit(2);
            }
            _exit(victim >= 0 ? run_kill(url, n, r, (uint32_t)victim)
                  : on_npu    ? run_npu_rank(url, n, r)
                              : run_rank(url, n, r));
        }
        children[r] = pid;
    }
    if (external_store) {
        sleep(1);
        if (smem_create_config_store(url) != 0) {
            fprintf(stderr, "mf_shm: serving the store: %s\n", smem_get_last_err_msg());
            watchdog(0);
        }
    }
    int bad = reap(victim);
    alarm(0);
    printf("mf_shm: %u ranks (%s%s%s): %s\n", n, spawn ? "separate programs" : "forked",
           victim >= 0 ? ", one killed" : "", external_store ? ", the store served apart" : "",
           bad ? "FAILED" : "OK");
    return bad;
}

static uint32_t count(const char *s) {
    long v = strtol(s, NULL, 10);
    if (v < 1 || v > MAX_RANKS) {
        fprintf(stderr, "mf_shm: a rank count of 1..%d, not '%s'\n", MAX_RANKS, s);
        exit(2);
    }
    return (uint32_t)v;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && strcmp(argv[1], "fork") == 0) {
        return job(argv[0], count(argv[2]), 0, -1);
    }
    if (argc == 3 && strcmp(argv[1], "npu") == 0) {
        on_npu = 1;
        return job(argv[0], count(argv[2]), 0, -1);
    }
    if (argc == 3 && strcmp(argv[1], "store") == 0) {
        external_store = 1;
        return job(argv[0], count(argv[2]), 0, -1);
    }
    if (argc == 3 && strcmp(argv[1], "spawn") == 0) {
        return job(argv[0], count(argv[2]), 1, -1);
    }
    if (argc == 4 && strcmp(argv[1], "kill") == 0) {
        uint32_t n = count(argv[2]);
        long victim = strtol(argv[3], NULL, 10);
        if (victim < 0 || victim >= (long)n) {
            fprintf(stderr, "mf_shm: the victim is a rank below %u\n", n);
            return 2;
        }
        return job(argv[0], n, 0, (int)victim);
    }
    if ((argc == 5 || (argc == 6 && strcmp(argv[5], "one-node") == 0)) &&
        strcmp(argv[1], "rank") == 0) {
        one_node = argc == 6;
        uint32_t n = count(argv[3]);
        long r = strtol(argv[4], NULL, 10);
        if (r < 0 || r >= (long)n) {
            fprintf(stderr, "mf_shm: a rank below %u, not '%s'\n", n, argv[4]);
            return 2;
        }
        alarm(WATCHDOG_S); /* a rank started alone: ended if its job hangs */
        return run_rank(argv[2], n, (uint32_t)r);
    }
    if (argc == 2 && strcmp(argv[1], "errors") == 0) {
        return run_errors();
    }
    fprintf(stderr,
            "usage: mf_shm fork|spawn|store <ranks> | rank <url> <ranks> <rank> [one-node] | "
            "kill <ranks> <victim> | npu <ranks> | errors\n");
    return 2;
}
