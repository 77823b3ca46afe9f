// hpp_test.cc: the C++ layer <shmem/shmem.hpp> (the library is started by main.cc, so
// shmem::runtime itself is exercised by examples/hpp_ring.cpp): symmetric arrays and owning
// pointers, typed RMA, atomics and waits through the templates, each PE checking what its
// previous PE did to it; a request the heap cannot hold throws std::bad_alloc on every PE.
#include <gtest/gtest.h>

#include <cstdint>
#include <new>
#include <shmem/shmem.hpp>
#include <vector>

#include "test_util.h"

using namespace testutil;

namespace {

TEST(HppTest, SymmetricArray_ZeroedAndSymmetric_Test) {
    shmem::symmetric_array<double> a(100);
    ASSERT_EQ(a.size(), 100u);
    for (double x : a) EXPECT_EQ(x, 0.0);
    EXPECT_TRUE(shmem_addr_accessible(a.data(), next_pe()));
    shmem::unique_ptr<int[]> none = shmem::make_symmetric<int>(0);
    EXPECT_EQ(none.get(), nullptr);
    shmem::barrier_all();
}

TEST(HppTest, PutGet_RingAndStrided_Test) {
    constexpr std::size_t n = 64;
    shmem::symmetric_array<int64_t> a(n);
    shmem::symmetric_array<unsigned short> b(2 * n);
    std::vector<int64_t> src(n);
    for (std::size_t i = 0; i < n; i++) src[i] = me() * 1000 + static_cast<int64_t>(i);
    std::vector<unsigned short> small(n, static_cast<unsigned short>(me() + 7));
    shmem::barrier_all();
    shmem::put(a.data(), src.data(), n, next_pe());
    shmem::iput(b.data(), small.data(), 2, 1, n, next_pe());
    shmem::p(&b[1], static_cast<unsigned short>(me() + 9), next_pe());
    shmem::barrier_all();
    for (std::size_t i = 0; i < n; i++) {
        ASSERT_EQ(a[i], prev_pe() * 1000 + static_cast<int64_t>(i)) << i;
        ASSERT_EQ(b[2 * i], prev_pe() + 7) << i;
    }
    EXPECT_EQ(b[1], prev_pe() + 9);
    // The next PE's arrays hold this PE's values.
    std::vector<int64_t> got(n);
    shmem::get(got.data(), a.data(), n, next_pe());
    EXPECT_EQ(got, src);
    EXPECT_EQ(shmem::g(&a[5], next_pe()), me() * 1000 + 5);
    shmem::get_nbi(got.data(), a.data(), n, next_pe());
    shmem::quiet();
    EXPECT_EQ(got, src);
    shmem::barrier_all();
}

TEST(HppTest, Atomics_EveryPeOnPeZero_Test) {
    shmem::symmetric_array<long> counter(1);
    shmem::symmetric_array<uint64_t> bits(1);
    shmem::symmetric_array<float> f(1);
    shmem::barrier_all();
    shmem::atomic_add(counter.data(), 2, 0);
    shmem::atomic_inc(counter.data(), 0);
    shmem::atomic_or(bits.data(), uint64_t{1} << me(), 0);
    shmem::barrier_all();
    if (me() == 0) {
        EXPECT_EQ(counter[0], 3L * npes());
        EXPECT_EQ(bits[0], (npes() == 64 ? ~uint64_t{0} : (uint64_t{1} << npes()) - 1));
    }
    shmem::barrier_all();
    EXPECT_EQ(shmem::atomic_fetch(counter.data(), 0), 3L * npes());
    shmem::barrier_all();
    if (me() == 0) {
        EXPECT_EQ(shmem::atomic_compare_swap(counter.data(), 3L * npes(), -1L, 0), 3L * npes());
        EXPECT_EQ(shmem::atomic_swap(counter.data(), 5, 0), -1);
        EXPECT_EQ(shmem::atomic_fetch_add(counter.data(), 1, 0), 5);
        EXPECT_EQ(shmem::atomic_fetch_inc(counter.data(), 0), 6);
        EXPECT_EQ(shmem::atomic_fetch_and(bits.data(), 1, 0) & 1u, 1u);
        EXPECT_EQ(shmem::atomic_fetch_xor(bits.data(), 3, 0), 1u);
        shmem::atomic_set(f.data(), 2.5f, 1 % npes());
    }
    shmem::barrier_all();
    if (me() == 1 % npes()) EXPECT_EQ(f[0], 2.5f);
    shmem::barrier_all();
}

TEST(HppTest, WaitUntilAndTest_ReleasedByPrevious_Test) {
    shmem::symmetric_array<int32_t> flag(1);
    EXPECT_FALSE(shmem::test(flag.data(), shmem::cmp::ne, 0));
    shmem::barrier_all();
    shmem::atomic_set(flag.data(), me() + 1, next_pe());
    shmem::wait_until(flag.data(), shmem::cmp::eq, prev_pe() + 1);
    EXPECT_TRUE(shmem::test(flag.data(), shmem::cmp::ge, 1));
    shmem::barrier_all();
}

TEST(HppTest, MakeSymmetric_TooLarge_ThrowsBadAlloc_Test) {
    EXPECT_THROW(shmem::symmetric_array<char>(std::size_t{1} << 62), std::bad_alloc);
    // The heap still works after the refused request.
    shmem::symmetric_array<char> ok(16);
    EXPECT_EQ(ok.size(), 16u);
    shmem::barrier_all();
}

}  // namespace
