// thread_test.cc: SHMEM_THREAD_MULTIPLE is real. Several threads per PE issue puts, AMOs,
// quiets and waits at the same time, each thread paired with the same thread on the neighbour
// PEs; every value is checked by the PE it was sent to.
#include <gtest/gtest.h>
#include <shmem.h>

#include <thread>
#include <vector>

#include "test_util.h"

using namespace testutil;

namespace {

constexpr int kThreads = 4;
constexpr int kRounds = 200;
constexpr int kWords = 16;

// Word w of the data thread t of PE pe sends in round r.
long value(int pe, int t, int r, int w) { return ((pe * 1000L + t) * 1000L + r) * 100L + w; }

}  // namespace

TEST(ThreadTest, ShmemQueryThread_Multiple_Test) {
    int provided = -1;
    shmem_query_thread(&provided);
    EXPECT_EQ(provided, SHMEM_THREAD_MULTIPLE);
}

TEST(ThreadTest, ConcurrentPutAmoQuietWait_FromEveryThread_Test) {
    // Per thread: a data block and a round flag on every PE, written by the same thread of the
    // previous PE; plus one counter on PE 0 and one on the next PE that every thread increments.
    auto *data = static_cast<long *>(shmem_calloc(kThreads * kWords, sizeof(long)));
    auto *flag = static_cast<long *>(shmem_calloc(kThreads, sizeof(long)));
    auto *ack = static_cast<long *>(shmem_calloc(kThreads, sizeof(long)));
    auto *counter = static_cast<long *>(shmem_calloc(2, sizeof(long)));
    ASSERT_TRUE(data && flag && ack && counter);
    std::vector<int> errors(kThreads, 0);

    auto body = [&](int t) {
        long src[kWords];
        for (int r = 1; r <= kRounds; r++) {
            // Wait until the next PE has consumed the previous round before overwriting it.
            shmem_long_wait_until(&ack[t], SHMEM_CMP_GE, r - 1);
            for (int w = 0; w < kWords; w++) src[w] = value(me(), t, r, w);
            shmem_long_put(&data[t * kWords], src, kWords, next_pe());
            shmem_fence();
            shmem_long_atomic_set(&flag[t], r, next_pe());
            shmem_long_atomic_inc(&counter[0], 0);
            shmem_long_atomic_fetch_add(&counter[1], 2, next_pe());
            shmem_quiet();
            // Receive the previous PE's round r, check it, then let it go on.
            shmem_long_wait_until(&flag[t], SHMEM_CMP_GE, r);
            for (int w = 0; w < kWords; w++) {
                if (data[t * kWords + w] != value(prev_pe(), t, r, w)) errors[t]++;
            }
            shmem_long_atomic_set(&ack[t], r, prev_pe());
        }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) threads.emplace_back(body, t);
    for (auto &th : threads) th.join();
    shmem_barrier_all();

    for (int t = 0; t < kThreads; t++) EXPECT_EQ(errors[t], 0) << "thread " << t;
    if (me() == 0) EXPECT_EQ(counter[0], static_cast<long>(npes()) * kThreads * kRounds);
    EXPECT_EQ(counter[1], 2L * kThreads * kRounds);  // from the previous PE's threads only
    shmem_barrier_all();
    shmem_free(counter);
    shmem_free(ack);
    shmem_free(flag);
    shmem_free(data);
}
