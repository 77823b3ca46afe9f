// typed_rma_test.cc: the typed RMA routines of every SHMEM_RMA_TYPES entry (put, get, their nbi
// forms, p, g, iput, iget) and the sized ones of every SHMEM_RMA_SIZES entry, each to and from
// the next PE and a PE half the job away. Every case is generated from the type tables in
// <shmem/types.h>, once on a shmem_calloc'ed target (TypedRmaTest, SizedRmaTest) and once on a
// global variable (StaticTargetTest, last in the binary: it needs symmetric static data).
#include <gtest/gtest.h>
#include <shmem.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "test_util.h"

using namespace testutil;

namespace {

constexpr size_t kElems = 13;  // elements one call moves
constexpr size_t kCap = 64;    // elements in a target: room for kElems at stride 3 (37)

// Element i that PE `pe` writes in `round`: 1..127, so exact in every type of the table
// (int8_t, float and long double included); never 0, the fill of elements nobody writes;
// different for every PE at the same i, and for every i < 127 of one PE.
template <typename T>
T value(int pe, size_t i, int round) {
    return static_cast<T>(1 + (pe * 37 + static_cast<int>(i) * 3 + round * 11) % 127);
}

// Strides of the iput/iget cases, in elements. A negative stride walks down from the last
// element (origin()).
struct Strides {
    ptrdiff_t dst;
    ptrdiff_t sst;
};
constexpr Strides kStrides[] = {{1, 1}, {2, 1},  {1, 2},  {3, 2},  {2, 3},
                                {3, 3}, {-2, 1}, {1, -3}, {-1, -1}};

// Index of element 0 of a strided range: the range [origin, origin + (kElems-1)*stride].
size_t origin(ptrdiff_t stride) {
    return stride < 0 ? (kElems - 1) * static_cast<size_t>(-stride) : 0;
}
size_t position(ptrdiff_t stride, size_t k) {
    return static_cast<size_t>(static_cast<ptrdiff_t>(origin(stride)) +
                               static_cast<ptrdiff_t>(k) * stride);
}

// Clears this PE's target and waits until every PE has cleared its own.
template <typename T>
void reset(T *sym) {
    std::fill(sym, sym + kCap, T(0));
    shmem_barrier_all();
}

// `got` holds, at the strided positions, the elements PE `pe` wrote in `round`, and 0 elsewhere.
template <typename T>
void expect_strided(const T *got, ptrdiff_t stride, int pe, int round, const char *what) {
    std::vector<bool> written(kCap, false);
    for (size_t k = 0; k < kElems; k++) written[position(stride, k)] = true;
    size_t k = 0;
    for (size_t i = 0; i < kCap; i++) {
        T want = T(0);
        if (written[i]) {
            // Positions ascend for a positive stride and descend for a negative one.
            size_t elem = stride > 0 ? k++ : kElems - 1 - k++;
            want = value<T>(pe, elem, round);
        }
        ASSERT_TRUE(got[i] == want)
            << what << ": element " << i << " is " << static_cast<long double>(got[i]) << ", want "
            << static_cast<long double>(want) << " (from PE " << pe << ")";
    }
}

template <typename T>
void expect_block(const T *got, int pe, int round, const char *what) {
    expect_strided(got, 1, pe, round, what);
}

template <typename T>
std::vector<T> block(int pe, int round) {
    std::vector<T> v(kElems);
    for (size_t i = 0; i < kElems; i++) v[i] = value<T>(pe, i, round);
    return v;
}

// put and put_nbi: `nbi` completes with shmem_quiet and publishes with shmem_sync_all (which
// completes nothing itself), so a quiet that did not complete the puts fails the check.
template <typename T, typename Put>
void check_put(Put put, T *sym, bool nbi) {
    int round = nbi ? 20 : 10;
    for (const Peer &p : peers()) {
        round++;
        reset(sym);
        std::vector<T> src = block<T>(me(), round);
        put(sym, src.data(), kElems, p.to);
        if (nbi) {
            shmem_quiet();
            shmem_sync_all();
        } else {
            shmem_barrier_all();
        }
        expect_block(sym, p.from, round, p.name);
        shmem_barrier_all();
    }
}

template <typename T, typename Get>
void check_get(Get get, T *sym, bool nbi) {
    int round = nbi ? 40 : 30;
    for (const Peer &p : peers()) {
        round++;
        reset(sym);
        std::vector<T> mine = block<T>(me(), round);
        std::copy(mine.begin(), mine.end(), sym);
        shmem_barrier_all();
        std::vector<T> got(kCap, T(0));
        get(got.data(), sym, kElems, p.to);
        if (nbi) shmem_quiet();
        expect_block(got.data(), p.to, round, p.name);
        shmem_barrier_all();
    }
}

template <typename T, typename P>
void check_p(P put_one, T *sym) {
    int round = 50;
    for (const Peer &p : peers()) {
        round++;
        reset(sym);
        for (size_t i = 0; i < kElems; i++) put_one(&sym[i], value<T>(me(), i, round), p.to);
        shmem_barrier_all();
        expect_block(sym, p.from, round, p.name);
        shmem_barrier_all();
    }
}

template <typename T, typename G>
void check_g(G get_one, T *sym) {
    int round = 60;
    for (const Peer &p : peers()) {
        round++;
        reset(sym);
        std::vector<T> mine = block<T>(me(), round);
        std::copy(mine.begin(), mine.end(), sym);
        shmem_barrier_all();
        std::vector<T> got(kCap, T(0));
        for (size_t i = 0; i < kElems; i++) got[i] = get_one(&sym[i], p.to);
        expect_block(got.data(), p.to, round, p.name);
        shmem_barrier_all();
    }
}

// Local strided source: the elements of `round` at the strided positions, 0 in the gaps (0 is
// never a pattern value, so a gap that travels shows up at the receiver).
template <typename T>
std::vector<T> strided_source(ptrdiff_t sst, int round) {
    std::vector<T> src(kCap, T(0));
    for (size_t k = 0; k < kElems; k++) src[position(sst, k)] = value<T>(me(), k, round);
    return src;
}

template <typename T, typename IPut>
void check_iput(IPut iput, T *sym) {
    int round = 70;
    for (const Strides &s : kStrides) {
        for (const Peer &p : peers()) {
            round++;
            reset(sym);
            std::vector<T> src = strided_source<T>(s.sst, round);
            iput(sym + origin(s.dst), src.data() + origin(s.sst), s.dst, s.sst, kElems, p.to);
            shmem_barrier_all();
            SCOPED_TRACE(testing::Message() << "dst=" << s.dst << " sst=" << s.sst);
            expect_strided(sym, s.dst, p.from, round, p.name);
            shmem_barrier_all();
        }
    }
}

template <typename T, typename IGet>
void check_iget(IGet iget, T *sym) {
    int round = 90;
    for (const Strides &s : kStrides) {
        for (const Peer &p : peers()) {
            round++;
            reset(sym);
            std::vector<T> mine = strided_source<T>(s.sst, round);
            std::copy(mine.begin(), mine.end(), sym);
            shmem_barrier_all();
            std::vector<T> got(kCap, T(0));
            iget(got.data() + origin(s.dst), sym + origin(s.sst), s.dst, s.sst, kElems, p.to);
            SCOPED_TRACE(testing::Message() << "dst=" << s.dst << " sst=" << s.sst);
            expect_strided(got.data(), s.dst, p.to, round, p.name);
            shmem_barrier_all();
        }
    }
}

// ---- Sized routines: elements of Bytes bytes, checked byte by byte -----------------------------

#define SIZED_BYTES(BITS) BITS / 8,
constexpr size_t kMaxSizedBytes = std::max({SHMEM_RMA_SIZES(SIZED_BYTES)});
#undef SIZED_BYTES

// Byte b of element i of `round` from PE `pe`: 1..251, never 0.
unsigned char sized_byte(int pe, size_t i, size_t b, size_t bytes, int round) {
    return static_cast<unsigned char>(
        1 + (pe * 37 + static_cast<int>(i * bytes + b) * 3 + round * 11) % 251);
}

// A symmetric byte target of kCap elements of the largest size.
class SizedTarget {
public:
    static SizedTarget heap() {
        return SizedTarget(static_cast<unsigned char *>(shmem_calloc(kCap, kMaxSizedBytes)), true);
    }
    static SizedTarget fixed(unsigned char *global) { return SizedTarget(global, false); }
    SizedTarget(const SizedTarget &) = delete;
    SizedTarget &operator=(const SizedTarget &) = delete;
    ~SizedTarget() {
        if (owned_) shmem_free(p_);
    }
    unsigned char *get() const { return p_; }

private:
    SizedTarget(unsigned char *p, bool owned) : p_(p), owned_(owned) {}
    unsigned char *p_;
    bool owned_;
};

template <size_t Bytes>
struct Sized {
    static void reset(unsigned char *sym) {
        std::memset(sym, 0, kCap * Bytes);
        shmem_barrier_all();
    }

    // kCap elements, with those of `round` from `pe` at the strided positions, 0 elsewhere.
    static std::vector<unsigned char> image(ptrdiff_t stride, int pe, int round) {
        std::vector<unsigned char> v(kCap * Bytes, 0);
        for (size_t k = 0; k < kElems; k++) {
            for (size_t b = 0; b < Bytes; b++) {
                v[position(stride, k) * Bytes + b] = sized_byte(pe, k, b, Bytes, round);
            }
        }
        return v;
    }

    static void expect(const unsigned char *got, ptrdiff_t stride, int pe, int round,
                       const char *what) {
        std::vector<unsigned char> want = image(stride, pe, round);
        for (size_t i = 0; i < want.size(); i++) {
            ASSERT_EQ(static_cast<int>(got[i]), static_cast<int>(want[i]))
                << what << ": byte " << i << " (element " << i / Bytes << ", stride " << stride
                << ", from PE " << pe << ")";
        }
    }

    template <typename Put>
    static void put(Put fn, unsigned char *sym, bool nbi) {
        int round = nbi ? 20 : 10;
        for (const Peer &p : peers()) {
            round++;
            reset(sym);
            std::vector<unsigned char> src = image(1, me(), round);
            fn(sym, src.data(), kElems, p.to);
            if (nbi) {
                shmem_quiet();
                shmem_sync_all();
            } else {
                shmem_barrier_all();
            }
            expect(sym, 1, p.from, round, p.name);
            shmem_barrier_all();
        }
    }

    template <typename Get>
    static void get(Get fn, unsigned char *sym, bool nbi) {
        int round = nbi ? 40 : 30;
        for (const Peer &p : peers()) {
            round++;
            reset(sym);
            std::vector<unsigned char> mine = image(1, me(), round);
            std::memcpy(sym, mine.data(), mine.size());
            shmem_barrier_all();
            std::vector<unsigned char> got(kCap * Bytes, 0);
            fn(got.data(), sym, kElems, p.to);
            if (nbi) shmem_quiet();
            expect(got.data(), 1, p.to, round, p.name);
            shmem_barrier_all();
        }
    }

    template <typename IPut>
    static void iput(IPut fn, unsigned char *sym) {
        int round = 70;
        for (const Strides &s : kStrides) {
            for (const Peer &p : peers()) {
                round++;
                reset(sym);
                std::vector<unsigned char> src = image(s.sst, me(), round);
                fn(sym + origin(s.dst) * Bytes, src.data() + origin(s.sst) * Bytes, s.dst, s.sst,
                   kElems, p.to);
                shmem_barrier_all();
                SCOPED_TRACE(testing::Message() << "dst=" << s.dst << " sst=" << s.sst);
                expect(sym, s.dst, p.from, round, p.name);
                shmem_barrier_all();
            }
        }
    }

    template <typename IGet>
    static void iget(IGet fn, unsigned char *sym) {
        int round = 90;
        for (const Strides &s : kStrides) {
            for (const Peer &p : peers()) {
                round++;
                reset(sym);
                std::vector<unsigned char> mine = image(s.sst, me(), round);
                std::memcpy(sym, mine.data(), mine.size());
                shmem_barrier_all();
                std::vector<unsigned char> got(kCap * Bytes, 0);
                fn(got.data() + origin(s.dst) * Bytes, sym + origin(s.sst) * Bytes, s.dst, s.sst,
                   kElems, p.to);
                SCOPED_TRACE(testing::Message() << "dst=" << s.dst << " sst=" << s.sst);
                expect(got.data(), s.dst, p.to, round, p.name);
                shmem_barrier_all();
            }
        }
    }
};

// ---- Global targets (symmetric static data) ---------------------------------------------------

// One zero-initialised (.bss) array per type of the table, and one initialised (.data) byte array
// for the sized routines, so that both kinds of static storage are targets.
#define DEFINE_GLOBAL_TARGET(TYPE, NAME) alignas(64) TYPE g_rma_##NAME[kCap];
SHMEM_RMA_TYPES(DEFINE_GLOBAL_TARGET)
#undef DEFINE_GLOBAL_TARGET
alignas(64) unsigned char g_sized[kCap * kMaxSizedBytes] = {1};

}  // namespace

// ---- Generated cases -------------------------------------------------------------------------

#define HEAP_TARGET(TYPE, NAME) Target<TYPE>::heap(kCap)
#define STATIC_TARGET(TYPE, NAME) Target<TYPE>::fixed(g_rma_##NAME)

// One case: makes the target `t` with TARGET, then runs CHECK on it.
#define RMA_CASE(SUITE, TEST_NAME, TARGET, CHECK)                                                  \
    TEST(SUITE, TEST_NAME) {                                                                       \
        auto t = TARGET;                                                                           \
        ASSERT_NE(t.get(), nullptr);                                                               \
        CHECK;                                                                                     \
    }

// Every typed RMA case of one table entry, on the target WHERE(TYPE, NAME) makes.
#define TYPED_RMA_CASES(SUITE, WHERE, TYPE, NAME)                                                  \
    RMA_CASE(SUITE, Shmem_##NAME##_put_ToNextAndFarPe_Test, WHERE(TYPE, NAME),                     \
             check_put<TYPE>(shmem_##NAME##_put, t.get(), false))                                  \
    RMA_CASE(SUITE, Shmem_##NAME##_get_FromNextAndFarPe_Test, WHERE(TYPE, NAME),                   \
             check_get<TYPE>(shmem_##NAME##_get, t.get(), false))                                  \
    RMA_CASE(SUITE, Shmem_##NAME##_put_nbi_CompleteAfterQuiet_Test, WHERE(TYPE, NAME),             \
             check_put<TYPE>(shmem_##NAME##_put_nbi, t.get(), true))                               \
    RMA_CASE(SUITE, Shmem_##NAME##_get_nbi_CompleteAfterQuiet_Test, WHERE(TYPE, NAME),             \
             check_get<TYPE>(shmem_##NAME##_get_nbi, t.get(), true))                               \
    RMA_CASE(SUITE, Shmem_##NAME##_p_ToNextAndFarPe_Test, WHERE(TYPE, NAME),                       \
             check_p<TYPE>(shmem_##NAME##_p, t.get()))                                             \
    RMA_CASE(SUITE, Shmem_##NAME##_g_FromNextAndFarPe_Test, WHERE(TYPE, NAME),                     \
             check_g<TYPE>(shmem_##NAME##_g, t.get()))                                             \
    RMA_CASE(SUITE, Shmem_##NAME##_iput_StridesLeaveGaps_Test, WHERE(TYPE, NAME),                  \
             check_iput<TYPE>(shmem_##NAME##_iput, t.get()))                                       \
    RMA_CASE(SUITE, Shmem_##NAME##_iget_StridesLeaveGaps_Test, WHERE(TYPE, NAME),                  \
             check_iget<TYPE>(shmem_##NAME##_iget, t.get()))

#define HEAP_SIZED_TARGET(BITS) SizedTarget::heap()
#define STATIC_SIZED_TARGET(BITS) SizedTarget::fixed(g_sized)

// Every sized RMA case of one SHMEM_RMA_SIZES entry.
#define SIZED_RMA_CASES(SUITE, WHERE, BITS)                                                        \
    RMA_CASE(SUITE, ShmemPut##BITS##_ToNextAndFarPe_Test, WHERE(BITS),                             \
             Sized<BITS / 8>::put(shmem_put##BITS, t.get(), false))                                \
    RMA_CASE(SUITE, ShmemGet##BITS##_FromNextAndFarPe_Test, WHERE(BITS),                           \
             Sized<BITS / 8>::get(shmem_get##BITS, t.get(), false))                                \
    RMA_CASE(SUITE, ShmemPut##BITS##Nbi_CompleteAfterQuiet_Test, WHERE(BITS),                      \
             Sized<BITS / 8>::put(shmem_put##BITS##_nbi, t.get(), true))                           \
    RMA_CASE(SUITE, ShmemGet##BITS##Nbi_CompleteAfterQuiet_Test, WHERE(BITS),                      \
             Sized<BITS / 8>::get(shmem_get##BITS##_nbi, t.get(), true))                           \
    RMA_CASE(SUITE, ShmemIput##BITS##_StridesLeaveGaps_Test, WHERE(BITS),                          \
             Sized<BITS / 8>::iput(shmem_iput##BITS, t.get()))                                     \
    RMA_CASE(SUITE, ShmemIget##BITS##_StridesLeaveGaps_Test, WHERE(BITS),                          \
             Sized<BITS / 8>::iget(shmem_iget##BITS, t.get()))

// Heap targets first; the global-target cases run last, so a job without symmetric static data
// has run every heap case before the first global target ends it.
#define HEAP_TYPED(TYPE, NAME) TYPED_RMA_CASES(TypedRmaTest, HEAP_TARGET, TYPE, NAME)
SHMEM_RMA_TYPES(HEAP_TYPED)
#define HEAP_SIZED(BITS) SIZED_RMA_CASES(SizedRmaTest, HEAP_SIZED_TARGET, BITS)
SHMEM_RMA_SIZES(HEAP_SIZED)

#define STATIC_TYPED(TYPE, NAME) TYPED_RMA_CASES(StaticTargetTest, STATIC_TARGET, TYPE, NAME)
SHMEM_RMA_TYPES(STATIC_TYPED)
#define STATIC_SIZED(BITS) SIZED_RMA_CASES(StaticTargetTest, STATIC_SIZED_TARGET, BITS)
SHMEM_RMA_SIZES(STATIC_SIZED)
