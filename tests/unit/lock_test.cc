// lock_test.cc: shmem_set_lock, shmem_test_lock and shmem_clear_lock. Every PE updates data on
// another PE under the lock with non-atomic get-then-put sequences, so a lock that let two PEs
// in at once, or released before the holder's puts landed, loses updates and the total is off;
// an occupancy count checks the exclusion directly. Locks live in the heap and in global
// variables (the global cases run last: they need symmetric static data).
#include <gtest/gtest.h>
#include <sched.h>
#include <shmem.h>

#include <algorithm>
#include <cstdint>

#include "test_util.h"

using namespace testutil;

namespace {

constexpr int kIters = 100;
constexpr int kLocks = 4;

long g_lock;
long g_locks[kLocks];

// Where the guarded data lives: the last PE, so with several PEs most updates are remote.
int host() { return npes() - 1; }

// The shared data: a counter per lock, each updated only under its lock, and how many PEs are
// inside a critical section of that lock right now (updated atomically, must stay 0 or 1).
struct Guarded {
    int *counter;
    int *inside;
};

Guarded make_guarded(int n) {
    Guarded d{static_cast<int *>(shmem_calloc(static_cast<size_t>(n), sizeof(int))),
              static_cast<int *>(shmem_calloc(static_cast<size_t>(n), sizeof(int)))};
    EXPECT_NE(d.counter, nullptr);
    EXPECT_NE(d.inside, nullptr);
    return d;
}

void free_guarded(Guarded d) {
    shmem_free(d.inside);
    shmem_free(d.counter);
}

// The critical section: a non-atomic read-modify-write of a remote counter.
void critical(const Guarded &d, int i) {
    int others = shmem_int_atomic_fetch_inc(&d.inside[i], host());
    EXPECT_EQ(others, 0) << "another PE is inside the critical section of lock " << i;
    int v = shmem_int_g(&d.counter[i], host());
    sched_yield();  // invite a PE that should be waiting to run now
    shmem_int_p(&d.counter[i], v + 1, host());
    shmem_int_atomic_add(&d.inside[i], -1, host());
}

void expect_total(const Guarded &d, int i, int want) {
    shmem_barrier_all();
    EXPECT_EQ(shmem_int_g(&d.counter[i], host()), want) << "lock " << i;
}

void check_counter_exact(long *lock) {
    ASSERT_NE(lock, nullptr);
    Guarded d = make_guarded(1);
    shmem_barrier_all();
    for (int k = 0; k < kIters; k++) {
        shmem_set_lock(lock);
        critical(d, 0);
        shmem_clear_lock(lock);
    }
    expect_total(d, 0, kIters * npes());
    // Free and nobody waiting: every PE's lock word is back to 0, as documented in lock.cpp.
    EXPECT_EQ(*lock, 0L);
    shmem_barrier_all();
    free_guarded(d);
}

// The first 4 bytes of the lock word on its home PE: 1 + the PE that asked last, 0 when free
// (layout in cpp/src/lock.cpp). Only the home PE's copy is ever non-zero there.
uint32_t queue_tail(long *lock) {
    uint32_t tail = 0;
    for (int pe = 0; pe < npes(); pe++) {
        tail = std::max(tail, shmem_uint32_g(reinterpret_cast<uint32_t *>(lock), pe));
    }
    return tail;
}

}  // namespace

TEST(LockTest, ShmemSetLock_HeapLock_CounterExact_Test) {
    long *lock = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    check_counter_exact(lock);
    shmem_free(lock);
}

TEST(LockTest, ShmemSetLock_ArrayOfLocks_EachGuardsItsOwnCounter_Test) {
    // Neighbouring locks have different home PEs; each must still exclude on its own.
    long *locks = static_cast<long *>(shmem_calloc(kLocks, sizeof(long)));
    ASSERT_NE(locks, nullptr);
    Guarded d = make_guarded(kLocks);
    shmem_barrier_all();
    for (int k = 0; k < kIters; k++) {
        int i = (k + me()) % kLocks;
        shmem_set_lock(&locks[i]);
        critical(d, i);
        shmem_clear_lock(&locks[i]);
    }
    // Over kIters rounds PE p takes lock i in the rounds k with (k + p) % kLocks == i.
    for (int i = 0; i < kLocks; i++) {
        int want = 0;
        for (int pe = 0; pe < npes(); pe++) {
            for (int k = 0; k < kIters; k++) want += (k + pe) % kLocks == i ? 1 : 0;
        }
        expect_total(d, i, want);
    }
    shmem_barrier_all();
    free_guarded(d);
    shmem_free(locks);
}

TEST(LockTest, ShmemSetLock_WaitersServedInArrivalOrder_Test) {
    // PE 0 holds the lock; PE k asks once PE k-1 is queued (the tail names it); PE 0 releases
    // once the last PE is queued. First come, first served: they enter in PE order.
    long *lock = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    int *order = static_cast<int *>(shmem_calloc(1, sizeof(int)));
    ASSERT_NE(lock, nullptr);
    ASSERT_NE(order, nullptr);
    if (me() == 0) shmem_set_lock(lock);
    shmem_barrier_all();
    if (me() != 0) {
        while (queue_tail(lock) != static_cast<uint32_t>(me())) sched_yield();
        shmem_set_lock(lock);
    } else {
        while (queue_tail(lock) != static_cast<uint32_t>(npes())) sched_yield();
    }
    int place = shmem_int_atomic_fetch_inc(order, 0);
    EXPECT_EQ(place, me()) << "entered out of arrival order";
    shmem_clear_lock(lock);
    shmem_barrier_all();
    EXPECT_EQ(shmem_int_g(order, 0), npes());
    EXPECT_EQ(*lock, 0L);
    shmem_barrier_all();
    shmem_free(order);
    shmem_free(lock);
}

TEST(LockTest, ShmemTestLock_OneWinnerThenHeldForEveryone_Test) {
    long *lock = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    int *winners = static_cast<int *>(shmem_calloc(1, sizeof(int)));
    ASSERT_NE(lock, nullptr);
    ASSERT_NE(winners, nullptr);
    shmem_barrier_all();
    // Everybody tries at once: exactly one PE gets it.
    int got = shmem_test_lock(lock);
    ASSERT_TRUE(got == 0 || got == 1) << got;
    if (got == 0) shmem_int_atomic_inc(winners, 0);
    shmem_barrier_all();
    EXPECT_EQ(shmem_int_g(winners, 0), 1);
    // While it is held, every PE (the holder too) is refused without blocking.
    EXPECT_EQ(shmem_test_lock(lock), 1);
    shmem_barrier_all();
    if (got == 0) shmem_clear_lock(lock);
    shmem_barrier_all();
    // Free again: each PE in turn takes it with test_lock and gives it back.
    for (int pe = 0; pe < npes(); pe++) {
        if (pe == me()) {
            EXPECT_EQ(shmem_test_lock(lock), 0);
            shmem_clear_lock(lock);
        }
        shmem_barrier_all();
    }
    EXPECT_EQ(*lock, 0L);
    shmem_barrier_all();
    shmem_free(winners);
    shmem_free(lock);
}

TEST(LockTest, ShmemTestLock_ContendedWithSetLock_CounterExact_Test) {
    // Even PEs poll with test_lock, odd PEs queue with set_lock: a poller only gets the lock
    // when it is free, and the total is still exact.
    long *lock = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    ASSERT_NE(lock, nullptr);
    Guarded d = make_guarded(1);
    shmem_barrier_all();
    for (int k = 0; k < kIters; k++) {
        if (me() % 2 == 0) {
            while (shmem_test_lock(lock) != 0) sched_yield();
        } else {
            shmem_set_lock(lock);
        }
        critical(d, 0);
        shmem_clear_lock(lock);
    }
    expect_total(d, 0, kIters * npes());
    shmem_barrier_all();
    free_guarded(d);
    shmem_free(lock);
}

// ---- Global locks (symmetric static data), last ------------------------------------------------

TEST(StaticLockTest, ShmemSetLock_GlobalLock_CounterExact_Test) { check_counter_exact(&g_lock); }

TEST(StaticLockTest, ShmemSetLock_GlobalLockArray_EveryLockExcludes_Test) {
    const int rounds = kIters / kLocks;
    Guarded d = make_guarded(kLocks);
    shmem_barrier_all();
    for (int k = 0; k < rounds; k++) {
        for (int i = 0; i < kLocks; i++) {
            shmem_set_lock(&g_locks[i]);
            critical(d, i);
            shmem_clear_lock(&g_locks[i]);
        }
    }
    for (int i = 0; i < kLocks; i++) expect_total(d, i, rounds * npes());
    shmem_barrier_all();
    free_guarded(d);
}
