// memfabric_trans.h: libshmem.so's entry points for memfabric_hybrid's transfer engine
// (smem_trans_* of libmf_smem.so, cpp/smem/src/trans.cpp), over the runtime's
// memfabric::trans. Exported under the private prefix shmemi_mf_ (libshmem.map); not part of
// the public API, no header of it is installed. Each function returning int32_t returns 0 or
// memfabric's code and on failure writes the reason, NUL-terminated, into `why` (`why_len`
// bytes, truncated).
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// smem_trans_init: 1 when initialised now, 0 when it was already (nothing changed), or memfabric's
// code (the npu device could not be opened: another deviceId than Big Memory's or Share
// Memory's, say).
int32_t shmemi_mf_trans_init(uint32_t device_id, char *why, size_t why_len);
// smem_trans_uninit: 0 when it was not initialised, else 1.
int shmemi_mf_trans_uninit(void);
// smem_trans_create: the handle in *handle.
int32_t shmemi_mf_trans_create(const char *url, const char *unique_id, uint32_t role,
                               uint32_t init_timeout, int start_server, void **handle, char *why,
                               size_t why_len);
int32_t shmemi_mf_trans_destroy(void *handle, char *why, size_t why_len);
// smem_trans_malloc: the address in *addr.
int32_t shmemi_mf_trans_malloc(void *handle, uint64_t size, void **addr, char *why, size_t why_len);
int32_t shmemi_mf_trans_free(void *handle, const void *addr, char *why, size_t why_len);
// smem_trans_register_mem (count 1) and smem_trans_batch_register_mem.
int32_t shmemi_mf_trans_register(void *handle, void *const *addrs, const size_t *sizes,
                                 uint32_t count, char *why, size_t why_len);
int32_t shmemi_mf_trans_deregister(void *handle, const void *addr, char *why, size_t why_len);
// smem_trans_write (write 1) and smem_trans_read, their batches and submits: `count` elements;
// `stream` the submit's ACL stream (NULL: not a submit). On success `why` holds a line for the
// log at warning level, or "".
int32_t shmemi_mf_trans_transfer(void *handle, int write, const char *peer,
                                 const void *const *locals, const void *const *remotes,
                                 const size_t *sizes, uint32_t count, uint32_t flags, void *stream,
                                 char *why, size_t why_len);
}
