/* share_id.h: how the tests hand a unique id from the PE that made it to the others: through a
 * file in the test's build directory. The maker writes the id's bytes to `path` through a
 * temporary name, so readers never see half of it; the others wait for the file, at most 30 s.
 * `who` names the program in messages; a failure exits with status 2. */
#ifndef SHMEM_TEST_SHARE_ID_H
#define SHMEM_TEST_SHARE_ID_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline void share_id(const char *who, const char *path, int is_maker, void *id, size_t len) {
    if (is_maker) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        if (f == NULL || fwrite(id, 1, len, f) != len || fclose(f) != 0 || rename(tmp, path) != 0) {
            fprintf(stderr, "%s: cannot write %s: %s\n", who, path, strerror(errno));
            exit(2);
        }
        return;
    }
    for (int tries = 0; tries < 3000; tries++) {
        FILE *f = fopen(path, "rb");
        if (f != NULL) {
            size_t got = fread(id, 1, len, f);
            fclose(f);
            if (got == len) return;
        }
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    fprintf(stderr, "%s: no unique id in %s after 30 s\n", who, path);
    exit(2);
}

#endif /* SHMEM_TEST_SHARE_ID_H */
