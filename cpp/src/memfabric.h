// memfabric.h: libshmem.so's entry points for libmf_smem.so (memfabric_hybrid's API over this
// library, cpp/smem/). Exported under the private prefix shmemi_mf_ (libshmem.map) so that
// libmf_smem.so reaches this process's one runtime; not part of the public API, no header of
// it is installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

// The facade's helper for the entries below (cpp/src/memfabric*.cpp): copies `reason` into
// `why` (`why_len` bytes, NUL-terminated, truncated to fit; nothing when `why` is NULL).
namespace shmemi_mf {
void copy_reason(const std::string &reason, char *why, size_t why_len);
}

extern "C" {

// Serves memfabric's config store at `url` in this process (smem_create_config_store). Returns
// 0, -2000 (the URL) or -1 (the start); on failure writes the reason, NUL-terminated, into
// `why` (`why_len` bytes, truncated to fit).
int32_t shmemi_mf_config_store_open(const char *url, char *why, size_t why_len);
}

// memfabric's Share Memory (smem_shm_*, rust/core/src/memfabric/shm.rs). Each returns 0 or
// memfabric's code; on failure writes the reason into `why` as above. `handle` is an object's
// handle from shmemi_mf_shm_create (unknown: -2000, or -2007 for destroy).
extern "C" {

// smem_shm_init; `*done` is false when Share Memory was initialised already (nothing changed).
int32_t shmemi_mf_shm_init(const char *url, uint32_t world_size, uint32_t rank, uint16_t device_id,
                           uint32_t init_timeout_s, uint32_t control_timeout_s, bool start_store,
                           bool *done, char *why, size_t why_len);
// smem_shm_uninit: false when Share Memory was not initialised.
bool shmemi_mf_shm_uninit(void);
int32_t shmemi_mf_shm_create(uint32_t id, uint32_t rank_size, uint32_t rank,
                             uint64_t symmetric_size, uint64_t *handle, void **gva, char *why,
                             size_t why_len);
int32_t shmemi_mf_shm_destroy(uint64_t handle, char *why, size_t why_len);
int32_t shmemi_mf_shm_set_extra_context(uint64_t handle, const void *context, uint32_t size,
                                        char *why, size_t why_len);
int32_t shmemi_mf_shm_rank(uint64_t handle, uint32_t *rank, uint32_t *size, char *why,
                           size_t why_len);
// The control barrier (send_size 0) and allgather.
int32_t shmemi_mf_shm_allgather(uint64_t handle, const void *send, uint32_t send_size, void *recv,
                                uint32_t recv_size, char *why, size_t why_len);
// The subgroup barrier (send_size 0) and allgather.
int32_t shmemi_mf_shm_subgroup(uint64_t handle, const char *key, uint32_t rank_size, uint32_t rank,
                               const void *send, uint32_t send_size, void *recv, uint32_t recv_size,
                               char *why, size_t why_len);
int32_t shmemi_mf_shm_can_reach(uint64_t handle, uint32_t remote, uint32_t *reach, char *why,
                                size_t why_len);
int32_t shmemi_mf_shm_atomic_alloc(uint64_t handle, uint32_t limit, uint32_t *value, char *why,
                                   size_t why_len);
int32_t shmemi_mf_shm_atomic_release(uint64_t handle, int32_t value, char *why, size_t why_len);
int32_t shmemi_mf_shm_register_exit(uint64_t handle, void (*handler)(int), char *why,
                                    size_t why_len);
int32_t shmemi_mf_shm_global_exit(uint64_t handle, int status, char *why, size_t why_len);
// The kernel-side block the getters of shmem/memfabric_shm.h read on the CPU architecture
// (declared there too).
const void *shmemi_mf_shm_meta(void);
// The block kernels read: its device copy (NPU memory) while Share Memory's windows are on the
// npu device, else the block above.
const void *shmemi_mf_shm_meta_kernels(void);
}
