// memfabric_bm.h: libshmem.so's entry points for memfabric_hybrid's Big Memory pools
// (smem_bm_* of libmf_smem.so, cpp/smem/src/bm.cpp), over the runtime's memfabric::bm.
// Exported under the private prefix shmemi_mf_ (libshmem.map); not part of the public API, no
// header of it is installed. Each function returning int32_t returns 0 or memfabric's code and
// on failure writes the reason, NUL-terminated, into `why` (`why_len` bytes, truncated).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace shmemi_mf {
// Writes `reason`, NUL-terminated and truncated to fit, into `why` (`why_len` bytes); the
// facade's memfabric files share it (defined in memfabric.cpp).
void copy_reason(const std::string &reason, char *why, size_t why_len);
}  // namespace shmemi_mf

extern "C" {

// smem_bm_init's arguments, with the configuration's fields libmf_smem.so reads.
struct shmemi_mf_bm_init_args {
    const char *url;
    uint32_t world_size;
    uint16_t device_id;
    uint32_t init_timeout;
    uint32_t control_timeout;
    bool start_server;
    bool auto_ranking;
    uint16_t rank_id;
    const char *hcom_url;
    bool tls_enable;
    // storeTlsConfig's paths (NUL-terminated; "" when not given).
    const char *tls_ca;
    const char *tls_crl;
    const char *tls_cert;
    const char *tls_key;
    const char *tls_key_pass;
};

// smem_bm_init. *plain is set to 1 when the store connection is plain TCP, *repeat to 1 when
// Big Memory was initialised already (nothing changed).
int32_t shmemi_mf_bm_init(const struct shmemi_mf_bm_init_args *args, int *plain, int *repeat,
                          char *why, size_t why_len);
// smem_bm_uninit: 0 when Big Memory was not initialised, else 1.
int shmemi_mf_bm_uninit(void);
// smem_bm_get_rank_id (0 before init).
uint32_t shmemi_mf_bm_rank(void);
// smem_bm_create2: sizes[4] = maxDram, maxHbm, localDram, localHbm; the handle in *handle.
int32_t shmemi_mf_bm_create(uint32_t id, const uint64_t sizes[4], uint32_t data_op, uint32_t flags,
                            int shm_fd, void **handle, char *why, size_t why_len);
// smem_bm_destroy, smem_bm_join, smem_bm_leave, smem_bm_wait.
int32_t shmemi_mf_bm_destroy(void *handle, char *why, size_t why_len);
int32_t shmemi_mf_bm_join(void *handle, char *why, size_t why_len);
int32_t shmemi_mf_bm_leave(void *handle, char *why, size_t why_len);
int32_t shmemi_mf_bm_wait(void *handle, char *why, size_t why_len);
// smem_bm_get_local_mem_size_by_mem_type (*out = bytes), smem_bm_ptr_by_mem_type (*out = the
// address of peer's segment), smem_bm_get_rank_id_by_gva (*out = rank, UINT32_MAX outside).
int32_t shmemi_mf_bm_local_size(void *handle, uint32_t mem_type, uint64_t *out, char *why,
                                size_t why_len);
int32_t shmemi_mf_bm_ptr(void *handle, uint32_t mem_type, uint32_t peer, uint64_t *out, char *why,
                         size_t why_len);
int32_t shmemi_mf_bm_rank_by_gva(void *handle, const void *gva, uint64_t *out, char *why,
                                 size_t why_len);
// smem_bm_copy (batch 0, count 1) and smem_bm_copy_batch: count elements of the arrays.
int32_t shmemi_mf_bm_copy(void *handle, const void *const *srcs, void *const *dests,
                          const uint64_t *sizes, uint32_t count, uint32_t type, uint32_t flags,
                          int batch, char *why, size_t why_len);
// smem_bm_register_user_mem (add 1) and smem_bm_unregister_user_mem (add 0).
int32_t shmemi_mf_bm_user_mem(void *handle, int add, uint64_t addr, uint64_t size, char *why,
                              size_t why_len);
}
