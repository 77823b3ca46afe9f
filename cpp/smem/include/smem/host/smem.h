/* smem.h: memfabric_hybrid's general API (smem_*), as libmf_smem.so implements it over this
 * library's runtime. Names, values and layouts are memfabric_hybrid 1.0.0's; the header
 * compiles as C and as C++ (docs/memfabric.md). */
#ifndef __MEMFABRIC_SMEM_H__
#define __MEMFABRIC_SMEM_H__

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ASYNC_COPY_FLAG (1UL << 0)
#define COPY_EXTEND_FLAG (1UL << 1)
#define SMEM_WORLD_SIZE_MAX 1024U
#define SMEM_INVALID_DEV_ID (-1)

/* The last parameter is a C++ reference in memfabric's declaration, kept in C++; C has no
 * references, and a reference is passed as the address of the object, so C declares the same
 * handler with a pointer: one ABI for both (as <shmemx.h> does for CANN's handler). */
#ifdef __cplusplus
typedef int (*smem_decrypt_handler)(const char *cipherText, size_t cipherTextLen, char *plainText,
                                    size_t &plainTextLen);
#else
typedef int (*smem_decrypt_handler)(const char *cipherText, size_t cipherTextLen, char *plainText,
                                    size_t *plainTextLen);
#endif

int32_t smem_init(uint32_t flags);
void smem_uninit(void);
int32_t smem_create_config_store(const char *storeUrl);
int32_t smem_set_extern_logger(void (*func)(int level, const char *msg));
int32_t smem_set_log_level(int level);
int32_t smem_set_conf_store_tls(bool enable, const char *tls_info, const uint32_t tls_info_len);
int32_t smem_set_config_store_tls_key(const char *tls_pk, const uint32_t tls_pk_len,
                                      const char *tls_pk_pw, const uint32_t tls_pk_pw_len,
                                      const smem_decrypt_handler h);
const char *smem_get_last_err_msg(void);
const char *smem_get_and_clear_last_err_msg(void);

#ifdef __cplusplus
}
#endif

#endif /* __MEMFABRIC_SMEM_H__ */
