/* mf_general.c: a program written for memfabric_hybrid's general API (<smem/host/smem.h>) and
 * the Big / Share Memory configuration calls, against libmf_smem.so: smem_init, a config store
 * on a free 127.0.0.1 port, log level and extern logger, the last error message after bad
 * arguments, and memfabric's return codes. Built in the tree (memfabric.general) and by each
 * consumer of an installed tree (CMake, pkg-config, memfabric's README). Exits 0 when every
 * check holds, else prints each failed one and exits 1. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <smem/host/smem_bm.h>
#include <smem/host/smem_shm.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int failures;
static int logged_lines;
static char last_logged[512];

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: %s (last error: '%s')\n", __FILE__, __LINE__, #cond,      \
                    smem_get_last_err_msg());                                                      \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static void logger(int level, const char *msg) {
    logged_lines++;
    snprintf(last_logged, sizeof last_logged, "%d %s", level, msg);
}

/* A listening socket on a port the system picks on 127.0.0.1; its port in *port. */
static int listen_any(unsigned *port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 1) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        perror("listen on 127.0.0.1");
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static int can_connect(unsigned port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((unsigned short)port);
    int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0) {
        close(fd);
    }
    return ok;
}

static int last_error_has(const char *a, const char *b) {
    const char *m = smem_get_last_err_msg();
    return strstr(m, a) != NULL && (b == NULL || strstr(m, b) != NULL);
}

static void general(void) {
    char url[64];
    unsigned port = 0, taken_port = 0;

    CHECK(smem_init(0) == 0);
    CHECK(strcmp(smem_get_last_err_msg(), "") == 0);

    CHECK(smem_set_extern_logger(NULL) == -2000);
    CHECK(last_error_has("smem_set_extern_logger", "func=NULL"));
    CHECK(smem_set_extern_logger(logger) == 0);
    CHECK(smem_set_log_level(4) == -1);
    CHECK(last_error_has("smem_set_log_level", "level=4"));
    CHECK(smem_set_log_level(-1) == -1);
    CHECK(logged_lines > 0); /* errors are logged at the default level, 3 */
    CHECK(last_logged[0] == '3');
    CHECK(smem_set_log_level(0) == 0);

    /* The last error is this thread's; smem_get_and_clear_last_err_msg hands it out once. */
    CHECK(strstr(smem_get_and_clear_last_err_msg(), "level=-1") != NULL);
    CHECK(strcmp(smem_get_last_err_msg(), "") == 0);

    CHECK(smem_create_config_store(NULL) == -2000);
    CHECK(last_error_has("smem_create_config_store", "storeUrl=NULL"));
    const char *bad[] = {"tcp://0.0.0.0:5000", "tcp://127.0.0.1:1024", "tcp://127.0.0.1",
                         "127.0.0.1:5000",     "tcp6://[::1]:5000",    "tcp://[::1:5000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(smem_create_config_store(bad[i]) == -2000);
        CHECK(last_error_has("smem_create_config_store", bad[i]));
    }

    int taken = listen_any(&taken_port);
    CHECK(taken >= 0);
    snprintf(url, sizeof url, "tcp://127.0.0.1:%u", taken_port);
    CHECK(smem_create_config_store(url) == -1);
    CHECK(last_error_has("smem_create_config_store", url));

    int probe = listen_any(&port);
    CHECK(probe >= 0);
    close(probe); /* free again: the store takes it (another process could, rarely) */
    snprintf(url, sizeof url, "tcp://127.0.0.1:%u", port);
    int lines = logged_lines;
    CHECK(smem_create_config_store(url) == 0);
    CHECK(logged_lines > lines); /* info and the plain-TCP warning, at level 0 */
    CHECK(can_connect(port));
    CHECK(smem_create_config_store(url) == 0); /* already served here */
    close(taken);

    CHECK(smem_set_conf_store_tls(false, NULL, 0) == 0);
    CHECK(smem_set_config_store_tls_key(NULL, 0, NULL, 0, NULL) == 0);
    smem_uninit();
}

static void configs(void) {
    smem_bm_config_t bm;
    smem_shm_config_t shm;
    memset(&bm, 0xa5, sizeof bm);
    CHECK(smem_bm_config_init(NULL) == -2000);
    CHECK(last_error_has("smem_bm_config_init", "config=NULL"));
    CHECK(smem_bm_config_init(&bm) == 0);
    CHECK(bm.initTimeout == 120 && bm.createTimeout == 120 && bm.controlOperationTimeout == 120);
    CHECK(bm.startConfigStoreServer && !bm.startConfigStoreOnly && !bm.dynamicWorldSize);
    CHECK(bm.unifiedAddressSpace && bm.autoRanking);
    CHECK(bm.rankId == 65535 && bm.flags == 0 && bm.hcomUrl[0] == 0);
    CHECK(!bm.hcomTlsConfig.tlsEnable && !bm.storeTlsConfig.tlsEnable);
    CHECK(bm.storeTlsConfig.decrypterLibPath[255] == 0);

    memset(&shm, 0xa5, sizeof shm);
    CHECK(smem_shm_config_init(&shm) == 0);
    CHECK(shm.shmInitTimeout == 120 && shm.shmCreateTimeout == 120);
    CHECK(shm.controlOperationTimeout == 120 && shm.startConfigStoreServer && shm.flags == 0);

    CHECK(smem_bm_init("tcp://127.0.0.1:5000", 0, 0, &bm) == -2000);
    CHECK(last_error_has("smem_bm_init", "worldSize=0"));
    CHECK(smem_bm_init("tcp://127.0.0.1:5000", 1025, 0, &bm) == -2000);
    CHECK(smem_bm_init(NULL, 2, 0, &bm) == -2000);
    bm.unifiedAddressSpace = false;
    CHECK(smem_bm_init("tcp://127.0.0.1:5000", 2, 0, &bm) == -2000);
    CHECK(last_error_has("smem_bm_init", "unifiedAddressSpace"));
    CHECK(smem_bm_get_rank_id() == 0);
    CHECK(smem_bm_join(NULL, 0) == -2000);
    CHECK(last_error_has("smem_bm_join", "handle=NULL"));
    CHECK(smem_bm_create2(0, NULL) == NULL);

    CHECK(smem_shm_init("tcp://127.0.0.1:5000", 2, 2, 0, &shm) == -2000);
    CHECK(last_error_has("smem_shm_init", "rankId=2"));
    CHECK(smem_shm_query_support_data_operation() == SMEMS_DATA_OP_MTE);
    CHECK(smem_shm_get_global_rank(NULL) == UINT32_MAX);
}

int main(void) {
    general();
    configs();
    if (failures != 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("OK: memfabric general API (log lines seen: %d)\n", logged_lines);
    return 0;
}
