// wait_set_test.cc: shmem_TYPE_wait_until_all/any/some, shmem_TYPE_test_all/any/some and their
// _vector forms for every SHMEM_SYNC_TYPES entry and every comparison, on a set of kElems
// elements. The elements a waiting PE needs are stored by other PEs with shmem_TYPE_p; status
// masks leave out elements whose value would change the answer if they were wrongly included
// (satisfied ones for _any/_some, never-satisfied ones for _all). Generated from the table in
// <shmem/types.h>, on a shmem_calloc'ed array (WaitSetTest) and on a global array
// (StaticWaitSetTest, last: it needs symmetric static data).
#include <gtest/gtest.h>
#include <shmem.h>

#include <cstdint>
#include <set>
#include <string>

#include "test_util.h"

using namespace testutil;

namespace {

constexpr size_t kElems = 5;
constexpr long kBase = 50;
// The set of the masked calls: elements 0, 2 and 4. Any non-zero status entry leaves an element
// out, not only 1.
const int kMask[kElems] = {0, 7, 0, -1, 0};
const int kAllOut[kElems] = {1, 1, 1, 1, 1};
const std::set<size_t> kMembers = {0, 2, 4};

const int kCmps[] = {SHMEM_CMP_EQ, SHMEM_CMP_NE, SHMEM_CMP_GT,
                     SHMEM_CMP_GE, SHMEM_CMP_LT, SHMEM_CMP_LE};

const char *cmp_name(int cmp) {
    switch (cmp) {
    case SHMEM_CMP_EQ: return "EQ";
    case SHMEM_CMP_NE: return "NE";
    case SHMEM_CMP_GT: return "GT";
    case SHMEM_CMP_GE: return "GE";
    case SHMEM_CMP_LT: return "LT";
    default: return "LE";
    }
}

// The routines of one type, plain and _vector forms.
template <typename T>
struct Api {
    void (*wait_all)(T *, size_t, const int *, int, T);
    size_t (*wait_any)(T *, size_t, const int *, int, T);
    size_t (*wait_some)(T *, size_t, size_t *, const int *, int, T);
    void (*wait_all_v)(T *, size_t, const int *, int, T *);
    size_t (*wait_any_v)(T *, size_t, const int *, int, T *);
    size_t (*wait_some_v)(T *, size_t, size_t *, const int *, int, T *);
    int (*test_all)(T *, size_t, const int *, int, T);
    size_t (*test_any)(T *, size_t, const int *, int, T);
    size_t (*test_some)(T *, size_t, size_t *, const int *, int, T);
    int (*test_all_v)(T *, size_t, const int *, int, T *);
    size_t (*test_any_v)(T *, size_t, const int *, int, T *);
    size_t (*test_some_v)(T *, size_t, size_t *, const int *, int, T *);
    void (*p)(T *, T, int);
};

// One comparison in one form (plain: every element against kBase; vector: element j against
// kBase + 4j) on a symmetric array of kElems elements.
template <typename T>
class Case {
public:
    Case(const Api<T> &api, T *ivars, int cmp, bool vector)
        : api_(api), ivars_(ivars), cmp_(cmp), vector_(vector) {
        for (size_t j = 0; j < kElems; j++) targets_[j] = static_cast<T>(target(j));
    }

    // Values that make the comparison false (two of them) or true (told apart by the PE that
    // stores them, except for EQ).
    T falsy(size_t j) const { return static_cast<T>(false_value(target(j), 0)); }
    T still_falsy(size_t j) const { return static_cast<T>(false_value(target(j), 1)); }
    T truthy(size_t j, int pe) const {
        long t = target(j);
        switch (cmp_) {
        case SHMEM_CMP_EQ: return static_cast<T>(t);
        case SHMEM_CMP_NE:
        case SHMEM_CMP_GT: return static_cast<T>(t + 1 + pe);
        case SHMEM_CMP_GE: return static_cast<T>(t + pe);
        case SHMEM_CMP_LT: return static_cast<T>(t - 1 - pe);
        default: return static_cast<T>(t - pe);  // LE
        }
    }

    T value(size_t j) const { return __atomic_load_n(&ivars_[j], __ATOMIC_ACQUIRE); }
    void set_local(size_t j, T v) { __atomic_store_n(&ivars_[j], v, __ATOMIC_RELEASE); }
    void put(size_t j, T v, int pe) { api_.p(&ivars_[j], v, pe); }

    // The routines under test, in this case's form; `n` and `ivars` default to the whole array.
    void wait_all(const int *st, size_t n = kElems) {
        vector_ ? api_.wait_all_v(arr(n), n, st, cmp_, targets_)
                : api_.wait_all(arr(n), n, st, cmp_, targets_[0]);
    }
    size_t wait_any(const int *st, size_t n = kElems) {
        return vector_ ? api_.wait_any_v(arr(n), n, st, cmp_, targets_)
                       : api_.wait_any(arr(n), n, st, cmp_, targets_[0]);
    }
    size_t wait_some(size_t *idx, const int *st, size_t n = kElems) {
        return vector_ ? api_.wait_some_v(arr(n), n, idx, st, cmp_, targets_)
                       : api_.wait_some(arr(n), n, idx, st, cmp_, targets_[0]);
    }
    int test_all(const int *st, size_t n = kElems) {
        return vector_ ? api_.test_all_v(arr(n), n, st, cmp_, targets_)
                       : api_.test_all(arr(n), n, st, cmp_, targets_[0]);
    }
    size_t test_any(const int *st, size_t n = kElems) {
        return vector_ ? api_.test_any_v(arr(n), n, st, cmp_, targets_)
                       : api_.test_any(arr(n), n, st, cmp_, targets_[0]);
    }
    size_t test_some(size_t *idx, const int *st, size_t n = kElems) {
        return vector_ ? api_.test_some_v(arr(n), n, idx, st, cmp_, targets_)
                       : api_.test_some(arr(n), n, idx, st, cmp_, targets_[0]);
    }

private:
    long target(size_t j) const { return kBase + (vector_ ? 4 * static_cast<long>(j) : 0); }
    long false_value(long t, int which) const {
        switch (cmp_) {
        case SHMEM_CMP_EQ: return which == 0 ? t - 7 : t + 9;
        case SHMEM_CMP_NE: return t;
        case SHMEM_CMP_GT: return t - which;
        case SHMEM_CMP_GE: return t - 1 - which;
        case SHMEM_CMP_LT: return t + which;
        default: return t + 1 + which;  // LE
        }
    }
    // An empty set may come with a NULL array.
    T *arr(size_t n) const { return n == 0 ? nullptr : ivars_; }

    const Api<T> &api_;
    T *ivars_;
    int cmp_;
    bool vector_;
    T targets_[kElems];
};

std::set<size_t> as_set(const size_t *idx, size_t n) { return std::set<size_t>(idx, idx + n); }

// The PE that stores element j of PE `pe` in check_wait_all: a different one per element.
int writer_of(int pe, size_t j) { return (pe + 1 + static_cast<int>(j)) % npes(); }

// wait_until_all returns only once every member holds the value its writer stored; the
// excluded elements stay false for ever, so a wait that included them would never return.
template <typename T>
void check_wait_all(Case<T> &c) {
    for (size_t j = 0; j < kElems; j++) c.set_local(j, c.falsy(j));
    shmem_barrier_all();
    for (size_t j : kMembers) {
        for (int pe = 0; pe < npes(); pe++) {
            if (writer_of(pe, j) != me()) continue;
            c.put(j, c.still_falsy(j), pe);
            shmem_fence();
            c.put(j, c.truthy(j, me()), pe);
        }
    }
    c.wait_all(kMask);
    for (size_t j = 0; j < kElems; j++) {
        if (kMembers.count(j) != 0) {
            EXPECT_EQ(c.value(j), c.truthy(j, writer_of(me(), j))) << "member " << j;
        } else {
            EXPECT_EQ(c.value(j), c.falsy(j)) << "excluded element " << j << " was written";
        }
    }
    EXPECT_EQ(c.test_all(kMask), 1);
    EXPECT_EQ(c.test_all(nullptr), 0) << "NULL status includes the false elements";
    shmem_barrier_all();
}

// wait_until_any returns the one member its predecessor makes true; the excluded elements are
// true from the start.
template <typename T>
void check_wait_any(Case<T> &c) {
    auto chosen = [](int pe) { return static_cast<size_t>(2 * (pe % 3)); };  // 0, 2 or 4
    for (size_t j = 0; j < kElems; j++) {
        c.set_local(j, kMembers.count(j) != 0 ? c.falsy(j) : c.truthy(j, me()));
    }
    shmem_barrier_all();
    size_t theirs = chosen(next_pe());
    c.put(theirs, c.still_falsy(theirs), next_pe());
    shmem_fence();
    c.put(theirs, c.truthy(theirs, me()), next_pe());
    size_t got = c.wait_any(kMask);
    EXPECT_EQ(got, chosen(me()));
    if (got < kElems) EXPECT_EQ(c.value(got), c.truthy(got, prev_pe()));
    shmem_barrier_all();
}

// With every element true, successive _any calls return every member in turn: none is passed
// over because a lower index is satisfied too.
template <typename T>
void check_any_rotates(Case<T> &c) {
    for (size_t j = 0; j < kElems; j++) c.set_local(j, c.truthy(j, me()));
    std::set<size_t> waited, tested, unmasked;
    for (size_t i = 0; i < kMembers.size(); i++) waited.insert(c.wait_any(kMask));
    for (size_t i = 0; i < kMembers.size(); i++) tested.insert(c.test_any(kMask));
    for (size_t i = 0; i < kElems; i++) unmasked.insert(c.test_any(nullptr));
    EXPECT_EQ(waited, kMembers);
    EXPECT_EQ(tested, kMembers);
    EXPECT_EQ(unmasked, (std::set<size_t>{0, 1, 2, 3, 4}));
}

// wait_until_some reports members its predecessor made true, and once both stores have landed,
// exactly those two.
template <typename T>
void check_wait_some(Case<T> &c) {
    for (size_t j = 0; j < kElems; j++) {
        c.set_local(j, kMembers.count(j) != 0 ? c.falsy(j) : c.truthy(j, me()));
    }
    shmem_barrier_all();
    c.put(4, c.truthy(4, me()), next_pe());
    c.put(0, c.truthy(0, me()), next_pe());
    size_t idx[kElems];
    size_t n = c.wait_some(idx, kMask);
    ASSERT_GE(n, 1u);
    ASSERT_LE(n, 2u);
    std::set<size_t> first = as_set(idx, n);
    EXPECT_EQ(first.size(), n) << "an index reported twice";
    for (size_t i : first) EXPECT_TRUE(i == 0 || i == 4) << "index " << i;
    shmem_barrier_all();  // both stores have landed everywhere
    n = c.wait_some(idx, kMask);
    EXPECT_EQ(as_set(idx, n), (std::set<size_t>{0, 4}));
    EXPECT_EQ(n, 2u);
    n = c.test_some(idx, kMask);
    EXPECT_EQ(as_set(idx, n), (std::set<size_t>{0, 4}));
    n = c.test_some(idx, nullptr);
    EXPECT_EQ(as_set(idx, n), (std::set<size_t>{0, 1, 3, 4}));
    EXPECT_EQ(n, 4u);
    EXPECT_EQ(c.value(0), c.truthy(0, prev_pe()));
    EXPECT_EQ(c.value(4), c.truthy(4, prev_pe()));
    shmem_barrier_all();
}

// The tests as a set fills up: none, some, then all members true.
template <typename T>
void check_tests(Case<T> &c) {
    size_t idx[kElems];
    for (size_t j = 0; j < kElems; j++) {
        c.set_local(j, kMembers.count(j) != 0 ? c.falsy(j) : c.truthy(j, me()));
    }
    shmem_barrier_all();
    EXPECT_EQ(c.test_any(kMask), SIZE_MAX);
    EXPECT_EQ(c.test_some(idx, kMask), 0u);
    EXPECT_EQ(c.test_all(kMask), 0);
    size_t any = c.test_any(nullptr);
    EXPECT_TRUE(any == 1 || any == 3) << "test_any with NULL status returned " << any;
    shmem_barrier_all();

    c.put(0, c.truthy(0, me()), next_pe());
    c.put(2, c.truthy(2, me()), next_pe());
    shmem_barrier_all();
    EXPECT_EQ(c.test_all(kMask), 0) << "member 4 is still false";
    any = c.test_any(kMask);
    EXPECT_TRUE(any == 0 || any == 2) << "test_any returned " << any;
    size_t n = c.test_some(idx, kMask);
    EXPECT_EQ(as_set(idx, n), (std::set<size_t>{0, 2}));
    shmem_barrier_all();

    c.put(4, c.truthy(4, me()), next_pe());
    c.set_local(1, c.falsy(1));
    c.set_local(3, c.falsy(3));
    shmem_barrier_all();
    EXPECT_EQ(c.test_all(kMask), 1);
    EXPECT_EQ(c.test_all(nullptr), 0) << "NULL status includes the false elements 1 and 3";
    EXPECT_EQ(c.value(2), c.truthy(2, prev_pe()));
    shmem_barrier_all();
}

// Empty sets: no elements, or every element left out. Nothing blocks.
template <typename T>
void check_empty(Case<T> &c) {
    size_t idx[kElems];
    for (size_t j = 0; j < kElems; j++) c.set_local(j, c.truthy(j, me()));
    for (size_t n : {size_t{0}, kElems}) {
        const int *st = n == 0 ? nullptr : kAllOut;
        c.wait_all(st, n);
        EXPECT_EQ(c.wait_any(st, n), SIZE_MAX) << n;
        EXPECT_EQ(c.wait_some(idx, st, n), 0u) << n;
        EXPECT_EQ(c.test_all(st, n), 1) << n;
        EXPECT_EQ(c.test_any(st, n), SIZE_MAX) << n;
        EXPECT_EQ(c.test_some(idx, st, n), 0u) << n;
    }
}

template <typename T>
void check_all(const Api<T> &api, T *ivars, bool vector) {
    ASSERT_NE(ivars, nullptr);
    for (int cmp : kCmps) {
        SCOPED_TRACE(std::string("cmp ") + cmp_name(cmp) + (vector ? ", vector" : ", plain"));
        Case<T> c(api, ivars, cmp, vector);
        check_wait_all(c);
        check_wait_any(c);
        check_any_rotates(c);
        check_wait_some(c);
        check_tests(c);
        check_empty(c);
        shmem_barrier_all();
    }
}

#define DEFINE_GLOBAL_TARGET(TYPE, NAME) alignas(64) TYPE g_set_##NAME[kElems];
SHMEM_SYNC_TYPES(DEFINE_GLOBAL_TARGET)
#undef DEFINE_GLOBAL_TARGET

}  // namespace

#define API_OF(TYPE, NAME)                                                                         \
    Api<TYPE> {                                                                                    \
        shmem_##NAME##_wait_until_all, shmem_##NAME##_wait_until_any,                              \
            shmem_##NAME##_wait_until_some, shmem_##NAME##_wait_until_all_vector,                  \
            shmem_##NAME##_wait_until_any_vector, shmem_##NAME##_wait_until_some_vector,           \
            shmem_##NAME##_test_all, shmem_##NAME##_test_any, shmem_##NAME##_test_some,            \
            shmem_##NAME##_test_all_vector, shmem_##NAME##_test_any_vector,                        \
            shmem_##NAME##_test_some_vector, shmem_##NAME##_p                                      \
    }

#define HEAP_TARGET(TYPE, NAME) Target<TYPE>::heap(kElems)
#define STATIC_TARGET(TYPE, NAME) Target<TYPE>::fixed(g_set_##NAME)

#define SET_CASES(SUITE, WHERE, TYPE, NAME)                                                        \
    TEST(SUITE, Shmem_##NAME##_WaitUntilAndTestSets_EveryComparison_Test) {                        \
        auto t = WHERE(TYPE, NAME);                                                                \
        const Api<TYPE> api = API_OF(TYPE, NAME);                                                  \
        check_all<TYPE>(api, t.get(), false);                                                      \
    }                                                                                              \
    TEST(SUITE, Shmem_##NAME##_VectorForms_EveryComparison_Test) {                                 \
        auto t = WHERE(TYPE, NAME);                                                                \
        const Api<TYPE> api = API_OF(TYPE, NAME);                                                  \
        check_all<TYPE>(api, t.get(), true);                                                       \
    }

// Heap targets first; the global-target cases run last, so a job without symmetric static data
// has run every heap case before the first global target ends it.
#define HEAP_SETS(TYPE, NAME) SET_CASES(WaitSetTest, HEAP_TARGET, TYPE, NAME)
SHMEM_SYNC_TYPES(HEAP_SETS)
#define STATIC_SETS(TYPE, NAME) SET_CASES(StaticWaitSetTest, STATIC_TARGET, TYPE, NAME)
SHMEM_SYNC_TYPES(STATIC_SETS)
