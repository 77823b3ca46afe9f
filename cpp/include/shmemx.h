/*
 * shmemx.h: extensions beyond OpenSHMEM 1.5.
 *
 * TLS of the control store. When the job's store is on TCP (shmemrun --store, or
 * SHMEM_BOOTSTRAP_ADDR), TLS 1.3 with mutual authentication is on by default. Under shmemrun
 * the launcher makes a throw-away CA per job and nothing needs configuring; otherwise PE 0
 * serves the store and every PE must be given the user's certificates with these calls
 * before shmem_init (or TLS turned off). These are CANN SHMEM's entry points, with CANN's
 * names, signatures and return codes: 0 on success, -1 (ACLSHMEM_INVALID_PARAM) on a bad
 * argument, -4 (ACLSHMEM_INNER_ERROR) when called after shmem_init. Every input is copied; the
 * caller may free it on return. See SECURITY.md.
 *
 * Where the symmetric heap lives (shmemx_heap_device), for bindings that wrap heap memory in
 * their own objects (a torch tensor on the right device).
 *
 * Teams its members alone make (shmemx_team_create), for callers that cannot gather every PE
 * of a parent team to split it: torch.distributed's subgroups, whose members alone create them.
 */
#ifndef SHMEMX_H
#define SHMEMX_H

#include <stddef.h>
#include <stdint.h>

#include "shmem/constants.h"

#ifdef __cplusplus
extern "C" {
#else
#include <stdbool.h>
#endif

/*
 * Decrypts the private key's password: called once, by shmem_set_config_store_tls_key itself,
 * with the ciphertext the caller gave; writes the plaintext to plain_text (room for
 * *plain_text_len bytes on entry) and its length to *plain_text_len; returns 0 on success.
 * CANN declares the last parameter as a C++ reference, which is passed as this pointer.
 */
#ifdef __cplusplus
typedef int (*aclshmem_decrypt_handler)(const char *cipher_text, size_t cipher_text_len,
                                        char *plain_text, size_t &plain_text_len);
#else
typedef int (*aclshmem_decrypt_handler)(const char *cipher_text, size_t cipher_text_len,
                                        char *plain_text, size_t *plain_text_len);
#endif
typedef aclshmem_decrypt_handler shmem_decrypt_handler;

/*
 * Turns the store's TLS off (enable false; tls_info may be NULL; a warning is logged when a
 * TCP store then runs in plain TCP), or on with the user's certificates, described by
 * tls_info, tls_info_len bytes of CANN's "key: value;" list:
 *   tlsCaPath: dir;  tlsCaFile: a.pem,b.pem;   CA certificates (files under tlsCaPath)
 *   tlsCert: cert.pem;                         this PE's certificate chain (every PE, and
 *                                              PE 0 as the store, present it)
 *   tlsPk: key.pem;  tlsPkPwd: password.txt;   private key (PEM: PKCS#8, encrypted PKCS#8
 *                                              with PBES2, SEC1 or PKCS#1) and its password
 *   tlsCrlPath: dir; tlsCrlFile: x.pem;        revocation lists honoured
 * Unknown keys are ignored. The store's certificate must name the address the PEs dial.
 * Legacy OpenSSL-encrypted keys (Proc-Type: 4,ENCRYPTED) are refused.
 */
int32_t shmem_set_conf_store_tls(bool enable, const char *tls_info, const uint32_t tls_info_len);
int32_t aclshmemx_set_conf_store_tls(bool enable, const char *tls_info,
                                     const uint32_t tls_info_len);

/*
 * Gives the private key (tls_pk: tls_pk_len bytes of PEM) and its password (tls_pk_pw:
 * tls_pk_pw_len bytes; NULL or 0 for an unencrypted key), in place of tlsPk and tlsPkPwd.
 * With decrypt_handler, tls_pk_pw is ciphertext that the handler turns into the password,
 * once, during this call. The library wipes its copies once shmem_init has succeeded.
 */
int32_t shmem_set_config_store_tls_key(const char *tls_pk, const uint32_t tls_pk_len,
                                       const char *tls_pk_pw, const uint32_t tls_pk_pw_len,
                                       const aclshmem_decrypt_handler decrypt_handler);
int32_t aclshmemx_set_config_store_tls_key(const char *tls_pk, const uint32_t tls_pk_len,
                                           const char *tls_pk_pw, const uint32_t tls_pk_pw_len,
                                           const aclshmem_decrypt_handler decrypt_handler);

/* What holds the symmetric heap (the device SHMEM_DEVICE chose at shmem_init). */
#define SHMEMX_HEAP_HOST 0 /* host memory: the CPU loads and stores it */
#define SHMEMX_HEAP_NPU 1  /* an Ascend NPU's memory (the npu device) */
#define SHMEMX_HEAP_CUDA 2 /* an NVIDIA GPU's memory (the cuda device) */

/*
 * Where this PE's symmetric heap lives: SHMEMX_HEAP_HOST, SHMEMX_HEAP_NPU or SHMEMX_HEAP_CUDA.
 * On an accelerator, shmem_malloc's and shmem_ptr's addresses are that device's addresses,
 * which only its kernels and the library's calls may touch (the CPU must not load or store
 * them). When device_id is not NULL, the device's index is written there: the ordinal the
 * driver gives it in this process (CUDA's and ACL's, after CUDA_VISIBLE_DEVICES or
 * ASCEND_RT_VISIBLE_DEVICES), the index torch names it by; -1 for host memory. Returns -1 and
 * writes nothing when the library is not running. Never blocks.
 */
int shmemx_heap_device(int *device_id);

/*
 * Makes a team of the npes world PEs pes[0], pes[1], ... (team PE i is world PE pes[i]),
 * called by exactly those PEs and by no other: MPI_Comm_create_group's contract, without a
 * parent team. Any distinct PEs in any order: the order is kept, not sorted. Every team
 * routine, collective and context works on the team, and its splits take its PEs in its
 * order; kernel-side team calls (<shmem/device.h>) know only teams whose PEs are an
 * arithmetic progression. Every member passes the same list, and members that create several
 * teams create those they share in the same order (as with any collective). config and
 * config_mask as for shmem_team_split_strided. Blocks until every member has called it.
 * Returns 0 with *new_team the team, or -1 with *new_team SHMEM_TEAM_INVALID and a logged
 * error: a bad list (npes < 1, a PE outside [0, shmem_n_pes()), a PE twice, the caller not in
 * it), a bad config, or no team slot free on every member.
 * List errors other than the caller's absence are found alike on every member; a member whose
 * config is bad makes the call fail on every member. shmem_team_destroy ends the team
 * (collective over its members, as for a split's team).
 */
int shmemx_team_create(const int *pes, int npes, const shmem_team_config_t *config,
                       long config_mask, shmem_team_t *new_team);

/*
 * The team's synchronisation slot: the same number on every member, different for any two
 * live teams that share a PE (0 SHMEM_TEAM_WORLD, 1 SHMEM_TEAM_SHARED, then 2 .. 63 for teams
 * made by splits and shmemx_team_create); kernel-side code and CANN's API name a team by it.
 * A binding that keeps per-team state in symmetric memory can index it by the slot without
 * agreeing on anything more. -1 for SHMEM_TEAM_INVALID, a destroyed team, or when the library
 * is not running. Never blocks.
 */
int shmemx_team_index(shmem_team_t team);

#ifdef __cplusplus
}
#endif

#endif /* SHMEMX_H */
