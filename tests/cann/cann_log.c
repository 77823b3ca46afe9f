/* cann_log.c: CANN's logging calls at N PEs (under shmemrun). Before start-up: a bad level is
 * refused with ACLSHMEM_INVALID_VALUE; a callback set with aclshmemx_set_extern_logger receives
 * the lines (CANN's level and the text, nothing on stderr); aclshmemx_set_log_level filters a
 * debug line at info and lets it through at debug. After start-up: a refused allocation's
 * error line reaches the callback at level 3; NULL sends the next one to stderr again. Every PE
 * checks its own lines. Prints "PE x of n: logging checked" at the end. */
#include <aclshmem.h>
#include <shmemx.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static int saved_fd = -1; /* the real stderr while it is captured, else -1 */

/* Before start-up CHECK cannot end the job; exit at once instead, saying why on the real
 * stderr. */
#define EARLY_CHECK(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fflush(stderr);                                                                        \
            if (saved_fd >= 0) dup2(saved_fd, 2);                                                  \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define MAX_LINES 256
static int n_lines;
static int levels[MAX_LINES];
static char texts[MAX_LINES][512];

static void collect(int level, const char *msg) {
    if (n_lines < MAX_LINES) {
        levels[n_lines] = level;
        snprintf(texts[n_lines], sizeof texts[0], "%s", msg);
    }
    n_lines++;
}

/* The index of the first collected line holding `needle`, or -1. */
static int find(const char *needle) {
    for (int i = 0; i < n_lines && i < MAX_LINES; i++) {
        if (strstr(texts[i], needle) != NULL) return i;
    }
    return -1;
}

/* Sends stderr to a fresh temporary file until end_capture, which returns its text. */
static FILE *capture;
static void begin_capture(void) {
    fflush(stderr);
    capture = tmpfile();
    EARLY_CHECK(capture != NULL);
    saved_fd = dup(2);
    EARLY_CHECK(saved_fd >= 0 && dup2(fileno(capture), 2) == 2);
}
static void end_capture(char *out, size_t cap) {
    fflush(stderr);
    EARLY_CHECK(dup2(saved_fd, 2) == 2);
    close(saved_fd);
    saved_fd = -1;
    rewind(capture);
    size_t n = fread(out, 1, cap - 1, capture);
    out[n] = '\0';
    fclose(capture);
}

int main(void) {
    static char err[8192];

    /* Bad levels: CANN's code, one line naming the call and the value. */
    begin_capture();
    int rc_high = aclshmemx_set_log_level(5);
    int rc_low = shmem_set_log_level(-1);
    end_capture(err, sizeof err);
    EARLY_CHECK(rc_high == ACLSHMEM_INVALID_VALUE && rc_low == ACLSHMEM_INVALID_VALUE);
    EARLY_CHECK(strstr(err, "ERROR: aclshmemx_set_log_level: invalid argument level=5") != NULL);
    EARLY_CHECK(strstr(err, "ERROR: shmem_set_log_level: invalid argument level=-1") != NULL);

    /* A callback: lines reach it, not stderr. */
    begin_capture();
    EARLY_CHECK(aclshmemx_set_extern_logger(collect) == ACLSHMEM_SUCCESS);
    EARLY_CHECK(aclshmemx_set_log_level(7) == ACLSHMEM_INVALID_VALUE);
    int bad = find("aclshmemx_set_log_level: invalid argument level=7");
    EARLY_CHECK(bad >= 0 && levels[bad] == 3);
    EARLY_CHECK(strstr(texts[bad], "ERROR") == NULL && strchr(texts[bad], '\n') == NULL);
    EARLY_CHECK(strncmp(texts[bad], "shmem: ", 7) == 0);

    /* At info, turning the store's TLS off logs nothing; at debug it logs one debug line. */
    EARLY_CHECK(aclshmemx_set_log_level(1) == ACLSHMEM_SUCCESS);
    EARLY_CHECK(aclshmemx_set_conf_store_tls(false, NULL, 0) == 0);
    EARLY_CHECK(find("TLS of a TCP store turned off") < 0);
    EARLY_CHECK(shmem_set_log_level(0) == ACLSHMEM_SUCCESS);
    EARLY_CHECK(aclshmemx_set_conf_store_tls(false, NULL, 0) == 0);
    int dbg = find("aclshmemx_set_conf_store_tls: TLS of a TCP store turned off");
    EARLY_CHECK(dbg >= 0 && levels[dbg] == 0);
    EARLY_CHECK(aclshmemx_set_log_level(2) == ACLSHMEM_SUCCESS);
    end_capture(err, sizeof err);
    EARLY_CHECK(strstr(err, "level=7") == NULL && strstr(err, "TLS of a TCP store") == NULL);

    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    char prefix[64];
    snprintf(prefix, sizeof prefix, "shmem: PE %d: ", me);

    /* A refused allocation: its error line reaches the callback, naming this PE. */
    int before = n_lines;
    CHECK(aclshmemx_malloc(64, (aclshmem_mem_type_t)7) == NULL);
    CHECK(n_lines == before + 1);
    CHECK(levels[before] == 3);
    CHECK(strncmp(texts[before], prefix, strlen(prefix)) == 0);
    CHECK(strstr(texts[before], "aclshmemx_malloc") != NULL);
    CHECK(strstr(texts[before], "invalid argument mem_type=7") != NULL);

    /* NULL: the next line goes to stderr again, and not to the callback. */
    CHECK(shmem_set_extern_logger(NULL) == ACLSHMEM_SUCCESS);
    before = n_lines;
    begin_capture();
    /* The memory kind the heap is not (DEVICE_SIDE unless the npu device holds it). */
    int npu = on_accelerator();
    void *p = aclshmemx_malloc(64, npu ? HOST_SIDE : DEVICE_SIDE);
    end_capture(err, sizeof err);
    CHECK(p == NULL);
    CHECK(n_lines == before);
    char want[128];
    snprintf(want, sizeof want, "%sERROR: aclshmemx_malloc: mem_type=%s", prefix,
             npu ? "HOST_SIDE" : "DEVICE_SIDE");
    CHECK(strstr(err, want) != NULL);

    shmem_barrier_all();
    printf("PE %d of %d: logging checked\n", me, npes);
    shmem_finalize();
    return 0;
}
