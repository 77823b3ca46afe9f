// hpp_ring.cpp: the C++ layer of <shmem/shmem.hpp>. A block of numbers travels once around the
// ring of PEs, each PE adding its number before passing it on; PE 0 checks the sum that comes
// back. Meanwhile every PE counts itself in with an atomic add on PE 0. Exits 0 when both
// results are right.
//
//   shmemrun -n 4 ./hpp_ring
#include <cstdio>
#include <shmem/shmem.hpp>
#include <vector>

int main() {
    shmem::runtime rt;  // shmem_init here, shmem_finalize at the end of main
    const int me = rt.my_pe(), npes = rt.n_pes();
    constexpr std::size_t n = 1024;

    shmem::symmetric_array<long> block(n);  // zeroed, same address on every PE
    shmem::symmetric_array<int> arrived(1);
    shmem::symmetric_array<long> joined(1);

    // Every PE counts itself in on PE 0.
    shmem::atomic_add(joined.data(), 1, 0);

    // PE 0 starts the block; each PE waits for it, adds its number, and sends it on.
    std::vector<long> mine(n);
    if (me == 0) {
        for (std::size_t i = 0; i < n; i++) mine[i] = static_cast<long>(i);
    } else {
        shmem::wait_until(arrived.data(), shmem::cmp::eq, 1);
        for (std::size_t i = 0; i < n; i++) mine[i] = block[i] + me;
    }
    shmem::put(block.data(), mine.data(), n, rt.right());
    shmem::fence();  // the block lands before the flag that announces it
    shmem::p(arrived.data(), 1, rt.right());
    if (me == 0) shmem::wait_until(arrived.data(), shmem::cmp::eq, 1);

    bool ok = true;
    if (me == 0) {
        const long added = static_cast<long>(npes) * (npes - 1) / 2;  // 1 + 2 + ... + npes-1
        for (std::size_t i = 0; i < n; i++) ok = ok && block[i] == static_cast<long>(i) + added;
    }
    shmem::barrier_all();
    if (me == 0) {
        ok = ok && shmem::atomic_fetch(joined.data(), 0) == npes;
        std::printf("hpp_ring: %d PEs, block came back %s\n", npes, ok ? "right" : "WRONG");
    }

    return ok ? 0 : 1;
}
