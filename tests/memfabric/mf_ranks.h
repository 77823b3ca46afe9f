/* mf_ranks.h: what the Big Memory test programs' ranks share: the check macro and the last
 * error, the data pattern each rank writes and checks, and meeting points through files in a
 * directory every rank reaches. The program sets `index_` (the rank's index among the
 * processes) and `syncdir` (that directory) before the ranks meet; `failures` counts the
 * checks that failed. Include after <smem/host/smem_bm.h>. */
#ifndef SHMEM_TESTS_MEMFABRIC_MF_RANKS_H
#define SHMEM_TESTS_MEMFABRIC_MF_RANKS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;
static int index_;
static const char *syncdir;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL [%d] %s:%d: %s (last error: '%s')\n", index_, __FILE__,          \
                    __LINE__, #cond, smem_get_last_err_msg());                                     \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static int last_error_has(const char *a, const char *b) {
    const char *m = smem_get_last_err_msg();
    return strstr(m, a) != NULL && (b == NULL || strstr(m, b) != NULL);
}

static unsigned char pattern(unsigned rank, size_t at, unsigned salt) {
    return (unsigned char)(rank * 31u + at * 7u + salt * 13u + 1u);
}

static void fill(unsigned char *p, size_t n, unsigned rank, unsigned salt) {
    for (size_t i = 0; i < n; i++) {
        p[i] = pattern(rank, i, salt);
    }
}

static int holds(const unsigned char *p, size_t n, unsigned rank, unsigned salt) {
    for (size_t i = 0; i < n; i++) {
        if (p[i] != pattern(rank, i, salt)) {
            fprintf(stderr, "[%d] byte %zu is %u, not rank %u's %u (salt %u)\n", index_, i, p[i],
                    rank, pattern(rank, i, salt), salt);
            return 0;
        }
    }
    return 1;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Files in SYNCDIR named "<name>.<something>". */
static int count(const char *name) {
    DIR *d = opendir(syncdir);
    int n = 0;
    size_t len = strlen(name);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, name, len) == 0 && e->d_name[len] == '.') {
            n++;
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

static void mark(const char *name, const char *value) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.%d", syncdir, name, index_);
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(value, f) < 0 || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

/* Waits until `n` processes marked `name`. */
static void barrier(const char *name, int n) {
    mark(name, "");
    for (int i = 0; count(name) < n; i++) {
        if (i > 60 * 200) {
            fprintf(stderr, "[%d] barrier %s: %d of %d after 60 s\n", index_, name, count(name), n);
            exit(2);
        }
        sleep_ms(5);
    }
}

#endif
