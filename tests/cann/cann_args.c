/* cann_args.c: every CANN start-up routine given bad arguments returns CANN's code (the log
 * line naming the argument is checked by the test's regexes), then a 1-PE job started through
 * the attributes works and ends. Exits 1 on the first wrong code. */
#include <aclshmem.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define EXPECT_CODE(call, want)                                                                    \
    do {                                                                                           \
        int got_ = (call);                                                                         \
        if (got_ != (want)) {                                                                      \
            fprintf(stderr, "line %d: %s returned %d, expected %d (%s)\n", __LINE__, #call, got_,  \
                    (int)(want), #want);                                                           \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

int main(void) {
    aclshmemx_init_attr_t *attr = NULL;
    EXPECT_CODE(aclshmemx_init_status(), ACLSHMEM_STATUS_NOT_INITIALIZED);
    EXPECT_CODE(shmem_set_attr(0, 1, 4096, NULL, NULL), ACLSHMEM_INVALID_PARAM);
    EXPECT_CODE(shmem_set_attr(5, 2, 4096, NULL, &attr), ACLSHMEM_INVALID_PARAM);
    EXPECT_CODE(shmem_set_attr(0, 0, 4096, NULL, &attr), ACLSHMEM_INVALID_PARAM);
    EXPECT_CODE(aclshmemx_set_attr(0, 100000, 4096, NULL, &attr), ACLSHMEM_INVALID_PARAM);
    EXPECT_CODE(shmem_set_attr(0, 1, 0, NULL, &attr), ACLSHMEM_INVALID_VALUE);
    EXPECT_CODE(shmem_set_attr(0, 1, 4096, "http://1.2.3.4:5", &attr), ACLSHMEM_INVALID_PARAM);
    EXPECT_CODE(shmem_set_attr(0, 1, 4096, "tcp://1.2.3.4", &attr), ACLSHMEM_INVALID_PARAM);
    char long_ip[100];
    memset(long_ip, '1', sizeof long_ip - 1);
    long_ip[sizeof long_ip - 1] = '\0';
    memcpy(long_ip, "tcp://", 6);
    EXPECT_CODE(shmem_set_attr(0, 1, 4096, long_ip, &attr), ACLSHMEM_INVALID_PARAM);
    if (attr != NULL) {
        fprintf(stderr, "a refused shmem_set_attr wrote *attributes\n");
        failures++;
    }
    EXPECT_CODE(shmem_set_attr(0, 1, 1 << 20, "tcp://127.0.0.1:8666", &attr), ACLSHMEM_SUCCESS);
    if (attr == NULL || attr->n_pes != 1 || attr->local_mem_size != 1 << 20 ||
        strcmp(attr->ip_port, "tcp://127.0.0.1:8666") != 0 ||
        attr->option_attr.shm_init_timeout != ACLSHMEM_DEFAULT_TIMEOUT ||
        attr->option_attr.data_op_engine_type != ACLSHMEM_DATA_OP_MTE) {
        fprintf(stderr, "shmem_set_attr filled the attributes wrongly\n");
        return 1;
    }

    EXPECT_CODE(shmem_set_data_op_engine_type(NULL, ACLSHMEM_DATA_OP_MTE), ACLSHMEM_INVALID_PARAM);
    EXPECT_CODE(shmem_set_data_op_engine_type(attr, ACLSHMEM_DATA_OP_ROCE), ACLSHMEM_NOT_SUPPORTED);
    EXPECT_CODE(shmemx_set_data_op_engine_type(attr, (data_op_engine_type_t)7),
                ACLSHMEM_INVALID_VALUE);
    EXPECT_CODE(aclshmemx_set_data_op_engine_type(attr, ACLSHMEM_DATA_OP_MTE), ACLSHMEM_SUCCESS);
    EXPECT_CODE(shmem_set_timeout(attr, 0), ACLSHMEM_INVALID_VALUE);
    EXPECT_CODE(aclshmemx_set_timeout(NULL, 5), ACLSHMEM_INVALID_PARAM);

    EXPECT_CODE(aclshmemx_get_uniqueid(NULL), ACLSHMEM_INVALID_PARAM);
    aclshmemx_uniqueid_t uid = ACLSHMEM_UNIQUEID_INITIALIZER;
    aclshmemx_init_attr_t mine;
    memset(&mine, 0, sizeof mine);
    /* An id nobody filled, and one of another version. */
    EXPECT_CODE(aclshmemx_set_attr_uniqueid_args(0, 1, 4096, &uid, &mine), ACLSHMEM_INVALID_PARAM);
    uid.version = 42;
    EXPECT_CODE(aclshmemx_set_attr_uniqueid_args(0, 1, 4096, &uid, &mine), ACLSHMEM_INVALID_PARAM);
    EXPECT_CODE(aclshmemx_get_uniqueid(&uid), ACLSHMEM_SUCCESS);
    EXPECT_CODE(aclshmemx_set_attr_uniqueid_args(0, 1, -1, &uid, &mine), ACLSHMEM_INVALID_VALUE);
    EXPECT_CODE(aclshmemx_set_attr_uniqueid_args(0, 1, 4096, &uid, NULL), ACLSHMEM_INVALID_PARAM);
    EXPECT_CODE(shmem_set_attr_uniqueid_args(0, 2, &uid, attr), ACLSHMEM_INVALID_PARAM);

    EXPECT_CODE(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_MPI, attr), ACLSHMEM_NOT_SUPPORTED);
    EXPECT_CODE(aclshmemx_init_attr((aclshmemx_bootstrap_t)3, attr), ACLSHMEM_INVALID_PARAM);
    EXPECT_CODE(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, NULL), ACLSHMEM_INVALID_PARAM);
    /* The two-argument form's flags handed to the one-argument symbol. */
    EXPECT_CODE((shmem_init_attr)((shmem_init_attr_t *)(uintptr_t)ACLSHMEMX_INIT_WITH_UNIQUEID),
                ACLSHMEM_INVALID_PARAM);
    mine.my_pe = 0;
    mine.n_pes = 1;
    mine.local_mem_size = 4096;
    mine.option_attr.data_op_engine_type = ACLSHMEM_DATA_OP_MTE;
    mine.option_attr.shm_init_timeout = 0; /* a C caller's zeroed struct */
    mine.option_attr.shm_create_timeout = 5;
    mine.option_attr.control_operation_timeout = 5;
    EXPECT_CODE(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_UNIQUEID, &mine), ACLSHMEM_INVALID_VALUE);
    mine.option_attr.shm_init_timeout = 5;
    EXPECT_CODE(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_UNIQUEID, &mine), ACLSHMEM_INVALID_PARAM);
    EXPECT_CODE(aclshmem_finalize(), ACLSHMEM_NOT_INITED);
    EXPECT_CODE(aclshmemx_init_status(), ACLSHMEM_STATUS_NOT_INITIALIZED);

    /* A 1-PE job through the unique id: it starts, works, ends. */
    EXPECT_CODE(aclshmemx_set_attr_uniqueid_args(0, 1, 1 << 20, &uid, &mine), ACLSHMEM_SUCCESS);
    if (uid.my_pe != 0 || uid.n_pes != 1 || mine.comm_args != &uid) {
        fprintf(stderr, "aclshmemx_set_attr_uniqueid_args did not fill uid and attr\n");
        failures++;
    }
    EXPECT_CODE(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_UNIQUEID, &mine), ACLSHMEM_SUCCESS);
    EXPECT_CODE(aclshmemx_init_status(), ACLSHMEM_STATUS_IS_INITIALIZED);
    EXPECT_CODE(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_UNIQUEID, &mine), ACLSHMEM_INNER_ERROR);
    EXPECT_CODE(shmem_set_attr(0, 1, 4096, NULL, &attr), ACLSHMEM_INNER_ERROR);
    int *x = shmem_malloc(sizeof(int));
    *x = 7;
    shmem_int_p(x, 8, 0);
    shmem_barrier_all();
    EXPECT_CODE(*x, 8);
    shmem_free(x);
    EXPECT_CODE(aclshmem_finalize(), ACLSHMEM_SUCCESS);
    EXPECT_CODE(aclshmemx_init_status(), ACLSHMEM_STATUS_NOT_INITIALIZED);
    if (failures != 0) return 1;
    printf("all codes as expected\n");
    return 0;
}
