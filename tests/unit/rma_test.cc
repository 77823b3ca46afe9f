// rma_test.cc: byte puts and gets to other PEs, blocking and non-blocking.
#include <gtest/gtest.h>
#include <shmem.h>

#include <cstring>
#include <vector>

#include "test_util.h"

using namespace testutil;

namespace {

std::vector<unsigned char> make(int pe, size_t n, int round = 0) {
    std::vector<unsigned char> v(n);
    for (size_t i = 0; i < n; i++) v[i] = pattern(pe, i, round);
    return v;
}

void expect_pattern(const unsigned char *p, int pe, size_t n, int round = 0) {
    for (size_t i = 0; i < n; i++) {
        ASSERT_EQ(p[i], pattern(pe, i, round)) << "byte " << i << " of " << n << " from PE " << pe;
    }
}

}  // namespace

TEST(RmaTest, ShmemPutmem_ToNextPe_Test) {
    const size_t n = 1024;
    auto *buf = static_cast<unsigned char *>(shmem_calloc(n, 1));
    ASSERT_NE(buf, nullptr);
    auto src = make(me(), n);
    shmem_putmem(buf, src.data(), n, next_pe());
    shmem_barrier_all();
    expect_pattern(buf, prev_pe(), n);
    shmem_free(buf);
}

TEST(RmaTest, ShmemPutmem_ToStridedPe_Test) {
    const size_t n = 333;
    auto *buf = static_cast<unsigned char *>(shmem_calloc(n, 1));
    ASSERT_NE(buf, nullptr);
    auto src = make(me(), n, 3);
    shmem_putmem(buf, src.data(), n, far_pe());
    shmem_barrier_all();
    expect_pattern(buf, far_source(), n, 3);
    shmem_free(buf);
}

TEST(RmaTest, ShmemPutmem_SizesAndOffsets_Test) {
    const size_t cap = (1 << 20) + 64;
    auto *buf = static_cast<unsigned char *>(shmem_malloc(cap));
    ASSERT_NE(buf, nullptr);
    int round = 0;
    for (size_t n : {size_t{1}, size_t{7}, size_t{64}, size_t{4095}, size_t{4096}, size_t{65537},
                     size_t{1} << 20}) {
        for (size_t off : {size_t{0}, size_t{1}, size_t{13}, size_t{63}}) {
            if (off + n > cap) continue;
            round++;
            auto src = make(me(), n + off, round);
            shmem_putmem(buf + off, src.data() + off, n, next_pe());
            shmem_barrier_all();
            for (size_t i = 0; i < n; i++) {
                ASSERT_EQ(buf[off + i], pattern(prev_pe(), off + i, round))
                    << "n=" << n << " off=" << off << " i=" << i;
            }
            shmem_barrier_all();
        }
    }
    shmem_free(buf);
}

TEST(RmaTest, ShmemPutmem_EveryPeToEveryPe_Test) {
    const size_t slot = 40;
    auto *buf = static_cast<unsigned char *>(shmem_calloc(static_cast<size_t>(npes()), slot));
    ASSERT_NE(buf, nullptr);
    for (int pe = 0; pe < npes(); pe++) {
        auto src = make(me(), slot, pe);
        shmem_putmem(buf + static_cast<size_t>(me()) * slot, src.data(), slot, pe);
    }
    shmem_barrier_all();
    for (int from = 0; from < npes(); from++) {
        expect_pattern(buf + static_cast<size_t>(from) * slot, from, slot, me());
    }
    shmem_free(buf);
}

TEST(RmaTest, ShmemPutmem_ZeroBytes_NoAction_Test) {
    auto *buf = static_cast<unsigned char *>(shmem_calloc(8, 1));
    ASSERT_NE(buf, nullptr);
    unsigned char x = 0xee;
    shmem_putmem(buf, &x, 0, next_pe());
    shmem_barrier_all();
    EXPECT_EQ(buf[0], 0);
    shmem_free(buf);
}

TEST(RmaTest, ShmemGetmem_FromNextPe_Test) {
    const size_t n = 5000;
    auto *buf = static_cast<unsigned char *>(shmem_malloc(n));
    ASSERT_NE(buf, nullptr);
    auto mine = make(me(), n, 1);
    std::memcpy(buf, mine.data(), n);
    shmem_barrier_all();
    std::vector<unsigned char> got(n);
    shmem_getmem(got.data(), buf, n, next_pe());
    expect_pattern(got.data(), next_pe(), n, 1);
    shmem_getmem(got.data(), buf, n, far_pe());
    expect_pattern(got.data(), far_pe(), n, 1);
    shmem_barrier_all();
    shmem_free(buf);
}

TEST(RmaTest, ShmemPutmemNbi_CompleteAfterQuiet_Test) {
    const size_t n = 70000;
    auto *buf = static_cast<unsigned char *>(shmem_malloc(n));
    ASSERT_NE(buf, nullptr);
    auto src = make(me(), n, 5);
    shmem_putmem_nbi(buf, src.data(), n / 2, next_pe());
    shmem_putmem_nbi(buf + n / 2, src.data() + n / 2, n - n / 2, next_pe());
    shmem_quiet();
    shmem_sync_all();
    expect_pattern(buf, prev_pe(), n, 5);
    shmem_free(buf);
}

TEST(RmaTest, ShmemGetmemNbi_CompleteAfterQuiet_Test) {
    const size_t n = 3000;
    auto *buf = static_cast<unsigned char *>(shmem_malloc(n));
    ASSERT_NE(buf, nullptr);
    auto mine = make(me(), n, 6);
    std::memcpy(buf, mine.data(), n);
    shmem_barrier_all();
    std::vector<unsigned char> got(n);
    shmem_getmem_nbi(got.data(), buf, n, prev_pe());
    shmem_quiet();
    expect_pattern(got.data(), prev_pe(), n, 6);
    shmem_barrier_all();
    shmem_free(buf);
}

TEST(RmaTest, ShmemPutmemGetmem_PageShiftedRanges_Test) {
    // Destinations 1..64 bytes past the source modulo a page take the copy path that avoids
    // 4 KiB aliasing (cpp/src/copy.cpp); every size class around its bounds must be exact.
    const size_t cap = 320 * 1024;
    auto *src = static_cast<unsigned char *>(shmem_align(4096, cap));
    auto *dst = static_cast<unsigned char *>(shmem_align(4096, cap + 4096));
    ASSERT_NE(src, nullptr);
    ASSERT_NE(dst, nullptr);
    int round = 0;
    for (size_t shift :
         {size_t{1}, size_t{7}, size_t{15}, size_t{16}, size_t{33}, size_t{63}, size_t{64}}) {
        for (size_t n : {size_t{2047}, size_t{2048}, size_t{4097}, size_t{65541}, cap}) {
            round++;
            for (size_t i = 0; i < n; i++) src[i] = pattern(me(), i, round);
            std::memset(dst, 0, cap + 4096);
            shmem_barrier_all();
            shmem_putmem(dst + shift, src, n, next_pe());  // put: peer's dst from my src
            shmem_barrier_all();
            for (size_t i = 0; i < n; i++) {
                ASSERT_EQ(dst[shift + i], pattern(prev_pe(), i, round))
                    << "put shift=" << shift << " n=" << n << " i=" << i;
            }
            ASSERT_EQ(dst[shift + n], 0) << "put wrote past the end, shift=" << shift;
            std::vector<unsigned char> got(n + 64, 0);
            shmem_getmem(got.data() + shift, src, n, next_pe());  // get: peer's src
            for (size_t i = 0; i < n; i++) {
                ASSERT_EQ(got[shift + i], pattern(next_pe(), i, round))
                    << "get shift=" << shift << " n=" << n << " i=" << i;
            }
            shmem_barrier_all();
        }
    }
    shmem_free(dst);
    shmem_free(src);
}
