// gtest_failure.cc: the unit tests' listener (tests/unit/main.cc) turns one PE's failed
// assertion into shmem_global_exit(1), so the other PEs, already waiting in the next
// collective, are ended instead of hanging.
#include <gtest/gtest.h>
#include <shmem.h>

TEST(ListenerTest, OnePeFails_JobEnds_Test) {
    EXPECT_NE(shmem_my_pe(), 1) << "PE 1 fails on purpose";
    shmem_barrier_all();  // PE 1 never arrives
}

TEST(ListenerTest, NeverReached_Test) { FAIL() << "the job should have ended in the first test"; }
