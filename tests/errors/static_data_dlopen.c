/*
 * static_data_dlopen.c: a program that loads libshmem with dlopen, as Python and torch do.
 * Its globals were not made symmetric (the program was already running), so a put to one ends
 * the job with a message saying so. With SHMEM_SYMMETRIC_DATA=1 the library moves them anyway
 * and the put works; the program then prints "static data through dlopen: ok".
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

static long target[4];

static void *must(void *lib, const char *name) {
    void *sym = dlsym(lib, name);
    if (sym == NULL) {
        fprintf(stderr, "dlsym(%s): %s\n", name, dlerror());
        exit(2);
    }
    return sym;
}

int main(void) {
    void *lib = dlopen(SHMEM_LIBRARY_PATH, RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen(%s): %s\n", SHMEM_LIBRARY_PATH, dlerror());
        return 2;
    }
    void (*init)(void) = (void (*)(void))must(lib, "shmem_init");
    void (*finalize)(void) = (void (*)(void))must(lib, "shmem_finalize");
    int (*my_pe)(void) = (int (*)(void))must(lib, "shmem_my_pe");
    int (*n_pes)(void) = (int (*)(void))must(lib, "shmem_n_pes");
    void (*barrier_all)(void) = (void (*)(void))must(lib, "shmem_barrier_all");
    void (*putmem)(void *, const void *, size_t, int) =
        (void (*)(void *, const void *, size_t, int))must(lib, "shmem_putmem");

    init();
    int me = my_pe(), npes = n_pes();
    long v = 100 + me;
    putmem(&target[2], &v, sizeof v, (me + 1) % npes);
    barrier_all();
    if (target[2] != 100 + (me + npes - 1) % npes) {
        fprintf(stderr, "PE %d: target[2]=%ld after a peer's put\n", me, target[2]);
        return 3;
    }
    barrier_all();
    if (me == 0) printf("static data through dlopen: ok\n");
    finalize();
    return 0;
}
