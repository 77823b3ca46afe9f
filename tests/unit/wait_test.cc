// wait_test.cc: shmem_TYPE_wait_until and shmem_TYPE_test for every SHMEM_SYNC_TYPES entry and
// every comparison. The PEs form a ring: PE 0 releases PE 1 with shmem_TYPE_p, PE 1 wakes and
// releases PE 2, ... and the last PE releases PE 0, so every PE but the first is released only
// after it has announced that it is about to wait, and no PE can pass by a wait that returns
// early: it must see the value its predecessor stored. Generated from the table in
// <shmem/types.h>, once on a shmem_calloc'ed element (WaitTest) and once on a global variable
// (StaticTargetTest, last in the binary: it needs symmetric static data).
#include <gtest/gtest.h>
#include <sched.h>
#include <shmem.h>

#include <sstream>
#include <string>
#include <type_traits>

#include "test_util.h"

using namespace testutil;

namespace {

// Element 0 of a target is the watched variable; element 1 is the ring's "about to wait" flag,
// which the successor sets here and this PE spins on by itself (not with the routine under test).
constexpr int kElems = 2;
constexpr long kCmpValue = 50;

// Values for one comparison against kCmpValue: `before` makes it false, `still_false` (stored
// by the releaser first) keeps it false, and after(pe) (stored next by PE pe) makes it true.
struct Values {
    long before;
    long still_false;
    long after_base;
    long after_step;  // after(pe) = after_base + after_step * pe
    long after(int pe) const { return after_base + after_step * pe; }
};

Values values_for(int cmp) {
    switch (cmp) {
    case SHMEM_CMP_EQ: return {20, 49, kCmpValue, 0};
    case SHMEM_CMP_NE: return {kCmpValue, kCmpValue, kCmpValue + 1, 1};
    case SHMEM_CMP_GT: return {kCmpValue, kCmpValue - 1, kCmpValue + 1, 1};
    case SHMEM_CMP_GE: return {kCmpValue - 1, kCmpValue - 2, kCmpValue, 1};
    case SHMEM_CMP_LT: return {kCmpValue, kCmpValue + 1, kCmpValue - 1, -1};
    default: return {kCmpValue + 1, kCmpValue + 2, kCmpValue, -1};  // SHMEM_CMP_LE
    }
}

template <typename T>
T load(const T *p) {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

// Spins (yielding: 8 PEs share 2 cores) until the successor has said it is about to wait.
template <typename T>
void await_successor(const T *flag) {
    while (load(flag) != T(1)) sched_yield();
}

// One ring. `poll` waits by calling test until it returns 1 instead of calling wait_until.
template <typename T, typename WaitUntil, typename Test, typename P>
void check_ring(WaitUntil wait_until, Test test, P put_one, int cmp, bool poll, T *sym) {
    const Values v = values_for(cmp);
    const T target = static_cast<T>(kCmpValue);
    T *ivar = &sym[0];
    T *ready = &sym[1];
    *ivar = static_cast<T>(v.before);
    *ready = T(0);
    shmem_barrier_all();
    // Nobody has stored anything yet: the condition is false on every PE.
    ASSERT_EQ(test(ivar, cmp, target), 0) << "before the release, value " << show(load(ivar));
    shmem_barrier_all();

    auto release_next = [&] {
        await_successor(ready);
        put_one(ivar, static_cast<T>(v.still_false), next_pe());
        shmem_fence();
        put_one(ivar, static_cast<T>(v.after(me())), next_pe());
    };
    put_one(ready, T(1), prev_pe());  // about to wait
    if (me() == 0) release_next();
    if (poll) {
        while (test(ivar, cmp, target) == 0) sched_yield();
    } else {
        wait_until(ivar, cmp, target);
    }
    T seen = load(ivar);
    EXPECT_TRUE(seen == static_cast<T>(v.after(prev_pe())))
        << "woke with value " << show(seen) << ", want " << v.after(prev_pe()) << " from PE "
        << prev_pe();
    EXPECT_EQ(test(ivar, cmp, target), 1) << "after the release, value " << show(load(ivar));
    if (me() != 0) release_next();
    shmem_barrier_all();
}

// ---- Global targets (symmetric static data) ---------------------------------------------------

#define DEFINE_GLOBAL_TARGET(TYPE, NAME) alignas(64) TYPE g_wait_##NAME[kElems];
SHMEM_SYNC_TYPES(DEFINE_GLOBAL_TARGET)
#undef DEFINE_GLOBAL_TARGET

}  // namespace

// ---- Generated cases -------------------------------------------------------------------------

#define HEAP_TARGET(TYPE, NAME) Target<TYPE>::heap(kElems)
#define STATIC_TARGET(TYPE, NAME) Target<TYPE>::fixed(g_wait_##NAME)

#define WAIT_CASE(SUITE, WHERE, TYPE, NAME, CMP)                                                   \
    TEST(SUITE, Shmem_##NAME##_wait_until_##CMP##_ReleasedByPrevPe_Test) {                         \
        auto t = WHERE(TYPE, NAME);                                                                \
        ASSERT_NE(t.get(), nullptr);                                                               \
        check_ring<TYPE>(shmem_##NAME##_wait_until, shmem_##NAME##_test, shmem_##NAME##_p,         \
                         SHMEM_CMP_##CMP, false, t.get());                                         \
    }                                                                                              \
    TEST(SUITE, Shmem_##NAME##_test_##CMP##_PollsUntilReleased_Test) {                             \
        auto t = WHERE(TYPE, NAME);                                                                \
        ASSERT_NE(t.get(), nullptr);                                                               \
        check_ring<TYPE>(shmem_##NAME##_wait_until, shmem_##NAME##_test, shmem_##NAME##_p,         \
                         SHMEM_CMP_##CMP, true, t.get());                                          \
    }

// Every comparison of OpenSHMEM 1.5 for one table entry.
#define WAIT_CASES(SUITE, WHERE, TYPE, NAME)                                                       \
    WAIT_CASE(SUITE, WHERE, TYPE, NAME, EQ)                                                        \
    WAIT_CASE(SUITE, WHERE, TYPE, NAME, NE)                                                        \
    WAIT_CASE(SUITE, WHERE, TYPE, NAME, GT)                                                        \
    WAIT_CASE(SUITE, WHERE, TYPE, NAME, GE)                                                        \
    WAIT_CASE(SUITE, WHERE, TYPE, NAME, LT)                                                        \
    WAIT_CASE(SUITE, WHERE, TYPE, NAME, LE)

// Heap targets first; the global-target cases run last, so a job without symmetric static data
// has run every heap case before the first global target ends it.
#define HEAP_WAIT(TYPE, NAME) WAIT_CASES(WaitTest, HEAP_TARGET, TYPE, NAME)
SHMEM_SYNC_TYPES(HEAP_WAIT)
#define STATIC_WAIT(TYPE, NAME) WAIT_CASES(StaticTargetTest, STATIC_TARGET, TYPE, NAME)
SHMEM_SYNC_TYPES(STATIC_WAIT)
