/* cann_data.c: one 2-or-more-PE data program started the CANN ways. Every PE puts a block into
 * the next PE's symmetric buffer, waits at a barrier, and checks the block the previous PE put.
 *
 *   cann_data MODE RANK N [--size LIST] [--ip IP_PORT] [--uid FILE] [--maker R] [--tls INFO]
 *             [--timeout S]
 *
 * MODE  attr      shmem_set_attr(ip_port) + aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT)
 *       attr1     shmem_set_attr(ip_port) + shmem_init_attr(attr) (one argument)
 *       uid       aclshmemx_get_uniqueid (rank 0, written to FILE) +
 *                 aclshmemx_set_attr_uniqueid_args + aclshmemx_init_attr(..._UNIQUEID)
 *       uid4      torch_npu's older calls: shmem_set_attr(NULL) + shmem_get_uniqueid (the
 *                 128-byte id) + shmem_set_attr_uniqueid_args (4 arguments) + shmem_init_attr
 *       init      shmem_init, under a launcher (RANK and N are checked against it)
 * RANK, N: numbers, or "env" (the launcher's SHMEM_RUN_RANK/SIZE or OMPI_COMM_WORLD_RANK/SIZE).
 * --maker R: rank R, not rank 0, makes the unique id (PE 0 must then refuse it).
 * --tls INFO: the store's TLS with the user's certificates, CANN's TLS info string
 * (aclshmemx_set_conf_store_tls before start-up).
 * --end HOW: how the program ends after the check: finalize (default), or without finalizing,
 * as CANN's programs do: return (from main) or exit (exit(0) from a function), after a pause
 * of a few random milliseconds, so that the PEs leave in any order.
 * --size and N may be comma lists indexed by rank (the last entry repeats), to give PEs
 * different jobs on purpose. Exits 0 when the data checks out, 3 when start-up fails (after
 * printing the code).
 */
#include <aclshmem.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "share_id.h"

#define WORDS 1024

static long pick(const char *list, int rank) {
    long v = 0;
    const char *p = list;
    for (int i = 0; i <= rank; i++) {
        v = strtol(p, NULL, 0);
        const char *comma = strchr(p, ',');
        if (comma == NULL) break;
        p = comma + 1;
    }
    return v;
}

static int from_env(const char *a, const char *b) {
    const char *v = getenv(a);
    if (v == NULL) v = getenv(b);
    /* torchrun's variables: its rank and its size variables share no prefix with the others. */
    if (v == NULL) v = getenv(strstr(a, "RANK") != NULL ? "RANK" : "WORLD_SIZE");
    if (v == NULL) {
        fprintf(stderr, "cann_data: none of %s, %s, RANK/WORLD_SIZE is set\n", a, b);
        exit(2);
    }
    return atoi(v);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr,
                "usage: cann_data MODE RANK N [--size LIST] [--ip IP_PORT] [--uid FILE] "
                "[--maker R] [--tls INFO] [--timeout S]\n");
        return 2;
    }
    const char *mode = argv[1];
    int rank = strcmp(argv[2], "env") == 0 ? from_env("SHMEM_RUN_RANK", "OMPI_COMM_WORLD_RANK")
                                           : atoi(argv[2]);
    const char *n_list = argv[3];
    int n = strcmp(n_list, "env") == 0 ? from_env("SHMEM_RUN_SIZE", "OMPI_COMM_WORLD_SIZE")
                                       : (int)pick(n_list, rank);
    const char *size_list = "1048576", *ip = "", *uid_path = NULL, *tls_info = NULL;
    const char *end = "finalize";
    unsigned timeout = 30;
    int maker = 0;
    for (int i = 4; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--size") == 0) size_list = argv[i + 1];
        if (strcmp(argv[i], "--ip") == 0) ip = argv[i + 1];
        if (strcmp(argv[i], "--uid") == 0) uid_path = argv[i + 1];
        if (strcmp(argv[i], "--timeout") == 0) timeout = (unsigned)atoi(argv[i + 1]);
        if (strcmp(argv[i], "--maker") == 0) maker = atoi(argv[i + 1]);
        if (strcmp(argv[i], "--tls") == 0) tls_info = argv[i + 1];
        if (strcmp(argv[i], "--end") == 0) end = argv[i + 1];
    }
    if (strcmp(end, "finalize") != 0 && strcmp(end, "return") != 0 && strcmp(end, "exit") != 0) {
        fprintf(stderr, "cann_data: --end %s: expected finalize, return or exit\n", end);
        return 2;
    }
    if (tls_info != NULL &&
        aclshmemx_set_conf_store_tls(true, tls_info, (uint32_t)strlen(tls_info)) != 0) {
        fprintf(stderr, "cann_data: aclshmemx_set_conf_store_tls refused %s\n", tls_info);
        return 2;
    }
    uint64_t size = (uint64_t)pick(size_list, rank);

    int rc;
    if (strcmp(mode, "init") == 0) {
        shmem_init();
        rc = 0;
    } else if (strcmp(mode, "attr") == 0 || strcmp(mode, "attr1") == 0) {
        aclshmemx_init_attr_t *attr = NULL;
        rc = shmem_set_attr(rank, n, size, ip, &attr);
        if (rc == 0) rc = shmem_set_timeout(attr, timeout);
        if (rc == 0) rc = shmem_set_data_op_engine_type(attr, ACLSHMEM_DATA_OP_MTE);
        if (rc == 0) {
            rc = strcmp(mode, "attr") == 0 ? aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, attr)
                                           : shmem_init_attr(attr);
        }
    } else if (strcmp(mode, "uid") == 0 && uid_path != NULL) {
        aclshmemx_uniqueid_t uid = ACLSHMEM_UNIQUEID_INITIALIZER;
        if (rank == maker && (rc = aclshmemx_get_uniqueid(&uid)) != 0) {
            fprintf(stderr, "cann_data: aclshmemx_get_uniqueid returned %d\n", rc);
            return 3;
        }
        share_id("cann_data", uid_path, rank == maker, &uid, sizeof uid);
        aclshmemx_init_attr_t *attr = NULL;
        /* Timeouts and engine from a library-filled struct; the id fills in the rest. */
        rc = aclshmemx_set_attr(rank, n, size, NULL, &attr);
        if (rc == 0) rc = aclshmemx_set_timeout(attr, timeout);
        if (rc == 0) rc = aclshmemx_set_attr_uniqueid_args(rank, n, (int64_t)size, &uid, attr);
        if (rc == 0) rc = aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_UNIQUEID, attr);
    } else if (strcmp(mode, "uid4") == 0 && uid_path != NULL) {
        shmemx_uniqueid_t uid = SHMEM_UNIQUEID_INITIALIZER;
        if (rank == 0 && (rc = shmem_get_uniqueid(&uid)) != 0) {
            fprintf(stderr, "cann_data: shmem_get_uniqueid returned %d\n", rc);
            return 3;
        }
        share_id("cann_data", uid_path, rank == 0, &uid, sizeof uid);
        shmem_init_attr_t *attr = NULL;
        rc = shmem_set_attr(rank, n, size, NULL, &attr);
        if (rc == 0) rc = shmem_set_timeout(attr, timeout);
        if (rc == 0) rc = shmem_set_attr_uniqueid_args(rank, n, &uid, attr);
        if (rc == 0) rc = shmem_init_attr(attr);
    } else {
        fprintf(stderr, "cann_data: unknown mode %s (or --uid missing)\n", mode);
        return 2;
    }
    if (rc != 0) {
        printf("PE %d: start-up failed with code %d\n", rank, rc);
        return 3;
    }

    int me = shmem_my_pe(), npes = shmem_n_pes();
    CHECK(me == rank);
    CHECK(npes == n);
    CHECK(aclshmem_my_pe() == me && aclshmem_n_pes() == npes);
    CHECK(aclshmemx_init_status() == ACLSHMEM_STATUS_IS_INITIALIZED);
    CHECK(shmem_init_status() == ACLSHMEM_STATUS_IS_INITIALIZED);

    long *buf = shmem_malloc(WORDS * sizeof(long));
    CHECK(buf != NULL);
    long src[WORDS];
    for (int i = 0; i < WORDS; i++) src[i] = (long)me * 1000000 + i;
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    shmem_long_put(buf, src, WORDS, next);
    shmem_barrier_all();
    for (int i = 0; i < WORDS; i++) CHECK(buf[i] == (long)prev * 1000000 + i);
    /* And one word fetched back from a peer: the block this PE put there. */
    CHECK(shmem_long_g(&buf[WORDS - 1], next) == (long)me * 1000000 + WORDS - 1);
    shmem_barrier_all();
    shmem_free(buf);

    if (strcmp(end, "finalize") != 0) {
        /* Left in stdio's buffer (stdout is a file or a pipe here): lost if the process is
         * killed instead of exiting. */
        printf("PE %d of %d: %s: data checked, ending by %s without finalize\n", me, npes, mode,
               end);
        srand((unsigned)getpid());
        struct timespec pause = {0, (long)(rand() % 50) * 1000000L};
        nanosleep(&pause, NULL);
        if (strcmp(end, "exit") == 0) exit(0);
        return 0;
    }
    if (strcmp(mode, "init") == 0) {
        shmem_finalize();
    } else {
        CHECK(aclshmem_finalize() == ACLSHMEM_SUCCESS);
    }
    if (aclshmemx_init_status() != ACLSHMEM_STATUS_NOT_INITIALIZED) {
        fprintf(stderr, "PE %d: status after finalize is %d\n", me, aclshmemx_init_status());
        return 1;
    }
    printf("PE %d of %d: %s: data checked\n", me, npes, mode);
    return 0;
}
