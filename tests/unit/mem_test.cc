// mem_test.cc: collective symmetric allocation and address queries.
#include <gtest/gtest.h>
#include <shmem.h>

#include <cstdint>
#include <cstdlib>
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
    if (!test_transport_on() && on_my_node(next_pe())) ASSERT_NE(peer, nullptr);
    EXPECT_EQ(shmem_ptr(x, me()), x);  // this PE's own memory: always
    if (peer != nullptr) {
        *peer = 7000 + me();
    } else {
        shmem_int_p(x, 7000 + me(), next_pe());
    }
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

namespace {
long g_mem_global[4];
}  // namespace

TEST(MemTest, ShmemAddrAccessible_PrivateMemoryIsNotAndJobGoesOn_Test) {
    // Private addresses (stack, libc heap, NULL) are refused with 0, never an error; so is an
    // invalid PE.
    int local = 0;
    void *private_heap = std::malloc(64);
    ASSERT_NE(private_heap, nullptr);
    char *p = static_cast<char *>(shmem_malloc(64));
    ASSERT_NE(p, nullptr);
    for (int pe = 0; pe < npes(); pe++) {
        EXPECT_EQ(shmem_addr_accessible(&local, pe), 0) << pe;
        EXPECT_EQ(shmem_addr_accessible(private_heap, pe), 0) << pe;
        EXPECT_EQ(shmem_addr_accessible(nullptr, pe), 0) << pe;
        EXPECT_EQ(shmem_addr_accessible(p + 63, pe), 1) << pe;
    }
    EXPECT_EQ(shmem_addr_accessible(p, -1), 0);
    std::free(private_heap);
    // The job is still healthy: a put to a peer after the refusals lands.
    char tag = static_cast<char>(me());
    shmem_putmem(p, &tag, 1, next_pe());
    shmem_barrier_all();
    EXPECT_EQ(p[0], static_cast<char>(prev_pe()));
    shmem_free(p);
}

TEST(MemTest, ShmemMallocWithHints_EveryHintServesPutsAndAtomics_Test) {
    const long hints[] = {0, SHMEM_MALLOC_ATOMICS_REMOTE, SHMEM_MALLOC_SIGNAL_REMOTE,
                          SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE};
    for (long h : hints) {
        SCOPED_TRACE(h);
        EXPECT_EQ(shmem_malloc_with_hints(0, h), nullptr);
        auto *p = static_cast<uint64_t *>(shmem_malloc_with_hints(3 * sizeof(uint64_t), h));
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
        p[0] = 0;
        p[1] = 0;
        shmem_barrier_all();
        // Every PE adds to every PE's counter, and stores a tag on its successor.
        for (int pe = 0; pe < npes(); pe++) shmem_uint64_atomic_add(&p[0], 1u + me(), pe);
        shmem_uint64_p(&p[1], 500u + me(), next_pe());
        shmem_barrier_all();
        EXPECT_EQ(p[0], static_cast<uint64_t>(npes()) * (npes() + 1) / 2);
        EXPECT_EQ(p[1], 500u + prev_pe());
        shmem_free(p);
    }
}

TEST(MemTest, ShmemCalloc_SymmetricZeroedAndOverflowOnEveryPe_Test) {
    // Overflowing products and zero totals return NULL on every PE, with no collective left
    // half done: the allocation after them works.
    EXPECT_EQ(shmem_calloc(SIZE_MAX, 2), nullptr);
    EXPECT_EQ(shmem_calloc(2, SIZE_MAX), nullptr);
    EXPECT_EQ(shmem_calloc((SIZE_MAX >> 1) + 2, 2), nullptr);
    EXPECT_EQ(shmem_calloc(16, 0), nullptr);
    auto *p = static_cast<long *>(shmem_calloc(100, sizeof(long)));
    ASSERT_NE(p, nullptr);
    for (int i = 0; i < 100; i++) ASSERT_EQ(p[i], 0) << i;
    shmem_barrier_all();  // every PE has checked before peers write
    long v = 9000 + me();
    shmem_long_p(&p[99], v, next_pe());
    shmem_barrier_all();
    EXPECT_EQ(p[99], 9000 + prev_pe());
    shmem_free(p);
}

TEST(MemTest, ShmemRealloc_ShrinkKeepsPrefixGrowFailureKeepsBlock_Test) {
    const size_t n = 4096;
    auto *p = static_cast<unsigned char *>(shmem_malloc(n));
    ASSERT_NE(p, nullptr);
    std::vector<unsigned char> src(n);
    for (size_t i = 0; i < n; i++) src[i] = pattern(me(), i, 3);
    shmem_putmem(p, src.data(), n, next_pe());
    shmem_barrier_all();
    // Growth that cannot be satisfied: NULL, and the block is unchanged and still symmetric.
    EXPECT_EQ(shmem_realloc(p, SIZE_MAX / 2), nullptr);
    for (size_t i = 0; i < n; i++) ASSERT_EQ(p[i], pattern(prev_pe(), i, 3)) << i;
    // Shrinking keeps the whole prefix.
    auto *q = static_cast<unsigned char *>(shmem_realloc(p, 1000));
    ASSERT_NE(q, nullptr);
    for (size_t i = 0; i < 1000; i++) ASSERT_EQ(q[i], pattern(prev_pe(), i, 3)) << i;
    shmem_barrier_all();  // every PE has checked before the block is written again
    unsigned char tag = static_cast<unsigned char>(0xa0 + me());
    shmem_putmem(q + 999, &tag, 1, next_pe());
    shmem_barrier_all();
    EXPECT_EQ(q[999], static_cast<unsigned char>(0xa0 + prev_pe()));
    // NULL allocates a symmetric block; size 0 frees.
    auto *r = static_cast<int *>(shmem_realloc(nullptr, 10 * sizeof(int)));
    ASSERT_NE(r, nullptr);
    shmem_int_p(&r[9], 300 + me(), next_pe());
    shmem_barrier_all();
    EXPECT_EQ(r[9], 300 + prev_pe());
    EXPECT_EQ(shmem_realloc(r, 0), nullptr);
    EXPECT_EQ(shmem_realloc(q, 0), nullptr);
}

TEST(MemTest, ShmemAddrAccessible_GlobalVariable_Test) {
    // Last in the binary: needs symmetric static data.
    for (int pe = 0; pe < npes(); pe++) EXPECT_EQ(shmem_addr_accessible(&g_mem_global[3], pe), 1);
}
