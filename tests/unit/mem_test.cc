// mem_test.cc: collective symmetric allocation and address queries.
#include <gtest/gtest.h>
#include <shmem.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "test_util.h"

using namespace testutil;

namespace {

// Gathers one word per PE onto every PE, through puts into a symmetric array.
std::vector<uintptr_t> gather_addresses(const void *p) {
    auto *all = static_cast<uintptr_t *>(shmem_calloc(static_cast<size_t>(npes()), 8));
    EXPECT_NE(all, nullptr);
    uintptr_t mine = reinterpret_cast<uintptr_t>(p);
    for (int pe = 0; pe < npes(); pe++) shmem_putmem(&all[me()], &mine, sizeof mine, pe);
    shmem_barrier_all();
    std::vector<uintptr_t> out(all, all + npes());
    shmem_free(all);
    return out;
}

}  // namespace

TEST(MemTest, ShmemMalloc_SameLayoutOnEveryPe_Test) {
    // Symmetric means the same block on every PE: the distance between two blocks is the same
    // everywhere (addresses themselves differ, each PE maps its heap where the kernel puts it),
    // and a put to the address on a peer lands in that peer's block.
    char *a = static_cast<char *>(shmem_malloc(1000));
    char *b = static_cast<char *>(shmem_malloc(3000));
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    auto gap = static_cast<uintptr_t>(b - a);
    for (uintptr_t g : gather_addresses(reinterpret_cast<void *>(gap))) EXPECT_EQ(g, gap);
    char tag = static_cast<char>('A' + me());
    shmem_putmem(b + 2999, &tag, 1, next_pe());
    shmem_barrier_all();
    EXPECT_EQ(b[2999], static_cast<char>('A' + prev_pe()));
    shmem_free(b);
    shmem_free(a);
}

TEST(MemTest, ShmemMalloc_BlocksAligned64AndDisjoint_Test) {
    std::vector<char *> blocks;
    for (size_t len : {1, 63, 64, 65, 1000, 4096, 100000}) {
        char *p = static_cast<char *>(shmem_malloc(len));
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << len;
        std::memset(p, 0x5a, len);
        blocks.push_back(p);
    }
    for (size_t i = 1; i < blocks.size(); i++) EXPECT_NE(blocks[i], blocks[i - 1]);
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) shmem_free(*it);
}

TEST(MemTest, ShmemMalloc_ZeroSize_ReturnsNull_Test) { EXPECT_EQ(shmem_malloc(0), nullptr); }

TEST(MemTest, ShmemMalloc_Exhaustion_ReturnsNullThenRecovers_Test) {
    EXPECT_EQ(shmem_malloc(SIZE_MAX / 2), nullptr);
    void *p = shmem_malloc(128);
    EXPECT_NE(p, nullptr);
    shmem_free(p);
}

TEST(MemTest, ShmemMallocWithHints_UsableForPuts_Test) {
    long *p =
        static_cast<long *>(shmem_malloc_with_hints(sizeof(long), SHMEM_MALLOC_ATOMICS_REMOTE));
    ASSERT_NE(p, nullptr);
    long v = 1000 + me();
    shmem_putmem(p, &v, sizeof v, next_pe());
    shmem_barrier_all();
    EXPECT_EQ(*p, 1000 + prev_pe());
    shmem_free(p);
}

TEST(MemTest, ShmemCalloc_ReturnsZeroedMemory_Test) {
    const size_t n = 5000;
    char *dirty = static_cast<char *>(shmem_malloc(n));
    ASSERT_NE(dirty, nullptr);
    std::memset(dirty, 0xff, n);
    shmem_free(dirty);
    unsigned char *p = static_cast<unsigned char *>(shmem_calloc(n, 1));
    ASSERT_NE(p, nullptr);
    for (size_t i = 0; i < n; i++) ASSERT_EQ(p[i], 0) << i;
    shmem_free(p);
}

TEST(MemTest, ShmemCalloc_Overflow_ReturnsNull_Test) {
    EXPECT_EQ(shmem_calloc(SIZE_MAX / 2, 4), nullptr);
    EXPECT_EQ(shmem_calloc(0, 8), nullptr);
}

TEST(MemTest, ShmemAlign_PowerOfTwo_Test) {
    for (size_t align : {64, 128, 4096, 65536}) {
        void *p = shmem_align(align, 100);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << align;
        shmem_free(p);
    }
    EXPECT_EQ(shmem_align(3, 100), nullptr);
    EXPECT_EQ(shmem_align(0, 100), nullptr);
}

TEST(MemTest, ShmemRealloc_MovesAndKeepsPeerData_Test) {
    const size_t n = 256;
    unsigned char *p = static_cast<unsigned char *>(shmem_malloc(n));
    void *blocker = shmem_malloc(64);  // forces the growth below to move the block
    ASSERT_NE(p, nullptr);
    ASSERT_NE(blocker, nullptr);
    unsigned char src[n];
    for (size_t i = 0; i < n; i++) src[i] = pattern(me(), i);
    shmem_putmem(p, src, n, next_pe());
    shmem_barrier_all();
    unsigned char *q = static_cast<unsigned char *>(shmem_realloc(p, 100000));
    ASSERT_NE(q, nullptr);
    EXPECT_NE(q, p);
    for (size_t i = 0; i < n; i++) ASSERT_EQ(q[i], pattern(prev_pe(), i)) << i;
    // The new block is symmetric: a peer can write its far end.
    unsigned char last = static_cast<unsigned char>(me());
    shmem_putmem(q + 99999, &last, 1, next_pe());
    shmem_barrier_all();
    EXPECT_EQ(q[99999], static_cast<unsigned char>(prev_pe()));
    q = static_cast<unsigned char *>(shmem_realloc(q, 16));  // shrink keeps the head
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q[0], pattern(prev_pe(), 0));
    shmem_free(q);
    shmem_free(blocker);
}

TEST(MemTest, ShmemRealloc_NullAllocatesZeroFrees_Test) {
    void *p = shmem_realloc(nullptr, 64);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(shmem_realloc(p, 0), nullptr);
    shmem_free(nullptr);  // no action
}

TEST(MemTest, ShmemPtr_StoreLandsInPeerHeap_Test) {
    int *x = static_cast<int *>(shmem_calloc(1, sizeof(int)));
    ASSERT_NE(x, nullptr);
    int *peer = static_cast<int *>(shmem_ptr(x, next_pe()));
    ASSERT_NE(peer, nullptr);
    EXPECT_EQ(shmem_ptr(x, me()), x);
    *peer = 7000 + me();
    shmem_barrier_all();
    EXPECT_EQ(*x, 7000 + prev_pe());
    shmem_free(x);
}

TEST(MemTest, ShmemPtr_NonSymmetric_ReturnsNull_Test) {
    int local = 0;
    EXPECT_EQ(shmem_ptr(&local, next_pe()), nullptr);
}

TEST(MemTest, ShmemAddrAccessible_HeapYesStackNo_Test) {
    char *p = static_cast<char *>(shmem_malloc(16));
    int local = 0;
    for (int pe = 0; pe < npes(); pe++) {
        EXPECT_EQ(shmem_addr_accessible(p, pe), 1) << pe;
        EXPECT_EQ(shmem_addr_accessible(&local, pe), 0) << pe;
    }
    EXPECT_EQ(shmem_addr_accessible(p, npes()), 0);
    shmem_free(p);
}
