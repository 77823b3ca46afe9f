/* layout.c: the structs, enums and codes of <aclshmem.h> against CANN SHMEM's layout, in C (this
 * file) and C++ (layout.cc includes it). The expected numbers are worked out by hand from
 * CANN's declarations (LP64: int 4, pointer 8, uint64_t 8 with 8-byte alignment), not taken
 * from the header under test. Prints every check beside its expected value; exits 1 on any
 * difference. */
#include <aclshmem.h>
#include <limits.h>

#include "layout_check.h"

static void layouts(void) {
    /* version, engine (an int-sized enum), three uint32_t timeouts, int32_t sockFd. */
    SIZE(aclshmem_init_optional_attr_t, 24);
    OFFSET(aclshmem_init_optional_attr_t, version, 0);
    OFFSET(aclshmem_init_optional_attr_t, data_op_engine_type, 4);
    OFFSET(aclshmem_init_optional_attr_t, shm_init_timeout, 8);
    OFFSET(aclshmem_init_optional_attr_t, shm_create_timeout, 12);
    OFFSET(aclshmem_init_optional_attr_t, control_operation_timeout, 16);
    OFFSET(aclshmem_init_optional_attr_t, sockFd, 20);
    SIZE(data_op_engine_type_t, 4);

    /* my_pe 0, n_pes 4, ip_port[64] 8..72, uint64_t at 72, option_attr 80..104, comm_args 104,
     * instance_id 112: 120 bytes, 8-aligned. */
    SIZE(aclshmemx_init_attr_t, 120);
    SIZE(shmem_init_attr_t, 120);
    OFFSET(aclshmemx_init_attr_t, my_pe, 0);
    OFFSET(aclshmemx_init_attr_t, n_pes, 4);
    OFFSET(aclshmemx_init_attr_t, ip_port, 8);
    SIZE(((aclshmemx_init_attr_t *)0)->ip_port, 64);
    OFFSET(aclshmemx_init_attr_t, local_mem_size, 72);
    OFFSET(aclshmemx_init_attr_t, option_attr, 80);
    OFFSET(aclshmemx_init_attr_t, comm_args, 104);
    OFFSET(aclshmemx_init_attr_t, instance_id, 112);

    /* version, my_pe, n_pes, internal[124]: 136 bytes; the older id: version, internal[124]. */
    SIZE(aclshmemx_uniqueid_t, 136);
    SIZE(shmem_uniqueid_t, 136);
    OFFSET(aclshmemx_uniqueid_t, version, 0);
    OFFSET(aclshmemx_uniqueid_t, my_pe, 4);
    OFFSET(aclshmemx_uniqueid_t, n_pes, 8);
    OFFSET(aclshmemx_uniqueid_t, internal, 12);
    SIZE(shmemx_uniqueid_t, 128);
    OFFSET(shmemx_uniqueid_t, internal, 4);

    /* (1 << 16) + the struct's size. */
    EXPECT("ACLSHMEM_UNIQUEID_VERSION", ACLSHMEM_UNIQUEID_VERSION, 65536 + 136);
    EXPECT("SHMEM_UNIQUEID_VERSION", SHMEM_UNIQUEID_VERSION, 65536 + 128);
    EXPECT("ACLSHMEM_OPTIONAL_ATTR_VERSION", ACLSHMEM_OPTIONAL_ATTR_VERSION, 65536 + 24);
    EXPECT("ACLSHMEM_MAX_IP_PORT_LEN", ACLSHMEM_MAX_IP_PORT_LEN, 64);
    EXPECT("ACLSHMEM_UNIQUE_ID_INNER_LEN", ACLSHMEM_UNIQUE_ID_INNER_LEN, 124);
}

static void values(void) {
    EXPECT("ACLSHMEM_SUCCESS", ACLSHMEM_SUCCESS, 0);
    EXPECT("ACLSHMEM_INVALID_PARAM", ACLSHMEM_INVALID_PARAM, -1);
    EXPECT("ACLSHMEM_INVALID_VALUE", ACLSHMEM_INVALID_VALUE, -2);
    EXPECT("ACLSHMEM_SMEM_ERROR", ACLSHMEM_SMEM_ERROR, -3);
    EXPECT("ACLSHMEM_INNER_ERROR", ACLSHMEM_INNER_ERROR, -4);
    EXPECT("ACLSHMEM_NOT_INITED", ACLSHMEM_NOT_INITED, -5);
    EXPECT("ACLSHMEM_BOOTSTRAP_ERROR", ACLSHMEM_BOOTSTRAP_ERROR, -6);
    EXPECT("ACLSHMEM_TIMEOUT_ERROR", ACLSHMEM_TIMEOUT_ERROR, -7);
    EXPECT("ACLSHMEM_MALLOC_FAILED", ACLSHMEM_MALLOC_FAILED, -8);
    EXPECT("ACLSHMEM_DL_FUNC_FAILED", ACLSHMEM_DL_FUNC_FAILED, -9);
    EXPECT("ACLSHMEM_INNER_TIMEOUT", ACLSHMEM_INNER_TIMEOUT, -10);
    EXPECT("ACLSHMEM_UNDER_API_UNLOAD", ACLSHMEM_UNDER_API_UNLOAD, -11);
    EXPECT("ACLSHMEM_NOT_SUPPORTED", ACLSHMEM_NOT_SUPPORTED, -100);
    EXPECT("ACLSHMEMX_INIT_WITH_DEFAULT", ACLSHMEMX_INIT_WITH_DEFAULT, 1);
    EXPECT("ACLSHMEMX_INIT_WITH_MPI", ACLSHMEMX_INIT_WITH_MPI, 2);
    EXPECT("ACLSHMEMX_INIT_WITH_UNIQUEID", ACLSHMEMX_INIT_WITH_UNIQUEID, 8);
    EXPECT("ACLSHMEMX_INIT_MAX", ACLSHMEMX_INIT_MAX, INT_MIN);
    EXPECT("ACLSHMEM_STATUS_NOT_INITIALIZED", ACLSHMEM_STATUS_NOT_INITIALIZED, 0);
    EXPECT("ACLSHMEM_STATUS_SHM_CREATED", ACLSHMEM_STATUS_SHM_CREATED, 1);
    EXPECT("ACLSHMEM_STATUS_IS_INITIALIZED", ACLSHMEM_STATUS_IS_INITIALIZED, 2);
    EXPECT("ACLSHMEM_STATUS_INVALID", ACLSHMEM_STATUS_INVALID, INT_MAX);
    EXPECT("ACLSHMEM_DATA_OP_MTE", ACLSHMEM_DATA_OP_MTE, 1);
    EXPECT("ACLSHMEM_DATA_OP_SDMA", ACLSHMEM_DATA_OP_SDMA, 2);
    EXPECT("ACLSHMEM_DATA_OP_ROCE", ACLSHMEM_DATA_OP_ROCE, 4);
    EXPECT("ACLSHMEM_DATA_OP_UDMA", ACLSHMEM_DATA_OP_UDMA, 8);
    EXPECT("ACLSHMEM_TRANSPORT_MTE", ACLSHMEM_TRANSPORT_MTE, 1);
    EXPECT("ACLSHMEM_TRANSPORT_ROCE", ACLSHMEM_TRANSPORT_ROCE, 2);
}

static void declarations(void) {
    /* The decrypt callback takes the plaintext length by reference in C++ (as CANN declares
     * it) and by pointer in C; both names are the one type of <shmemx.h>. */
    aclshmem_decrypt_handler h = decrypt;
    shmem_decrypt_handler h2 = h;
    size_t len = 0;
    EXPECT("decrypt handler call", h2("abc", 3, NULL, DECRYPT_LEN(len)), 0);
    EXPECT("decrypt handler length", len, 3);
    /* Calls written for either CANN generation pick their symbol by argument count; sizeof
     * does not evaluate them. */
    aclshmemx_init_attr_t *attr = NULL;
    aclshmemx_uniqueid_t *uid = NULL;
    EXPECT("shmem_init_attr(attr)", sizeof(shmem_init_attr(attr)), sizeof(int));
    EXPECT("shmem_init_attr(flags, attr)",
           sizeof(shmem_init_attr(ACLSHMEMX_INIT_WITH_UNIQUEID, attr)), sizeof(int));
    EXPECT("shmem_set_attr_uniqueid_args(4 args)",
           sizeof(shmem_set_attr_uniqueid_args(0, 1, uid, attr)), sizeof(int));
    EXPECT("shmem_set_attr_uniqueid_args(5 args)",
           sizeof(shmem_set_attr_uniqueid_args(0, 1, 4096, uid, attr)), sizeof(int));
    EXPECT("shmem_get_uniqueid(uid)", sizeof(shmem_get_uniqueid(uid)), sizeof(int));
#ifdef __cplusplus
    /* C++ callers get CANN's member defaults. */
    aclshmemx_init_attr_t a;
    EXPECT("default option_attr.version", a.option_attr.version, 65536 + 24);
    EXPECT("default option_attr.data_op_engine_type", a.option_attr.data_op_engine_type, 1);
    EXPECT("default option_attr.shm_init_timeout", a.option_attr.shm_init_timeout, 120);
    EXPECT("default option_attr.shm_create_timeout", a.option_attr.shm_create_timeout, 120);
    EXPECT("default option_attr.control_operation_timeout", a.option_attr.control_operation_timeout,
           120);
    EXPECT("default comm_args", a.comm_args == nullptr, 1);
    EXPECT("default ip_port[0]", a.ip_port[0], 0);
    EXPECT("default instance_id", a.instance_id, 0);
    EXPECT("DEFAULT_TIMEOUT", DEFAULT_TIMEOUT, 120);
#endif
}

int main(void) {
    layouts();
    values();
    declarations();
    return finish("CANN's ABI", "aclshmem.h matches CANN's layout");
}
