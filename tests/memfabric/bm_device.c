/* bm_device.c: Big Memory device (HBM) pools on the npu device (<smem/host/smem_bm.h> against
 * libmf_smem.so), run over the ACL stand-in in strict mode (device memory is never CPU
 * memory): forked ranks on this node, each checking data other ranks wrote.
 *
 *   bm_device N auto|explicit SCENARIO
 *   bm_device hostrefuse        (SHMEM_DEVICE=host) a device pool is refused, naming the fix
 *
 * SCENARIO: device (a device pool: layout, H2G/L2G/G2G/AUTO/async/batch copies into the next
 * rank's segment, G2H/G2L reads of the previous rank's writes, range errors, create/destroy
 * again within the stand-in's device memory), both (a device and a host pool: the same, plus
 * copies between the two pools), late (the last rank joins while the others copy; the others
 * import its segment and it imports theirs without their calling anything), leave (the last
 * rank leaves; copies to it fail naming it), kill (the last rank is killed; the same: with
 * explicit ranks, so that the store's host, rank 0, lives), devid
 * (one rank: Share Memory given another deviceId than Big Memory fails). Device buffers and
 * checks of device memory use ACL's aclrtMalloc/aclrtMemcpy from the library the runtime
 * loads (SHMEM_ACL_LIBRARY). Exit 0 when every check held. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <smem/host/smem_bm.h>
#include <smem/host/smem_shm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MF_TEST_MAX_RANKS 8
#include "mf_test.h"

#define MIB2 (2ULL << 20)
#define MAX_HBM (2 * MIB2)
#define LOCAL_HBM MIB2
#define MAX_DRAM (2 * MIB2)
#define LOCAL_DRAM MIB2
#define CHUNK 4096
#define WATCHDOG_S 90

static char syncdir_template[] = "/tmp/bm_device.XXXXXX";
#include "mf_ranks.h"

/* ---- ACL, as the program sees it --------------------------------------------------------- */

typedef int (*memcpy_fn)(void *, size_t, const void *, size_t, int);
typedef int (*malloc_fn)(void **, size_t, int);
typedef int (*free_fn)(void *);
static memcpy_fn acl_memcpy;
static malloc_fn acl_malloc;
static free_fn acl_free;
enum { KIND_DEFAULT = 4 };

static void acl_load(void) {
    const char *lib = getenv("SHMEM_ACL_LIBRARY");
    void *h = dlopen(lib != NULL && lib[0] != '\0' ? lib : "libascendcl.so", RTLD_NOW);
    if (h == NULL) {
        fprintf(stderr, "bm_device: %s\n", dlerror());
        exit(2);
    }
    acl_memcpy = (memcpy_fn)dlsym(h, "aclrtMemcpy");
    acl_malloc = (malloc_fn)dlsym(h, "aclrtMalloc");
    acl_free = (free_fn)dlsym(h, "aclrtFree");
    if (acl_memcpy == NULL || acl_malloc == NULL || acl_free == NULL) {
        fprintf(stderr, "bm_device: ACL lacks aclrtMemcpy/aclrtMalloc/aclrtFree\n");
        exit(2);
    }
}

/* ---- Big Memory -------------------------------------------------------------------------- */

static int copy(smem_bm_t h, const void *src, void *dest, size_t n, smem_bm_copy_type t,
                uint32_t flags) {
    smem_copy_params p = {src, dest, n};
    return smem_bm_copy(h, &p, t, flags);
}

static const char *url;
static int n_ranks, auto_ranking;

static void init(void) {
    smem_bm_config_t c;
    CHECK(smem_bm_config_init(&c) == 0);
    c.autoRanking = auto_ranking != 0;
    if (!auto_ranking) {
        c.rankId = (uint16_t)index_;
    }
    c.initTimeout = 30;
    c.controlOperationTimeout = 30;
    CHECK(smem_bm_init(url, (uint32_t)n_ranks, (uint16_t)index_, &c) == 0);
}

static smem_bm_t create_and_join(int id, int with_host) {
    smem_bm_create_option_t o;
    memset(&o, 0, sizeof o);
    o.maxHbmSize = MAX_HBM;
    o.localHBMSize = LOCAL_HBM;
    if (with_host) {
        o.maxDramSize = MAX_DRAM;
        o.localDRAMSize = LOCAL_DRAM;
    }
    o.dataOpType = SMEMB_DATA_OP_SDMA;
    o.dramShmFd = -1;
    smem_bm_t h = smem_bm_create2((uint32_t)id, &o);
    CHECK(h != NULL);
    if (h != NULL) {
        CHECK(smem_bm_join(h, 0) == 0);
    }
    return h;
}

static unsigned char *dev_seg(smem_bm_t h, unsigned rank) {
    return smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_DEVICE, (uint16_t)rank);
}

/* Offsets in a device segment (each CHUNK bytes). */
enum {
    AT_H2G = 0,
    AT_L2G = 1 * CHUNK,
    AT_G2G = 2 * CHUNK,
    AT_ASYNC = 3 * CHUNK,
    AT_BATCH = 4 * CHUNK, /* 2 elements, CHUNK/2 each */
    AT_AUTO = 5 * CHUNK,
    AT_FROM_HOST = 6 * CHUNK, /* both: from the writer's host pool */
    AT_OWN = 8 * CHUNK,       /* written by the owner */
    AT_LATE = 9 * CHUNK,      /* late: by the late rank, and into it */
};

/* Reads `n` bytes of `rank`'s device segment at `at` into `out` (G2H). */
static int read_dev(smem_bm_t h, unsigned rank, size_t at, unsigned char *out, size_t n) {
    return copy(h, dev_seg(h, rank) + at, out, n, SMEMB_COPY_G2H, 0);
}

static void pools(int with_host) {
    int n = n_ranks;
    init();
    unsigned me = smem_bm_get_rank_id(), next = (me + 1) % n, prev = (me + n - 1) % n;
    smem_bm_t h = create_and_join(0, with_host);
    if (h == NULL) {
        return;
    }
    unsigned char *base = dev_seg(h, 0), *own = dev_seg(h, me), *peer = dev_seg(h, next);
    CHECK(base != NULL && own == base + (size_t)me * MAX_HBM && peer == base + next * MAX_HBM);
    CHECK(smem_bm_get_local_mem_size_by_mem_type(h, SMEM_MEM_TYPE_DEVICE) == LOCAL_HBM);
    CHECK(smem_bm_get_local_mem_size_by_mem_type(h, SMEM_MEM_TYPE_HOST) ==
          (with_host ? LOCAL_DRAM : 0));
    CHECK((smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, 0) != NULL) == with_host);
    CHECK(smem_bm_get_rank_id_by_gva(h, peer + 5) == next);
    unsigned char *host_own = with_host ? smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, me) : NULL;
    unsigned char *host_peer =
        with_host ? smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, next) : NULL;
    static unsigned char buf[CHUNK], in[CHUNK];
    void *dbuf = NULL;
    CHECK(acl_malloc(&dbuf, CHUNK, 0) == 0);
    barrier("joined", n);

    /* Into the next rank's device segment, every way. */
    fill(buf, CHUNK, me, 1);
    CHECK(copy(h, buf, peer + AT_H2G, CHUNK, SMEMB_COPY_H2G, 0) == 0);
    fill(buf, CHUNK, me, 2);
    CHECK(acl_memcpy(dbuf, CHUNK, buf, CHUNK, KIND_DEFAULT) == 0);
    CHECK(copy(h, dbuf, peer + AT_L2G, CHUNK, SMEMB_COPY_L2G, 0) == 0);
    fill(buf, CHUNK, me, 3);
    CHECK(copy(h, buf, own + AT_OWN, CHUNK, SMEMB_COPY_H2G, 0) == 0);
    CHECK(copy(h, own + AT_OWN, peer + AT_G2G, CHUNK, SMEMB_COPY_G2G, 0) == 0);
    fill(buf, CHUNK, me, 4);
    CHECK(copy(h, buf, peer + AT_ASYNC, CHUNK, SMEMB_COPY_H2G, ASYNC_COPY_FLAG) == 0);
    CHECK(smem_bm_wait(h) == 0);
    fill(buf, CHUNK, me, 5);
    {
        void *srcs[2] = {buf, buf + CHUNK / 2};
        void *dests[2] = {peer + AT_BATCH, peer + AT_BATCH + CHUNK / 2};
        uint64_t sizes[2] = {CHUNK / 2, CHUNK / 2};
        smem_batch_copy_params b = {srcs, dests, sizes, 2};
        CHECK(smem_bm_copy_batch(h, &b, SMEMB_COPY_H2G, 0) == 0);
    }
    fill(buf, CHUNK, me, 6);
    CHECK(copy(h, buf, peer + AT_AUTO, CHUNK, SMEMB_COPY_AUTO, 0) == 0);
    if (with_host) {
        /* Host pool to device pool and back, across ranks. */
        fill(host_own, CHUNK, me, 7);
        CHECK(copy(h, host_own, peer + AT_FROM_HOST, CHUNK, SMEMB_COPY_G2G, 0) == 0);
        CHECK(copy(h, own + AT_OWN, host_peer + CHUNK, CHUNK, SMEMB_COPY_G2G, 0) == 0);
        /* Local device memory into the next rank's host segment. */
        CHECK(copy(h, dbuf, host_peer + 2 * CHUNK, CHUNK, SMEMB_COPY_L2G, 0) == 0);
    }
    /* Range errors: beyond what a rank backs, beyond the pool. */
    CHECK(copy(h, buf, peer + LOCAL_HBM, 64, SMEMB_COPY_H2G, 0) == -2000);
    CHECK(last_error_has("smem_bm_copy", "backs"));
    CHECK(copy(h, buf, base + (size_t)n * MAX_HBM, 64, SMEMB_COPY_H2G, 0) == -2000);
    barrier("written", n);

    /* What the previous rank wrote here, read back every way. */
    CHECK(read_dev(h, me, AT_H2G, in, CHUNK) == 0 && holds(in, CHUNK, prev, 1));
    CHECK(read_dev(h, me, AT_L2G, in, CHUNK) == 0 && holds(in, CHUNK, prev, 2));
    CHECK(read_dev(h, me, AT_G2G, in, CHUNK) == 0 && holds(in, CHUNK, prev, 3));
    CHECK(read_dev(h, me, AT_ASYNC, in, CHUNK) == 0 && holds(in, CHUNK, prev, 4));
    CHECK(read_dev(h, me, AT_BATCH, in, CHUNK) == 0 && holds(in, CHUNK, prev, 5));
    CHECK(read_dev(h, me, AT_AUTO, in, CHUNK) == 0 && holds(in, CHUNK, prev, 6));
    memset(in, 0, CHUNK);
    CHECK(copy(h, own + AT_H2G, dbuf, CHUNK, SMEMB_COPY_G2L, 0) == 0);
    CHECK(acl_memcpy(in, CHUNK, dbuf, CHUNK, KIND_DEFAULT) == 0 && holds(in, CHUNK, prev, 1));
    /* What this rank wrote into the next one, read from there. */
    CHECK(read_dev(h, next, AT_H2G, in, CHUNK) == 0 && holds(in, CHUNK, me, 1));
    CHECK(copy(h, peer + AT_L2G, dbuf, CHUNK, SMEMB_COPY_G2L, 0) == 0);
    CHECK(acl_memcpy(in, CHUNK, dbuf, CHUNK, KIND_DEFAULT) == 0 && holds(in, CHUNK, me, 2));
    if (with_host) {
        CHECK(read_dev(h, me, AT_FROM_HOST, in, CHUNK) == 0 && holds(in, CHUNK, prev, 7));
        CHECK(holds(host_own + CHUNK, CHUNK, prev, 3));
        CHECK(holds(host_own + 2 * CHUNK, CHUNK, prev, 2));
        /* The next rank's host segment into this rank's device memory. */
        CHECK(copy(h, host_peer + CHUNK, dbuf, CHUNK, SMEMB_COPY_G2L, 0) == 0);
        CHECK(acl_memcpy(in, CHUNK, dbuf, CHUNK, KIND_DEFAULT) == 0 && holds(in, CHUNK, me, 3));
    }
    barrier("checked", n);
    smem_bm_destroy(h);
    /* Nothing left behind: the stand-in's device memory holds a few segments only. */
    for (int i = 0; i < 4; i++) {
        smem_bm_create_option_t o;
        memset(&o, 0, sizeof o);
        o.maxHbmSize = MAX_HBM;
        o.localHBMSize = 2 * MIB2;
        o.dataOpType = SMEMB_DATA_OP_SDMA;
        o.dramShmFd = -1;
        smem_bm_t again = smem_bm_create2(1, &o);
        CHECK(again != NULL);
        smem_bm_destroy(again);
    }
    CHECK(acl_free(dbuf) == 0);
}

/* Polls copies to `rank`'s device segment until one fails naming the rank. */
static void wait_gone(smem_bm_t h, unsigned rank) {
    unsigned char buf[64] = {0};
    char name[32];
    snprintf(name, sizeof name, "rank %u", rank);
    int rc = 0;
    for (int i = 0; i < 4000 && rc == 0; i++) {
        rc = copy(h, buf, dev_seg(h, rank), sizeof buf, SMEMB_COPY_H2G, 0);
        if (rc == 0) {
            sleep_ms(5);
        }
    }
    CHECK(rc == -1);
    CHECK(last_error_has("smem_bm_copy", name));
    if (getenv("BM_DEVICE_VERBOSE") != NULL) {
        fprintf(stderr, "[%d] copy to the gone rank %u: %s\n", index_, rank,
                smem_get_last_err_msg());
    }
}

static void late(void) {
    int n = n_ranks, early = n - 1;
    unsigned char buf[CHUNK], in[CHUNK];
    if (index_ == n - 1) {
        while (count("early") < early) {
            sleep_ms(5);
        }
        init();
        smem_bm_t h = create_and_join(0, 0);
        unsigned me = smem_bm_get_rank_id();
        CHECK(me == (unsigned)(n - 1));
        barrier("joined", n);
        fill(buf, CHUNK, me, 21);
        for (int p = 0; p < early; p++) {
            CHECK(copy(h, buf, dev_seg(h, (unsigned)p) + AT_LATE, CHUNK, SMEMB_COPY_H2G, 0) == 0);
        }
        barrier("written", n);
        for (int p = 0; p < early; p++) {
            CHECK(read_dev(h, me, AT_LATE + (size_t)p * 64, in, 64) == 0 &&
                  holds(in, 64, (unsigned)p, 22));
        }
        barrier("checked", n);
        smem_bm_destroy(h);
        return;
    }
    init();
    smem_bm_t h = create_and_join(0, 0);
    unsigned me = smem_bm_get_rank_id(), next = (me + 1) % early;
    barrier("early", early);
    fill(buf, CHUNK, me, 20);
    int copies = 0;
    /* Copy among the early ranks until the late one has joined: they call nothing for it. */
    while (count("joined") < 1) {
        CHECK(copy(h, buf, dev_seg(h, next) + AT_H2G, CHUNK, SMEMB_COPY_H2G, 0) == 0);
        CHECK(read_dev(h, next, AT_H2G, in, CHUNK) == 0);
        copies++;
    }
    barrier("joined", n);
    CHECK(copies > 0);
    fill(buf, CHUNK, me, 22);
    CHECK(copy(h, buf, dev_seg(h, (unsigned)(n - 1)) + AT_LATE + (size_t)me * 64, 64,
               SMEMB_COPY_H2G, 0) == 0);
    barrier("written", n);
    CHECK(read_dev(h, me, AT_LATE, in, CHUNK) == 0 && holds(in, CHUNK, (unsigned)(n - 1), 21));
    barrier("checked", n);
    smem_bm_destroy(h);
}

static void gone(int kill_it) {
    int n = n_ranks;
    init();
    smem_bm_t h = create_and_join(0, 0);
    unsigned me = smem_bm_get_rank_id(), victim = (unsigned)(n - 1);
    barrier("joined", n);
    unsigned char buf[CHUNK], in[CHUNK];
    fill(buf, CHUNK, me, 30);
    if (me != victim) {
        CHECK(copy(h, buf, dev_seg(h, victim) + (size_t)me * CHUNK, CHUNK, SMEMB_COPY_H2G, 0) == 0);
    }
    barrier("reached", n);
    if (me == victim) {
        if (kill_it) {
            raise(SIGKILL);
        }
        CHECK(smem_bm_leave(h, 0) == 0);
        CHECK(smem_bm_leave(h, 0) == -2003);
        /* Its imports are gone: a copy to another rank's device segment fails. */
        CHECK(copy(h, buf, dev_seg(h, 0), 64, SMEMB_COPY_H2G, 0) == -1);
        CHECK(last_error_has("smem_bm_copy", "rank 0"));
        barrier("left", n);
        barrier("done", n);
        smem_bm_destroy(h);
        return;
    }
    if (!kill_it) {
        barrier("left", n);
    }
    wait_gone(h, victim);
    /* The others still reach each other. */
    unsigned others = (unsigned)n - 1, next = (me + 1) % others;
    if (others >= 2) {
        CHECK(copy(h, buf, dev_seg(h, next) + AT_H2G, CHUNK, SMEMB_COPY_H2G, 0) == 0);
        CHECK(read_dev(h, next, AT_H2G, in, CHUNK) == 0 && holds(in, CHUNK, me, 30));
    }
    barrier("done", kill_it ? n - 1 : n);
    smem_bm_destroy(h);
}

/* Share Memory given another deviceId than Big Memory in one process fails naming both. */
static void devid(void) {
    init();
    smem_shm_config_t c;
    smem_shm_config_init(&c);
    c.shmInitTimeout = 5;
    CHECK(smem_shm_init(url, 1, 0, 1, &c) != 0);
    CHECK(last_error_has("deviceId=1", "device 0"));
}

static int rank_main(const char *scenario) {
    alarm(WATCHDOG_S);
    acl_load();
    if (strcmp(scenario, "device") == 0 || strcmp(scenario, "both") == 0) {
        pools(strcmp(scenario, "both") == 0);
    } else if (strcmp(scenario, "late") == 0) {
        late();
    } else if (strcmp(scenario, "leave") == 0) {
        gone(0);
    } else if (strcmp(scenario, "kill") == 0) {
        gone(1);
    } else if (strcmp(scenario, "devid") == 0) {
        devid();
    } else {
        fprintf(stderr, "unknown scenario %s\n", scenario);
        return 2;
    }
    smem_bm_uninit(0);
    if (failures != 0) {
        fprintf(stderr, "[%d] %d check(s) failed\n", index_, failures);
        return 1;
    }
    return 0;
}

/* On the host device a device pool is refused, naming the argument and what to set. */
static int host_refuse(void) {
    char u[64];
    snprintf(u, sizeof u, "tcp://127.0.0.1:%u", free_port());
    url = u;
    n_ranks = 1;
    init();
    smem_bm_create_option_t o;
    memset(&o, 0, sizeof o);
    o.maxHbmSize = MAX_HBM;
    o.localHBMSize = LOCAL_HBM;
    o.dataOpType = SMEMB_DATA_OP_SDMA;
    o.dramShmFd = -1;
    CHECK(smem_bm_create2(0, &o) == NULL);
    CHECK(last_error_has("maxHbmSize=4194304", "SHMEM_DEVICE=npu"));
    smem_bm_uninit(0);
    if (failures == 0) {
        printf("OK: bm_device hostrefuse\n");
    }
    return failures != 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "hostrefuse") == 0) {
        return host_refuse();
    }
    if (argc != 4) {
        fprintf(stderr, "usage: %s N auto|explicit SCENARIO | %s hostrefuse\n", argv[0], argv[0]);
        return 2;
    }
    n_ranks = atoi(argv[1]);
    auto_ranking = strcmp(argv[2], "auto") == 0;
    const char *scenario = argv[3];
    if (n_ranks < 1 || n_ranks > MF_TEST_MAX_RANKS ||
        (syncdir = mkdtemp(syncdir_template)) == NULL) {
        return 2;
    }
    char u[64];
    snprintf(u, sizeof u, "tcp://127.0.0.1:%u", free_port());
    url = u;
    signal(SIGALRM, watchdog);
    alarm(WATCHDOG_S + 10);
    for (int i = 0; i < n_ranks; i++) {
        pid_t p = fork();
        if (p == 0) {
            index_ = i;
            _exit(rank_main(scenario));
        }
        children[n_children++] = p;
    }
    int bad = 0, killed_ok = strcmp(scenario, "kill") == 0;
    for (int i = 0; i < n_ranks; i++) {
        int st;
        pid_t p = wait(&st);
        if (p < 0) {
            break;
        }
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && killed_ok) {
            killed_ok = 0;
            continue;
        }
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "rank process %d: %s %d\n", (int)p, WIFEXITED(st) ? "exit" : "signal",
                    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
            bad = 1;
        }
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", syncdir);
    if (system(cmd) != 0) {
        perror(cmd);
    }
    if (!bad) {
        printf("OK: bm_device %d %s %s\n", n_ranks, argv[2], scenario);
    }
    return bad;
}
