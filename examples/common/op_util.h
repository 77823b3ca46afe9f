/* op_util.h: what the operator examples' host programs share: their command-line options, a
 * per-PE binary file, the matmul operators' inputs and result check, the CPUs per PE, a clock.
 * Each function names the program (`prog`) in its messages. */
#ifndef SHMEM_EXAMPLES_OP_UTIL_H
#define SHMEM_EXAMPLES_OP_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The value of option `opt` (text `s`) as a long in [1, max]; -1 with a message otherwise. */
static inline int op_parse_long(const char *prog, const char *opt, const char *s, long max,
                                long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *s == '\0' || *end != '\0' || v < 1 || v > max) {
        fprintf(stderr, "%s: invalid argument %s=%s: not an integer in [1, %ld]\n", prog, opt, s,
                max);
        return -1;
    }
    *out = v;
    return 0;
}

/* The same as an int (`max` at most INT_MAX). */
static inline int op_parse_int(const char *prog, const char *opt, const char *s, long max,
                               int *out) {
    long v;
    if (op_parse_long(prog, opt, s, max, &v) != 0) return -1;
    *out = (int)v;
    return 0;
}

/* One option of a program's command line: "--name VALUE" with VALUE an integer in [1, max]
 * stored in *i or *l (whichever is set), "--name TEXT" stored in *text, or, with none of those,
 * a flag "--name" that sets *flag to 1. Made with OP_INT, OP_LONG, OP_TEXT and OP_FLAG. */
struct op_option {
    const char *name;
    long max;
    int *i;
    long *l;
    const char **text;
    int *flag;
};
#define OP_INT(name, max, ptr)                                                                     \
    { name, max, ptr, NULL, NULL, NULL }
#define OP_LONG(name, max, ptr)                                                                    \
    { name, max, NULL, ptr, NULL, NULL }
#define OP_TEXT(name, ptr)                                                                         \
    { name, 0, NULL, NULL, ptr, NULL }
#define OP_FLAG(name, ptr)                                                                         \
    { name, 0, NULL, NULL, NULL, ptr }

/* Parses argv[1..] against the `n` options; 0, or 2 (the exit status of a usage error) after a
 * message naming the program and the argument. */
static inline int op_parse_options(const char *prog, int argc, char **argv,
                                   const struct op_option *opts, size_t n) {
    for (int a = 1; a < argc; a++) {
        const struct op_option *o = NULL;
        for (size_t j = 0; j < n && o == NULL; j++) {
            if (strcmp(argv[a], opts[j].name) == 0) o = &opts[j];
        }
        if (o == NULL) {
            fprintf(stderr, "%s: unknown option '%s'\n", prog, argv[a]);
            return 2;
        }
        if (o->flag != NULL) {
            *o->flag = 1;
            continue;
        }
        if (a + 1 >= argc) {
            fprintf(stderr, "%s: %s needs a value\n", prog, argv[a]);
            return 2;
        }
        const char *v = argv[++a];
        if (o->text != NULL) {
            *o->text = v;
        } else if ((o->i != NULL ? op_parse_int(prog, o->name, v, o->max, o->i)
                                 : op_parse_long(prog, o->name, v, o->max, o->l)) != 0) {
            return 2;
        }
    }
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

/* A deterministic input value in [-1, 1), different per PE, matrix (`which`) and index: the
 * matmul operators' inputs when no --data is given. */
static inline float op_input_value(int pe, int which, size_t i) {
    uint64_t x = ((uint64_t)pe * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)which << 56) ^ (i + 1);
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    return (float)(x % 2048) / 1024.0f - 1.0f;
}

/* Compares `count` values of `out` with `want`: 0 when every one is within `tol`; else prints
 * "prog: PE me: FAILED, ..." with the first one out of tolerance, named by row and column of
 * rows of `row_len` values counted from `first_row`, and returns 1. */
static inline int op_check_close(const char *prog, int me, const float *out, const float *want,
                                 size_t count, double tol, size_t row_len, size_t first_row) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < count; i++) {
        double d = (double)out[i] - (double)want[i];
        if (!(d <= tol && -d <= tol)) { /* NaN fails too */
            if (bad++ == 0) first = i;
        }
    }
    if (bad == 0) return 0;
    printf(
        "%s: PE %d: FAILED, %zu of %zu values differ from the sequential result by more than "
        "%g, first at row %zu col %zu: %g, expected %g\n",
        prog, me, bad, count, tol, first_row + first / row_len, first % row_len, (double)out[first],
        (double)want[first]);
    return 1;
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
