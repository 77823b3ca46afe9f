/* op_util.h: what the operator examples' host programs share: an integer option, a per-PE
 * binary file, the CPUs per PE, a clock. Each function names the program (`prog`) in its
 * messages. */
#ifndef SHMEM_EXAMPLES_OP_UTIL_H
#define SHMEM_EXAMPLES_OP_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The value of option `opt` (text `s`) as an int in [1, max]; -1 with a message otherwise. */
static inline int op_parse_int(const char *prog, const char *opt, const char *s, long max,
                               int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *s == '\0' || *end != '\0' || v < 1 || v > max) {
        fprintf(stderr, "%s: invalid argument %s=%s: not an integer in [1, %ld]\n", prog, opt, s,
                max);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Writes (`write` nonzero) or reads exactly `bytes` of DIR/<name>_pe<pe>.bin; -1 with a
 * message when the file cannot be opened or holds another size. */
static inline int op_file_io(const char *prog, const char *dir, const char *name, int pe, void *buf,
                             size_t bytes, int write) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s_pe%d.bin", dir, name, pe);
    FILE *f = fopen(path, write ? "wb" : "rb");
    int ok = f != NULL;
    if (ok && write) ok = fwrite(buf, 1, bytes, f) == bytes;
    if (ok && !write) ok = fread(buf, 1, bytes, f) == bytes && fgetc(f) == EOF;
    if (f != NULL && fclose(f) != 0) ok = 0;
    if (!ok) {
        fprintf(stderr, "%s: cannot %s %s (%zu bytes): %s\n", prog, write ? "write" : "read", path,
                bytes, errno ? strerror(errno) : "wrong size");
    }
    return ok ? 0 : -1;
}

/* The CPUs of one PE's share of the machine: online CPUs / npes, at least 1 (the default
 * number of kernel blocks, one BLAS thread each, so PEs x blocks never oversubscribe). */
static inline int op_cpus_per_pe(int npes) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long per = npes > 0 && cpus > 0 ? cpus / npes : 1;
    return per < 1 ? 1 : (int)per;
}

/* Seconds on the monotonic clock. */
static inline double op_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif /* SHMEM_EXAMPLES_OP_UTIL_H */
