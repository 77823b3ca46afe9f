/* mf_shm_npu.c: the device side of the memfabric Share Memory test on the npu device
 * (mf_shm.c's `npu` mode): copies between host memory and NPU memory with ACL's aclrtMemcpy,
 * from the ACL library the runtime loads (SHMEM_ACL_LIBRARY, else libascendcl.so), and what a
 * kernel reads of an SHM object from the device copy of the kernel-side block
 * (shmem/memfabric_shm.h). A file of its own: in C, that header and the host header
 * smem/host/smem_shm.h do not meet. */
#include <dlfcn.h>
#include <shmem/memfabric_shm.h>
#include <stdio.h>
#include <stdlib.h>

#include "mf_shm_kernel.h"

typedef int (*memcpy_fn)(void *, size_t, const void *, size_t, int);
enum { KIND_HOST_TO_DEVICE = 1, KIND_DEVICE_TO_HOST = 2 };

static memcpy_fn acl_memcpy(void) {
    static memcpy_fn f;
    if (f == NULL) {
        const char *lib = getenv("SHMEM_ACL_LIBRARY");
        void *h = dlopen(lib != NULL && lib[0] != '\0' ? lib : "libascendcl.so", RTLD_NOW);
        f = h == NULL ? NULL : (memcpy_fn)dlsym(h, "aclrtMemcpy");
        if (f == NULL) {
            fprintf(stderr, "mf_shm npu: cannot load aclrtMemcpy: %s\n", dlerror());
        }
    }
    return f;
}

int mf_npu_write(void *dev, const void *host, size_t n) {
    memcpy_fn f = acl_memcpy();
    return f == NULL ? -1 : f(dev, n, host, n, KIND_HOST_TO_DEVICE);
}

int mf_npu_read(void *host, const void *dev, size_t n) {
    memcpy_fn f = acl_memcpy();
    return f == NULL ? -1 : f(host, n, dev, n, KIND_DEVICE_TO_HOST);
}

int mf_npu_kernel_read(const void *block, uint32_t id, struct mf_shm_kernel_view *out) {
    /* What the getters read on the device, copied here: the header and the records. */
    smem_shm_meta_block *b = malloc(sizeof *b);
    int rc = b == NULL ? -1 : mf_npu_read(b, block, offsetof(smem_shm_meta_block, context));
    if (rc != 0 || b->magic != SMEM_SHM_META_MAGIC || b->slots != SMEM_SHM_META_SLOTS) {
        free(b);
        return -1;
    }
    const smem_shm_meta_slot *s = id < b->slots && b->slot[id].rank_size != 0 ? &b->slot[id] : NULL;
    out->rank = s == NULL ? UINT32_MAX : s->rank;
    out->rank_size = s == NULL ? UINT32_MAX : s->rank_size;
    out->symmetric_size = s == NULL ? 0 : s->symmetric_size;
    out->context_size = s == NULL ? 0 : s->context_size;
    out->context = s == NULL || s->context_size == 0
                       ? NULL
                       : (char *)block + offsetof(smem_shm_meta_block, context) +
                             (size_t)id * SMEM_SHM_META_CONTEXT_BYTES;
    out->qp_info = s == NULL ? NULL : (void *)(uintptr_t)s->qp_info;
    free(b);
    return 0;
}
