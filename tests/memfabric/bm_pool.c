/* bm_pool.c: a program written for memfabric_hybrid's Big Memory pools (<smem/host/smem_bm.h>),
 * as its examples and tests use them, against libmf_smem.so. Each rank checks data other ranks
 * wrote.
 *
 *   bm_pool fork  N auto|explicit SCENARIO [TLSDIR|- [MAX LOCAL]]   N forked ranks (as
 *                                                       memfabric's UTs)
 *   bm_pool spawn N auto|explicit SCENARIO [TLSDIR|- [MAX LOCAL]]   N separate processes
 *   bm_pool proc URL N auto|explicit INDEX SCENARIO SYNCDIR [TLSDIR|- [MAX LOCAL]]   one rank
 *   bm_pool errors                                    argument errors of every function
 *
 * SCENARIO: basic (layout, every copy type, batch, async, rank by address), late (the last
 * rank joins while the others copy), leave (the last rank leaves), kill (the last rank is
 * killed), killhost (the store's host is killed; explicit ranking), tlsrefused (2 explicit
 * ranks: rank 0 serves the store over TLS, rank 1 without TLS is refused). Ranks meet through
 * files in SYNCDIR (a directory every rank reaches); TLSDIR holds ca.pem, pe.pem, pe.key and pass
 * (store TLS on; "-": plain TCP). MAX and LOCAL are the pool's per-rank stride and what each
 * rank backs, in bytes (multiples of 2 MiB, LOCAL at least 2 MiB; default 4 MiB and 2 MiB).
 * proc takes the store URL, so ranks of several hosts or network namespaces run it.
 * Every process bounds itself (alarm); exit 0 when every check held. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <smem/host/smem_bm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mf_ranks.h"
#include "mf_test.h"

#define MIB2 (2ULL << 20)
static unsigned long long max_size = 2 * MIB2; /* per-rank stride of the host pool */
static unsigned long long local_size = MIB2;   /* what each rank backs (max >= local) */
#define CHUNK 4096
#define WATCHDOG_S 90

static unsigned long long read_mark(const char *name, int idx) {
    char path[512];
    unsigned long long v = 0;
    snprintf(path, sizeof path, "%s/%s.%d", syncdir, name, idx);
    FILE *f = fopen(path, "r");
    if (f == NULL || fscanf(f, "%llx", &v) != 1) {
        fprintf(stderr, "[%d] cannot read %s\n", index_, path);
        failures++;
    }
    if (f != NULL) {
        fclose(f);
    }
    return v;
}

static int copy(smem_bm_t h, const void *src, void *dest, size_t n, smem_bm_copy_type t,
                uint32_t flags) {
    smem_copy_params p = {src, dest, n};
    return smem_bm_copy(h, &p, t, flags);
}

/* Whether this process maps a segment's memfd at `at` (/proc/self/maps): this library maps the
 * segment of a peer of the same node at its place in the pool once a copy reached it, and makes
 * the place inaccessible again once the peer left or died. */
static int segment_mapped_at(const void *at) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        if (strtoull(line, NULL, 16) == (unsigned long long)(uintptr_t)at) {
            found = strstr(line, "memfd:smem-bm-") != NULL;
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return found;
}

/* Whether every rank runs on this node (fork and spawn; proc's ranks may be on other nodes,
 * whose segments are reached through the network, not mapped). */
static int one_node(void) { return getenv("BM_POOL_ONE_NODE") != NULL; }

/* Copies to `seg` (a peer's segment) until this process maps it there: the first copy goes
 * through the transport, the mapping follows. Returns whether it is mapped; with ranks on
 * other nodes, whether the copies succeeded. */
static int reach_mapped(smem_bm_t h, unsigned char *seg) {
    unsigned char buf[64] = {0};
    if (!one_node()) {
        return copy(h, seg, buf, sizeof buf, SMEMB_COPY_G2H, 0) == 0;
    }
    for (int i = 0; i < 100; i++) {
        if (copy(h, seg, buf, sizeof buf, SMEMB_COPY_G2H, 0) != 0) {
            return 0;
        }
        if (segment_mapped_at(seg)) {
            return 1;
        }
        sleep_ms(1);
    }
    return 0;
}

static int plain_lines;
static void logger(int level, const char *msg) {
    if (level == 2 && strstr(msg, "plain TCP") != NULL) {
        plain_lines++;
    }
}

struct run {
    const char *url;
    int n;
    int auto_ranking;
    const char *scenario;
    const char *tlsdir;
};

static void tls_path(char *out, const char *dir, const char *file) {
    snprintf(out, SMEM_TLS_PATH_SIZE, "%s/%s", dir, file);
}

static int init(const struct run *r) {
    smem_bm_config_t c;
    CHECK(smem_bm_config_init(&c) == 0);
    c.autoRanking = r->auto_ranking != 0;
    if (!r->auto_ranking) {
        c.rankId = (uint16_t)index_;
    }
    c.initTimeout = 30;
    c.controlOperationTimeout = 30;
    snprintf(c.hcomUrl, sizeof c.hcomUrl, "tcp://127.0.0.1/8:10005");
    if (r->tlsdir != NULL) {
        c.storeTlsConfig.tlsEnable = true;
        tls_path(c.storeTlsConfig.caPath, r->tlsdir, "ca.pem");
        tls_path(c.storeTlsConfig.certPath, r->tlsdir, "pe.pem");
        tls_path(c.storeTlsConfig.keyPath, r->tlsdir, "pe.key");
        tls_path(c.storeTlsConfig.keyPassPath, r->tlsdir, "pass");
    }
    int rc = smem_bm_init(r->url, (uint32_t)r->n, (uint16_t)index_, &c);
    CHECK(rc == 0);
    CHECK(smem_bm_init(r->url, (uint32_t)r->n, 0, &c) == 0); /* repeat: 0, nothing changes */
    /* Plain TCP is said once per process; not at all with TLS. */
    CHECK(plain_lines == (r->tlsdir == NULL ? 1 : 0));
    return rc;
}

static smem_bm_t create_and_join(int id) {
    smem_bm_create_option_t o;
    memset(&o, 0, sizeof o);
    o.maxDramSize = max_size;
    o.localDRAMSize = local_size;
    o.dataOpType = SMEMB_DATA_OP_SDMA; /* served by the host paths without an NPU */
    o.dramShmFd = -1;
    smem_bm_t h = smem_bm_create2((uint32_t)id, &o);
    CHECK(h != NULL);
    CHECK(smem_bm_create2((uint32_t)id, &o) == NULL); /* the id is taken */
    CHECK(last_error_has("smem_bm_create2", "id="));
    if (h != NULL) {
        CHECK(smem_bm_join(h, 0) == 0);
        CHECK(smem_bm_join(h, 0) == 0); /* already joined */
    }
    return h;
}

/* Offsets in a segment used by the basic scenario (each CHUNK bytes unless said). */
enum {
    AT_H2G = 0,
    AT_L2G = 1 * CHUNK,
    AT_AUTO = 2 * CHUNK,
    AT_H2GH = 3 * CHUNK,
    AT_BATCH = 4 * CHUNK, /* 4 elements, CHUNK apart, CHUNK/2 each */
    AT_ASYNC = 8 * CHUNK,
    AT_G2G = 9 * CHUNK,
    AT_BOUNCE = 10 * CHUNK,
    AT_REG = 11 * CHUNK, /* 3 chunks, from a registered buffer */
    AT_OWN = 16 * CHUNK, /* written by the owner directly */
    AT_SHM = 20 * CHUNK,
};

static void basic(smem_bm_t h, int n) {
    unsigned me = smem_bm_get_rank_id(), next = (me + 1) % n, prev = (me + n - 1) % n;
    unsigned char *base = smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, 0);
    unsigned char *own = smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)me);
    unsigned char *peer = smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)next);
    unsigned char *from = smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)prev);
    static unsigned char buf[4 * CHUNK], in[4 * CHUNK];
    char text[64];
    CHECK(base != NULL && own == base + (size_t)me * max_size);
    CHECK(peer == base + (size_t)next * max_size);
    CHECK(smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)n) == NULL);
    CHECK(last_error_has("smem_bm_ptr_by_mem_type", "peerRankId="));
    CHECK(smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_DEVICE, 0) == NULL);
    CHECK(smem_bm_get_local_mem_size_by_mem_type(h, SMEM_MEM_TYPE_HOST) == local_size);
    CHECK(smem_bm_get_local_mem_size_by_mem_type(h, SMEM_MEM_TYPE_DEVICE) == 0);
    for (int r = 0; r < n; r++) {
        CHECK(smem_bm_get_rank_id_by_gva(h, base + (size_t)r * max_size + 5) == (uint32_t)r);
        /* Past the local size, inside the stride: still rank r (divided by max). */
        CHECK(max_size == local_size ||
              smem_bm_get_rank_id_by_gva(h, base + (size_t)r * max_size + local_size + 8) ==
                  (uint32_t)r);
    }
    CHECK(smem_bm_get_rank_id_by_gva(h, base + (size_t)n * max_size) == UINT32_MAX);
    CHECK(smem_bm_get_rank_id_by_gva(h, buf) == UINT32_MAX);
    /* Every rank has the same base. */
    snprintf(text, sizeof text, "%llx", (unsigned long long)(uintptr_t)base);
    mark("base", text);

    /* The own segment is ordinary memory. */
    fill(own + AT_OWN, CHUNK, me, 9);
    /* With a large segment, a large area after the first 2 MiB, copied from peer to peer. */
    size_t big = local_size >= 6 * MIB2 ? (size_t)((local_size - MIB2) / 2) & ~(size_t)4095 : 0;
    if (big != 0) {
        fill(own + MIB2, big, me, 50);
    }
    int fd = memfd_create("bm-user", 0);
    CHECK(fd >= 0);
    barrier("b1", n);
    for (int i = 0; i < n; i++) {
        CHECK(read_mark("base", i) == (unsigned long long)(uintptr_t)base);
    }

    /* Local to the next rank's segment, by each copy type that writes the pool. */
    fill(buf, CHUNK, me, 1);
    CHECK(copy(h, buf, peer + AT_H2G, CHUNK, SMEMB_COPY_H2G, 0) == 0);
    fill(buf, CHUNK, me, 2);
    CHECK(copy(h, buf, peer + AT_L2G, CHUNK, SMEMB_COPY_L2G, 0) == 0);
    fill(buf, CHUNK, me, 3);
    CHECK(copy(h, buf, peer + AT_AUTO, CHUNK, SMEMB_COPY_AUTO, 0) == 0);
    fill(buf, CHUNK, me, 4);
    CHECK(copy(h, buf, peer + AT_H2GH, CHUNK, SMEMB_COPY_H2GH, 0) == 0);
    {
        void *srcs[4], *dests[4];
        uint64_t sizes[4];
        fill(buf, sizeof buf, me, 5);
        for (int i = 0; i < 4; i++) {
            srcs[i] = buf + i * CHUNK;
            dests[i] = peer + AT_BATCH + i * CHUNK;
            sizes[i] = CHUNK / 2;
        }
        smem_batch_copy_params b = {srcs, dests, sizes, 4};
        CHECK(smem_bm_copy_batch(h, &b, SMEMB_COPY_H2G, 0) == 0);
    }
    static unsigned char async_buf[CHUNK];
    fill(async_buf, CHUNK, me, 6);
    CHECK(copy(h, async_buf, peer + AT_ASYNC, CHUNK, SMEMB_COPY_H2G, ASYNC_COPY_FLAG) == 0);
    CHECK(smem_bm_wait(h) == 0);
    /* From a registered buffer (smem_bm_register_user_mem), of which the first two of three
     * chunks are registered: a chunk inside, and two chunks running past the registration. */
    unsigned char *reg = aligned_alloc(4096, 3 * CHUNK);
    CHECK(reg != NULL);
    for (int i = 0; i < 3; i++) {
        fill(reg + i * CHUNK, CHUNK, me, 11 + (unsigned)i);
    }
    CHECK(smem_bm_register_user_mem(h, (uint64_t)(uintptr_t)reg, 2 * CHUNK) == 0);
    CHECK(copy(h, reg + CHUNK, peer + AT_REG, CHUNK, SMEMB_COPY_H2G, 0) == 0);
    CHECK(copy(h, reg + CHUNK, peer + AT_REG + CHUNK, 2 * CHUNK, SMEMB_COPY_H2G, ASYNC_COPY_FLAG) ==
          0);
    CHECK(smem_bm_wait(h) == 0);
    /* Own segment to the next rank's, and the previous rank's to the next rank's. */
    CHECK(copy(h, own + AT_OWN, peer + AT_G2G, CHUNK, SMEMB_COPY_G2G, 0) == 0);
    CHECK(copy(h, from + AT_OWN, peer + AT_BOUNCE, CHUNK, SMEMB_COPY_G2G, 0) == 0);
    if (big != 0) {
        CHECK(copy(h, from + MIB2, peer + MIB2 + big, big, SMEMB_COPY_G2G, 0) == 0);
    }
    barrier("b2", n);

    /* What the previous rank wrote here, read directly. */
    CHECK(holds(own + AT_H2G, CHUNK, prev, 1));
    CHECK(holds(own + AT_L2G, CHUNK, prev, 2));
    CHECK(holds(own + AT_AUTO, CHUNK, prev, 3));
    CHECK(holds(own + AT_H2GH, CHUNK, prev, 4));
    {
        unsigned char whole[4 * CHUNK];
        fill(whole, sizeof whole, prev, 5);
        for (int i = 0; i < 4; i++) {
            CHECK(memcmp(own + AT_BATCH + i * CHUNK, whole + i * CHUNK, CHUNK / 2) == 0);
        }
    }
    CHECK(holds(own + AT_ASYNC, CHUNK, prev, 6));
    CHECK(holds(own + AT_REG, CHUNK, prev, 12));
    CHECK(holds(own + AT_REG + CHUNK, CHUNK, prev, 12));
    CHECK(holds(own + AT_REG + 2 * CHUNK, CHUNK, prev, 13));
    CHECK(holds(own + AT_G2G, CHUNK, prev, 9));
    CHECK(holds(own + AT_BOUNCE, CHUNK, (prev + n - 1) % n, 9));
    CHECK(big == 0 || holds(own + MIB2 + big, big, (prev + n - 1) % n, 50));

    /* The next rank's segment, read back by each copy type that reads the pool. */
    smem_bm_copy_type reads[] = {SMEMB_COPY_G2H, SMEMB_COPY_G2L, SMEMB_COPY_GH2H, SMEMB_COPY_AUTO};
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
        memset(in, 0, sizeof in);
        CHECK(copy(h, peer + AT_OWN, in, CHUNK, reads[i], 0) == 0);
        CHECK(holds(in, CHUNK, next, 9));
    }
    /* Into the registered buffer: inside it, past its end (asynchronous, completed by the
     * unregistration), and after its unregistration. */
    memset(reg, 0, 3 * CHUNK);
    CHECK(copy(h, peer + AT_OWN, reg, CHUNK, SMEMB_COPY_G2H, 0) == 0);
    CHECK(holds(reg, CHUNK, next, 9));
    CHECK(copy(h, peer + AT_OWN, reg + CHUNK + CHUNK / 2, CHUNK, SMEMB_COPY_G2H, ASYNC_COPY_FLAG) ==
          0);
    CHECK(smem_bm_unregister_user_mem(h, (uint64_t)(uintptr_t)reg) == 0);
    CHECK(holds(reg + CHUNK + CHUNK / 2, CHUNK, next, 9));
    memset(reg, 0, 3 * CHUNK);
    CHECK(copy(h, peer + AT_OWN, reg + 2 * CHUNK, CHUNK, SMEMB_COPY_G2H, 0) == 0);
    CHECK(holds(reg + 2 * CHUNK, CHUNK, next, 9));
    free(reg);
    /* Pool to pool, both by range: L2GH and GH2L read both sides as G2G does. */
    CHECK(copy(h, peer + AT_OWN, own + AT_SHM, CHUNK, SMEMB_COPY_L2GH, 0) == 0);
    CHECK(holds(own + AT_SHM, CHUNK, next, 9));
    CHECK(copy(h, own + AT_OWN, own + AT_SHM, CHUNK, SMEMB_COPY_GH2L, 0) == 0);
    CHECK(holds(own + AT_SHM, CHUNK, me, 9));
    {
        void *srcs[2] = {peer + AT_OWN, peer + AT_OWN + CHUNK / 2};
        void *dests[2] = {in, in + CHUNK / 2};
        uint64_t sizes[2] = {CHUNK / 2, CHUNK / 2};
        smem_batch_copy_params b = {srcs, dests, sizes, 2};
        memset(in, 0, sizeof in);
        CHECK(smem_bm_copy_batch(h, &b, SMEMB_COPY_G2H, ASYNC_COPY_FLAG) == 0);
        CHECK(smem_bm_wait(h) == 0);
        CHECK(holds(in, CHUNK, next, 9));
        /* The direction comes from element 0: a later element the other way is refused. */
        srcs[1] = in;
        dests[1] = peer + AT_SHM;
        CHECK(smem_bm_copy_batch(h, &b, SMEMB_COPY_AUTO, 0) == -2000);
        CHECK(last_error_has("smem_bm_copy_batch", "[1]"));
    }

    /* Refused: local to local, outside the pool, past a segment. */
    CHECK(copy(h, buf, in, CHUNK, SMEMB_COPY_AUTO, 0) == -2000);
    CHECK(last_error_has("smem_bm_copy", "local to local"));
    CHECK(copy(h, buf, in, CHUNK, SMEMB_COPY_H2G, 0) == -2000);
    CHECK(last_error_has("smem_bm_copy", "dest="));
    CHECK(copy(h, in, buf, CHUNK, SMEMB_COPY_G2H, 0) == -2000);
    CHECK(last_error_has("smem_bm_copy", "src="));
    CHECK(copy(h, buf, peer + max_size - 8, 16, SMEMB_COPY_H2G, 0) == -2000);
    CHECK(last_error_has("smem_bm_copy", "segment"));
    CHECK(copy(h, buf, base + (size_t)n * max_size - 8, 16, SMEMB_COPY_AUTO, 0) == -2);
    if (max_size > local_size) {
        CHECK(copy(h, buf, own + local_size, 8, SMEMB_COPY_H2G, 0) == -2000); /* not backed */
        CHECK(last_error_has("smem_bm_copy", "beyond"));
    }

    /* User memory registration. */
    CHECK(smem_bm_register_user_mem(h, (uint64_t)(uintptr_t)buf, sizeof buf) == 0);
    CHECK(smem_bm_register_user_mem(h, (uint64_t)(uintptr_t)buf, sizeof buf) == 0);
    CHECK(smem_bm_register_user_mem(h, (uint64_t)(uintptr_t)buf, 8) == -1);
    CHECK(smem_bm_unregister_user_mem(h, (uint64_t)(uintptr_t)buf) == 0);
    CHECK(smem_bm_unregister_user_mem(h, (uint64_t)(uintptr_t)in) == 0);
    if (fd >= 0) {
        close(fd);
    }
    barrier("b3", n);
}

/* A second pool backed by the user's memfd (SMEM_BM_FLAG_CREATE_WITH_SHM): the next rank
 * writes into it, this rank reads it through its own mapping of the file. */
static void with_shm(int n) {
    unsigned me = smem_bm_get_rank_id(), next = (me + 1) % n, prev = (me + n - 1) % n;
    int fd = memfd_create("bm-user-dram", MFD_CLOEXEC);
    CHECK(fd >= 0 && ftruncate(fd, local_size) == 0);
    smem_bm_create_option_t o;
    memset(&o, 0, sizeof o);
    o.maxDramSize = max_size;
    o.localDRAMSize = local_size;
    o.dataOpType = SMEMB_DATA_OP_HOST_TCP;
    o.flags = SMEM_BM_FLAG_CREATE_WITH_SHM;
    o.dramShmFd = fd;
    smem_bm_t h = smem_bm_create2(7, &o);
    CHECK(h != NULL);
    if (h == NULL) {
        return;
    }
    CHECK(smem_bm_join(h, 0) == 0);
    barrier("s1", n);
    unsigned char buf[CHUNK];
    fill(buf, sizeof buf, me, 11);
    unsigned char *peer = smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)next);
    CHECK(copy(h, buf, peer + 64, CHUNK, SMEMB_COPY_H2G, 0) == 0);
    barrier("s2", n);
    unsigned char *mine = mmap(NULL, local_size, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(mine != MAP_FAILED);
    if (mine != MAP_FAILED) {
        CHECK(holds(mine + 64, CHUNK, prev, 11));
        munmap(mine, local_size);
    }
    barrier("s3", n);
    smem_bm_destroy(h);
    close(fd);
}

/* Polls a copy to `rank`'s segment until it fails with -1 naming the rank (it left or died). */
static unsigned long long monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

/* The victim's "killed" mark: the CLOCK_MONOTONIC time (ns) of its SIGKILL; 0 if none. */
static unsigned long long killed_at(void) {
    DIR *d = opendir(syncdir);
    struct dirent *e;
    int idx = -1;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "killed.", 7) == 0) {
            idx = atoi(e->d_name + 7);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return idx < 0 ? 0 : read_mark("killed", idx);
}

/* A copy to a killed member of this node fails within this bound of its death. */
#define KILLED_BOUND_NS 1000000000ull

static void wait_gone(smem_bm_t h, unsigned rank) {
    unsigned char *seg = smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)rank);
    unsigned char buf[64] = {0};
    char name[32];
    snprintf(name, sizeof name, "rank %u", rank);
    int rc = 0;
    for (int i = 0; i < 4000 && rc == 0; i++) {
        rc = copy(h, buf, seg, sizeof buf, SMEMB_COPY_H2G, 0);
        if (rc == 0) {
            sleep_ms(5);
        }
    }
    unsigned long long failed = monotonic_ns(), killed = killed_at();
    CHECK(rc == -1);
    CHECK(last_error_has("smem_bm_copy", name));
    if (killed != 0) {
        /* Killed: the first failing copy came within the bound (the copies above are 5 ms
         * apart). */
        if (failed - killed >= KILLED_BOUND_NS) {
            fprintf(stderr, "[%d] a copy to the killed rank %u failed %llu ms after its death\n",
                    index_, rank, (failed - killed) / 1000000ull);
        }
        CHECK(failed - killed < KILLED_BOUND_NS);
    }
    if (rc != -1 || !last_error_has("smem_bm_copy", name) || getenv("BM_POOL_VERBOSE") != NULL) {
        fprintf(stderr, "[%d] copy to the gone rank %u: %d (%.1f ms after a kill): %s\n", index_,
                rank, rc, killed != 0 ? (double)(failed - killed) / 1e6 : 0.0,
                smem_get_last_err_msg());
    }
}

static void late(const struct run *r) {
    int n = r->n, early = n - 1;
    if (index_ == n - 1) {
        /* Joins while the others copy. */
        while (count("early") < early) {
            sleep_ms(5);
        }
        init(r);
        smem_bm_t h = create_and_join(0);
        unsigned me = smem_bm_get_rank_id();
        CHECK(me == (unsigned)(n - 1));
        barrier("joined", n);
        unsigned char buf[CHUNK];
        fill(buf, sizeof buf, me, 21);
        for (int p = 0; p < early; p++) {
            unsigned char *seg = smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)p);
            CHECK(copy(h, buf, seg + AT_OWN, CHUNK, SMEMB_COPY_H2G, 0) == 0);
        }
        barrier("written", n);
        barrier("checked", n);
        unsigned char *mine = smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)me);
        for (int p = 0; p < early; p++) {
            CHECK(holds(mine + AT_H2G + (size_t)p * CHUNK, CHUNK, (unsigned)p, 22));
        }
        smem_bm_destroy(h);
        return;
    }
    init(r);
    smem_bm_t h = create_and_join(0);
    unsigned me = smem_bm_get_rank_id(), next = (me + 1) % early;
    barrier("early", early);
    unsigned char buf[CHUNK], in[CHUNK];
    fill(buf, sizeof buf, me, 20);
    unsigned char *peer = smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)next);
    int copies = 0;
    /* Copy among the early ranks until the late one has joined: they call nothing for it. */
    while (count("joined") < 1) {
        CHECK(copy(h, buf, peer + AT_H2G, CHUNK, SMEMB_COPY_H2G, 0) == 0);
        CHECK(copy(h, peer + AT_H2G, in, CHUNK, SMEMB_COPY_G2H, 0) == 0);
        copies++;
    }
    barrier("joined", n);
    CHECK(copies > 0);
    barrier("written", n);
    unsigned char *own = smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)me);
    CHECK(holds(own + AT_OWN, CHUNK, (unsigned)(n - 1), 21));
    /* And the late rank's segment is reachable, mapped here once reached, and copies through
     * the mapping land (read back through the late rank's own copy below). */
    unsigned char *last = smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)(n - 1));
    CHECK(copy(h, buf, last + AT_H2G + (size_t)me * CHUNK, CHUNK, SMEMB_COPY_H2G, 0) == 0);
    CHECK(reach_mapped(h, last));
    CHECK(!one_node() || segment_mapped_at(peer));
    fill(buf, sizeof buf, me, 22);
    CHECK(copy(h, buf, last + AT_H2G + (size_t)me * CHUNK, CHUNK, SMEMB_COPY_H2G, 0) == 0);
    CHECK(copy(h, last + AT_H2G + (size_t)me * CHUNK, in, CHUNK, SMEMB_COPY_G2H, 0) == 0);
    CHECK(holds(in, CHUNK, me, 22));
    barrier("checked", n);
    smem_bm_destroy(h);
}

/* A thread copying to and from a peer's segment until a copy fails (the peer is gone) or
 * `stop`: it races the main thread's copies that unmap the gone peer. */
struct hammer {
    smem_bm_t h;
    unsigned char *seg;
    volatile int stop;
    int rc;
    long copies;
};

static void *hammer_main(void *arg) {
    struct hammer *w = arg;
    unsigned char buf[256] = {0};
    while (!w->stop && w->rc == 0) {
        w->rc = copy(w->h, buf, w->seg + 4096, sizeof buf, SMEMB_COPY_H2G, 0);
        if (w->rc == 0) {
            w->rc = copy(w->h, w->seg + 4096, buf, sizeof buf, SMEMB_COPY_G2H, 0);
        }
        w->copies++;
    }
    return NULL;
}

static void gone(const struct run *r, int how) {
    int n = r->n;
    init(r);
    smem_bm_t h = create_and_join(0);
    unsigned me = smem_bm_get_rank_id();
    unsigned victim = how == 2 ? 0 : (unsigned)(n - 1);
    barrier("g1", n);
    if (me != victim) {
        /* Reached before it goes, and mapped here: its going is then seen by the copy path
         * itself, the direct one. */
        unsigned char buf[64] = {0};
        unsigned char *seg = smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)victim);
        CHECK(copy(h, buf, seg, sizeof buf, SMEMB_COPY_H2G, 0) == 0);
        CHECK(reach_mapped(h, seg));
    }
    barrier("reached", n);
    if (me == victim) {
        if (how == 0) {
            CHECK(smem_bm_leave(h, 0) == 0);
            CHECK(smem_bm_leave(h, 0) == -2003);
            CHECK(smem_bm_join(h, 0) == -1); /* a left object stays out */
            barrier("g2", n);
            barrier("g3", n);
            smem_bm_destroy(h);
            return;
        }
        char at[32];
        snprintf(at, sizeof at, "%llx", monotonic_ns());
        mark("killed", at);
        raise(SIGKILL);
    }
    struct hammer w = {h, smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)victim), 0, 0,
                       0};
    pthread_t thread;
    int hammering = how != 2 && pthread_create(&thread, NULL, hammer_main, &w) == 0;
    if (how == 0) {
        barrier("g2", n);
    }
    wait_gone(h, victim);
    if (how != 2 && one_node()) {
        /* Once a copy failed to reach it, or the store reported it gone, its place is made
         * inaccessible again; copies to it go on failing naming it. */
        unsigned char *seg = smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)victim);
        unsigned char buf[64] = {0};
        char name[32];
        snprintf(name, sizeof name, "rank %u", victim);
        for (int i = 0; i < 400 && segment_mapped_at(seg); i++) {
            CHECK(copy(h, buf, seg, sizeof buf, SMEMB_COPY_H2G, 0) == -1);
            sleep_ms(5);
        }
        CHECK(!segment_mapped_at(seg));
        CHECK(copy(h, buf, seg, sizeof buf, SMEMB_COPY_H2G, 0) == -1);
        CHECK(last_error_has("smem_bm_copy", name));
    }
    if (hammering) {
        /* The other thread's copies, racing the release of the mapping, ended failing. */
        for (int i = 0; i < 2000 && w.rc == 0; i++) {
            sleep_ms(1);
        }
        w.stop = 1;
        pthread_join(thread, NULL);
        CHECK(w.rc == -1);
        CHECK(w.copies > 0);
    }
    /* The others still reach each other. */
    int survivors = n - 1;
    if (survivors >= 2) {
        unsigned others[4], k = 0;
        for (int i = 0; i < n; i++) {
            if ((unsigned)i != victim) {
                others[k++] = (unsigned)i;
            }
        }
        unsigned pos = 0;
        for (unsigned i = 0; i < k; i++) {
            if (others[i] == me) {
                pos = i;
            }
        }
        unsigned next = others[(pos + 1) % k];
        unsigned char buf[CHUNK], in[CHUNK];
        fill(buf, sizeof buf, me, 30);
        unsigned char *seg = smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, (uint16_t)next);
        if (how != 2) {
            /* With the store's host alive, the others go on as before. */
            CHECK(copy(h, buf, seg + AT_H2G, CHUNK, SMEMB_COPY_H2G, 0) == 0);
            CHECK(copy(h, seg + AT_H2G, in, CHUNK, SMEMB_COPY_G2H, 0) == 0);
            CHECK(holds(in, CHUNK, me, 30));
        }
    }
    if (how == 1) {
        barrier("g4", n - 1); /* the survivors, before any of them destroys its object */
    }
    if (how == 0) {
        barrier("g3", n);
    }
    /* destroy and uninit are local: they return whatever became of the others. */
    smem_bm_destroy(h);
}

/* Rank 0 serves the store over TLS; rank 1, without TLS, is refused (-1, within its
 * initTimeout). */
static void tls_refused(const struct run *r) {
    if (index_ == 0) {
        init(r);
        barrier("refused", 2);
        return;
    }
    smem_bm_config_t c;
    CHECK(smem_bm_config_init(&c) == 0);
    c.autoRanking = false;
    c.rankId = 1;
    c.initTimeout = 3;
    time_t start = time(NULL);
    CHECK(smem_bm_init(r->url, (uint32_t)r->n, 0, &c) == -1);
    CHECK(last_error_has("smem_bm_init", r->url));
    CHECK(time(NULL) - start < 30);
    barrier("refused", 2);
}

static int rank_main(const struct run *r) {
    alarm(WATCHDOG_S);
    smem_set_extern_logger(logger);
    smem_set_log_level(2);
    if (strcmp(r->scenario, "basic") == 0) {
        init(r);
        smem_bm_t h = create_and_join(0);
        if (h != NULL) {
            basic(h, r->n);
            with_shm(r->n);
            smem_bm_destroy(h);
        }
    } else if (strcmp(r->scenario, "tlsrefused") == 0) {
        tls_refused(r);
    } else if (strcmp(r->scenario, "late") == 0) {
        late(r);
    } else if (strcmp(r->scenario, "leave") == 0) {
        gone(r, 0);
    } else if (strcmp(r->scenario, "kill") == 0) {
        gone(r, 1);
    } else if (strcmp(r->scenario, "killhost") == 0) {
        gone(r, 2);
    } else {
        fprintf(stderr, "unknown scenario %s\n", r->scenario);
        return 2;
    }
    smem_bm_uninit(0);
    if (failures != 0) {
        fprintf(stderr, "[%d] %d check(s) failed\n", index_, failures);
        return 1;
    }
    return 0;
}

static void rmdir_all(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    rmdir(dir);
}

static int launch(int spawn, char **argv, int n, const char *ranking, const char *scenario,
                  const char *tlsdir) {
    char dir[] = "/tmp/bm_pool.XXXXXX", url[64], nbuf[16], ibuf[16], maxbuf[32], localbuf[32];
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    snprintf(url, sizeof url, "tcp://127.0.0.1:%u", free_port());
    struct run r = {url, n, strcmp(ranking, "auto") == 0, scenario, tlsdir};
    pid_t pids[16];
    syncdir = dir;
    for (int i = 0; i < n; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            index_ = i;
            if (!spawn) {
                _exit(rank_main(&r));
            }
            snprintf(nbuf, sizeof nbuf, "%d", n);
            snprintf(ibuf, sizeof ibuf, "%d", i);
            snprintf(maxbuf, sizeof maxbuf, "%llu", max_size);
            snprintf(localbuf, sizeof localbuf, "%llu", local_size);
            char *args[] = {argv[0],
                            "proc",
                            url,
                            nbuf,
                            (char *)ranking,
                            ibuf,
                            (char *)scenario,
                            dir,
                            tlsdir ? (char *)tlsdir : "-",
                            maxbuf,
                            localbuf,
                            NULL};
            execv("/proc/self/exe", args);
            perror("exec");
            _exit(2);
        }
    }
    /* The watchdog: every rank is bounded, and so is the wait for them. */
    int bad = 0;
    time_t until = time(NULL) + WATCHDOG_S + 10;
    int left = n;
    int killed_ok = strcmp(scenario, "kill") == 0 || strcmp(scenario, "killhost") == 0;
    while (left > 0) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0) {
            left--;
            int sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
            if (sig == SIGKILL && killed_ok) {
                killed_ok = 0; /* the one victim */
                continue;
            }
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fprintf(stderr, "rank process %d: %s %d\n", (int)p,
                        WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : sig);
                bad = 1;
            }
            continue;
        }
        if (time(NULL) > until) {
            fprintf(stderr, "watchdog: %d rank process(es) still running; killing them\n", left);
            for (int i = 0; i < n; i++) {
                kill(pids[i], SIGKILL);
            }
            bad = 1;
            until = time(NULL) + 3600;
        }
        sleep_ms(20);
    }
    rmdir_all(dir);
    if (!bad) {
        printf("OK: bm_pool %s %d %s %s%s\n", spawn ? "spawn" : "fork", n, ranking, scenario,
               tlsdir ? " (store TLS)" : "");
    }
    return bad;
}

/* Argument errors of every function, before and after init (one rank). */
static int errors(void) {
    char url[64];
    smem_bm_config_t c;
    smem_copy_params p = {NULL, NULL, 0};
    smem_batch_copy_params b = {NULL, NULL, NULL, 0};
    int fake = 0;
    smem_bm_t h = &fake;
    alarm(WATCHDOG_S);
    /* Before init: the argument checks, then -2008. */
    CHECK(smem_bm_copy(h, &p, SMEMB_COPY_H2G, 0) == -2000); /* src NULL */
    p.src = url;
    p.dest = url;
    p.dataSize = 8;
    CHECK(smem_bm_copy(h, &p, SMEMB_COPY_H2G, 0) == -2008);
    CHECK(last_error_has("smem_bm_copy", "not initialised"));
    CHECK(smem_bm_copy(h, &p, SMEMB_COPY_BUTT, 0) == -2000);
    CHECK(last_error_has("smem_bm_copy", "t=10"));
    CHECK(smem_bm_copy(NULL, &p, SMEMB_COPY_H2G, 0) == -2000);
    CHECK(smem_bm_copy(h, NULL, SMEMB_COPY_H2G, 0) == -2000);
    CHECK(last_error_has("smem_bm_copy", "params=NULL"));
    CHECK(smem_bm_copy_batch(h, &b, SMEMB_COPY_H2G, 0) == -2000);
    CHECK(last_error_has("smem_bm_copy_batch", "batchSize=0"));
    CHECK(smem_bm_join(h, 0) == -2008);
    CHECK(smem_bm_leave(h, 0) == -2008);
    CHECK(smem_bm_wait(h) == -2008);
    CHECK(smem_bm_get_rank_id_by_gva(h, NULL) == (uint32_t)-2000);
    CHECK(smem_bm_get_rank_id_by_gva(h, url) == (uint32_t)-2008);
    CHECK(smem_bm_register_user_mem(h, 0, 8) == -2000);
    CHECK(smem_bm_register_user_mem(h, 8, 8) == -2008);
    CHECK(smem_bm_unregister_user_mem(h, 0) == -2000);
    CHECK(smem_bm_create(0, 0, SMEMB_DATA_OP_SDMA, MIB2, 0, 0) == NULL);
    CHECK(last_error_has("smem_bm_create2", "not initialised"));
    CHECK(smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, 0) == NULL);
    CHECK(smem_bm_get_local_mem_size_by_mem_type(h, SMEM_MEM_TYPE_HOST) == 0);
    CHECK(smem_bm_get_rank_id() == 0);
    smem_bm_uninit(0);

    CHECK(smem_bm_config_init(&c) == 0);
    snprintf(url, sizeof url, "tcp://127.0.0.1:%u", free_port());
    c.autoRanking = false;
    c.rankId = 0;
    c.controlOperationTimeout = 0;
    CHECK(smem_bm_init(url, 1, 0, &c) == -2000);
    CHECK(last_error_has("smem_bm_init", "controlOperationTimeout=0"));
    c.controlOperationTimeout = 10;
    snprintf(c.hcomUrl, sizeof c.hcomUrl, "tcp://1.2.3.4/40:1");
    CHECK(smem_bm_init(url, 1, 0, &c) == -2000);
    CHECK(last_error_has("smem_bm_init", "hcomUrl"));
    snprintf(c.hcomUrl, sizeof c.hcomUrl, "tcp://0.0.0.0/0:10005");
    CHECK(smem_bm_init("tcp://0.0.0.0:5000", 1, 0, &c) == -2000);
    CHECK(last_error_has("smem_bm_init", "0.0.0.0"));
    c.storeTlsConfig.tlsEnable = true;
    snprintf(c.storeTlsConfig.caPath, sizeof c.storeTlsConfig.caPath, "/nonexistent/ca.pem");
    CHECK(smem_bm_init(url, 1, 0, &c) == -1);
    CHECK(last_error_has("smem_bm_init", "/nonexistent/ca.pem"));
    c.storeTlsConfig.tlsEnable = false;
    /* The store this process serves already (smem_create_config_store) is Big Memory's too. */
    CHECK(smem_create_config_store(url) == 0);
    CHECK(smem_bm_init(url, 1, 0, &c) == 0);
    CHECK(smem_bm_get_rank_id() == 0);

    /* create's checks. */
    smem_bm_create_option_t o;
    memset(&o, 0, sizeof o);
    o.dataOpType = SMEMB_DATA_OP_HOST_RDMA;
    o.dramShmFd = -1;
    CHECK(smem_bm_create2(0, &o) == NULL);
    CHECK(last_error_has("smem_bm_create2", "maxDramSize=0"));
    o.maxDramSize = MIB2 + 4096;
    CHECK(smem_bm_create2(0, &o) == NULL);
    CHECK(last_error_has("smem_bm_create2", "2 MiB"));
    o.maxDramSize = MIB2;
    o.localDRAMSize = 2 * MIB2;
    CHECK(smem_bm_create2(0, &o) == NULL);
    CHECK(last_error_has("smem_bm_create2", "localDRAMSize="));
    o.localDRAMSize = MIB2;
    o.dataOpType = (smem_bm_data_op_type)0;
    CHECK(smem_bm_create2(0, &o) == NULL);
    CHECK(last_error_has("smem_bm_create2", "dataOpType=0"));
    o.dataOpType = SMEMB_DATA_OP_DEVICE_RDMA;
    o.flags = SMEM_BM_FLAG_CREATE_WITH_SHM;
    CHECK(smem_bm_create2(0, &o) == NULL);
    CHECK(last_error_has("smem_bm_create2", "dramShmFd=-1"));
    o.flags = 0;
    CHECK(smem_bm_create2(255, &o) == NULL);
    CHECK(last_error_has("smem_bm_create2", "id=255"));
    CHECK(smem_bm_create(0, 0, SMEMB_DATA_OP_SDMA, 0, 2 * MIB2, 0) == NULL);
    CHECK(last_error_has("smem_bm_create2", "npu device"));
    smem_bm_t real = smem_bm_create2(0, &o);
    CHECK(real != NULL);

    /* Unknown handles: -2000, not a crash. */
    CHECK(smem_bm_join(h, 0) == -2000);
    CHECK(last_error_has("smem_bm_join", "handle="));
    CHECK(smem_bm_copy(h, &p, SMEMB_COPY_H2G, 0) == -2000);
    CHECK(smem_bm_get_rank_id_by_gva(h, url) == (uint32_t)-2000);
    CHECK(smem_bm_ptr_by_mem_type(h, SMEM_MEM_TYPE_HOST, 0) == NULL);
    smem_bm_destroy(h);
    CHECK(last_error_has("smem_bm_destroy", "handle="));
    if (real != NULL) {
        CHECK(smem_bm_leave(real, 0) == -2003);
        CHECK(last_error_has("smem_bm_leave", "smem_bm_join"));
        CHECK(smem_bm_ptr_by_mem_type(real, SMEM_MEM_TYPE_BUTT, 0) == NULL);
        CHECK(last_error_has("smem_bm_ptr_by_mem_type", "memType=4"));
        /* A world of one: copies within the own segment need no join. */
        unsigned char *own = smem_bm_ptr_by_mem_type(real, SMEM_MEM_TYPE_HOST, 0);
        unsigned char buf[64], in[64];
        fill(buf, sizeof buf, 0, 40);
        CHECK(copy(real, buf, own + 100, sizeof buf, SMEMB_COPY_H2G, 0) == 0);
        CHECK(holds(own + 100, sizeof buf, 0, 40));
        CHECK(copy(real, own + 100, in, sizeof in, SMEMB_COPY_G2H, 0) == 0);
        CHECK(holds(in, sizeof in, 0, 40));
        CHECK(smem_bm_join(real, 0) == 0);
        smem_bm_destroy(real);
        /* The id is free again, and so is this rank in its group (destroy did not leave). */
        smem_bm_t again = smem_bm_create2(0, &o);
        CHECK(again != NULL);
        CHECK(again == NULL || smem_bm_join(again, 0) == 0);
        CHECK(again == NULL || smem_bm_ptr_by_mem_type(again, SMEM_MEM_TYPE_HOST, 0) == own);
        smem_bm_destroy(again);
    }
    CHECK(smem_bm_join(real, 0) == -2000); /* destroyed */
    smem_bm_uninit(0);
    CHECK(smem_bm_join(real, 0) == -2008);
    if (failures != 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("OK: bm_pool errors\n");
    return 0;
}

/* The optional TLSDIR ("-": none) and MAX LOCAL arguments from argv[at]. */
static const char *options(int argc, char **argv, int at) {
    const char *tlsdir = argc > at && strcmp(argv[at], "-") != 0 ? argv[at] : NULL;
    if (argc > at + 2) {
        max_size = strtoull(argv[at + 1], NULL, 0);
        local_size = strtoull(argv[at + 2], NULL, 0);
        if (local_size < MIB2 || max_size < local_size) {
            fprintf(stderr, "bm_pool: LOCAL is at least 2 MiB and MAX at least LOCAL\n");
            exit(2);
        }
    }
    return tlsdir;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "errors") == 0) {
        return errors();
    }
    if (argc >= 5 && (strcmp(argv[1], "fork") == 0 || strcmp(argv[1], "spawn") == 0)) {
        int n = atoi(argv[2]);
        if (n < 2 || n > 4) {
            fprintf(stderr, "bm_pool: N is 2..4\n");
            return 2;
        }
        const char *tlsdir = options(argc, argv, 5);
        /* Every rank on this node: each maps the others' segments (checked by the scenarios). */
        setenv("BM_POOL_ONE_NODE", "1", 1);
        return launch(argv[1][0] == 's', argv, n, argv[3], argv[4], tlsdir);
    }
    if (argc >= 8 && strcmp(argv[1], "proc") == 0) {
        const char *tlsdir = options(argc, argv, 8);
        struct run r = {argv[2], atoi(argv[3]), strcmp(argv[4], "auto") == 0, argv[6], tlsdir};
        index_ = atoi(argv[5]);
        syncdir = argv[7];
        return rank_main(&r);
    }
    fprintf(stderr,
            "usage: bm_pool fork|spawn N auto|explicit SCENARIO [TLSDIR|- [MAX LOCAL]]\n"
            "       bm_pool proc URL N auto|explicit INDEX SCENARIO SYNCDIR [TLSDIR|- [MAX "
            "LOCAL]]\n"
            "       bm_pool errors\n");
    return 2;
}
