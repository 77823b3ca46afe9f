/* trans_engine.c: memfabric_hybrid's transfer engine (smem_trans.h) over libmf_smem.so, as
 * memfabric's tests and users drive it: forked processes (the first serves the config store
 * with smem_create_config_store), each smem_trans_init + smem_trans_create with its own id,
 * addresses handed out of band (pipes here; SGLang uses its bootstrap server). Every process
 * checks data another wrote. Usage: trans_engine <scenario> [args]:
 *
 *   errors              argument checks, roles, malformed ids, unknown peer (bounded wait)
 *   pair <v4|v6>        a sender and a receiver: write, read, batches, submits, malloc'ed
 *                       memory, out-of-range and deregistered ranges refused
 *   sglang <n>          one sender, n receivers registering per-layer KV buffers in one batch;
 *                       the sender writes all layers of each in one batch write; senders and
 *                       receivers addressing their own role are refused
 *   kill <sender|receiver>  one side killed (SIGKILL): the other's transfers fail in bounded time
 *   kill store          the store's process killed: every later call returns in bounded time
 *   denied              the kernel refuses cross-process copies (a seccomp filter, as a
 *                       container's): transfers still work (the network transport) and the
 *                       data arrives
 *   perf [denied]       bandwidth of the engine's paths on this node, 4 KiB..64 MiB
 *   node <url> <id> <peer id> <sender|receiver> <dir> [serve] [kill]
 *                       one side of a pair started apart (tests/multinode/memfabric_trans_netns.sh:
 *                       two network namespaces, data over UCX); addresses pass through files
 *
 * A watchdog ends a job that hangs. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <smem/host/smem.h>
#include <smem/host/smem_trans.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 8
#define MF_TEST_MAX_RANKS MAX_PROCS
#include "mf_test.h"
#define WATCHDOG_S 120

static int failures;
static const char *who = "main";

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "trans_engine: %s: %s:%d: %s failed (last error: %s)\n", who,          \
                    __FILE__, __LINE__, #cond, smem_get_last_err_msg());                           \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A byte of writer `w`'s pattern at offset `i`. */
static uint8_t pat(uint32_t w, size_t i) { return (uint8_t)(w * 37u + i * 13u + (i >> 9)); }

static void fill(uint8_t *p, size_t n, uint32_t w) {
    for (size_t i = 0; i < n; i++) {
        p[i] = pat(w, i);
    }
}

static int holds(const uint8_t *p, size_t n, uint32_t w) {
    for (size_t i = 0; i < n; i++) {
        if (p[i] != pat(w, i)) {
            fprintf(stderr, "trans_engine: %s: byte %zu is %u, expected %u (writer %u)\n", who, i,
                    p[i], pat(w, i), w);
            return 0;
        }
    }
    return 1;
}

static char url[64], ids[MAX_PROCS][64];

static void make_ids(int v6, uint32_t n) {
    unsigned port = free_port();
    snprintf(url, sizeof url, v6 ? "tcp://[::1]:%u" : "tcp://127.0.0.1:%u", port);
    for (uint32_t i = 0; i < n; i++) {
        /* Names: nothing binds these ports. */
        snprintf(ids[i], sizeof ids[i], v6 ? "[::1]:%u" : "127.0.0.1:%u", 20000 + port % 20000 + i);
    }
}

static smem_trans_t engine(uint32_t i, smem_trans_role_t role) {
    smem_trans_config_t c;
    CHECK(smem_trans_config_init(&c) == 0);
    c.role = role;
    c.deviceId = i;
    c.dataOpType = SMEMB_DATA_OP_SDMA;
    c.initTimeout = 30;
    CHECK(smem_trans_init(&c) == 0);
    smem_trans_t t = smem_trans_create(url, ids[i], &c);
    CHECK(t != NULL);
    return t;
}

static void start_watchdog(void) {
    signal(SIGALRM, watchdog);
    alarm(WATCHDOG_S);
}

static int reap(uint32_t n) {
    int bad = 0;
    for (uint32_t i = 0; i < n; i++) {
        int st = 0;
        if (children[i] > 0 && waitpid(children[i], &st, 0) == children[i] &&
            !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
            fprintf(stderr, "trans_engine: process %u ended with status %#x\n", i + 1, st);
            bad = 1;
        }
    }
    return bad;
}

/* Forks process 1 running `child(to_parent, from_parent)`; the parent gets the other ends. */
static pid_t fork_child(int (*child)(int, int), int *from_child, int *to_child) {
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0) {
        perror("pipe");
        exit(2);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        signal(SIGALRM, SIG_DFL);
        _exit(child(up[1], down[0]));
    }
    close(up[1]);
    close(down[0]);
    *from_child = up[0];
    *to_child = down[1];
    return pid;
}

/* ---- errors -------------------------------------------------------------------------------- */

/* Process 1 of the errors scenario: once the parent's engine of ids[0] exists, an engine of the
 * same id here is refused by the store (DUPLICATED_OBJECT's message), within the call. */
static int twin_child(int to_parent, int from_parent) {
    who = "twin";
    msg_t in, out = {{0}};
    recv_msg(from_parent, &in);
    smem_trans_config_t c;
    CHECK(smem_trans_config_init(&c) == 0);
    c.role = SMEM_TRANS_SENDER;
    c.dataOpType = SMEMB_DATA_OP_SDMA;
    c.initTimeout = 30;
    CHECK(smem_trans_init(&c) == 0);
    double t0 = now_s();
    smem_trans_t twin = smem_trans_create(url, ids[0], &c);
    CHECK(twin == NULL);
    CHECK(now_s() - t0 < 5.0);
    CHECK(strstr(smem_get_last_err_msg(), "another engine of the store") != NULL);
    CHECK(strstr(smem_get_last_err_msg(), ids[0]) != NULL);
    printf("errors: the same id in another process: %s\n", smem_get_last_err_msg());
    fflush(stdout); /* the child ends with _exit */
    smem_trans_uninit(0);
    send_msg(to_parent, &out);
    return failures ? 1 : 0;
}

static int scenario_errors(void) {
    who = "errors";
    smem_trans_config_t c;
    memset(&c, 0x5a, sizeof c);
    CHECK(smem_trans_config_init(NULL) == -2000);
    CHECK(smem_trans_config_init(&c) == 0);
    CHECK(c.role == SMEM_TRANS_SENDER && c.initTimeout == 120 && c.deviceId == UINT32_MAX &&
          c.flags == 0 && c.startConfigServer == false);
    CHECK((uint32_t)c.dataOpType == 0x5a5a5a5au); /* memfabric leaves it */
    c.dataOpType = SMEMB_DATA_OP_SDMA;
    make_ids(0, 4);
    start_watchdog();
    int from_twin, to_twin;
    children[n_children++] = fork_child(twin_child, &from_twin, &to_twin);
    CHECK(smem_create_config_store(url) == 0);
    /* Before init: NULL. */
    CHECK(smem_trans_create(url, ids[0], &c) == NULL);
    CHECK(smem_trans_init(NULL) == -2000);
    CHECK(smem_trans_init(&c) == 0);
    CHECK(smem_trans_init(&c) == 0); /* twice: 0 */
    CHECK(smem_trans_create(NULL, ids[0], &c) == NULL);
    CHECK(smem_trans_create("", ids[0], &c) == NULL);
    CHECK(smem_trans_create(url, NULL, &c) == NULL);
    CHECK(smem_trans_create(url, "", &c) == NULL);
    CHECK(smem_trans_create(url, ids[0], NULL) == NULL);
    const char *bad_ids[] = {"127.0.0.1:1024", "127.0.0.1",       "localhost:5000", "::1:5000",
                             "[::1]5000",      "127.0.0.1:70000", "1.2.3:5000"};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
        double t0 = now_s();
        CHECK(smem_trans_create(url, bad_ids[i], &c) == NULL);
        CHECK(now_s() - t0 < 1.0); /* at once */
        CHECK(strstr(smem_get_last_err_msg(), bad_ids[i]) != NULL);
        CHECK(strstr(smem_get_last_err_msg(), "uniqueId") != NULL);
    }
    CHECK(smem_trans_create("tcp://127.0.0.1:80", ids[0], &c) == NULL);
    c.role = SMEM_TRANS_NONE;
    CHECK(smem_trans_create(url, ids[0], &c) == NULL);
    c.role = SMEM_TRANS_BOTH;
    CHECK(smem_trans_create(url, ids[0], &c) == NULL);
    CHECK(strstr(smem_get_last_err_msg(), "role=3") != NULL);

    c.role = SMEM_TRANS_SENDER;
    smem_trans_t s = smem_trans_create(url, ids[0], &c);
    CHECK(s != NULL);
    CHECK(smem_trans_create(url, ids[0], &c) == NULL); /* the same id again */
    msg_t twin = {{0}};
    send_msg(to_twin, &twin); /* the same id in another process */
    recv_msg(from_twin, &twin);
    c.role = SMEM_TRANS_RECEIVER;
    smem_trans_t r = smem_trans_create(url, ids[1], &c);
    CHECK(r != NULL);
    c.role = SMEM_TRANS_SENDER;
    smem_trans_t s2 = smem_trans_create(url, ids[2], &c);
    CHECK(s2 != NULL);

    static uint8_t buf[1 << 16], other[1 << 16];
    CHECK(smem_trans_register_mem(NULL, buf, sizeof buf, 0) == -2000);
    CHECK(smem_trans_register_mem(r, NULL, sizeof buf, 0) == -2000);
    CHECK(smem_trans_register_mem(r, buf, 0, 0) == -2000);
    void *addrs[2] = {buf, NULL};
    size_t caps[2] = {sizeof buf, sizeof buf};
    CHECK(smem_trans_batch_register_mem(r, addrs, caps, 2, 0) == -2000);
    CHECK(smem_trans_batch_register_mem(r, addrs, caps, 0, 0) == -2000);
    CHECK(smem_trans_batch_register_mem(r, NULL, caps, 1, 0) == -2000);
    CHECK(smem_trans_register_mem(r, buf, sizeof buf, 0) == 0);
    CHECK(smem_trans_register_mem(r, buf + 16, 16, 0) == 0); /* inside: nothing new */
    CHECK(smem_trans_deregister_mem(r, NULL) == -2000);
    CHECK(smem_trans_deregister_mem(r, other) == -2000);
    CHECK(smem_trans_register_mem(s, other, sizeof other, 0) == 0);

    /* Writes in one process between engines: the receiver's memory is this process's. */
    fill(other, 4096, 7);
    CHECK(smem_trans_write(s, other, ids[1], buf, 4096, 0) == 0);
    CHECK(holds(buf, 4096, 7));
    CHECK(smem_trans_write(s, other, ids[1], buf, 4096, COPY_EXTEND_FLAG) == 0);
    CHECK(smem_trans_write(s, other, ids[1], buf, 4096, ASYNC_COPY_FLAG) == -2000);
    CHECK(smem_trans_write(NULL, other, ids[1], buf, 4096, 0) == -2000);
    CHECK(smem_trans_write(s, other, NULL, buf, 4096, 0) == -2000);
    CHECK(smem_trans_write(s, NULL, ids[1], buf, 4096, 0) == -2000);
    CHECK(smem_trans_write(s, other, ids[1], NULL, 4096, 0) == -2000);
    CHECK(smem_trans_write(s, other, ids[1], buf, 0, 0) == -2000);
    CHECK(smem_trans_write((smem_trans_t)other, other, ids[1], buf, 4096, 0) == -2007);
    /* Out of range: refused before anything moves. */
    memset(buf, 0, sizeof buf);
    CHECK(smem_trans_write(s, other, ids[1], buf + sizeof buf - 100, 4096, 0) == -2000);
    CHECK(strstr(smem_get_last_err_msg(), "not inside") != NULL);
    CHECK(buf[sizeof buf - 100] == 0);
    /* Roles: a sender addresses receivers only, and a receiver senders only. */
    CHECK(smem_trans_write(s, other, ids[2], other, 16, 0) == -2000);
    CHECK(strstr(smem_get_last_err_msg(), "sender") != NULL);
    CHECK(smem_trans_write(r, buf, ids[0], other, 16, 0) == 0); /* receiver -> sender */
    /* Submits: a stream is needed; the work is done on return, in call order. */
    int stream_token;
    CHECK(smem_trans_write_submit(s, other, ids[1], buf, 16, NULL, 0) == -2000);
    fill(other, 4096, 9);
    CHECK(smem_trans_write_submit(s, other, ids[1], buf, 4096, &stream_token, 0) == 0);
    CHECK(holds(buf, 4096, 9));
    uint8_t back[4096];
    CHECK(smem_trans_read_submit(s, back, ids[1], buf, 4096, &stream_token, 0) == 0);
    CHECK(holds(back, 4096, 9));
    /* Batches: zero count, a NULL element. */
    const void *l[1] = {other};
    void *rm[1] = {buf};
    size_t sz[1] = {16};
    CHECK(smem_trans_batch_write(s, l, ids[1], rm, sz, 0, 0) == -2000);
    sz[0] = 0;
    CHECK(smem_trans_batch_write(s, l, ids[1], rm, sz, 1, 0) == -2000);
    /* malloc: 2 MiB units; free of an unknown address: -1. */
    CHECK(smem_trans_malloc(r, 4096) == NULL);
    void *m = smem_trans_malloc(r, 2u << 20);
    CHECK(m != NULL);
    CHECK(smem_trans_free(r, buf) == -1);
    if (m != NULL) {
        CHECK(smem_trans_write(s, other, ids[1], (uint8_t *)m + 100, 4096, 0) == 0);
        CHECK(holds((uint8_t *)m + 100, 4096, 9));
        CHECK(smem_trans_free(r, m) == 0);
    }
    /* Deregistered: refused. */
    CHECK(smem_trans_deregister_mem(r, buf) == 0);
    CHECK(smem_trans_write(s, other, ids[1], buf, 16, 0) == -2000);
    /* An unknown peer: a bounded wait, then -2000 naming it. */
    double t0 = now_s();
    CHECK(smem_trans_write(s, other, ids[3], buf, 16, 0) == -2000);
    double waited = now_s() - t0;
    CHECK(strstr(smem_get_last_err_msg(), ids[3]) != NULL);
    CHECK(waited >= 4.5 && waited < 8.0);
    printf("errors: an unknown peer failed after %.2f s: %s\n", waited, smem_get_last_err_msg());
    /* A peer destroyed: the next transfer to it fails at once, naming it. */
    static uint8_t kept[4096];
    CHECK(smem_trans_register_mem(r, kept, sizeof kept, 0) == 0);
    CHECK(smem_trans_write(s, other, ids[1], kept, 16, 0) == 0);
    smem_trans_destroy(r, 0);
    t0 = now_s();
    CHECK(smem_trans_write(s, other, ids[1], kept, 16, 0) == -1);
    CHECK(now_s() - t0 < 1.0);
    CHECK(strstr(smem_get_last_err_msg(), "gone") != NULL);
    printf("errors: a write to a destroyed peer: %s\n", smem_get_last_err_msg());
    smem_trans_destroy(r, 0); /* no longer an engine: logged */
    smem_trans_destroy(s2, 0);
    smem_trans_destroy(s, 0);
    smem_trans_destroy(NULL, 0);
    smem_trans_uninit(0);
    int rc = reap(1);
    printf("errors: %s\n", rc || failures ? "FAILED" : "ok");
    return rc || failures ? 1 : 0;
}

/* ---- pair ---------------------------------------------------------------------------------- */

#define PAIR_BYTES (1u << 20)

/* The receiver (process 1): registers A (written by the sender) and B (read by it), mallocs
 * M, and hands the addresses out. */
static int pair_receiver(int to_sender, int from_sender) {
    who = "receiver";
    smem_trans_t t = engine(1, SMEM_TRANS_RECEIVER);
    uint8_t *a = calloc(1, PAIR_BYTES), *b = malloc(PAIR_BYTES), *c = calloc(1, PAIR_BYTES);
    fill(b, PAIR_BYTES, 2);
    void *addrs[2] = {a, b};
    size_t caps[2] = {PAIR_BYTES, PAIR_BYTES};
    CHECK(smem_trans_batch_register_mem(t, addrs, caps, 2, 0) == 0);
    CHECK(smem_trans_register_mem(t, c, PAIR_BYTES, 0) == 0);
    uint8_t *m = smem_trans_malloc(t, 2u << 20);
    CHECK(m != NULL);
    msg_t out = {{(uint64_t)a, (uint64_t)b, (uint64_t)c, (uint64_t)m}};
    send_msg(to_sender, &out);
    msg_t in;
    CHECK(recv_msg(from_sender, &in)); /* the sender wrote A, C and M */
    /* The sender's id, live in another process: refused. */
    smem_trans_config_t dup;
    CHECK(smem_trans_config_init(&dup) == 0);
    dup.initTimeout = 30;
    CHECK(smem_trans_create(url, ids[0], &dup) == NULL);
    CHECK(strstr(smem_get_last_err_msg(), "another engine") != NULL);
    CHECK(holds(a, PAIR_BYTES, 1));
    CHECK(holds(c, PAIR_BYTES / 2, 3));
    CHECK(holds(c + PAIR_BYTES / 2, PAIR_BYTES / 2, 4));
    if (m != NULL) {
        CHECK(holds(m, 4096, 5));
    }
    /* The receiver reads the sender's buffer (a receiver addresses senders). */
    uint8_t *got = malloc(PAIR_BYTES);
    CHECK(smem_trans_read(t, got, ids[0], (void *)(uintptr_t)in.a[0], PAIR_BYTES, 0) == 0);
    CHECK(holds(got, PAIR_BYTES, 6));
    /* C withdrawn: the sender's next write into it is refused. */
    CHECK(smem_trans_deregister_mem(t, c) == 0);
    send_msg(to_sender, &out);
    CHECK(recv_msg(from_sender, &in)); /* the sender is done */
    memset(got, 0, 64);
    CHECK(c[0] == pat(3, 0)); /* untouched since */
    if (m != NULL) {
        CHECK(smem_trans_free(t, m) == 0);
    }
    smem_trans_destroy(t, 0);
    smem_trans_uninit(0);
    free(a);
    free(b);
    free(c);
    free(got);
    return failures ? 1 : 0;
}

/* A quarter of a buffer written by one thread, as a batch of two pieces. */
struct quarter {
    smem_trans_t t;
    const uint8_t *src;
    uint8_t *dst;
    size_t at;
    int rc;
};

static void *write_quarter(void *arg) {
    struct quarter *q = arg;
    const size_t half = PAIR_BYTES / 8;
    for (int round = 0; round < 10 && q->rc == 0; round++) {
        const void *l[2] = {q->src + q->at, q->src + q->at + half};
        void *r[2] = {q->dst + q->at, q->dst + q->at + half};
        size_t sz[2] = {half, half};
        q->rc = smem_trans_batch_write(q->t, l, ids[1], r, sz, 2, 0);
    }
    return NULL;
}

static int pair_sender(int from_receiver, int to_receiver) {
    who = "sender";
    smem_trans_t t = engine(0, SMEM_TRANS_SENDER);
    uint8_t *src = malloc(PAIR_BYTES), *mine = malloc(PAIR_BYTES), *got = malloc(PAIR_BYTES);
    fill(src, PAIR_BYTES, 1);
    fill(mine, PAIR_BYTES, 6);
    CHECK(smem_trans_register_mem(t, mine, PAIR_BYTES, 0) == 0);
    msg_t in;
    CHECK(recv_msg(from_receiver, &in));
    uint8_t *a = (uint8_t *)(uintptr_t)in.a[0], *b = (uint8_t *)(uintptr_t)in.a[1];
    uint8_t *c = (uint8_t *)(uintptr_t)in.a[2], *m = (uint8_t *)(uintptr_t)in.a[3];
    /* Registered: succeeds at once (no wait for discovery). */
    double t0 = now_s();
    CHECK(smem_trans_write(t, src, ids[1], a, 4096, 0) == 0);
    printf("pair: the first write returned after %.3f s\n", now_s() - t0);
    /* A written by four threads at once, a batch of two pieces each (memfabric's perf
     * example writes from several threads). */
    pthread_t th[4];
    struct quarter q[4];
    for (int i = 0; i < 4; i++) {
        q[i] = (struct quarter){t, src, a, (size_t)i * (PAIR_BYTES / 4), 0};
        CHECK(pthread_create(&th[i], NULL, write_quarter, &q[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(q[i].rc == 0);
    }
    CHECK(smem_trans_read(t, got, ids[1], b, PAIR_BYTES, 0) == 0);
    CHECK(holds(got, PAIR_BYTES, 2));
    /* A batch write: two halves of C from two buffers. */
    uint8_t *h1 = malloc(PAIR_BYTES / 2), *h2 = malloc(PAIR_BYTES / 2);
    fill(h1, PAIR_BYTES / 2, 3);
    fill(h2, PAIR_BYTES / 2, 4);
    const void *locals[2] = {h1, h2};
    void *remotes[2] = {c, c + PAIR_BYTES / 2};
    size_t sizes[2] = {PAIR_BYTES / 2, PAIR_BYTES / 2};
    CHECK(smem_trans_batch_write(t, locals, ids[1], remotes, sizes, 2, 0) == 0);
    /* A batch read back of A and B in pieces. */
    void *lr[4] = {got, got + 4096, got + 8192, got + 12288};
    const void *rr[4] = {a, a + 4096, b, b + 4096};
    size_t sr[4] = {4096, 4096, 4096, 4096};
    memset(got, 0, 16384);
    CHECK(smem_trans_batch_read(t, lr, ids[1], rr, sr, 4, 0) == 0);
    CHECK(holds(got, 8192, 1));
    CHECK(holds(got + 8192, 8192, 2));
    /* The submit forms with a stream token. */
    int stream;
    CHECK(smem_trans_batch_read_submit(t, lr, ids[1], rr, sr, 4, &stream, 0) == 0);
    CHECK(smem_trans_batch_write_submit(t, locals, ids[1], remotes, sizes, 2, &stream, 0) == 0);
    /* Malloc'ed memory of the receiver. */
    fill(got, 4096, 5);
    CHECK(smem_trans_write(t, got, ids[1], m, 4096, 0) == 0);
    /* A batch mixing malloc'ed and registered memory of the peer, written and read back. */
    const void *ml[2] = {got, got};
    void *mr[2] = {m + 8192, b + PAIR_BYTES - 4096};
    size_t ms[2] = {4096, 4096};
    CHECK(smem_trans_batch_write(t, ml, ids[1], mr, ms, 2, 0) == 0);
    uint8_t *chk = got + 65536;
    memset(chk, 0, 8192);
    void *cl[2] = {chk, chk + 4096};
    const void *cr[2] = {m + 8192, b + PAIR_BYTES - 4096};
    CHECK(smem_trans_batch_read(t, cl, ids[1], cr, ms, 2, 0) == 0);
    CHECK(holds(chk, 4096, 5) && holds(chk + 4096, 4096, 5));
    /* Out of range: past A's end, and an address never registered. */
    CHECK(smem_trans_write(t, src, ids[1], a + PAIR_BYTES - 10, 100, 0) == -2000);
    CHECK(smem_trans_write(t, src, ids[1], (void *)(uintptr_t)0x1000, 100, 0) == -2000);
    /* A sender cannot address itself (a sender). */
    CHECK(smem_trans_write(t, src, ids[0], mine, 100, 0) == -2000);
    msg_t done = {{(uint64_t)mine}};
    send_msg(to_receiver, &done);
    CHECK(recv_msg(from_receiver, &in)); /* C deregistered */
    CHECK(smem_trans_write(t, src, ids[1], c, 100, 0) == -2000);
    printf("pair: a write into deregistered memory: %s\n", smem_get_last_err_msg());
    send_msg(to_receiver, &done);
    smem_trans_destroy(t, 0);
    smem_trans_uninit(0);
    free(src);
    free(mine);
    free(got);
    free(h1);
    free(h2);
    return failures ? 1 : 0;
}

static int scenario_pair(int v6) {
    make_ids(v6, 2);
    start_watchdog();
    CHECK(smem_create_config_store(url) == 0);
    int from, to;
    children[n_children++] = fork_child(pair_receiver, &from, &to);
    int rc = pair_sender(from, to);
    rc |= reap(1);
    printf("pair %s: %s\n", v6 ? "v6" : "v4", rc || failures ? "FAILED" : "ok");
    return rc || failures ? 1 : 0;
}

/* ---- sglang -------------------------------------------------------------------------------- */

#define LAYERS 8
#define LAYER_BYTES (256u << 10)

static uint32_t sg_index, sg_n;

/* A receiver (decode): registers its per-layer KV buffers in one batch, hands the addresses
 * out, and checks what the sender wrote into every layer. */
static int sg_receiver(int to_sender, int from_sender) {
    static char name[32];
    snprintf(name, sizeof name, "receiver %u", sg_index);
    who = name;
    smem_trans_t t = engine(sg_index, SMEM_TRANS_RECEIVER);
    void *kv[LAYERS];
    size_t lens[LAYERS];
    msg_t out;
    memset(&out, 0, sizeof out);
    for (int l = 0; l < LAYERS; l++) {
        kv[l] = calloc(1, LAYER_BYTES);
        lens[l] = LAYER_BYTES;
        out.a[l] = (uint64_t)kv[l];
    }
    CHECK(smem_trans_batch_register_mem(t, kv, lens, LAYERS, 0) == 0);
    send_msg(to_sender, &out);
    msg_t in;
    CHECK(recv_msg(from_sender, &in));
    for (int l = 0; l < LAYERS; l++) {
        /* Blocks 1 and 3 of each layer (16 KiB blocks) were written. */
        const uint8_t *p = kv[l];
        CHECK(holds(p + 16384, 16384, 100 + sg_index * LAYERS + (uint32_t)l));
        CHECK(holds(p + 3 * 16384, 16384, 200 + sg_index * LAYERS + (uint32_t)l));
        CHECK(p[0] == 0 && p[2 * 16384] == 0);
    }
    /* A receiver cannot address another receiver. */
    if (sg_n > 1) {
        uint8_t x[16] = {0};
        CHECK(smem_trans_write(t, x, ids[sg_index % sg_n + 1], kv[0], 16, 0) == -2000);
        CHECK(strstr(smem_get_last_err_msg(), "receiver") != NULL);
    }
    send_msg(to_sender, &out);
    CHECK(recv_msg(from_sender, &in)); /* all checked: end */
    smem_trans_destroy(t, 0);
    smem_trans_uninit(0);
    for (int l = 0; l < LAYERS; l++) {
        free(kv[l]);
    }
    return failures ? 1 : 0;
}

static int scenario_sglang(uint32_t n) {
    if (n < 1 || n + 1 > MAX_PROCS) {
        fprintf(stderr, "sglang: 1..%d receivers\n", MAX_PROCS - 1);
        return 2;
    }
    sg_n = n;
    make_ids(0, n + 1);
    start_watchdog();
    CHECK(smem_create_config_store(url) == 0);
    int from[MAX_PROCS], to[MAX_PROCS];
    for (uint32_t i = 1; i <= n; i++) {
        sg_index = i;
        children[n_children++] = fork_child(sg_receiver, &from[i], &to[i]);
    }
    who = "sender";
    smem_trans_t t = engine(0, SMEM_TRANS_SENDER);
    /* The prefill side's KV: per layer two 16 KiB blocks per receiver, registered. */
    uint8_t *src = malloc((size_t)LAYERS * 2 * 16384 * n);
    size_t src_len = (size_t)LAYERS * 2 * 16384 * n;
    CHECK(smem_trans_register_mem(t, src, src_len, 0) == 0);
    for (uint32_t i = 1; i <= n; i++) {
        msg_t in;
        CHECK(recv_msg(from[i], &in));
        const void *l[2 * LAYERS];
        void *r[2 * LAYERS];
        size_t s[2 * LAYERS];
        for (int k = 0; k < LAYERS; k++) {
            uint8_t *blk = src + ((size_t)(i - 1) * LAYERS + (size_t)k) * 2 * 16384;
            fill(blk, 16384, 100 + i * LAYERS + (uint32_t)k);
            fill(blk + 16384, 16384, 200 + i * LAYERS + (uint32_t)k);
            l[2 * k] = blk;
            r[2 * k] = (uint8_t *)(uintptr_t)in.a[k] + 16384;
            l[2 * k + 1] = blk + 16384;
            r[2 * k + 1] = (uint8_t *)(uintptr_t)in.a[k] + 3 * 16384;
            s[2 * k] = s[2 * k + 1] = 16384;
        }
        /* One batch write for all layers of this request. */
        CHECK(smem_trans_batch_write(t, l, ids[i], r, s, 2 * LAYERS, 0) == 0);
        send_msg(to[i], &in);
    }
    for (uint32_t i = 1; i <= n; i++) {
        msg_t in;
        CHECK(recv_msg(from[i], &in));
    }
    for (uint32_t i = 1; i <= n; i++) {
        msg_t m = {{0}};
        send_msg(to[i], &m);
    }
    smem_trans_destroy(t, 0);
    smem_trans_uninit(0);
    free(src);
    int rc = reap(n);
    printf("sglang %u: %s\n", n, rc || failures ? "FAILED" : "ok");
    return rc || failures ? 1 : 0;
}

/* ---- kill ---------------------------------------------------------------------------------- */

static int kill_receiver_child(int to_parent, int from_parent) {
    who = "receiver";
    smem_trans_t t = engine(1, SMEM_TRANS_RECEIVER);
    uint8_t *buf = calloc(1, 1 << 20);
    CHECK(smem_trans_register_mem(t, buf, 1 << 20, 0) == 0);
    msg_t out = {{(uint64_t)buf}};
    send_msg(to_parent, &out);
    msg_t in;
    recv_msg(from_parent, &in); /* killed meanwhile */
    return 0;
}

static int kill_sender_child(int to_parent, int from_parent) {
    who = "sender";
    smem_trans_t t = engine(1, SMEM_TRANS_SENDER);
    uint8_t *buf = calloc(1, 1 << 20);
    fill(buf, 1 << 20, 8);
    CHECK(smem_trans_register_mem(t, buf, 1 << 20, 0) == 0);
    msg_t out = {{(uint64_t)buf}};
    send_msg(to_parent, &out);
    msg_t in;
    recv_msg(from_parent, &in);
    return 0;
}

/* The child (process 1) plays `victim`; the parent the other role, checks a transfer works,
 * kills the child and checks the next transfers fail within a few seconds. */
static int scenario_kill(int kill_receiver) {
    make_ids(0, 2);
    start_watchdog();
    CHECK(smem_create_config_store(url) == 0);
    int from, to;
    children[n_children++] =
        fork_child(kill_receiver ? kill_receiver_child : kill_sender_child, &from, &to);
    who = kill_receiver ? "sender" : "receiver";
    smem_trans_t t = engine(0, kill_receiver ? SMEM_TRANS_SENDER : SMEM_TRANS_RECEIVER);
    msg_t in;
    CHECK(recv_msg(from, &in));
    uint8_t *peer = (uint8_t *)(uintptr_t)in.a[0];
    uint8_t *mine = calloc(1, 1 << 20);
    fill(mine, 1 << 20, 8);
    if (kill_receiver) {
        CHECK(smem_trans_write(t, mine, ids[1], peer, 1 << 20, 0) == 0);
    } else {
        memset(mine, 0, 1 << 20);
        CHECK(smem_trans_read(t, mine, ids[1], peer, 1 << 20, 0) == 0);
        CHECK(holds(mine, 1 << 20, 8));
    }
    kill(children[0], SIGKILL);
    int st;
    waitpid(children[0], &st, 0);
    children[0] = 0;
    double t0 = now_s();
    int rc = kill_receiver ? smem_trans_write(t, mine, ids[1], peer, 1 << 20, 0)
                           : smem_trans_read(t, mine, ids[1], peer, 1 << 20, 0);
    double took = now_s() - t0;
    CHECK(rc != 0);
    CHECK(took < 8.0);
    printf("kill %s: the next transfer failed after %.3f s with %d: %s\n",
           kill_receiver ? "receiver" : "sender", took, rc, smem_get_last_err_msg());
    /* And every later one. */
    rc = kill_receiver ? smem_trans_write(t, mine, ids[1], peer, 4096, 0)
                       : smem_trans_read(t, mine, ids[1], peer, 4096, 0);
    CHECK(rc != 0);
    smem_trans_destroy(t, 0);
    smem_trans_uninit(0);
    free(mine);
    printf("kill: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

/* ---- kill store ---------------------------------------------------------------------------- */

static int store_child(int to_parent, int from_parent) {
    who = "store";
    CHECK(smem_create_config_store(url) == 0);
    msg_t m = {{0}};
    send_msg(to_parent, &m);
    recv_msg(from_parent, &m); /* killed meanwhile */
    return 0;
}

/* The store's process killed (SIGKILL) while a sender and a receiver work: every later call
 * returns (a transfer between engines that know each other may still succeed), in bounded
 * time, and destroy ends both engines. */
static int scenario_kill_store(void) {
    make_ids(0, 2);
    start_watchdog();
    int sfrom, sto, from, to;
    children[n_children++] = fork_child(store_child, &sfrom, &sto);
    msg_t m;
    CHECK(recv_msg(sfrom, &m));
    children[n_children++] = fork_child(kill_receiver_child, &from, &to);
    who = "sender";
    smem_trans_t t = engine(0, SMEM_TRANS_SENDER);
    CHECK(recv_msg(from, &m));
    uint8_t *peer = (uint8_t *)(uintptr_t)m.a[0];
    uint8_t *mine = malloc(1 << 20);
    fill(mine, 1 << 20, 8);
    CHECK(smem_trans_write(t, mine, ids[1], peer, 1 << 20, 0) == 0);
    kill(children[0], SIGKILL);
    int st;
    waitpid(children[0], &st, 0);
    children[0] = 0;
    double t0 = now_s();
    int rc = smem_trans_write(t, mine, ids[1], peer, 1 << 20, 0);
    printf("kill store: a write to a known peer returned %d after %.3f s%s%s\n", rc, now_s() - t0,
           rc ? ": " : "", rc ? smem_get_last_err_msg() : "");
    CHECK(now_s() - t0 < 15.0);
    t0 = now_s();
    rc = smem_trans_write(t, mine, "127.0.0.1:1999", peer, 16, 0);
    CHECK(rc != 0);
    printf("kill store: a write to an unknown peer failed with %d after %.3f s: %s\n", rc,
           now_s() - t0, smem_get_last_err_msg());
    CHECK(now_s() - t0 < 15.0);
    t0 = now_s();
    smem_trans_destroy(t, 0);
    smem_trans_uninit(0);
    printf("kill store: destroy took %.3f s\n", now_s() - t0);
    CHECK(now_s() - t0 < 30.0);
    kill(children[1], SIGKILL);
    waitpid(children[1], &st, 0);
    children[1] = 0;
    free(mine);
    printf("kill store: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

/* ---- denied -------------------------------------------------------------------------------- */

/* Makes process_vm_writev and process_vm_readv fail with EPERM in this process, as a
 * container's seccomp profile or Yama's ptrace policy does. */
static int deny_cross_process_copies(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("seccomp");
        return -1;
    }
    return 0;
}

static int refusals;

static void count_refusals(int level, const char *msg) {
    fprintf(stderr, "log %d: %s\n", level, msg);
    if (level == 2 && strstr(msg, "refuses cross-process copies") != NULL) {
        refusals++;
    }
}

static int scenario_denied(void) {
    make_ids(0, 2);
    start_watchdog();
    CHECK(smem_set_extern_logger(count_refusals) == 0);
    CHECK(smem_set_log_level(2) == 0);
    CHECK(smem_create_config_store(url) == 0);
    CHECK(deny_cross_process_copies() == 0);
    int from, to;
    children[n_children++] = fork_child(pair_receiver, &from, &to);
    int rc = pair_sender(from, to);
    rc |= reap(1);
    /* Said once in the log, however many transfers took the other path. */
    CHECK(refusals == 1);
    printf("denied: %s\n", rc || failures ? "FAILED" : "ok");
    return rc || failures ? 1 : 0;
}

/* ---- perf ---------------------------------------------------------------------------------- */

#define PERF_MAX (64u << 20)

static int perf_receiver(int to_parent, int from_parent) {
    who = "receiver";
    smem_trans_t t = engine(1, SMEM_TRANS_RECEIVER);
    uint8_t *priv = calloc(1, PERF_MAX);
    memset(priv, 1, PERF_MAX);
    CHECK(smem_trans_register_mem(t, priv, PERF_MAX, 0) == 0);
    uint8_t *shared = smem_trans_malloc(t, PERF_MAX);
    CHECK(shared != NULL);
    msg_t out = {{(uint64_t)priv, (uint64_t)shared}};
    send_msg(to_parent, &out);
    msg_t in;
    recv_msg(from_parent, &in);
    smem_trans_destroy(t, 0);
    smem_trans_uninit(0);
    return failures ? 1 : 0;
}

static double bw(smem_trans_t t, const uint8_t *src, void *dst, size_t n, int memcpy_only) {
    int iters = n <= (64u << 10) ? 1000 : n <= (4u << 20) ? 40 : 4;
    for (int w = 0; w < 3; w++) {
        if (memcpy_only) {
            memcpy(dst, src, n);
        } else {
            CHECK(smem_trans_write(t, src, ids[1], dst, n, 0) == 0);
        }
    }
    /* The best of 5 timed rounds: the machine is shared. */
    double best = 0;
    for (int round = 0; round < 5; round++) {
        double t0 = now_s();
        for (int i = 0; i < iters; i++) {
            if (memcpy_only) {
                memcpy(dst, src, n);
                __asm__ volatile("" ::: "memory");
            } else if (smem_trans_write(t, src, ids[1], dst, n, 0) != 0) {
                return 0;
            }
        }
        double gbs = (double)n * iters / (now_s() - t0) / 1e9;
        best = gbs > best ? gbs : best;
    }
    return best;
}

static int scenario_perf(int denied) {
    make_ids(0, 2);
    CHECK(smem_create_config_store(url) == 0);
    if (denied) {
        CHECK(deny_cross_process_copies() == 0);
    }
    int from, to;
    children[n_children++] = fork_child(perf_receiver, &from, &to);
    who = "sender";
    smem_trans_t t = engine(0, SMEM_TRANS_SENDER);
    uint8_t *src = malloc(PERF_MAX), *local = malloc(PERF_MAX);
    memset(src, 2, PERF_MAX);
    memset(local, 3, PERF_MAX);
    msg_t in;
    CHECK(recv_msg(from, &in));
    printf("%-9s %14s %14s %14s\n", "size", "memcpy GB/s", denied ? "private(ucx)" : "private(vm)",
           "malloc(map)");
    for (size_t n = 4096; n <= PERF_MAX; n *= 4) {
        double m = bw(t, src, local, n, 1);
        double p = bw(t, src, (void *)(uintptr_t)in.a[0], n, 0);
        double s = bw(t, src, (void *)(uintptr_t)in.a[1], n, 0);
        printf("%-9zu %14.2f %14.2f %14.2f\n", n, m, p, s);
    }
    msg_t m = {{0}};
    send_msg(to, &m);
    smem_trans_destroy(t, 0);
    smem_trans_uninit(0);
    return reap(1) || failures ? 1 : 0;
}

/* ---- node ---------------------------------------------------------------------------------- */

/* One side of a job whose sides are started apart (two namespaces, as two nodes): files in a
 * folder both see carry the addresses, as SGLang's bootstrap server does. */

/* node <url> <own id> <peer id> <sender|receiver> <dir> [serve] [kill]: the receiver registers
 * its KV layers in one batch and mallocs a buffer; the sender writes every layer in one batch
 * write and the buffer, reads them back, and is refused out of range; the receiver checks
 * what arrived and reads the sender's buffer. With "kill" (the sender's), the job then kills
 * the receiver and writes "killed": the sender's next batch write fails in bounded time. */
static int scenario_node(char **argv, int argc) {
    const char *store = argv[2], *peer = argv[4], *dir = argv[6];
    int sender = strcmp(argv[5], "sender") == 0;
    who = sender ? "sender" : "receiver";
    snprintf(url, sizeof url, "%s", store);
    snprintf(ids[0], sizeof ids[0], "%s", argv[3]);
    start_watchdog();
    int kill_phase = 0;
    for (int i = 7; i < argc; i++) {
        if (strcmp(argv[i], "serve") == 0) {
            CHECK(smem_create_config_store(url) == 0);
        } else if (strcmp(argv[i], "kill") == 0) {
            kill_phase = 1;
        }
    }
    smem_trans_t t = engine(0, sender ? SMEM_TRANS_SENDER : SMEM_TRANS_RECEIVER);
    msg_t m;
    memset(&m, 0, sizeof m);
    if (!sender) {
        void *kv[LAYERS];
        size_t lens[LAYERS];
        for (int l = 0; l < LAYERS; l++) {
            kv[l] = calloc(1, LAYER_BYTES);
            lens[l] = LAYER_BYTES;
            m.a[l] = (uint64_t)kv[l];
        }
        CHECK(smem_trans_batch_register_mem(t, kv, lens, LAYERS, 0) == 0);
        uint8_t *buf = smem_trans_malloc(t, 2u << 20);
        CHECK(buf != NULL);
        m.a[LAYERS] = (uint64_t)buf;
        put_file(dir, "receiver", &m);
        msg_t in;
        CHECK(get_file(dir, "sent", &in));
        for (int l = 0; l < LAYERS; l++) {
            CHECK(holds(kv[l], LAYER_BYTES, 300 + (uint32_t)l));
        }
        if (buf != NULL) {
            CHECK(holds(buf + 4096, 65536, 400));
        }
        /* Across the nodes the other way: the receiver reads the sender's registration. */
        uint8_t *got = malloc(1u << 20);
        CHECK(smem_trans_read(t, got, peer, (void *)(uintptr_t)in.a[0], 1u << 20, 0) == 0);
        CHECK(holds(got, 1u << 20, 500));
        put_file(dir, "checked", &m);
        /* With "kill", the job kills this process here (SIGKILL) and the sender sees it. */
        CHECK(get_file(dir, "done", &in));
        if (buf != NULL) {
            CHECK(smem_trans_free(t, buf) == 0);
        }
        free(got);
    } else {
        uint8_t *src = malloc((size_t)LAYERS * LAYER_BYTES), *mine = malloc(1u << 20);
        fill(mine, 1u << 20, 500);
        CHECK(smem_trans_register_mem(t, mine, 1u << 20, 0) == 0);
        msg_t in;
        CHECK(get_file(dir, "receiver", &in));
        const void *l[LAYERS];
        void *r[LAYERS];
        size_t sz[LAYERS];
        for (int k = 0; k < LAYERS; k++) {
            fill(src + (size_t)k * LAYER_BYTES, LAYER_BYTES, 300 + (uint32_t)k);
            l[k] = src + (size_t)k * LAYER_BYTES;
            r[k] = (void *)(uintptr_t)in.a[k];
            sz[k] = LAYER_BYTES;
        }
        double t0 = now_s();
        CHECK(smem_trans_batch_write(t, l, peer, r, sz, LAYERS, 0) == 0);
        printf("node: one batch write of %d x %u KiB over the network took %.3f s\n", LAYERS,
               LAYER_BYTES >> 10, now_s() - t0);
        uint8_t *small = malloc(65536);
        fill(small, 65536, 400);
        CHECK(smem_trans_write(t, small, peer, (uint8_t *)(uintptr_t)in.a[LAYERS] + 4096, 65536,
                               0) == 0);
        /* Read back every layer in one batch. */
        uint8_t *back = calloc(1, (size_t)LAYERS * LAYER_BYTES);
        void *lb[LAYERS];
        const void *rb[LAYERS];
        for (int k = 0; k < LAYERS; k++) {
            lb[k] = back + (size_t)k * LAYER_BYTES;
            rb[k] = r[k];
        }
        CHECK(smem_trans_batch_read(t, lb, peer, rb, sz, LAYERS, 0) == 0);
        CHECK(memcmp(back, src, (size_t)LAYERS * LAYER_BYTES) == 0);
        CHECK(smem_trans_write(t, small, peer, (uint8_t *)r[0] + LAYER_BYTES - 8, 16, 0) == -2000);
        msg_t out = {{(uint64_t)mine}};
        put_file(dir, "sent", &out);
        CHECK(get_file(dir, "checked", &in));
        if (kill_phase) {
            /* The job killed the receiver: transfers to it fail in bounded time. */
            CHECK(get_file(dir, "killed", &in));
            t0 = now_s();
            int rc = smem_trans_batch_write(t, l, peer, r, sz, LAYERS, 0);
            double took = now_s() - t0;
            CHECK(rc != 0);
            CHECK(took < 15.0);
            printf("node: a batch write to the killed receiver failed after %.3f s: %s\n", took,
                   smem_get_last_err_msg());
        } else {
            put_file(dir, "done", &out);
        }
        free(src);
        free(small);
        free(back);
    }
    smem_trans_destroy(t, 0);
    smem_trans_uninit(0);
    printf("node %s: %s\n", who, failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr,
                "usage: trans_engine errors|pair v4|v6|sglang <n>|kill sender|receiver|"
                "denied|perf [denied]|node <url> <id> <peer id> <role> <dir> [serve] [kill]\n");
        return 2;
    }
    const char *s = argv[1];
    if (strcmp(s, "errors") == 0) {
        return scenario_errors();
    }
    if (strcmp(s, "pair") == 0 && argc > 2) {
        return scenario_pair(strcmp(argv[2], "v6") == 0);
    }
    if (strcmp(s, "sglang") == 0 && argc > 2) {
        return scenario_sglang((uint32_t)atoi(argv[2]));
    }
    if (strcmp(s, "kill") == 0 && argc > 2 && strcmp(argv[2], "store") == 0) {
        return scenario_kill_store();
    }
    if (strcmp(s, "kill") == 0 && argc > 2) {
        return scenario_kill(strcmp(argv[2], "receiver") == 0);
    }
    if (strcmp(s, "denied") == 0) {
        return scenario_denied();
    }
    if (strcmp(s, "node") == 0 && argc > 6) {
        return scenario_node(argv, argc);
    }
    if (strcmp(s, "perf") == 0) {
        return scenario_perf(argc > 2 && strcmp(argv[2], "denied") == 0);
    }
    fprintf(stderr, "trans_engine: unknown scenario '%s'\n", s);
    return 2;
}
