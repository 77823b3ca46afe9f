/*
 * mf_bm_copy.c: memfabric_hybrid's Big Memory copies (smem_bm_copy, libmf_smem.so) between the
 * host pools of N ranks, and the time a member takes to join a pool. It uses only memfabric's
 * C API (smem/host/smem_bm.h), so it also builds against memfabric_hybrid itself.
 *
 *   --mode copy (default)  every rank initialises Big Memory over --store, creates one host
 *                          pool whose segment covers the largest size plus a control area,
 *                          fills its own segment with a pattern and joins; rank 0 then times
 *                          smem_bm_copy to and from rank 1's segment (the pool "G" side):
 *                            G2H  rank 1's segment -> a buffer of rank 0
 *                            H2G  a buffer of rank 0 -> rank 1's segment
 *                          (rank 0's buffers registered with smem_bm_register_user_mem, as
 *                          memfabric's users register the buffers they copy from and into)
 *                            G2G  rank 0's own segment -> rank 1's segment
 *                          one record per size for latency (ns per blocking call) and one for
 *                          bandwidth (GB/s); --ops G2H_async,H2G_async,G2G_async (not by
 *                          default) time the same copies streamed (ASYNC_COPY_FLAG, smem_bm_wait
 *                          after every --window of them, default 64, and at the end), the way
 *                          ucx_perftest's bandwidth tests keep the wire busy. A trial of writes
 *                          ends with an 8-byte copy with
 *                          ASYNC_COPY_FLAG and smem_bm_wait, so that it counts until the data is
 *                          at rank 1 on any transport. The memcpy floor is timed in every trial,
 *                          right before the copies, with the same iterations, between memory of
 *                          the same kinds: records memcpy_G2H (a memfd mapping standing for rank
 *                          1's segment -> the local buffer), memcpy_H2G (local buffer -> that
 *                          mapping) and memcpy_G2G (own segment -> that mapping); the memfd is
 *                          mapped shared as the library maps segments. Outside the timed loops
 *                          every trial is
 * checked: G2H against the pattern rank 1 wrote, H2G and G2G by reading rank 1's segment back (G2H)
 * and comparing every byte. At the end rank 1 (and any further rank) checks in its own segment the
 * bytes rank 0 wrote last, so every process checks data another one wrote.
 *   --mode join            --fork only: the time of smem_bm_join of the 1st..Nth member, each
 *                          join started once the one before returned (members already in take
 *                          part without a call), for two objects in turn: "join", the process's
 *                          first (it sets up the host transport), and "join_next", a second one;
 *                          --trials fresh sets of N processes, one figure per object and member
 *                          position (size = 0, npes = the member's position).
 *
 * Ranks: --fork starts --world processes here (ranks 0..N-1, explicit ranking, as memfabric's
 * forked tests do) and waits for them; otherwise this process is one rank: --rank R (explicit)
 * or no --rank (memfabric's auto ranking). Rank 0 (or, with auto ranking, the process that wins
 * the bind) hosts the store at --store tcp://IP:PORT. --hcom tcp://IP[/MASK]:PORT is memfabric's
 * hcomUrl (the host transport's interface). --op-type names memfabric's data-op type (sdma,
 * host_rdma, host_tcp, device_rdma); without an NPU every type is served by the host paths.
 *
 * The ranks meet through the pool itself (no other channel, so it runs across nodes): the
 * first 64 KiB of each segment are control words, one 64-byte slot per writing rank; a rank
 * posts an epoch into every other rank's slot with smem_bm_copy (H2G, retried while the peer has
 * not joined yet) and waits for its own slots. Every process has a watchdog (--timeout).
 * Other options: bench/common.h (--sizes --ops --trials --warmup --iters --budget). Sweep:
 * mf_bm_copy.sweep. Instructions per call: with BENCH_CALLGRIND=1 under valgrind
 * --tool=callgrind --collect-atstart=no --trace-children=yes, rank 0 counts the timed
 * smem_bm_copy loops only and dumps them per copy type and size (bench/report.py callgrind).
 */
#define BENCH_NO_SHMEM
#include "common.h"

#include <signal.h>
#include <smem/host/smem.h>
#include <smem/host/smem_bm.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define CTRL_BYTES (64u << 10)  /* control area at the start of every segment */
#define SLOT_BYTES 64u          /* one per writing rank */
#define POOL_ALIGN (2ull << 20) /* memfabric's pool sizes are multiples of 2 MiB */
#define RESULT_WORDS 2          /* rank 0's last write: seed, length (after the slots) */
#define SCRATCH_WORD 3          /* rank 0's end-of-trial copy lands here (before the results) */
#define PEER_SEED_BASE 1000u    /* rank r fills its own segment with seed 1000 + r */

static bench_opts_t opt;
static double samples[BENCH_MAX_TRIALS];

/* This program's own options (the rest go to bench_parse). */
static struct {
    char store[256];
    char hcom[64];
    int world;
    int rank; /* -1: auto ranking */
    int fork;
    int timeout_s;
    smem_bm_data_op_type op_type;
} cfg = {"", "", 2, -1, 0, 300, SMEMB_DATA_OP_HOST_TCP};

static volatile sig_atomic_t quiet_logs; /* while retrying a post: memfabric's log lines dropped */

static void logger(int level, const char *msg) {
    if (!quiet_logs)
        fprintf(stderr, "mf_bm_copy: rank %d: smem log %d: %s\n", bench_me, level, msg);
}

static pid_t children[BENCH_MAX_LIST * 16]; /* --fork: the ranks this process started */

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "mf_bm_copy: watchdog: --timeout expired, ending\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    for (size_t i = 0; i < sizeof children / sizeof children[0]; i++)
        if (children[i] > 0) kill(children[i], SIGKILL);
    _exit(3);
}

static void watchdog(int seconds) {
    signal(SIGALRM, on_alarm);
    alarm((unsigned)seconds);
}

/* Dies naming the call, its return code and memfabric's last error message. */
static void check_rc(int32_t rc, const char *call) {
    if (rc != 0) bench_die("%s returned %d: %s", call, rc, smem_get_last_err_msg());
}

static int parse_int(const char *opt_name, const char *v, int lo, int hi) {
    char *end;
    long x = strtol(v, &end, 10);
    if (*v == 0 || *end || x < lo || x > hi) bench_die("%s %s: not in %d..%d", opt_name, v, lo, hi);
    return (int)x;
}

/* Takes this program's options out of argv; returns the new argc. */
static int parse_own(int argc, char **argv) {
    int out = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--fork")) {
            cfg.fork = 1;
            continue;
        }
        int own = !strcmp(a, "--store") || !strcmp(a, "--hcom") || !strcmp(a, "--world") ||
                  !strcmp(a, "--rank") || !strcmp(a, "--timeout") || !strcmp(a, "--op-type");
        if (!own) {
            argv[out++] = argv[i];
            continue;
        }
        if (!v) bench_die("option %s needs a value", a);
        if (!strcmp(a, "--store")) {
            if (strlen(v) >= sizeof cfg.store) bench_die("--store %s: too long", v);
            snprintf(cfg.store, sizeof cfg.store, "%s", v);
        } else if (!strcmp(a, "--hcom")) {
            if (strlen(v) >= sizeof cfg.hcom) bench_die("--hcom %s: longer than 63", v);
            snprintf(cfg.hcom, sizeof cfg.hcom, "%s", v);
        } else if (!strcmp(a, "--world")) {
            cfg.world = parse_int(a, v, 2, (int)(CTRL_BYTES / SLOT_BYTES) - 1);
        } else if (!strcmp(a, "--rank")) {
            cfg.rank = parse_int(a, v, 0, 65534);
        } else if (!strcmp(a, "--timeout")) {
            cfg.timeout_s = parse_int(a, v, 1, 86400);
        } else {
            static const struct {
                const char *name;
                smem_bm_data_op_type type;
            } types[] = {{"sdma", SMEMB_DATA_OP_SDMA},
                         {"host_rdma", SMEMB_DATA_OP_HOST_RDMA},
                         {"host_tcp", SMEMB_DATA_OP_HOST_TCP},
                         {"device_rdma", SMEMB_DATA_OP_DEVICE_RDMA}};
            size_t k = 0;
            while (k < sizeof types / sizeof types[0] && strcmp(types[k].name, v)) k++;
            if (k == sizeof types / sizeof types[0])
                bench_die("--op-type %s: not one of sdma, host_rdma, host_tcp, device_rdma", v);
            cfg.op_type = types[k].type;
        }
        i++;
    }
    argv[out] = NULL;
    return out;
}

/* "tcp://HOST:PORT" with PORT + delta (join trials use a fresh store port each). */
static void url_with_port_offset(char *dst, size_t len, const char *url, int delta) {
    const char *colon = strrchr(url, ':');
    char *end;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || colon[1] == 0 || *end || port < 1 || port + delta > 65535)
        bench_die("--store %s: not tcp://IP:PORT", url);
    snprintf(dst, len, "%.*s:%ld", (int)(colon - url), url, port + delta);
}

/* ---- one rank: Big Memory up and down -------------------------------------------------------- */

typedef struct {
    smem_bm_t h;
    int rank;
    size_t seg;         /* bytes per rank (maxDramSize = localDRAMSize) */
    char **base;        /* base[r]: rank r's host segment */
    uint64_t local_buf; /* 8 bytes a post copies from */
} pool_t;

/* Object `id`: a host pool of `seg` bytes per rank, this rank backing all of its own. */
static smem_bm_t create_pool(uint32_t id, size_t seg) {
    smem_bm_create_option_t o;
    memset(&o, 0, sizeof o);
    o.maxDramSize = o.localDRAMSize = seg;
    o.dataOpType = cfg.op_type;
    o.dramShmFd = -1;
    smem_bm_t h = smem_bm_create2(id, &o);
    if (!h)
        bench_die("smem_bm_create2(id %u, %zu bytes of DRAM) returned NULL: %s", id, seg,
                  smem_get_last_err_msg());
    return h;
}

static void bm_up(pool_t *p, const char *url, size_t data_bytes) {
    check_rc(smem_init(0), "smem_init");
    check_rc(smem_set_extern_logger(logger), "smem_set_extern_logger");
    smem_bm_config_t c;
    check_rc(smem_bm_config_init(&c), "smem_bm_config_init");
    if (cfg.rank >= 0) {
        c.autoRanking = false;
        c.rankId = (uint16_t)cfg.rank;
    }
    snprintf(c.hcomUrl, sizeof c.hcomUrl, "%s", cfg.hcom);
    check_rc(smem_bm_init(url, (uint32_t)cfg.world, 0, &c), "smem_bm_init");
    p->rank = (int)smem_bm_get_rank_id();
    bench_me = p->rank;
    p->seg = (CTRL_BYTES + data_bytes + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
    p->h = create_pool(0, p->seg);
    p->base = calloc((size_t)cfg.world, sizeof *p->base);
    if (!p->base) bench_die("out of memory");
    for (int r = 0; r < cfg.world; r++) {
        p->base[r] = smem_bm_ptr_by_mem_type(p->h, SMEM_MEM_TYPE_HOST, (uint16_t)r);
        if (!p->base[r])
            bench_die("smem_bm_ptr_by_mem_type(HOST, %d) returned NULL: %s", r,
                      smem_get_last_err_msg());
    }
    if (p->base[1] - p->base[0] != (ptrdiff_t)p->seg)
        bench_die("rank 1's segment is at base + %td, expected base + %zu (maxDramSize)",
                  p->base[1] - p->base[0], p->seg);
    /* The control area starts at zero: a fresh segment may hold anything. */
    memset(p->base[p->rank], 0, CTRL_BYTES);
}

static void bm_down(pool_t *p) {
    smem_bm_destroy(p->h);
    smem_bm_uninit(0);
    smem_uninit();
    free(p->base);
}

static volatile uint64_t *slot(pool_t *p, int owner, int writer) {
    return (volatile uint64_t *)(p->base[owner] + (size_t)writer * SLOT_BYTES);
}

/* Rank 0's last write into the segment of `owner` (seed, length), after the slots. */
static uint64_t *result_words(pool_t *p, int owner) {
    return (uint64_t *)(p->base[owner] + CTRL_BYTES - RESULT_WORDS * sizeof(uint64_t));
}

static char *data_of(pool_t *p, int r) { return p->base[r] + CTRL_BYTES; }

static void *scratch_of(pool_t *p, int r) {
    return p->base[r] + CTRL_BYTES - SCRATCH_WORD * sizeof(uint64_t);
}

/* One blocking copy of n bytes; 0 or memfabric's code. */
static int32_t copy(pool_t *p, const void *src, void *dst, size_t n, smem_bm_copy_type t) {
    smem_copy_params c = {src, dst, n};
    return smem_bm_copy(p->h, &c, t, 0);
}

/* The i-th of a stream of copies: ASYNC_COPY_FLAG, then smem_bm_wait after every `window` of
 * them; 0 or memfabric's code. */
static int32_t copy_streamed(pool_t *p, const void *src, void *dst, size_t n, smem_bm_copy_type t,
                             long i, int window) {
    smem_copy_params c = {src, dst, n};
    int32_t rc = smem_bm_copy(p->h, &c, t, ASYNC_COPY_FLAG);
    if (rc == 0 && (i + 1) % window == 0) rc = smem_bm_wait(p->h);
    return rc;
}

/* A copy known to have landed: ASYNC_COPY_FLAG, then smem_bm_wait, which completes every copy
 * this process issued to the ranks involved (the blocking ones before it too, on transports
 * where a blocking copy returns once its source may be reused). */
static int32_t copy_landed(pool_t *p, const void *src, void *dst, size_t n) {
    smem_copy_params c = {src, dst, n};
    int32_t rc = smem_bm_copy(p->h, &c, SMEMB_COPY_H2G, ASYNC_COPY_FLAG);
    return rc != 0 ? rc : smem_bm_wait(p->h);
}

/* Writes `value` into the slot of this rank in `peer`'s control area, retrying while the peer
 * cannot be reached yet (it has not joined), until the watchdog ends it. */
static void post(pool_t *p, int peer, uint64_t value) {
    p->local_buf = value;
    quiet_logs = 1;
    int32_t rc;
    long tries = 0;
    while ((rc = copy_landed(p, &p->local_buf, (void *)slot(p, peer, p->rank), sizeof value)) !=
           0) {
        if (++tries % 2000 == 0)
            fprintf(stderr, "mf_bm_copy: rank %d: rank %d not reachable yet (%d: %s)\n", p->rank,
                    peer, rc, smem_get_last_err_msg());
        usleep(1000);
    }
    quiet_logs = 0;
}

/* Waits until rank `from` has posted at least `epoch` into this rank's area. */
static void wait_from(pool_t *p, int from, uint64_t epoch) {
    /* Short sleeps first, then 2 ms ones: a rank waiting out rank 0's timed copies must leave
     * it the CPU (2 cores here). */
    for (long i = 0; __atomic_load_n(slot(p, p->rank, from), __ATOMIC_ACQUIRE) < epoch; i++)
        usleep(i < 1000 ? 100 : 2000);
}

/* Waits until every other rank has posted at least `epoch` into this rank's area. */
static void wait_posted(pool_t *p, uint64_t epoch) {
    for (int r = 0; r < cfg.world; r++)
        if (r != p->rank) wait_from(p, r, epoch);
}

static void barrier(pool_t *p, uint64_t epoch) {
    for (int r = 0; r < cfg.world; r++)
        if (r != p->rank) post(p, r, epoch);
    wait_posted(p, epoch);
}

/* ---- copy mode ------------------------------------------------------------------------------ */

static const struct {
    const char *name;
    smem_bm_copy_type type;
    int streamed; /* ASYNC_COPY_FLAG, smem_bm_wait every --window copies (no floor timed) */
    const char *form;
    const char *floor_name; /* the memcpy of the same kinds, timed in the same trials */
    const char *floor_form;
} OPS[] = {
    /* G2H first: it reads the pattern rank 1 wrote before H2G and G2G overwrite it. */
    {"G2H", SMEMB_COPY_G2H, 0, "smem_bm_copy(SMEMB_COPY_G2H): peer's host segment -> local malloc",
     "memcpy_G2H", "glibc memcpy: memfd mapping -> local malloc, in the same trials as G2H"},
    {"H2G", SMEMB_COPY_H2G, 0, "smem_bm_copy(SMEMB_COPY_H2G): local malloc -> peer's host segment",
     "memcpy_H2G", "glibc memcpy: local malloc -> memfd mapping, in the same trials as H2G"},
    {"G2G", SMEMB_COPY_G2G, 0,
     "smem_bm_copy(SMEMB_COPY_G2G): own host segment -> peer's host segment", "memcpy_G2G",
     "glibc memcpy: own host segment -> memfd mapping, in the same trials as G2G"},
    /* The same copies streamed, as memfabric's users move KV-cache blocks and as ucx_perftest's
     * bandwidth tests run: each with ASYNC_COPY_FLAG, smem_bm_wait after every --window of them
     * and at the end (a G2H reads what G2G wrote last). */
    {"G2H_async", SMEMB_COPY_G2H, 1,
     "smem_bm_copy(SMEMB_COPY_G2H, ASYNC_COPY_FLAG), smem_bm_wait every --window copies", NULL,
     NULL},
    {"H2G_async", SMEMB_COPY_H2G, 1,
     "smem_bm_copy(SMEMB_COPY_H2G, ASYNC_COPY_FLAG), smem_bm_wait every --window copies", NULL,
     NULL},
    {"G2G_async", SMEMB_COPY_G2G, 1,
     "smem_bm_copy(SMEMB_COPY_G2G, ASYNC_COPY_FLAG), smem_bm_wait every --window copies", NULL,
     NULL},
};

static void *page_buffer(size_t n) {
    void *b =
        mmap(NULL, n + BENCH_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) bench_die("mmap of %zu bytes failed: %s", n, strerror(errno));
    return b;
}

/* The memcpy floor's stand-in for rank 1's segment: memory of the kind a host pool's segment
 * is (a memfd mapped shared, as the library maps its segments and its peers'), written once
 * so that no timed memcpy takes its page faults. */
static void *segment_like_buffer(size_t n) {
    int fd = memfd_create("mf_bm_copy-floor", MFD_CLOEXEC);
    if (fd < 0) bench_die("memfd_create failed: %s", strerror(errno));
    if (ftruncate(fd, (off_t)(n + BENCH_PAGE)) != 0)
        bench_die("ftruncate of the floor's memfd to %zu bytes failed: %s", n, strerror(errno));
    void *b = mmap(NULL, n + BENCH_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (b == MAP_FAILED) bench_die("mmap of the floor's memfd failed: %s", strerror(errno));
    close(fd);
    memset(b, 0, n + BENCH_PAGE);
    return b;
}

/* ns per call of `iters` glibc memcpys of n bytes from `from` to `to`, after one untimed. */
static double time_memcpy(const void *from, void *to, size_t n, long iters) {
    void *(*volatile mc)(void *, const void *, size_t) = memcpy; /* glibc's, never inlined */
    mc(to, from, n);
    double t0 = bench_now_ns();
    for (long i = 0; i < iters; i++) mc(to, from, n);
    return (bench_now_ns() - t0) / (double)iters;
}

static void emit_both(bench_fig_t *f, double *s) {
    f->metric = "latency";
    f->unit = "ns";
    bench_emit(f, bench_stats(s, opt.trials));
    bench_to_rate(s, opt.trials, (double)f->size); /* bytes per ns = GB/s */
    f->metric = "bandwidth";
    f->unit = "GB/s";
    bench_emit(f, bench_stats(s, opt.trials));
}

static void run_copies(pool_t *p, size_t max_n) {
    const int peer = 1;
    char *src = page_buffer(max_n), *chk = page_buffer(max_n), *twin = segment_like_buffer(max_n);
    char *own = data_of(p, p->rank), *remote = data_of(p, peer);
    check_rc(smem_bm_register_user_mem(p->h, (uint64_t)(uintptr_t)src, max_n),
             "smem_bm_register_user_mem");
    check_rc(smem_bm_register_user_mem(p->h, (uint64_t)(uintptr_t)chk, max_n),
             "smem_bm_register_user_mem");
    uint64_t last[RESULT_WORDS] = {PEER_SEED_BASE + (unsigned)peer, max_n};
    unsigned serial = 0;
    static double floor_samples[BENCH_MAX_TRIALS];
    for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++) {
        if (!bench_has_op(&opt, OPS[k].name)) continue;
        const smem_bm_copy_type t = OPS[k].type;
        const int streamed = OPS[k].streamed;
        for (int s = 0; s < opt.nsizes; s++) {
            const size_t n = opt.sizes[s];
            const long iters = bench_iters_for(&opt, n);
            const char *from = t == SMEMB_COPY_G2H ? remote : t == SMEMB_COPY_H2G ? src : own;
            char *to = t == SMEMB_COPY_G2H ? chk : remote;
            /* The floor's memcpy: the same source and destination kinds, rank 1's segment
             * stood in for by `twin` (a memfd mapping like it). */
            const char *floor_from = t == SMEMB_COPY_G2H ? twin : from;
            char *floor_to = t == SMEMB_COPY_G2H ? chk : twin;
            for (int tr = -opt.warmup; tr < opt.trials; tr++) {
                unsigned seed = (unsigned)last[0];
                if (t != SMEMB_COPY_G2H) {
                    seed = 7919u * ++serial + (unsigned)n;
                    bench_fill((void *)from, n, seed);
                }
                /* The floor, in this trial, right before the copies (seconds apart on a busy
                 * machine would compare different machines). */
                if (!streamed) {
                    double floor_ns = time_memcpy(floor_from, floor_to, n, iters);
                    if (tr >= 0) floor_samples[tr] = floor_ns;
                }
                if (t == SMEMB_COPY_G2H) {
                    if (n > last[1])
                        bench_die("G2H of %zu bytes: only %llu known", n,
                                  (unsigned long long)last[1]);
                    memset(chk, 0, n);
                }
                /* One untimed copy first, so that both sides start in the caches as the
                 * floor's do (time_memcpy's untimed one); otherwise the pool side starts cold
                 * after the previous trial's check, which a trial of few iterations does not
                 * amortise where the two buffers are about the last-level cache's size. */
                if (copy(p, from, to, n, t) != 0)
                    bench_die("untimed smem_bm_copy(%s, %zu bytes): %s", OPS[k].name, n,
                              smem_get_last_err_msg());
                double t0 = bench_now_ns();
                if (tr >= 0) BENCH_CG_TOGGLE();
                for (long i = 0; i < iters; i++) {
                    int32_t rc = streamed ? copy_streamed(p, from, to, n, t, i, opt.window)
                                          : copy(p, from, to, n, t);
                    if (rc != 0)
                        bench_die("smem_bm_copy(%s, %zu bytes) returned %d: %s", OPS[k].name, n, rc,
                                  smem_get_last_err_msg());
                }
                if (streamed && smem_bm_wait(p->h) != 0)
                    bench_die("smem_bm_wait after %s (%zu bytes): %s", OPS[k].name, n,
                              smem_get_last_err_msg());
                if (tr >= 0) BENCH_CG_TOGGLE();
                /* Writes: the trial ends when the data is at rank 1, whatever the transport's
                 * rule for a blocking copy's return. */
                if (t != SMEMB_COPY_G2H) {
                    int32_t rc = copy_landed(p, &p->local_buf, scratch_of(p, peer), 8);
                    if (rc != 0)
                        bench_die("end-of-trial smem_bm_copy(ASYNC) + smem_bm_wait returned %d: %s",
                                  rc, smem_get_last_err_msg());
                }
                double ns = (bench_now_ns() - t0) / (double)iters;
                if (tr >= 0) samples[tr] = ns;
                if (t != SMEMB_COPY_G2H) {
                    /* Read back what landed in rank 1's segment. */
                    memset(chk, 0, n);
                    int32_t rc = copy(p, remote, chk, n, SMEMB_COPY_G2H);
                    if (rc != 0)
                        bench_die("read-back smem_bm_copy(G2H, %zu bytes) returned %d: %s", n, rc,
                                  smem_get_last_err_msg());
                    last[0] = seed;
                    last[1] = n;
                }
                bench_check(chk, n, seed, OPS[k].name);
            }
            bench_fig_t f = {"mf_bm_copy",
                             OPS[k].name,
                             OPS[k].form,
                             "latency",
                             "ns",
                             cfg.world,
                             n,
                             "host-pool",
                             bench_alignment(remote),
                             0,
                             0,
                             0,
                             iters,
                             opt.trials};
            bench_cg_dump(&f, iters * opt.trials);
            if (streamed) f.window = opt.window;
            emit_both(&f, samples);
            if (streamed) continue;
            f.name = OPS[k].floor_name;
            f.form = OPS[k].floor_form;
            emit_both(&f, floor_samples);
        }
    }
    /* What rank 1 holds now, for its own check: into rank 1's control area, then the epoch. */
    int32_t rc = copy_landed(p, last, result_words(p, peer), sizeof last);
    if (rc != 0)
        bench_die("smem_bm_copy of the final seed returned %d: %s", rc, smem_get_last_err_msg());
    check_rc(smem_bm_unregister_user_mem(p->h, (uint64_t)(uintptr_t)src),
             "smem_bm_unregister_user_mem");
    check_rc(smem_bm_unregister_user_mem(p->h, (uint64_t)(uintptr_t)chk),
             "smem_bm_unregister_user_mem");
    munmap(src, max_n + BENCH_PAGE);
    munmap(chk, max_n + BENCH_PAGE);
    munmap(twin, max_n + BENCH_PAGE);
}

static size_t largest_size(void) {
    size_t max_n = 0;
    for (int s = 0; s < opt.nsizes; s++)
        if (opt.sizes[s] > max_n) max_n = opt.sizes[s];
    if (max_n == 0) bench_die("--sizes: at least one size above 0");
    return max_n;
}

static int copy_rank(const char *url) {
    const size_t max_n = largest_size();
    pool_t p;
    bm_up(&p, url, max_n);
    /* The own segment is CPU memory: a pattern another rank checks (rank 1's, by rank 0's G2H). */
    bench_fill(data_of(&p, p.rank), max_n, PEER_SEED_BASE + (unsigned)p.rank);
    check_rc(smem_bm_join(p.h, 0), "smem_bm_join");
    barrier(&p, 1); /* everyone joined */
    if (p.rank == 0) {
        run_copies(&p, max_n);
        for (int r = 1; r < cfg.world; r++) post(&p, r, 2); /* done */
        wait_posted(&p, 3);                                 /* everyone checked */
    } else {
        wait_from(&p, 0, 2);
        const uint64_t *res = result_words(&p, p.rank);
        if (p.rank == 1) {
            bench_check(data_of(&p, 1), res[1], (unsigned)res[0], "rank 0's last write");
        } else {
            bench_check(data_of(&p, p.rank), max_n, PEER_SEED_BASE + (unsigned)p.rank,
                        "own pattern");
        }
        post(&p, 0, 3);
    }
    bm_down(&p);
    return 0;
}

/* ---- join mode ------------------------------------------------------------------------------ */

/* Two objects per process, joined in member order: the first is the process's first join
 * (the host transport is set up then), the second a join with the transport in place. */
#define JOIN_OBJECTS 2
static const char *const JOIN_NAMES[JOIN_OBJECTS] = {"join", "join_next"};
static const char *const JOIN_FORMS[JOIN_OBJECTS] = {
    "smem_bm_join of the member at this position (npes), the process's first object; the "
    "members already in take part without a call",
    "smem_bm_join of the member at this position (npes), a second object of the same "
    "processes; the members already in take part without a call"};

typedef struct {
    int next[JOIN_OBJECTS]; /* per object: the member position whose turn it is */
    int torn_down;          /* ranks 1.. that have finished */
    double join_ns[JOIN_OBJECTS][BENCH_MAX_LIST];
} join_page_t;

static void ordered_join(join_page_t *pg, int k, smem_bm_t h, int rank) {
    /* Waiting members sleep between looks, so that they leave the CPUs to the joining one. */
    while (__atomic_load_n(&pg->next[k], __ATOMIC_ACQUIRE) != rank) usleep(200);
    double t0 = bench_now_ns();
    check_rc(smem_bm_join(h, 0), "smem_bm_join");
    pg->join_ns[k][rank] = bench_now_ns() - t0;
    __atomic_add_fetch(&pg->next[k], 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&pg->next[k], __ATOMIC_ACQUIRE) < cfg.world) usleep(1000);
}

static void join_rank(join_page_t *pg, const char *url) {
    pool_t p;
    bm_up(&p, url, BENCH_PAGE);
    ordered_join(pg, 0, p.h, p.rank);
    smem_bm_t second = create_pool(1, p.seg);
    ordered_join(pg, 1, second, p.rank);
    if (p.rank == 0) /* the store's host goes last */
        while (__atomic_load_n(&pg->torn_down, __ATOMIC_ACQUIRE) < cfg.world - 1) usleep(1000);
    smem_bm_destroy(second);
    bm_down(&p);
    if (p.rank != 0) __atomic_add_fetch(&pg->torn_down, 1, __ATOMIC_RELEASE);
}

/* ---- processes ------------------------------------------------------------------------------ */

static void kill_children(int n) {
    for (int i = 0; i < n; i++)
        if (children[i] > 0) kill(children[i], SIGKILL);
}

/* Starts cfg.world ranks (explicit ranks 0..N-1) running fn(arg, url) and waits for them; the
 * first failure ends the others. Returns 0 when all exited 0. */
static int fork_ranks(void (*fn)(void *, const char *), void *arg, const char *url) {
    fflush(NULL);
    for (int r = 0; r < cfg.world; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            kill_children(r);
            bench_die("fork failed: %s", strerror(errno));
        }
        if (pid == 0) {
            memset(children, 0, sizeof children);
            cfg.rank = r;
            bench_me = r;
            watchdog(cfg.timeout_s);
            fn(arg, url);
            fflush(NULL);
            _exit(0);
        }
        children[r] = pid;
    }
    int failed = 0;
    for (int left = cfg.world; left > 0; left--) {
        int status;
        pid_t pid = wait(&status);
        if (pid < 0) break;
        for (int r = 0; r < cfg.world; r++) {
            if (children[r] != pid) continue;
            children[r] = 0;
            if (!WIFEXITED(status) || WEXITSTATUS(status)) {
                if (!failed)
                    fprintf(stderr, "mf_bm_copy: rank %d %s %d; ending the others\n", r,
                            WIFEXITED(status) ? "exited with" : "was killed by signal",
                            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                failed = 1;
                kill_children(cfg.world);
            }
        }
    }
    return failed;
}

static void copy_entry(void *arg, const char *url) {
    (void)arg;
    copy_rank(url);
}

static void join_entry(void *arg, const char *url) { join_rank(arg, url); }

static void run_join(const char *url) {
    if (cfg.world > BENCH_MAX_LIST) bench_die("--mode join: --world up to %d", BENCH_MAX_LIST);
    static double per[JOIN_OBJECTS][BENCH_MAX_LIST][BENCH_MAX_TRIALS];
    join_page_t *pg =
        mmap(NULL, sizeof *pg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (pg == MAP_FAILED) bench_die("mmap failed: %s", strerror(errno));
    for (int t = -opt.warmup; t < opt.trials; t++) {
        char u[sizeof cfg.store];
        url_with_port_offset(u, sizeof u, url, t + opt.warmup);
        memset(pg, 0, sizeof *pg);
        if (fork_ranks(join_entry, pg, u)) bench_die("join trial %d failed", t);
        if (t >= 0)
            for (int k = 0; k < JOIN_OBJECTS; k++)
                for (int m = 0; m < cfg.world; m++) per[k][m][t] = pg->join_ns[k][m];
    }
    for (int k = 0; k < JOIN_OBJECTS; k++)
        for (int m = 0; m < cfg.world; m++) {
            bench_fig_t f = {"mf_bm_copy",
                             JOIN_NAMES[k],
                             JOIN_FORMS[k],
                             "latency",
                             "ns",
                             m + 1,
                             0,
                             "host-pool",
                             BENCH_PAGE,
                             0,
                             0,
                             0,
                             1,
                             opt.trials};
            bench_emit(&f, bench_stats(per[k][m], opt.trials));
        }
}

int main(int argc, char **argv) {
    argc = parse_own(argc, argv);
    bench_parse(&opt, argc, argv, "G2H,H2G,G2G", "4K-64M", 256u << 20);
    bench_cg_init();
    if (!opt.mode[0]) snprintf(opt.mode, sizeof opt.mode, "copy");
    snprintf(bench_lib, sizeof bench_lib, "memfabric smem_bm (libmf_smem)");
    if (cfg.rank >= cfg.world) bench_die("--rank %d: not below --world %d", cfg.rank, cfg.world);
    if (!cfg.store[0]) {
        if (!cfg.fork) bench_die("--store tcp://IP:PORT is needed without --fork");
        /* Below Linux's ephemeral ports (32768 and up), where a connection's own port can
         * take the one the store binds. */
        snprintf(cfg.store, sizeof cfg.store, "tcp://127.0.0.1:%d", 20000 + getpid() % 10000);
    }
    if (!strcmp(opt.mode, "join")) {
        if (!cfg.fork)
            bench_die("--mode join needs --fork (the members' order is kept in memory they share)");
        watchdog(cfg.timeout_s + 10);
        run_join(cfg.store);
        return 0;
    }
    if (strcmp(opt.mode, "copy")) bench_die("--mode must be copy or join");
    if (cfg.fork) {
        watchdog(cfg.timeout_s + 10);
        return fork_ranks(copy_entry, NULL, cfg.store) ? 1 : 0;
    }
    watchdog(cfg.timeout_s);
    bench_me = cfg.rank;
    copy_entry(NULL, cfg.store);
    return 0;
}
