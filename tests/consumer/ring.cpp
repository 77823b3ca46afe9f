// Consumer check in C++: the same ring as ring.c, compiled as C++ against the installed
// headers (catches C-only constructs in them). Needs at least 2 PEs. Exits 0 on success.
#include <shmem.h>

#include <cstdio>

int main() {
    shmem_init();
    const int me = shmem_my_pe();
    const int npes = shmem_n_pes();
    if (npes < 2) {
        std::fprintf(stderr, "ring_cxx: needs at least 2 PEs, got %d\n", npes);
        shmem_finalize();
        return 2;
    }

    auto *slot = static_cast<int *>(shmem_malloc(sizeof(int)));
    if (slot == nullptr) {
        std::fprintf(stderr, "ring_cxx: PE %d: shmem_malloc failed\n", me);
        return 1;
    }
    *slot = -1;
    shmem_barrier_all();

    const int value = 7 * me + 3;
    shmem_putmem(slot, &value, sizeof value, (me + 1) % npes);
    shmem_barrier_all();

    const int left = (me + npes - 1) % npes;
    const bool ok = *slot == 7 * left + 3;
    if (!ok) {
        std::fprintf(stderr, "ring_cxx: PE %d: got %d, expected %d from PE %d\n", me, *slot,
                     7 * left + 3, left);
    }
    shmem_barrier_all();
    shmem_free(slot);
    if (ok && me == 0) {
        std::printf("ring_cxx: OK on %d PEs\n", npes);
    }
    shmem_finalize();
    return ok ? 0 : 1;
}
