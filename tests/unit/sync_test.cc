// sync_test.cc: ordering (fence, quiet) and the all-PE barriers.
#include <gtest/gtest.h>
#include <sched.h>
#include <shmem.h>

#include <atomic>
#include <chrono>

#include "test_util.h"

using namespace testutil;

TEST(SyncTest, ShmemBarrierAll_ManyRoundsNoPeAhead_Test) {
    // Each round every PE writes the round number into its slot on every PE; after the barrier
    // every slot must hold this round: a PE that left a barrier early would overwrite it.
    const int rounds = 300;
    auto *slots = static_cast<long *>(shmem_calloc(static_cast<size_t>(npes()), sizeof(long)));
    ASSERT_NE(slots, nullptr);
    for (long r = 1; r <= rounds; r++) {
        for (int pe = 0; pe < npes(); pe++) shmem_putmem(&slots[me()], &r, sizeof r, pe);
        shmem_barrier_all();
        for (int pe = 0; pe < npes(); pe++) ASSERT_EQ(slots[pe], r) << "PE " << pe;
        shmem_barrier_all();
    }
    shmem_free(slots);
}

TEST(SyncTest, ShmemSyncAll_AfterQuietPublishesPuts_Test) {
    auto *x = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    ASSERT_NE(x, nullptr);
    for (long r = 1; r <= 50; r++) {
        long v = r * 100 + me();
        shmem_putmem(x, &v, sizeof v, far_pe());
        shmem_quiet();
        shmem_sync_all();
        ASSERT_EQ(*x, r * 100 + far_source());
        shmem_sync_all();
    }
    shmem_free(x);
}

TEST(SyncTest, ShmemFence_DataBeforeFlag_Test) {
    // PE i sends data then (after a fence) a flag to its next PE, which waits for the flag
    // and must then see the data.
    const size_t n = 4096;
    auto *data = static_cast<unsigned char *>(shmem_calloc(n, 1));
    auto *flag = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    ASSERT_NE(data, nullptr);
    ASSERT_NE(flag, nullptr);
    unsigned char src[n];
    for (size_t i = 0; i < n; i++) src[i] = pattern(me(), i, 9);
    long one = 1;
    shmem_putmem(data, src, n, next_pe());
    shmem_fence();
    shmem_putmem(flag, &one, sizeof one, next_pe());
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    auto *seen = reinterpret_cast<std::atomic<long> *>(flag);
    while (seen->load(std::memory_order_acquire) != 1) {
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "flag never arrived";
        sched_yield();
    }
    for (size_t i = 0; i < n; i++) ASSERT_EQ(data[i], pattern(prev_pe(), i, 9)) << i;
    shmem_barrier_all();
    shmem_free(flag);
    shmem_free(data);
}
