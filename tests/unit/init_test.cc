// init_test.cc: job queries after shmem_init.
#include <gtest/gtest.h>
#include <shmem.h>

#include <cstdlib>
#include <cstring>

#include "test_util.h"

using namespace testutil;

TEST(InitTest, ShmemMyPe_InRange_Test) {
    EXPECT_GE(me(), 0);
    EXPECT_LT(me(), npes());
}

TEST(InitTest, ShmemNPes_MatchesLauncher_Test) {
    const char *size = std::getenv("SHMEM_RUN_SIZE");
    EXPECT_EQ(npes(), size ? std::atoi(size) : 1);
}

TEST(InitTest, ShmemMyPe_DistinctOnEveryPe_Test) {
    // Each PE marks its slot on every PE; every slot must be marked exactly once.
    int *seen = static_cast<int *>(shmem_calloc(static_cast<size_t>(npes()), sizeof(int)));
    ASSERT_NE(seen, nullptr);
    for (int pe = 0; pe < npes(); pe++) {
        int one = 1;
        shmem_putmem(&seen[me()], &one, sizeof one, pe);
    }
    shmem_barrier_all();
    for (int pe = 0; pe < npes(); pe++) EXPECT_EQ(seen[pe], 1) << "slot of PE " << pe;
    shmem_free(seen);
}

TEST(InitTest, ShmemInfoGetVersion_Reports15_Test) {
    int major = 0, minor = 0;
    shmem_info_get_version(&major, &minor);
    EXPECT_EQ(major, 1);
    EXPECT_EQ(minor, 5);
    EXPECT_EQ(SHMEM_MAJOR_VERSION, 1);
    EXPECT_EQ(SHMEM_MINOR_VERSION, 5);
}

TEST(InitTest, ShmemInfoGetName_VendorString_Test) {
    char name[SHMEM_MAX_NAME_LEN];
    std::memset(name, 'x', sizeof name);
    shmem_info_get_name(name);
    EXPECT_STREQ(name, SHMEM_VENDOR_STRING);
    EXPECT_LT(std::strlen(name), static_cast<size_t>(SHMEM_MAX_NAME_LEN));
}

TEST(InitTest, ShmemPeAccessible_OnlyJobPes_Test) {
    for (int pe = 0; pe < npes(); pe++) EXPECT_EQ(shmem_pe_accessible(pe), 1) << pe;
    EXPECT_EQ(shmem_pe_accessible(-1), 0);
    EXPECT_EQ(shmem_pe_accessible(npes()), 0);
}
