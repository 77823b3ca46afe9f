/* torch_seq.c: the contract torch_npu relies on. torch_npu dlopens "libshmem.so" by that name and
 * resolves its calls with dlsym; this program does the same (it is not linked with the library)
 * and runs torch_npu's sequence on every PE: store TLS off, a unique id made by PE 0 and handed
 * to the others (here through a file), attributes, init, malloc, ptr, put and get on an ACL
 * stream, free, finalize. Two forms: `shmem` (the older names torch_npu resolves: shmem_set_attr,
 * shmem_init_attr, ...) and `aclshmem` (CANN's current ones). Usage:
 *   torch_seq shmem|aclshmem UID_FILE
 * under shmemrun (rank and size from its variables) with SHMEM_DEVICE=npu over the ACL stand-in. */
#include <aclshmem.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl_standin.h"
#define NPU_CHECK_NO_SHMEM
#include "npu_check.h"
#include "share_id.h"

#define N 8192
#define HEAP (64u << 20)

static int rank = -1;

static void *lib;

/* The symbol `name` of libshmem.so; the program stops when it is missing. */
static void *sym(const char *name) {
    void *p = dlsym(lib, name);
    CHECK(p != NULL, "dlsym(libshmem.so, %s): %s", name, dlerror());
    return p;
}

/* Every name torch_npu resolves, and the on-stream forms. */
static const char *const kNames[] = {
    "aclshmem_finalize",
    "aclshmem_free",
    "aclshmem_malloc",
    "aclshmem_ptr",
    "aclshmemx_get_uniqueid",
    "aclshmemx_getmem_on_stream",
    "aclshmemx_init_attr",
    "aclshmemx_putmem_on_stream",
    "aclshmemx_set_attr_uniqueid_args",
    "aclshmemx_set_conf_store_tls",
    "shmem_finalize",
    "shmem_free",
    "shmem_get_uniqueid",
    "shmem_malloc",
    "shmem_ptr",
    "shmem_set_attr",
    "shmem_set_attr_uniqueid_args",
    "shmem_set_conf_store_tls",
    "shmem_init_attr",
    "shmem_putmem_on_stream",
    "shmem_getmem_on_stream",
    "shmemx_putmem_on_stream",
    "shmemx_getmem_on_stream",
    "aclshmemx_quiet_on_stream",
    "aclshmemx_signal_op_on_stream",
    "aclshmemx_signal_wait_until_on_stream",
    "aclshmemx_barrier_on_stream",
    "aclshmemx_barrier_all_on_stream",
    "aclshmemx_set_attr",
};

static int env_int(const char *name) {
    const char *v = getenv(name);
    CHECK(v != NULL, "%s is not set (run under shmemrun)", name);
    return atoi(v);
}

static unsigned char pattern(int pe, size_t i) { return (unsigned char)(pe * 13 + i * 3 + 5); }

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "shmem") != 0 && strcmp(argv[1], "aclshmem") != 0)) {
        fprintf(stderr, "usage: torch_seq shmem|aclshmem UID_FILE\n");
        return 2;
    }
    int old = strcmp(argv[1], "shmem") == 0;
    rank = check_pe = env_int("SHMEM_RUN_RANK");
    int n = env_int("SHMEM_RUN_SIZE");
    lib = dlopen("libshmem.so", RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL, "dlopen(libshmem.so): %s", dlerror());
    for (size_t i = 0; i < sizeof kNames / sizeof kNames[0]; i++) sym(kNames[i]);

    int32_t (*set_tls)(bool, const char *, uint32_t) =
        sym(old ? "shmem_set_conf_store_tls" : "aclshmemx_set_conf_store_tls");
    CHECK(set_tls(false, "", 0) == 0, "turning store TLS off");

    int rc;
    if (old) {
        int (*get_uid)(shmemx_uniqueid_t *) = sym("shmem_get_uniqueid");
        int (*set_attr)(int, int, uint64_t, const char *, shmem_init_attr_t **) =
            sym("shmem_set_attr");
        int (*set_uid)(int, int, const void *, shmem_init_attr_t *) =
            sym("shmem_set_attr_uniqueid_args");
        int (*init_attr)(shmem_init_attr_t *) = sym("shmem_init_attr");
        shmemx_uniqueid_t uid = SHMEM_UNIQUEID_INITIALIZER;
        if (rank == 0) CHECK(get_uid(&uid) == 0, "shmem_get_uniqueid");
        share_id("torch_seq", argv[2], rank == 0, &uid, sizeof uid);
        shmem_init_attr_t *attr = NULL;
        CHECK(set_attr(rank, n, HEAP, NULL, &attr) == 0 && attr != NULL, "shmem_set_attr");
        CHECK(set_uid(rank, n, &uid, attr) == 0, "shmem_set_attr_uniqueid_args");
        rc = init_attr(attr);
    } else {
        int (*get_uid)(aclshmemx_uniqueid_t *) = sym("aclshmemx_get_uniqueid");
        int (*set_uid)(int, int, int64_t, aclshmemx_uniqueid_t *, aclshmemx_init_attr_t *) =
            sym("aclshmemx_set_attr_uniqueid_args");
        int (*init_attr)(aclshmemx_bootstrap_t, aclshmemx_init_attr_t *) =
            sym("aclshmemx_init_attr");
        aclshmemx_uniqueid_t uid = ACLSHMEM_UNIQUEID_INITIALIZER;
        if (rank == 0) CHECK(get_uid(&uid) == 0, "aclshmemx_get_uniqueid");
        share_id("torch_seq", argv[2], rank == 0, &uid, sizeof uid);
        int (*set_attr)(int, int, uint64_t, const char *, aclshmemx_init_attr_t **) =
            sym("aclshmemx_set_attr");
        aclshmemx_init_attr_t *attr = NULL;
        CHECK(set_attr(rank, n, HEAP, NULL, &attr) == 0 && attr != NULL, "aclshmemx_set_attr");
        CHECK(set_uid(rank, n, HEAP, &uid, attr) == 0, "aclshmemx_set_attr_uniqueid_args");
        rc = init_attr(ACLSHMEMX_INIT_WITH_UNIQUEID, attr);
    }
    CHECK(rc == 0, "init returned %d", rc);

    void *(*mem_alloc)(size_t) = sym(old ? "shmem_malloc" : "aclshmem_malloc");
    void (*mem_free)(void *) = sym(old ? "shmem_free" : "aclshmem_free");
    void *(*ptr)(void *, int) = sym(old ? "shmem_ptr" : "aclshmem_ptr");
    void (*put_on_stream)(void *, void *, size_t, int32_t, aclrtStream) =
        sym(old ? "shmem_putmem_on_stream" : "aclshmemx_putmem_on_stream");
    void (*get_on_stream)(void *, void *, size_t, int32_t, aclrtStream) =
        sym(old ? "shmem_getmem_on_stream" : "aclshmemx_getmem_on_stream");
    void (*barrier_on_stream)(aclrtStream) = sym("aclshmemx_barrier_all_on_stream");
    int32_t (*finalize)(void) = sym(old ? "shmem_finalize" : "aclshmem_finalize");

    int right = (rank + 1) % n;
    unsigned char *buf = mem_alloc(N), *src = mem_alloc(N), *back = mem_alloc(N);
    CHECK(buf != NULL && src != NULL && back != NULL, "malloc of %d bytes", N);
    CHECK(ptr(buf, rank) == buf, "ptr(buf, own PE) is not buf");
    CHECK(ptr(buf, right) != NULL, "ptr(buf, %d) is NULL: the neighbour's heap is not mapped",
          right);

    unsigned char host[N];
    for (size_t i = 0; i < N; i++) host[i] = pattern(rank, i);
    CHECK(aclrtMemcpy(src, N, host, N, ACL_MEMCPY_HOST_TO_DEVICE) == 0, "aclrtMemcpy to src");
    aclrtStream stream = NULL;
    CHECK(aclrtCreateStream(&stream) == 0, "aclrtCreateStream");
    put_on_stream(buf, src, N, right, stream);
    barrier_on_stream(stream);
    get_on_stream(back, buf, N, right, stream);
    CHECK(aclrtSynchronizeStream(stream) == 0, "aclrtSynchronizeStream");
    CHECK(aclrtMemcpy(host, N, back, N, ACL_MEMCPY_DEVICE_TO_HOST) == 0, "aclrtMemcpy from back");
    for (size_t i = 0; i < N; i++) {
        CHECK(host[i] == pattern(rank, i), "byte %zu read back from PE %d is %u, expected %u", i,
              right, host[i], pattern(rank, i));
    }
    CHECK(aclrtMemcpy(host, N, buf, N, ACL_MEMCPY_DEVICE_TO_HOST) == 0, "aclrtMemcpy from buf");
    int left = (rank + n - 1) % n;
    for (size_t i = 0; i < N; i++) {
        CHECK(host[i] == pattern(left, i), "byte %zu of buf is %u, PE %d put %u", i, host[i], left,
              pattern(left, i));
    }
    barrier_on_stream(stream);
    CHECK(aclrtSynchronizeStream(stream) == 0, "aclrtSynchronizeStream");
    CHECK(aclrtDestroyStream(stream) == 0, "aclrtDestroyStream");
    mem_free(back);
    mem_free(src);
    mem_free(buf);
    CHECK(finalize() == 0, "finalize");
    if (rank == 0) printf("torch_seq %s: %d PEs checked\n", argv[1], n);
    return 0;
}
