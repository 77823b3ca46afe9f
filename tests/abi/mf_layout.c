/* mf_layout.c: libmf_smem.so's smem/host headers against memfabric_hybrid 1.0.0's
 * struct layouts, enum values and macros, in C (this file) and C++ (mf_layout.cc includes it).
 * The expected table is memfabric's (LP64, natural alignment, no packing, 4-byte enums), not
 * taken from the headers under test. Prints every size and offset with its expected value;
 * exits 1 on any difference. */
#include <smem/host/smem_bm.h>
#include <smem/host/smem_shm.h>
#include <smem/host/smem_trans.h>
#include <smem/host/smemx_shm.h> /* this library's extension: compiles as C and C++ too */

#include "layout_check.h"

static void layouts(void) {
    SIZE(smem_tls_config, 1793);
    ALIGN(smem_tls_config, 1);
    OFFSET(smem_tls_config, tlsEnable, 0);
    OFFSET(smem_tls_config, caPath, 1);
    OFFSET(smem_tls_config, crlPath, 257);
    OFFSET(smem_tls_config, certPath, 513);
    OFFSET(smem_tls_config, keyPath, 769);
    OFFSET(smem_tls_config, keyPassPath, 1025);
    OFFSET(smem_tls_config, packagePath, 1281);
    OFFSET(smem_tls_config, decrypterLibPath, 1537);
    FIELD_SIZE(smem_tls_config, decrypterLibPath, 256);

    SIZE(smem_bm_config_t, 3676);
    ALIGN(smem_bm_config_t, 4);
    OFFSET(smem_bm_config_t, initTimeout, 0);
    OFFSET(smem_bm_config_t, createTimeout, 4);
    OFFSET(smem_bm_config_t, controlOperationTimeout, 8);
    OFFSET(smem_bm_config_t, startConfigStoreServer, 12);
    OFFSET(smem_bm_config_t, startConfigStoreOnly, 13);
    OFFSET(smem_bm_config_t, dynamicWorldSize, 14);
    OFFSET(smem_bm_config_t, unifiedAddressSpace, 15);
    OFFSET(smem_bm_config_t, autoRanking, 16);
    OFFSET(smem_bm_config_t, rankId, 18);
    OFFSET(smem_bm_config_t, flags, 20);
    OFFSET(smem_bm_config_t, hcomUrl, 24);
    FIELD_SIZE(smem_bm_config_t, hcomUrl, 64);
    OFFSET(smem_bm_config_t, hcomTlsConfig, 88);
    OFFSET(smem_bm_config_t, storeTlsConfig, 1881);

    SIZE(smem_bm_create_option_t, 336);
    ALIGN(smem_bm_create_option_t, 8);
    OFFSET(smem_bm_create_option_t, maxDramSize, 0);
    OFFSET(smem_bm_create_option_t, maxHbmSize, 8);
    OFFSET(smem_bm_create_option_t, localDRAMSize, 16);
    OFFSET(smem_bm_create_option_t, localHBMSize, 24);
    OFFSET(smem_bm_create_option_t, dataOpType, 32);
    OFFSET(smem_bm_create_option_t, flags, 36);
    OFFSET(smem_bm_create_option_t, tag, 40);
    FIELD_SIZE(smem_bm_create_option_t, tag, 32);
    OFFSET(smem_bm_create_option_t, tagOpInfo, 72);
    FIELD_SIZE(smem_bm_create_option_t, tagOpInfo, 256);
    OFFSET(smem_bm_create_option_t, dramShmFd, 328);

    SIZE(smem_copy_params, 24);
    OFFSET(smem_copy_params, src, 0);
    OFFSET(smem_copy_params, dest, 8);
    OFFSET(smem_copy_params, dataSize, 16);

    SIZE(smem_batch_copy_params, 32);
    OFFSET(smem_batch_copy_params, sources, 0);
    OFFSET(smem_batch_copy_params, destinations, 8);
    OFFSET(smem_batch_copy_params, dataSizes, 16);
    OFFSET(smem_batch_copy_params, batchSize, 24);

    SIZE(smem_shm_config_t, 20);
    ALIGN(smem_shm_config_t, 4);
    OFFSET(smem_shm_config_t, shmInitTimeout, 0);
    OFFSET(smem_shm_config_t, shmCreateTimeout, 4);
    OFFSET(smem_shm_config_t, controlOperationTimeout, 8);
    OFFSET(smem_shm_config_t, startConfigStoreServer, 12);
    OFFSET(smem_shm_config_t, flags, 16);

    SIZE(smem_bm_mem_type, 4);
    SIZE(smem_bm_data_op_type, 4);
    SIZE(smem_bm_copy_type, 4);
    SIZE(smem_shm_data_op_type, 4);
    SIZE(smem_bm_t, 8);
    SIZE(smem_shm_t, 8);
}

static void trans_layouts(void) {
    SIZE(smem_trans_config_t, 24);
    ALIGN(smem_trans_config_t, 4);
    OFFSET(smem_trans_config_t, role, 0);
    OFFSET(smem_trans_config_t, initTimeout, 4);
    OFFSET(smem_trans_config_t, deviceId, 8);
    OFFSET(smem_trans_config_t, flags, 12);
    OFFSET(smem_trans_config_t, dataOpType, 16);
    OFFSET(smem_trans_config_t, startConfigServer, 20);
    SIZE(smem_trans_role_t, 4);
    SIZE(smem_trans_t, 8);
}

static void values(void) {
    VALUE(ASYNC_COPY_FLAG, 1);
    VALUE(COPY_EXTEND_FLAG, 2);
    VALUE(SMEM_WORLD_SIZE_MAX, 1024);
    VALUE(SMEM_INVALID_DEV_ID, -1);
    VALUE(SMEM_BM_TIMEOUT_MAX, 4294967295LL);
    VALUE(SMEM_BM_PERFORMANCE_MODE_FLAG_INDEX, 7);
    VALUE(SMEM_BM_PERFORMANCE_MODE_FLAG_LEN, 1);
    VALUE(SMEM_BM_BIND_NUMA_FLAG_INDEX, 0);
    VALUE(SMEM_BM_BIND_NUMA_FLAG_LEN, 7);
    VALUE(SMEM_TLS_PATH_SIZE, 256);
    VALUE(SMEM_BM_FLAG_CREATE_WITH_SHM, 256);
    VALUE(SMEM_SHM_TIMEOUT_MAX, 4294967295LL);
    VALUE(SMEM_SHM_ATOMIC_NUM_LIMIT, 1024);

    VALUE(SMEM_MEM_TYPE_LOCAL_DEVICE, 0);
    VALUE(SMEM_MEM_TYPE_LOCAL_HOST, 1);
    VALUE(SMEM_MEM_TYPE_DEVICE, 2);
    VALUE(SMEM_MEM_TYPE_HOST, 3);
    VALUE(SMEM_MEM_TYPE_BUTT, 4);
    VALUE(SMEMB_DATA_OP_SDMA, 1);
    VALUE(SMEMB_DATA_OP_HOST_RDMA, 2);
    VALUE(SMEMB_DATA_OP_HOST_TCP, 4);
    VALUE(SMEMB_DATA_OP_DEVICE_RDMA, 8);
    VALUE(SMEMB_DATA_OP_HOST_URMA, 16);
    VALUE(SMEMB_DATA_OP_BUTT, 17);
    VALUE(SMEMB_COPY_L2G, 0);
    VALUE(SMEMB_COPY_G2L, 1);
    VALUE(SMEMB_COPY_G2H, 2);
    VALUE(SMEMB_COPY_H2G, 3);
    VALUE(SMEMB_COPY_L2GH, 4);
    VALUE(SMEMB_COPY_GH2L, 5);
    VALUE(SMEMB_COPY_GH2H, 6);
    VALUE(SMEMB_COPY_H2GH, 7);
    VALUE(SMEMB_COPY_G2G, 8);
    VALUE(SMEMB_COPY_AUTO, 9);
    VALUE(SMEMB_COPY_BUTT, 10);
    VALUE(SMEMS_DATA_OP_MTE, 1);
    VALUE(SMEMS_DATA_OP_SDMA, 2);
    VALUE(SMEMS_DATA_OP_RDMA, 4);
    VALUE(SMEM_TRANS_NONE, 0);
    VALUE(SMEM_TRANS_SENDER, 1);
    VALUE(SMEM_TRANS_RECEIVER, 2);
    VALUE(SMEM_TRANS_BOTH, 3);
    VALUE(SMEM_TRANS_BUTT, 4);
}

/* Every function the headers declare (memfabric's 9 general, 17 Big Memory, 18 Share Memory,
 * 18 transfer engine):
 * the link fails if libmf_smem.so lacks one. */
static void (*const functions[])(void) = {
    (void (*)(void))smem_init,
    (void (*)(void))smem_uninit,
    (void (*)(void))smem_create_config_store,
    (void (*)(void))smem_set_extern_logger,
    (void (*)(void))smem_set_log_level,
    (void (*)(void))smem_set_conf_store_tls,
    (void (*)(void))smem_set_config_store_tls_key,
    (void (*)(void))smem_get_last_err_msg,
    (void (*)(void))smem_get_and_clear_last_err_msg,
    (void (*)(void))smem_bm_config_init,
    (void (*)(void))smem_bm_init,
    (void (*)(void))smem_bm_uninit,
    (void (*)(void))smem_bm_get_rank_id,
    (void (*)(void))smem_bm_create,
    (void (*)(void))smem_bm_create2,
    (void (*)(void))smem_bm_destroy,
    (void (*)(void))smem_bm_join,
    (void (*)(void))smem_bm_leave,
    (void (*)(void))smem_bm_get_local_mem_size_by_mem_type,
    (void (*)(void))smem_bm_ptr_by_mem_type,
    (void (*)(void))smem_bm_copy,
    (void (*)(void))smem_bm_copy_batch,
    (void (*)(void))smem_bm_wait,
    (void (*)(void))smem_bm_register_user_mem,
    (void (*)(void))smem_bm_unregister_user_mem,
    (void (*)(void))smem_bm_get_rank_id_by_gva,
    (void (*)(void))smem_shm_config_init,
    (void (*)(void))smem_shm_init,
    (void (*)(void))smem_shm_uninit,
    (void (*)(void))smem_shm_query_support_data_operation,
    (void (*)(void))smem_shm_create,
    (void (*)(void))smem_shm_destroy,
    (void (*)(void))smem_shm_set_extra_context,
    (void (*)(void))smem_shm_get_global_rank,
    (void (*)(void))smem_shm_get_global_rank_size,
    (void (*)(void))smem_shm_control_barrier,
    (void (*)(void))smem_shm_control_allgather,
    (void (*)(void))smem_shm_subgroup_barrier,
    (void (*)(void))smem_shm_subgroup_allgather,
    (void (*)(void))smem_shm_topology_can_reach,
    (void (*)(void))smem_shm_atomic_alloc_value,
    (void (*)(void))smem_shm_atomic_release_value,
    (void (*)(void))smem_shm_register_exit,
    (void (*)(void))smem_shm_global_exit,
    (void (*)(void))smem_trans_config_init,
    (void (*)(void))smem_trans_init,
    (void (*)(void))smem_trans_uninit,
    (void (*)(void))smem_trans_create,
    (void (*)(void))smem_trans_destroy,
    (void (*)(void))smem_trans_malloc,
    (void (*)(void))smem_trans_free,
    (void (*)(void))smem_trans_register_mem,
    (void (*)(void))smem_trans_batch_register_mem,
    (void (*)(void))smem_trans_deregister_mem,
    (void (*)(void))smem_trans_write,
    (void (*)(void))smem_trans_batch_write,
    (void (*)(void))smem_trans_read,
    (void (*)(void))smem_trans_batch_read,
    (void (*)(void))smem_trans_read_submit,
    (void (*)(void))smem_trans_write_submit,
    (void (*)(void))smem_trans_batch_read_submit,
    (void (*)(void))smem_trans_batch_write_submit,
};

int main(void) {
    smem_decrypt_handler handler = decrypt;
    (void)handler;
    layouts();
    trans_layouts();
    values();
    expect("functions declared and defined", (long long)(sizeof functions / sizeof functions[0]),
           62);
    return finish("memfabric_hybrid's layout",
                  "every layout, enum value and macro is memfabric_hybrid's");
}
