/* trans_npu.c: memfabric_hybrid's transfer engine (smem_trans.h, libmf_smem.so) on the npu device,
 * run over the ACL stand-in in strict mode (NPU memory is never CPU memory): every check of NPU
 * memory reads it through ACL's copy. Usage: trans_npu <scenario>:
 *
 *   pair    a receiver and a sender, forked, on devices 0 and 1, each with NPU memory mapped as
 *           torch_npu's expandable segments map it (aclrtMallocPhysical + aclrtMapMem) and
 *           registered: write, read, batch write and batch read, NPU -> NPU, host -> NPU and
 *           NPU -> host (both ways); the *_submit forms on an ACL stream, synchronised; NPU memory
 *           deregistered, then refused; tensors as torch_npu's caching allocator hands them out
 *           (two ranges at offsets inside one aclrtMalloc block, shared by IPC key) written and
 *           read, then deregistered and refused; the receiver's engine destroyed, then refused; the
 *           receiver checks what the sender wrote, the sender what it read; once both ended, all
 *           of the receiver's device memory allocates again
 *   devid   Big Memory initialised with deviceId 0, then the transfer engine with deviceId 1: -1,
 *           naming both
 *   kill    a receiver (device 0) with mapped NPU memory and an aclrtMalloc block registered, a
 *           sender (device 1) that wrote into both (importing them); the receiver killed (-9):
 *           the sender's engine unmaps both imports (checked in /proc/self/maps), in bounded
 *           time, and a write to the dead receiver fails
 *   node    one side of a job on two nodes (tests/multinode/memfabric_trans_npu_netns.sh): host
 *           memory and the sender's NPU memory written into the receiver's host memory over the
 *           network; the receiver's NPU memory refused both ways, naming the other node
 *
 * ACL's calls are the library's own (SHMEM_ACL_LIBRARY), found with dlsym: the program is never
 * linked to ACL. A watchdog ends a job that hangs. Exit 0 when every check held. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <smem/host/smem.h>
#include <smem/host/smem_bm.h>
#include <smem/host/smem_trans.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "acl_standin.h"

#define MF_TEST_MAX_RANKS 2
#include "mf_test.h"

#define WATCHDOG_S 90
#define MIB (1u << 20)
#define BLOCK (2u * MIB) /* the stand-in's granularity */

static int failures;
static const char *who = "main";

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "trans_npu: %s: %s:%d: %s failed (last error: %s)\n", who, __FILE__,   \
                    __LINE__, #cond, smem_get_last_err_msg());                                     \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* ---- ACL, as the program sees it --------------------------------------------------------- */

static aclError (*p_memcpy)(void *, size_t, const void *, size_t, aclrtMemcpyKind);
static aclError (*p_reserve)(void **, size_t, size_t, void *, uint64_t);
static aclError (*p_release)(void *);
static aclError (*p_malloc_physical)(aclrtDrvMemHandle *, size_t, const aclrtPhysicalMemProp *,
                                     uint64_t);
static aclError (*p_free_physical)(aclrtDrvMemHandle);
static aclError (*p_map)(void *, size_t, size_t, aclrtDrvMemHandle, uint64_t);
static aclError (*p_unmap)(void *);
static aclError (*p_create_stream)(aclrtStream *);
static aclError (*p_sync_stream)(aclrtStream);
static aclError (*p_destroy_stream)(aclrtStream);
static aclError (*p_malloc)(void **, size_t, aclrtMemMallocPolicy);
static aclError (*p_free)(void *);

static void *sym(void *h, const char *name) {
    void *f = dlsym(h, name);
    if (f == NULL) {
        fprintf(stderr, "trans_npu: ACL lacks %s\n", name);
        exit(2);
    }
    return f;
}

static void acl_load(void) {
    const char *lib = getenv("SHMEM_ACL_LIBRARY");
    void *h = dlopen(lib != NULL && lib[0] != '\0' ? lib : "libascendcl.so", RTLD_NOW);
    if (h == NULL) {
        fprintf(stderr, "trans_npu: %s\n", dlerror());
        exit(2);
    }
    *(void **)&p_memcpy = sym(h, "aclrtMemcpy");
    *(void **)&p_reserve = sym(h, "aclrtReserveMemAddress");
    *(void **)&p_release = sym(h, "aclrtReleaseMemAddress");
    *(void **)&p_malloc_physical = sym(h, "aclrtMallocPhysical");
    *(void **)&p_free_physical = sym(h, "aclrtFreePhysical");
    *(void **)&p_map = sym(h, "aclrtMapMem");
    *(void **)&p_unmap = sym(h, "aclrtUnmapMem");
    *(void **)&p_create_stream = sym(h, "aclrtCreateStream");
    *(void **)&p_sync_stream = sym(h, "aclrtSynchronizeStream");
    *(void **)&p_destroy_stream = sym(h, "aclrtDestroyStream");
    *(void **)&p_malloc = sym(h, "aclrtMalloc");
    *(void **)&p_free = sym(h, "aclrtFree");
}

/* NPU memory of `size` bytes on `device`, mapped at the start of a range of its own. */
typedef struct {
    uint8_t *va;
    aclrtDrvMemHandle handle;
    size_t size;
} npu_block;

static npu_block npu_alloc(uint32_t device, size_t size) {
    npu_block b = {NULL, NULL, size};
    aclrtPhysicalMemProp prop;
    memset(&prop, 0, sizeof prop);
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    void *va = NULL;
    CHECK(p_reserve(&va, size, 0, NULL, 0) == ACL_SUCCESS);
    CHECK(p_malloc_physical(&b.handle, size, &prop, 0) == ACL_SUCCESS);
    CHECK(p_map(va, size, 0, b.handle, 0) == ACL_SUCCESS);
    b.va = va;
    return b;
}

static void npu_free(npu_block b) {
    CHECK(p_unmap(b.va) == ACL_SUCCESS);
    CHECK(p_free_physical(b.handle) == ACL_SUCCESS);
    CHECK(p_release(b.va) == ACL_SUCCESS);
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
            fprintf(stderr, "trans_npu: %s: byte %zu is %u, expected %u (writer %u)\n", who, i,
                    p[i], pat(w, i), w);
            return 0;
        }
    }
    return 1;
}

/* Pattern `w` into NPU memory at `at` (through a host buffer and ACL's copy). */
static void npu_fill(uint8_t *at, size_t n, uint32_t w) {
    uint8_t *h = malloc(n);
    fill(h, n, w);
    CHECK(p_memcpy(at, n, h, n, ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS);
    free(h);
}

/* Whether NPU memory at `at` holds pattern `w` (read by ACL's copy: strict mode faults a CPU
 * load). */
static int npu_holds(const uint8_t *at, size_t n, uint32_t w) {
    uint8_t *h = malloc(n);
    int ok = p_memcpy(h, n, at, n, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS && holds(h, n, w);
    free(h);
    return ok;
}

static char url[64], ids[2][64];

static smem_trans_t engine(uint32_t device, uint32_t i, smem_trans_role_t role) {
    smem_trans_config_t c;
    CHECK(smem_trans_config_init(&c) == 0);
    c.role = role;
    c.deviceId = device;
    c.dataOpType = SMEMB_DATA_OP_SDMA;
    c.initTimeout = 30;
    CHECK(smem_trans_init(&c) == 0);
    smem_trans_t t = smem_trans_create(url, ids[i], &c);
    CHECK(t != NULL);
    return t;
}

/* ---- pair ------------------------------------------------------------------------------------ */

/* The receiver's NPU block D (4 MiB, registered whole), by 1 MiB quarter. */
enum { Q_D2D = 0, Q_H2D = 1, Q_READ = 2, Q_BATCH = 3 };
#define HALF (MIB / 2)
/* Tensors in an aclrtMalloc block of the receiver (1 MiB): T1 (HALF) and T2 (4 KiB), at
 * offsets. */
#define T_BLOCK MIB
#define T1_AT (4096 + 64)
#define T2_AT (HALF + 8192 + 128)

/* The receiver (device 0): NPU blocks D (the sender writes and reads it) and E (for submits, then
 * deregistered), a host buffer H (the sender writes NPU memory into it and reads it back). */
static int pair_receiver(int to_sender, int from_sender) {
    who = "receiver";
    smem_trans_t t = engine(0, 0, SMEM_TRANS_RECEIVER);
    npu_block d = npu_alloc(0, 2 * BLOCK), e = npu_alloc(0, BLOCK);
    uint8_t *h = calloc(1, MIB);
    npu_fill(d.va + Q_READ * MIB, MIB, 3);
    void *addrs[2] = {d.va, h};
    size_t caps[2] = {d.size, MIB};
    CHECK(smem_trans_batch_register_mem(t, addrs, caps, 2, 0) == 0);
    CHECK(smem_trans_register_mem(t, e.va, e.size, 0) == 0);
    CHECK(smem_trans_register_mem(t, d.va + MIB, MIB, 0) == 0); /* inside D: nothing new */
    uint8_t *tb = NULL;
    CHECK(p_malloc((void **)&tb, T_BLOCK, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
    npu_fill(tb + T1_AT + HALF / 2, HALF / 2, 5);
    CHECK(smem_trans_register_mem(t, tb + T1_AT, HALF, 0) == 0);
    CHECK(smem_trans_register_mem(t, tb + T2_AT, 4096, 0) == 0);
    /* Past the block's end: refused. */
    CHECK(smem_trans_register_mem(t, tb + T2_AT, MIB, 0) != 0);
    msg_t out = {{(uint64_t)(uintptr_t)d.va, (uint64_t)(uintptr_t)e.va, (uint64_t)(uintptr_t)h,
                  (uint64_t)(uintptr_t)tb}};
    send_msg(to_sender, &out);
    msg_t in;
    CHECK(recv_msg(from_sender, &in)); /* written */
    CHECK(npu_holds(d.va + Q_D2D * MIB, MIB, 1));
    CHECK(npu_holds(d.va + Q_H2D * MIB, MIB, 2));
    CHECK(npu_holds(d.va + Q_BATCH * MIB, HALF, 1));
    CHECK(npu_holds(d.va + Q_BATCH * MIB + HALF, HALF, 2));
    CHECK(holds(h, MIB, 1)); /* NPU -> host */
    CHECK(npu_holds(e.va, HALF, 4));
    CHECK(npu_holds(e.va + HALF, HALF / 2, 1));
    CHECK(npu_holds(e.va + HALF + HALF / 2, HALF / 2, 2));
    CHECK(npu_holds(tb + T1_AT, HALF / 2, 1));            /* NPU -> tensor */
    CHECK(npu_holds(tb + T2_AT, 4096, 2));                /* host -> tensor */
    CHECK(npu_holds(tb + T1_AT + HALF / 2, HALF / 2, 5)); /* untouched, read by the sender */
    /* E and T1 withdrawn: the sender's next writes to them are refused. */
    CHECK(smem_trans_deregister_mem(t, e.va) == 0);
    CHECK(smem_trans_deregister_mem(t, tb + T1_AT) == 0);
    send_msg(to_sender, &out);
    CHECK(recv_msg(from_sender, &in)); /* the sender is done */
    CHECK(npu_holds(e.va, HALF, 4));   /* untouched since */
    CHECK(npu_holds(tb + T1_AT, HALF / 2, 1));
    CHECK(npu_holds(tb + T2_AT, 16, 6)); /* T2 stayed registered */
    smem_trans_destroy(t, 0);
    send_msg(to_sender, &out); /* destroyed: the sender's next write fails */
    CHECK(recv_msg(from_sender, &in));
    smem_trans_uninit(0);
    npu_free(e);
    npu_free(d);
    CHECK(p_free(tb) == ACL_SUCCESS);
    /* Nothing of the library's holds device memory now: all of it allocates again. */
    npu_block all = npu_alloc(0, 4 * BLOCK);
    npu_free(all);
    free(h);
    return failures ? 1 : 0;
}

/* The sender (device 1): an NPU block S (registered), host buffers. */
static int pair_sender(int to_receiver, int from_receiver) {
    who = "sender";
    smem_trans_t t = engine(1, 1, SMEM_TRANS_SENDER);
    npu_block s = npu_alloc(1, BLOCK);
    CHECK(smem_trans_register_mem(t, s.va, s.size, 0) == 0);
    uint8_t *host = malloc(MIB), *back = malloc(MIB);
    msg_t in;
    CHECK(recv_msg(from_receiver, &in));
    uint8_t *d = (uint8_t *)(uintptr_t)in.a[0], *e = (uint8_t *)(uintptr_t)in.a[1];
    uint8_t *h = (uint8_t *)(uintptr_t)in.a[2];
    const char *peer = ids[0];

    /* NPU -> NPU and host -> NPU writes. */
    npu_fill(s.va, MIB, 1);
    CHECK(smem_trans_write(t, s.va, peer, d + Q_D2D * MIB, MIB, 0) == 0);
    fill(host, MIB, 2);
    CHECK(smem_trans_write(t, host, peer, d + Q_H2D * MIB, MIB, 0) == 0);
    /* Reads: NPU -> host and NPU -> NPU. */
    memset(back, 0, MIB);
    CHECK(smem_trans_read(t, back, peer, d + Q_READ * MIB, MIB, 0) == 0);
    CHECK(holds(back, MIB, 3));
    CHECK(smem_trans_read(t, s.va + MIB, peer, d + Q_READ * MIB, MIB, 0) == 0);
    CHECK(npu_holds(s.va + MIB, MIB, 3));
    /* A batch write of both kinds of local memory, and a batch read of both. */
    const void *wl[2] = {s.va, host};
    void *wr[2] = {d + Q_BATCH * MIB, d + Q_BATCH * MIB + HALF};
    size_t ws[2] = {HALF, HALF};
    CHECK(smem_trans_batch_write(t, wl, peer, wr, ws, 2, 0) == 0);
    void *rl[2] = {back, s.va + MIB};
    const void *rr[2] = {d + Q_D2D * MIB, d + Q_H2D * MIB};
    memset(back, 0, MIB);
    CHECK(smem_trans_batch_read(t, rl, peer, rr, ws, 2, 0) == 0);
    CHECK(holds(back, HALF, 1));
    CHECK(npu_holds(s.va + MIB, HALF, 2));
    /* NPU memory into the receiver's host memory and back. */
    CHECK(smem_trans_write(t, s.va, peer, h, MIB, 0) == 0);
    CHECK(smem_trans_read(t, s.va + MIB, peer, h, HALF, 0) == 0);
    CHECK(npu_holds(s.va + MIB, HALF, 1));
    /* Submits on a stream: enqueued, done once the stream is synchronised. */
    aclrtStream st = NULL;
    CHECK(p_create_stream(&st) == ACL_SUCCESS);
    fill(host, MIB, 4);
    CHECK(smem_trans_write_submit(t, host, peer, e, HALF, st, 0) == 0);
    const void *bl[2] = {s.va, host};
    void *br[2] = {e + HALF, e + HALF + HALF / 2};
    size_t bs[2] = {HALF / 2, HALF / 2};
    uint8_t *host2 = malloc(HALF / 2);
    fill(host2, HALF / 2, 2);
    bl[1] = host2;
    CHECK(smem_trans_batch_write_submit(t, bl, peer, br, bs, 2, st, 0) == 0);
    CHECK(p_sync_stream(st) == ACL_SUCCESS);
    CHECK(smem_trans_read_submit(t, s.va + MIB, peer, e, HALF, st, 0) == 0);
    void *sl[1] = {back};
    const void *sr[1] = {e + HALF};
    size_t ss[1] = {HALF / 2};
    memset(back, 0, MIB);
    CHECK(smem_trans_batch_read_submit(t, sl, peer, sr, ss, 1, st, 0) == 0);
    CHECK(p_sync_stream(st) == ACL_SUCCESS);
    CHECK(npu_holds(s.va + MIB, HALF, 4));
    CHECK(holds(back, HALF / 2, 1));
    /* Tensors inside the receiver's aclrtMalloc block: written and read at their offsets. */
    uint8_t *tb = (uint8_t *)(uintptr_t)in.a[3];
    CHECK(smem_trans_write(t, s.va, peer, tb + T1_AT, HALF / 2, 0) == 0);
    fill(host, 4096, 2);
    CHECK(smem_trans_write(t, host, peer, tb + T2_AT, 4096, 0) == 0);
    memset(back, 0, MIB);
    CHECK(smem_trans_read(t, back, peer, tb + T1_AT + HALF / 2, HALF / 2, 0) == 0);
    CHECK(holds(back, HALF / 2, 5));
    CHECK(smem_trans_read(t, s.va + MIB, peer, tb + T2_AT, 4096, 0) == 0);
    CHECK(npu_holds(s.va + MIB, 4096, 2));
    /* Past the tensor's end: refused. */
    CHECK(smem_trans_write(t, host, peer, tb + T2_AT + 4000, 200, 0) != 0);
    msg_t out = {{1}};
    send_msg(to_receiver, &out);
    /* E deregistered: refused before anything moves. */
    CHECK(recv_msg(from_receiver, &in));
    CHECK(smem_trans_write(t, host, peer, e, HALF, 0) == -2000);
    CHECK(strstr(smem_get_last_err_msg(), "not inside") != NULL);
    printf("pair: a write to deregistered NPU memory: %s\n", smem_get_last_err_msg());
    CHECK(smem_trans_write_submit(t, host, peer, e, HALF, st, 0) == -2000);
    CHECK(smem_trans_write(t, host, peer, tb + T1_AT, HALF / 2, 0) == -2000);
    printf("pair: a write to a deregistered tensor: %s\n", smem_get_last_err_msg());
    fill(host, 16, 6);
    CHECK(smem_trans_write(t, host, peer, tb + T2_AT, 16, 0) == 0);
    CHECK(p_destroy_stream(st) == ACL_SUCCESS);
    /* D is still there. */
    CHECK(smem_trans_write(t, s.va, peer, d + Q_D2D * MIB, 16, 0) == 0);
    send_msg(to_receiver, &out);
    /* The receiver destroyed its engine: refused, naming it. */
    CHECK(recv_msg(from_receiver, &in));
    CHECK(smem_trans_write(t, s.va, peer, d + Q_D2D * MIB, 16, 0) == -1);
    CHECK(strstr(smem_get_last_err_msg(), "gone") != NULL);
    printf("pair: a write to a destroyed peer's NPU memory: %s\n", smem_get_last_err_msg());
    send_msg(to_receiver, &out);
    smem_trans_deregister_mem(t, s.va);
    smem_trans_destroy(t, 0);
    smem_trans_uninit(0);
    npu_free(s);
    free(host);
    free(host2);
    free(back);
    return failures ? 1 : 0;
}

/* A store on 127.0.0.1 served by this process (the job's parent) and the two engines' ids. */
static void serve_store(void) {
    snprintf(url, sizeof url, "tcp://127.0.0.1:%u", free_port());
    unsigned port = free_port();
    for (int i = 0; i < 2; i++) {
        snprintf(ids[i], sizeof ids[i], "127.0.0.1:%u", 20000 + port % 20000 + (unsigned)i);
    }
    CHECK(smem_create_config_store(url) == 0);
}

static int scenario_pair(void) {
    serve_store();
    int r2s[2], s2r[2];
    if (pipe(r2s) != 0 || pipe(s2r) != 0) {
        perror("pipe");
        return 2;
    }
    for (int i = 0; i < 2; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            acl_load();
            _exit(i == 0 ? pair_receiver(r2s[1], s2r[0]) : pair_sender(s2r[1], r2s[0]));
        }
        children[n_children++] = pid;
    }
    int bad = 0;
    for (uint32_t i = 0; i < n_children; i++) {
        int st = 0;
        if (waitpid(children[i], &st, 0) != children[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "trans_npu: process %u ended with status %#x\n", i, st);
            bad = 1;
        }
    }
    printf("pair: %s\n", bad || failures ? "FAILED" : "ok");
    return bad || failures ? 1 : 0;
}

/* ---- kill ------------------------------------------------------------------------------------ */

/* Distinct ACL stand-in memory objects (memfds) mapped in this process: its own device memory and
 * what it imported from peers. */
static int standin_objects(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) {
        perror("/proc/self/maps");
        return -1;
    }
    unsigned long inodes[64];
    int n = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, "memfd:acl-standin-")) continue;
        unsigned long inode = 0;
        if (sscanf(line, "%*s %*s %*s %*s %lu", &inode) != 1) continue;
        int seen = 0;
        for (int i = 0; i < n; i++) seen |= inodes[i] == inode;
        if (!seen && n < 64) inodes[n++] = inode;
    }
    fclose(f);
    return n;
}

/* The receiver (device 0): NPU block D (mapped, shared by handle) and an aclrtMalloc block T
 * (shared by IPC key), registered; it waits to be killed. */
static int kill_receiver(int to_sender) {
    who = "receiver";
    smem_trans_t t = engine(0, 0, SMEM_TRANS_RECEIVER);
    npu_block d = npu_alloc(0, BLOCK);
    uint8_t *tb = NULL;
    CHECK(p_malloc((void **)&tb, T_BLOCK, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
    CHECK(smem_trans_register_mem(t, d.va, d.size, 0) == 0);
    CHECK(smem_trans_register_mem(t, tb, T_BLOCK, 0) == 0);
    msg_t out = {{(uint64_t)(uintptr_t)d.va, (uint64_t)(uintptr_t)tb, (uint64_t)failures}};
    send_msg(to_sender, &out);
    for (;;) pause(); /* killed by the parent */
}

/* The sender (device 1): writes into both of the receiver's blocks (importing them), reports,
 * and once the receiver was killed, waits until both imports are unmapped (the engine saw the
 * peer die), then finds a write to it refused. */
static int kill_sender(int to_parent, int from_parent, int from_receiver) {
    who = "sender";
    smem_trans_t t = engine(1, 1, SMEM_TRANS_SENDER);
    npu_block s = npu_alloc(1, BLOCK);
    CHECK(smem_trans_register_mem(t, s.va, s.size, 0) == 0);
    const int own = standin_objects();
    msg_t in;
    CHECK(recv_msg(from_receiver, &in));
    CHECK(in.a[2] == 0); /* the receiver's checks held */
    uint8_t *d = (uint8_t *)(uintptr_t)in.a[0], *tb = (uint8_t *)(uintptr_t)in.a[1];
    const char *peer = ids[0];
    npu_fill(s.va, MIB, 7);
    CHECK(smem_trans_write(t, s.va, peer, d, MIB, 0) == 0);
    CHECK(smem_trans_write(t, s.va, peer, tb, HALF, 0) == 0);
    const int with_imports = standin_objects();
    CHECK(with_imports == own + 2);
    msg_t out = {{1}};
    send_msg(to_parent, &out);
    CHECK(recv_msg(from_parent, &in)); /* the receiver is dead */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int now = with_imports;
    for (int i = 0; i < 1200 && (now = standin_objects()) != own; i++) usleep(50 * 1000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double s_gone = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK(now == own);
    printf(
        "kill: the dead receiver's 2 imports unmapped after %.2f s (objects mapped: %d -> %d, "
        "own %d)\n",
        s_gone, with_imports, now, own);
    CHECK(smem_trans_write(t, s.va, peer, d, 16, 0) != 0);
    printf("kill: a write to the dead receiver's NPU memory: %s\n", smem_get_last_err_msg());
    smem_trans_deregister_mem(t, s.va);
    smem_trans_destroy(t, 0);
    smem_trans_uninit(0);
    npu_free(s);
    return failures ? 1 : 0;
}

static int scenario_kill(void) {
    serve_store();
    int r2s[2], s2p[2], p2s[2];
    if (pipe(r2s) != 0 || pipe(s2p) != 0 || pipe(p2s) != 0) {
        perror("pipe");
        return 2;
    }
    for (int i = 0; i < 2; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            acl_load();
            _exit(i == 0 ? kill_receiver(r2s[1]) : kill_sender(s2p[1], p2s[0], r2s[0]));
        }
        children[n_children++] = pid;
    }
    msg_t m;
    int bad = !recv_msg(s2p[0], &m); /* the sender imported the receiver's memory */
    kill(children[0], SIGKILL);
    int st = 0;
    waitpid(children[0], &st, 0);
    children[0] = 0;
    send_msg(p2s[1], &m);
    if (waitpid(children[1], &st, 0) != children[1] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "trans_npu: the sender ended with status %#x\n", st);
        bad = 1;
    }
    printf("kill: %s\n", bad || failures ? "FAILED" : "ok");
    return bad || failures ? 1 : 0;
}

/* ---- node ------------------------------------------------------------------------------------ */

/* node <url> <own id> <peer id> <sender|receiver> <dir> [serve]: one side of a job whose sides
 * run on two nodes (network namespaces), both on the npu device. The receiver registers NPU
 * block D and host buffer H; the sender writes host memory and its own NPU memory into H (over
 * the network), and finds D refused both ways, naming the other node; the receiver checks H. */
static int scenario_node(char **argv, int argc) {
    const char *peer = argv[4], *dir = argv[6];
    const int sender = strcmp(argv[5], "sender") == 0;
    who = sender ? "sender" : "receiver";
    snprintf(url, sizeof url, "%s", argv[2]);
    snprintf(ids[sender], sizeof ids[sender], "%s", argv[3]);
    acl_load();
    if (argc > 7 && strcmp(argv[7], "serve") == 0) {
        CHECK(smem_create_config_store(url) == 0);
    }
    smem_trans_t t =
        engine(sender ? 1 : 0, (uint32_t)sender, sender ? SMEM_TRANS_SENDER : SMEM_TRANS_RECEIVER);
    msg_t in, out;
    memset(&out, 0, sizeof out);
    if (!sender) {
        npu_block d = npu_alloc(0, BLOCK);
        uint8_t *h = calloc(1, MIB);
        npu_fill(d.va, HALF, 3);
        CHECK(smem_trans_register_mem(t, d.va, d.size, 0) == 0);
        CHECK(smem_trans_register_mem(t, h, MIB, 0) == 0);
        out.a[0] = (uint64_t)(uintptr_t)d.va;
        out.a[1] = (uint64_t)(uintptr_t)h;
        put_file(dir, "receiver", &out);
        CHECK(get_file(dir, "sent", &in));
        CHECK(holds(h, HALF, 8));        /* host -> host, over the network */
        CHECK(holds(h + HALF, HALF, 9)); /* the sender's NPU memory -> host */
        CHECK(npu_holds(d.va, HALF, 3)); /* refused: untouched */
        put_file(dir, "checked", &out);
        CHECK(get_file(dir, "done", &in));
        smem_trans_deregister_mem(t, h);
        smem_trans_deregister_mem(t, d.va);
        smem_trans_destroy(t, 0);
        smem_trans_uninit(0);
        npu_free(d);
        free(h);
    } else {
        npu_block s = npu_alloc(1, BLOCK);
        CHECK(smem_trans_register_mem(t, s.va, s.size, 0) == 0);
        uint8_t *host = malloc(MIB);
        CHECK(get_file(dir, "receiver", &in));
        uint8_t *d = (uint8_t *)(uintptr_t)in.a[0], *h = (uint8_t *)(uintptr_t)in.a[1];
        fill(host, HALF, 8);
        CHECK(smem_trans_write(t, host, peer, h, HALF, 0) == 0);
        npu_fill(s.va, HALF, 9);
        CHECK(smem_trans_write(t, s.va, peer, h + HALF, HALF, 0) == 0);
        /* The peer's NPU memory on the other node: refused, naming it, both ways. */
        CHECK(smem_trans_write(t, host, peer, d, HALF, 0) == -1);
        CHECK(strstr(smem_get_last_err_msg(), "another node") != NULL);
        printf("node: a write to NPU memory of another node: %s\n", smem_get_last_err_msg());
        CHECK(smem_trans_read(t, s.va, peer, d, HALF, 0) == -1);
        CHECK(strstr(smem_get_last_err_msg(), "another node") != NULL);
        CHECK(smem_trans_read(t, host, peer, h, HALF, 0) == 0); /* host memory still is */
        CHECK(holds(host, HALF, 8));
        put_file(dir, "sent", &out);
        CHECK(get_file(dir, "checked", &in));
        put_file(dir, "done", &out);
        smem_trans_deregister_mem(t, s.va);
        smem_trans_destroy(t, 0);
        smem_trans_uninit(0);
        npu_free(s);
        free(host);
    }
    printf("node %s: %s\n", who, failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}

/* ---- devid ----------------------------------------------------------------------------------- */

static int scenario_devid(void) {
    who = "devid";
    acl_load();
    snprintf(url, sizeof url, "tcp://127.0.0.1:%u", free_port());
    smem_bm_config_t c;
    CHECK(smem_bm_config_init(&c) == 0);
    c.rankId = 0;
    c.initTimeout = 30;
    CHECK(smem_bm_init(url, 1, 0, &c) == 0);
    smem_trans_config_t tc;
    CHECK(smem_trans_config_init(&tc) == 0);
    tc.deviceId = 1;
    CHECK(smem_trans_init(&tc) == -1);
    const char *m = smem_get_last_err_msg();
    CHECK(strstr(m, "deviceId=1") != NULL && strstr(m, "device 0") != NULL);
    printf("devid: %s\n", m);
    tc.deviceId = 0; /* the same device: fine */
    CHECK(smem_trans_init(&tc) == 0);
    smem_trans_uninit(0);
    smem_bm_uninit(0);
    printf("devid: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGALRM, watchdog);
    alarm(WATCHDOG_S);
    if (argc == 2 && strcmp(argv[1], "pair") == 0) {
        return scenario_pair();
    }
    if (argc == 2 && strcmp(argv[1], "devid") == 0) {
        return scenario_devid();
    }
    if (argc == 2 && strcmp(argv[1], "kill") == 0) {
        return scenario_kill();
    }
    if (argc >= 7 && strcmp(argv[1], "node") == 0) {
        return scenario_node(argv, argc);
    }
    fprintf(stderr,
            "usage: trans_npu pair|devid|kill|node <url> <id> <peer id> <role> <dir> "
            "[serve]\n");
    return 2;
}
