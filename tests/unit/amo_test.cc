// amo_test.cc: the atomic memory operations of every entry of the AMO type tables (extended:
// fetch, set, swap; standard: compare_swap, fetch_inc, inc, fetch_add, add; bitwise: fetch_and/
// or/xor, and/or/xor; and the 1.5 nbi fetching forms), each on an element of the next PE and of
// a PE half the job away; then every PE at once on one element of PE 0 and of the last PE
// (counts exact, fetched values a permutation). Generated from the tables in <shmem/types.h>,
// once on a shmem_calloc'ed target (AmoTest) and once on a global variable (StaticTargetTest,
// last in the binary: it needs symmetric static data).
#include <gtest/gtest.h>
#include <shmem.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "test_util.h"

using namespace testutil;

namespace {

// Slot 0 of a target is updated by the previous PE, slot 1 by the PE half the job away: distinct
// elements even where both are the same PE (1 or 2 PEs).
constexpr int kSlots = 2;
constexpr int kRepeats = 200;  // updates per PE in the concurrent cases

#define EXPECT_VALUE(got, want, what) EXPECT_TRUE(same_value<T>((got), (want))) << (what)

// A number in T above 2^40 for 64-bit integers (so their upper half takes part), small otherwise.
template <typename T>
T num(long long v) {
    if constexpr (std::is_integral_v<T> && sizeof(T) >= 8) {
        return static_cast<T>((T(1) << 40) + static_cast<T>(v));
    } else {
        return static_cast<T>(v);
    }
}

// Slot s of PE `pe` before a round, and the operand PE `pe` sends: exact in float as well,
// different for every PE and slot, never 7 (the fill of nbi fetch buffers).
template <typename T>
T initial(int pe, int s) {
    return num<T>(10 + 4 * pe + s);
}
template <typename T>
T operand(int pe) {
    return static_cast<T>(100 + 3 * pe);
}
template <typename T>
T unfetched() {
    return static_cast<T>(7);
}

// Bit patterns for the bitwise AMOs: all 64 bits in play for 64-bit types, never 0.
template <typename T>
T bits_initial(int pe, int s) {
    auto p = static_cast<uint64_t>(pe);
    return static_cast<T>(0xA5A5F00F5A5A0FF0ull ^ (p << 36) ^ (p << 20) ^ static_cast<uint64_t>(s));
}
template <typename T>
T bits_operand(int pe) {
    auto p = static_cast<uint64_t>(pe);
    return static_cast<T>(0x0FF0F0F0FF0F0F0Full ^ (p << 44) ^ (p << 8));
}

// One round: every PE sets its slots to start(me, s); then applies `op(&sym[s], s, peer)` to
// slot s of its peers; then `check(value, s, from)` sees what its own slots hold.
template <typename T, typename Start, typename Op, typename Check>
void round_trip(T *sym, Start start, Op op, Check check) {
    for (int s = 0; s < kSlots; s++) sym[s] = start(me(), s);
    shmem_barrier_all();
    std::vector<Peer> ps = peers();
    for (int s = 0; s < kSlots; s++) op(&sym[s], s, ps[s]);
    shmem_barrier_all();
    for (int s = 0; s < kSlots; s++) check(sym[s], s, ps[s]);
    shmem_barrier_all();
}

// ---- fetch, set, swap (SHMEM_AMO_EXTENDED_TYPES) ------------------------------------------------

template <typename T, typename Fetch>
void check_fetch(Fetch fetch, T *sym) {
    round_trip(
        sym, initial<T>,
        [&](T *e, int s, const Peer &p) {
            EXPECT_VALUE(fetch(e, p.to), initial<T>(p.to, s), p.name);
        },
        [&](T v, int s, const Peer &p) { EXPECT_VALUE(v, initial<T>(me(), s), p.name); });
}

template <typename T, typename FetchNbi>
void check_fetch_nbi(FetchNbi fetch_nbi, T *sym) {
    T out[kSlots];
    round_trip(
        sym, initial<T>,
        [&](T *e, int s, const Peer &p) {
            out[s] = unfetched<T>();
            fetch_nbi(&out[s], e, p.to);
            if (s == kSlots - 1) {
                shmem_quiet();
                for (int i = 0; i < kSlots; i++) {
                    EXPECT_VALUE(out[i], initial<T>(peers()[i].to, i), peers()[i].name);
                }
            }
        },
        [&](T v, int s, const Peer &p) { EXPECT_VALUE(v, initial<T>(me(), s), p.name); });
}

template <typename T, typename Set>
void check_set(Set set, T *sym) {
    round_trip(
        sym, initial<T>, [&](T *e, int, const Peer &p) { set(e, operand<T>(me()), p.to); },
        [&](T v, int, const Peer &p) { EXPECT_VALUE(v, operand<T>(p.from), p.name); });
}

template <typename T, typename Swap>
void check_swap(Swap swap, T *sym) {
    round_trip(
        sym, initial<T>,
        [&](T *e, int s, const Peer &p) {
            EXPECT_VALUE(swap(e, operand<T>(me()), p.to), initial<T>(p.to, s), p.name);
        },
        [&](T v, int, const Peer &p) { EXPECT_VALUE(v, operand<T>(p.from), p.name); });
}

template <typename T, typename SwapNbi>
void check_swap_nbi(SwapNbi swap_nbi, T *sym) {
    T out[kSlots];
    round_trip(
        sym, initial<T>,
        [&](T *e, int s, const Peer &p) {
            out[s] = unfetched<T>();
            swap_nbi(&out[s], e, operand<T>(me()), p.to);
            if (s == kSlots - 1) {
                shmem_quiet();
                for (int i = 0; i < kSlots; i++) {
                    EXPECT_VALUE(out[i], initial<T>(peers()[i].to, i), peers()[i].name);
                }
            }
        },
        [&](T v, int, const Peer &p) { EXPECT_VALUE(v, operand<T>(p.from), p.name); });
}

// ---- compare_swap, fetch_inc, inc, fetch_add, add (SHMEM_AMO_STANDARD_TYPES) ------------------

template <typename T, typename CSwap>
void check_compare_swap_match(CSwap cswap, T *sym) {
    round_trip(
        sym, initial<T>,
        [&](T *e, int s, const Peer &p) {
            T old = cswap(e, initial<T>(p.to, s), operand<T>(me()), p.to);
            EXPECT_VALUE(old, initial<T>(p.to, s), p.name);
        },
        [&](T v, int, const Peer &p) { EXPECT_VALUE(v, operand<T>(p.from), p.name); });
}

template <typename T, typename CSwap>
void check_compare_swap_mismatch(CSwap cswap, T *sym) {
    // The condition is the value of the other slot: close, but never the one there.
    round_trip(
        sym, initial<T>,
        [&](T *e, int s, const Peer &p) {
            T old = cswap(e, initial<T>(p.to, 1 - s), operand<T>(me()), p.to);
            EXPECT_VALUE(old, initial<T>(p.to, s), p.name);
        },
        [&](T v, int s, const Peer &p) { EXPECT_VALUE(v, initial<T>(me(), s), p.name); });
}

template <typename T, typename CSwapNbi>
void check_compare_swap_nbi(CSwapNbi cswap_nbi, T *sym) {
    // Slot 0 matches and is replaced; slot 1 does not match and stays.
    T out[kSlots];
    round_trip(
        sym, initial<T>,
        [&](T *e, int s, const Peer &p) {
            out[s] = unfetched<T>();
            cswap_nbi(&out[s], e, initial<T>(p.to, 0), operand<T>(me()), p.to);
            if (s == kSlots - 1) {
                shmem_quiet();
                for (int i = 0; i < kSlots; i++) {
                    EXPECT_VALUE(out[i], initial<T>(peers()[i].to, i), peers()[i].name);
                }
            }
        },
        [&](T v, int s, const Peer &p) {
            EXPECT_VALUE(v, s == 0 ? operand<T>(p.from) : initial<T>(me(), s), p.name);
        });
}

// fetch_add-like routines: `apply(e, pe)` adds `added(sender)` and returns the old value, or
// returns nothing (add, inc).
template <typename T, typename Apply, typename Added>
void check_add(Apply apply, Added added, T *sym) {
    round_trip(
        sym, initial<T>,
        [&](T *e, int s, const Peer &p) {
            if constexpr (std::is_void_v<decltype(apply(e, p.to))>) {
                apply(e, p.to);
                (void)s;
            } else {
                EXPECT_VALUE(apply(e, p.to), initial<T>(p.to, s), p.name);
            }
        },
        [&](T v, int s, const Peer &p) {
            EXPECT_VALUE(v, static_cast<T>(initial<T>(me(), s) + added(p.from)), p.name);
        });
}

// The nbi form of a fetch_add-like routine: `apply(out, e, pe)`.
template <typename T, typename ApplyNbi, typename Added>
void check_add_nbi(ApplyNbi apply_nbi, Added added, T *sym) {
    T out[kSlots];
    round_trip(
        sym, initial<T>,
        [&](T *e, int s, const Peer &p) {
            out[s] = unfetched<T>();
            apply_nbi(&out[s], e, p.to);
            if (s == kSlots - 1) {
                shmem_quiet();
                for (int i = 0; i < kSlots; i++) {
                    EXPECT_VALUE(out[i], initial<T>(peers()[i].to, i), peers()[i].name);
                }
            }
        },
        [&](T v, int s, const Peer &p) {
            EXPECT_VALUE(v, static_cast<T>(initial<T>(me(), s) + added(p.from)), p.name);
        });
}

// ---- fetch_and/or/xor, and/or/xor (SHMEM_AMO_BITWISE_TYPES) -----------------------------------

struct OpAnd {
    template <typename T>
    T operator()(T a, T b) const {
        return static_cast<T>(a & b);
    }
};
struct OpOr {
    template <typename T>
    T operator()(T a, T b) const {
        return static_cast<T>(a | b);
    }
};
struct OpXor {
    template <typename T>
    T operator()(T a, T b) const {
        return static_cast<T>(a ^ b);
    }
};

// `fn(e, value, pe)` for the fetching and plain forms, `fn(out, e, value, pe)` for nbi.
template <typename T, typename Fn, typename Op>
void check_bitwise(Fn fn, Op op, T *sym) {
    round_trip(
        sym, bits_initial<T>,
        [&](T *e, int s, const Peer &p) {
            if constexpr (std::is_void_v<decltype(fn(e, T(), p.to))>) {
                fn(e, bits_operand<T>(me()), p.to);
                (void)s;
            } else {
                EXPECT_VALUE(fn(e, bits_operand<T>(me()), p.to), bits_initial<T>(p.to, s), p.name);
            }
        },
        [&](T v, int s, const Peer &p) {
            EXPECT_VALUE(v, op(bits_initial<T>(me(), s), bits_operand<T>(p.from)), p.name);
        });
}

template <typename T, typename FnNbi, typename Op>
void check_bitwise_nbi(FnNbi fn_nbi, Op op, T *sym) {
    T out[kSlots];
    round_trip(
        sym, bits_initial<T>,
        [&](T *e, int s, const Peer &p) {
            out[s] = T(0);
            fn_nbi(&out[s], e, bits_operand<T>(me()), p.to);
            if (s == kSlots - 1) {
                shmem_quiet();
                for (int i = 0; i < kSlots; i++) {
                    EXPECT_VALUE(out[i], bits_initial<T>(peers()[i].to, i), peers()[i].name);
                }
            }
        },
        [&](T v, int s, const Peer &p) {
            EXPECT_VALUE(v, op(bits_initial<T>(me(), s), bits_operand<T>(p.from)), p.name);
        });
}

// ---- Every PE on one element ------------------------------------------------------------------

// Counter A is slot 0 of PE 0, counter B slot 1 of the last PE. 64-bit counters start just below
// 2^32, so the count carries into the upper half.
template <typename T>
T counter_start() {
    if constexpr (std::is_integral_v<T> && sizeof(T) >= 8) {
        return static_cast<T>((T(1) << 32) - 50);
    } else {
        return T(0);
    }
}
int last_pe() { return npes() - 1; }

template <typename T>
void start_counters(T *sym) {
    for (int s = 0; s < kSlots; s++) sym[s] = counter_start<T>();
    shmem_barrier_all();
}

// Every PE reads both counters (with a get: data peers wrote) and finds `want` updates in each.
template <typename T>
void expect_counters(T *sym, long long want) {
    shmem_barrier_all();
    T a, b;
    shmem_getmem(&a, &sym[0], sizeof(T), 0);
    shmem_getmem(&b, &sym[1], sizeof(T), last_pe());
    T total = static_cast<T>(counter_start<T>() + static_cast<T>(want));
    EXPECT_VALUE(a, total, "counter on PE 0");
    EXPECT_VALUE(b, total, "counter on the last PE");
    shmem_barrier_all();
}

// `mine`: the counter values this PE's updates saw, relative to the start, in the order it made
// them. Blocking updates of one element by one PE are ordered, so theirs must rise (`ordered`;
// nbi ones need not); those of all PEs together must be 0 .. n*kRepeats-1, each once. Gathered
// on every PE through puts.
void expect_permutation(const std::vector<long long> &mine, const char *what, bool ordered = true) {
    ASSERT_EQ(mine.size(), static_cast<size_t>(kRepeats));
    for (size_t i = 1; ordered && i < mine.size(); i++) {
        ASSERT_LT(mine[i - 1], mine[i]) << what << ": update " << i << " of this PE";
    }
    const size_t total = static_cast<size_t>(npes()) * kRepeats;
    auto *all = static_cast<long long *>(shmem_calloc(total, sizeof(long long)));
    ASSERT_NE(all, nullptr);
    for (int pe = 0; pe < npes(); pe++) {
        shmem_putmem(all + static_cast<size_t>(me()) * kRepeats, mine.data(),
                     kRepeats * sizeof(long long), pe);
    }
    shmem_barrier_all();
    std::vector<long long> seen(all, all + total);
    shmem_free(all);
    std::sort(seen.begin(), seen.end());
    for (size_t i = 0; i < total; i++) {
        ASSERT_EQ(seen[i], static_cast<long long>(i)) << what << ": sorted value " << i;
    }
}

template <typename T>
long long relative(T v) {
    return static_cast<long long>(static_cast<T>(v - counter_start<T>()));
}

template <typename T, typename FetchAdd>
void check_concurrent_fetch_add(FetchAdd fetch_add, T *sym) {
    start_counters(sym);
    std::vector<long long> a, b;
    for (int i = 0; i < kRepeats; i++) {
        a.push_back(relative(fetch_add(&sym[0], T(1), 0)));
        b.push_back(relative(fetch_add(&sym[1], T(1), last_pe())));
    }
    expect_counters(sym, static_cast<long long>(npes()) * kRepeats);
    expect_permutation(a, "fetch_add on PE 0");
    expect_permutation(b, "fetch_add on the last PE");
}

template <typename T, typename Inc>
void check_concurrent_inc(Inc inc, T *sym) {
    start_counters(sym);
    for (int i = 0; i < kRepeats; i++) {
        inc(&sym[0], 0);
        inc(&sym[1], last_pe());
    }
    expect_counters(sym, static_cast<long long>(npes()) * kRepeats);
}

template <typename T, typename FetchInc>
void check_concurrent_fetch_inc(FetchInc fetch_inc, T *sym) {
    start_counters(sym);
    std::vector<long long> a, b;
    for (int i = 0; i < kRepeats; i++) {
        a.push_back(relative(fetch_inc(&sym[0], 0)));
        b.push_back(relative(fetch_inc(&sym[1], last_pe())));
    }
    expect_counters(sym, static_cast<long long>(npes()) * kRepeats);
    expect_permutation(a, "fetch_inc on PE 0");
    expect_permutation(b, "fetch_inc on the last PE");
}

// fetch_inc_nbi on A and fetch_add_nbi(1) on B, each into its own buffer element, read after
// one shmem_quiet.
template <typename T, typename FetchIncNbi, typename FetchAddNbi>
void check_concurrent_fetch_nbi(FetchIncNbi fetch_inc_nbi, FetchAddNbi fetch_add_nbi, T *sym) {
    start_counters(sym);
    std::vector<T> fa(kRepeats, unfetched<T>()), fb(kRepeats, unfetched<T>());
    for (int i = 0; i < kRepeats; i++) {
        fetch_inc_nbi(&fa[i], &sym[0], 0);
        fetch_add_nbi(&fb[i], &sym[1], T(1), last_pe());
    }
    shmem_quiet();
    std::vector<long long> a, b;
    for (int i = 0; i < kRepeats; i++) {
        a.push_back(relative(fa[i]));
        b.push_back(relative(fb[i]));
    }
    expect_counters(sym, static_cast<long long>(npes()) * kRepeats);
    expect_permutation(a, "fetch_inc_nbi on PE 0", false);
    expect_permutation(b, "fetch_add_nbi on the last PE", false);
}

// A lock-free counter: read, then compare_swap(old, old + 1) until it takes. The values a PE
// swapped from are its increments; together they are a permutation.
template <typename T, typename CSwap>
void check_concurrent_compare_swap(CSwap cswap, T *sym) {
    start_counters(sym);
    std::vector<long long> taken[kSlots];
    const int target[kSlots] = {0, last_pe()};
    T guess[kSlots] = {counter_start<T>(), counter_start<T>()};
    for (int i = 0; i < kRepeats; i++) {
        for (int s = 0; s < kSlots; s++) {
            for (;;) {
                T next = static_cast<T>(guess[s] + T(1));
                T seen = cswap(&sym[s], guess[s], next, target[s]);
                if (seen == guess[s]) {
                    taken[s].push_back(relative(guess[s]));
                    guess[s] = next;
                    break;
                }
                guess[s] = seen;
            }
        }
    }
    expect_counters(sym, static_cast<long long>(npes()) * kRepeats);
    expect_permutation(taken[0], "compare_swap loop on PE 0");
    expect_permutation(taken[1], "compare_swap loop on the last PE");
}

// Each PE owns one bit (distinct for up to the type's width of PEs) and sets, clears and
// toggles it in A with the fetching forms and in B with the plain ones, all PEs at once; only
// this PE touches its bit, so what the fetches see of it is exact.
template <typename T>
T own_bit(int pe) {
    return static_cast<T>(T(1) << ((pe * 5 + 3) % static_cast<int>(8 * sizeof(T))));
}

template <typename T>
T all_bits() {
    T all = T(0);
    for (int pe = 0; pe < npes(); pe++) all = static_cast<T>(all | own_bit<T>(pe));
    return all;
}

template <typename T, typename FetchFn, typename Fn, typename Op>
void concurrent_bits(T *sym, T start, FetchFn fetch_fn, Fn fn, Op op, T operand, int times, T want,
                     const char *what) {
    for (int s = 0; s < kSlots; s++) sym[s] = start;
    shmem_barrier_all();
    const T bit = own_bit<T>(me());
    T mine = static_cast<T>(start & bit);  // this PE's bit in A, which only this PE changes
    for (int i = 0; i < times; i++) {
        T old = fetch_fn(&sym[0], operand, 0);
        EXPECT_VALUE(static_cast<T>(old & bit), mine, what) << " (update " << i << ")";
        mine = static_cast<T>(op(mine, operand) & bit);
        fn(&sym[1], operand, last_pe());
    }
    shmem_barrier_all();
    T a, b;
    shmem_getmem(&a, &sym[0], sizeof(T), 0);
    shmem_getmem(&b, &sym[1], sizeof(T), last_pe());
    EXPECT_VALUE(a, want, what);
    EXPECT_VALUE(b, want, what);
    shmem_barrier_all();
}

template <typename T, typename FAnd, typename FOr, typename FXor, typename And, typename Or,
          typename Xor>
void check_concurrent_bits(FAnd fetch_and, FOr fetch_or, FXor fetch_xor, And and_, Or or_, Xor xor_,
                           T *sym) {
    if (npes() > static_cast<int>(8 * sizeof(T))) GTEST_SKIP() << "more PEs than bits";
    const T bit = own_bit<T>(me());
    const T all = all_bits<T>();
    // or: from 0, each PE sets its bit once; it was clear before.
    concurrent_bits(sym, T(0), fetch_or, or_, OpOr(), bit, 1, all, "or");
    // and: from all ones, each PE clears its bit once; it was set before.
    concurrent_bits(sym, static_cast<T>(~T(0)), fetch_and, and_, OpAnd(), static_cast<T>(~bit), 1,
                    static_cast<T>(~all), "and");
    // xor: from 0, each PE toggles its bit 5 times; it ends set.
    concurrent_bits(sym, T(0), fetch_xor, xor_, OpXor(), bit, 5, all, "xor");
}

// ---- Global targets (symmetric static data) ---------------------------------------------------

// Zero-initialised (.bss) arrays, one per entry of each table.
#define DEFINE_EXTENDED_TARGET(TYPE, NAME) alignas(64) TYPE g_extended_##NAME[kSlots];
#define DEFINE_STANDARD_TARGET(TYPE, NAME) alignas(64) TYPE g_standard_##NAME[kSlots];
#define DEFINE_BITWISE_TARGET(TYPE, NAME) alignas(64) TYPE g_bitwise_##NAME[kSlots];
SHMEM_AMO_EXTENDED_TYPES(DEFINE_EXTENDED_TARGET)
SHMEM_AMO_STANDARD_TYPES(DEFINE_STANDARD_TARGET)
SHMEM_AMO_BITWISE_TYPES(DEFINE_BITWISE_TARGET)
#undef DEFINE_EXTENDED_TARGET
#undef DEFINE_STANDARD_TARGET
#undef DEFINE_BITWISE_TARGET

}  // namespace

// ---- Generated cases -------------------------------------------------------------------------

#define HEAP_TARGET(TABLE, TYPE, NAME) Target<TYPE>::heap(kSlots)
#define STATIC_TARGET(TABLE, TYPE, NAME) Target<TYPE>::fixed(g_##TABLE##_##NAME)

// One case: `BODY` runs with `t`, the target WHERE makes for the table entry.
#define AMO_CASE(SUITE, WHERE, TABLE, TYPE, NAME, CASE, BODY)                                      \
    TEST(SUITE, Shmem_##NAME##_atomic_##CASE##_Test) {                                             \
        auto t = WHERE(TABLE, TYPE, NAME);                                                         \
        ASSERT_NE(t.get(), nullptr);                                                               \
        BODY;                                                                                      \
    }

#define EXTENDED_CASES(SUITE, WHERE, TYPE, NAME)                                                   \
    AMO_CASE(SUITE, WHERE, extended, TYPE, NAME, fetch_FromNextAndFarPe,                           \
             check_fetch<TYPE>(shmem_##NAME##_atomic_fetch, t.get()))                              \
    AMO_CASE(SUITE, WHERE, extended, TYPE, NAME, fetch_nbi_CompleteAfterQuiet,                     \
             check_fetch_nbi<TYPE>(shmem_##NAME##_atomic_fetch_nbi, t.get()))                      \
    AMO_CASE(SUITE, WHERE, extended, TYPE, NAME, set_ToNextAndFarPe,                               \
             check_set<TYPE>(shmem_##NAME##_atomic_set, t.get()))                                  \
    AMO_CASE(SUITE, WHERE, extended, TYPE, NAME, swap_ReturnsOldStoresNew,                         \
             check_swap<TYPE>(shmem_##NAME##_atomic_swap, t.get()))                                \
    AMO_CASE(SUITE, WHERE, extended, TYPE, NAME, swap_nbi_CompleteAfterQuiet,                      \
             check_swap_nbi<TYPE>(shmem_##NAME##_atomic_swap_nbi, t.get()))

#define STANDARD_CASES(SUITE, WHERE, TYPE, NAME)                                                   \
    AMO_CASE(SUITE, WHERE, standard, TYPE, NAME, compare_swap_MatchStores,                         \
             check_compare_swap_match<TYPE>(shmem_##NAME##_atomic_compare_swap, t.get()))          \
    AMO_CASE(SUITE, WHERE, standard, TYPE, NAME, compare_swap_MismatchLeaves,                      \
             check_compare_swap_mismatch<TYPE>(shmem_##NAME##_atomic_compare_swap, t.get()))       \
    AMO_CASE(SUITE, WHERE, standard, TYPE, NAME, compare_swap_nbi_CompleteAfterQuiet,              \
             check_compare_swap_nbi<TYPE>(shmem_##NAME##_atomic_compare_swap_nbi, t.get()))        \
    AMO_CASE(                                                                                      \
        SUITE, WHERE, standard, TYPE, NAME, fetch_inc_ReturnsOldAddsOne,                           \
        check_add<TYPE>(                                                                           \
            shmem_##NAME##_atomic_fetch_inc, [](int) { return static_cast<TYPE>(1); }, t.get()))   \
    AMO_CASE(SUITE, WHERE, standard, TYPE, NAME, inc_AddsOne,                                      \
             check_add<TYPE>(                                                                      \
                 shmem_##NAME##_atomic_inc, [](int) { return static_cast<TYPE>(1); }, t.get()))    \
    AMO_CASE(SUITE, WHERE, standard, TYPE, NAME, fetch_add_ReturnsOldAdds,                         \
             check_add<TYPE>(                                                                      \
                 [](TYPE *e, int pe) {                                                             \
                     return shmem_##NAME##_atomic_fetch_add(e, operand<TYPE>(me()), pe);           \
                 },                                                                                \
                 operand<TYPE>, t.get()))                                                          \
    AMO_CASE(SUITE, WHERE, standard, TYPE, NAME, add_Adds,                                         \
             check_add<TYPE>(                                                                      \
                 [](TYPE *e, int pe) { shmem_##NAME##_atomic_add(e, operand<TYPE>(me()), pe); },   \
                 operand<TYPE>, t.get()))                                                          \
    AMO_CASE(SUITE, WHERE, standard, TYPE, NAME, fetch_inc_nbi_CompleteAfterQuiet,                 \
             check_add_nbi<TYPE>(                                                                  \
                 shmem_##NAME##_atomic_fetch_inc_nbi, [](int) { return static_cast<TYPE>(1); },    \
                 t.get()))                                                                         \
    AMO_CASE(SUITE, WHERE, standard, TYPE, NAME, fetch_add_nbi_CompleteAfterQuiet,                 \
             check_add_nbi<TYPE>(                                                                  \
                 [](TYPE *out, TYPE *e, int pe) {                                                  \
                     shmem_##NAME##_atomic_fetch_add_nbi(out, e, operand<TYPE>(me()), pe);         \
                 },                                                                                \
                 operand<TYPE>, t.get()))                                                          \
    AMO_CASE(SUITE, WHERE, standard, TYPE, NAME, fetch_add_EveryPeOnPe0AndLast,                    \
             check_concurrent_fetch_add<TYPE>(shmem_##NAME##_atomic_fetch_add, t.get()))           \
    AMO_CASE(SUITE, WHERE, standard, TYPE, NAME, inc_EveryPeOnPe0AndLast,                          \
             check_concurrent_inc<TYPE>(shmem_##NAME##_atomic_inc, t.get()))                       \
    AMO_CASE(SUITE, WHERE, standard, TYPE, NAME, fetch_inc_EveryPeOnPe0AndLast,                    \
             check_concurrent_fetch_inc<TYPE>(shmem_##NAME##_atomic_fetch_inc, t.get()))           \
    AMO_CASE(SUITE, WHERE, standard, TYPE, NAME, fetch_inc_nbi_EveryPeOnPe0AndLast,                \
             check_concurrent_fetch_nbi<TYPE>(shmem_##NAME##_atomic_fetch_inc_nbi,                 \
                                              shmem_##NAME##_atomic_fetch_add_nbi, t.get()))       \
    AMO_CASE(SUITE, WHERE, standard, TYPE, NAME, compare_swap_EveryPeCountsOnPe0AndLast,           \
             check_concurrent_compare_swap<TYPE>(shmem_##NAME##_atomic_compare_swap, t.get()))

#define BITWISE_OP_CASES(SUITE, WHERE, TYPE, NAME, OP, FUNCTOR)                                    \
    AMO_CASE(SUITE, WHERE, bitwise, TYPE, NAME, fetch_##OP##_ReturnsOld,                           \
             check_bitwise<TYPE>(shmem_##NAME##_atomic_fetch_##OP, FUNCTOR(), t.get()))            \
    AMO_CASE(SUITE, WHERE, bitwise, TYPE, NAME, OP##_Applies,                                      \
             check_bitwise<TYPE>(shmem_##NAME##_atomic_##OP, FUNCTOR(), t.get()))                  \
    AMO_CASE(SUITE, WHERE, bitwise, TYPE, NAME, fetch_##OP##_nbi_CompleteAfterQuiet,               \
             check_bitwise_nbi<TYPE>(shmem_##NAME##_atomic_fetch_##OP##_nbi, FUNCTOR(), t.get()))

#define BITWISE_CASES(SUITE, WHERE, TYPE, NAME)                                                    \
    BITWISE_OP_CASES(SUITE, WHERE, TYPE, NAME, and, OpAnd)                                         \
    BITWISE_OP_CASES(SUITE, WHERE, TYPE, NAME, or, OpOr)                                           \
    BITWISE_OP_CASES(SUITE, WHERE, TYPE, NAME, xor, OpXor)                                         \
    AMO_CASE(SUITE, WHERE, bitwise, TYPE, NAME, fetch_and_or_xor_EveryPeOnPe0AndLast,              \
             check_concurrent_bits<TYPE>(                                                          \
                 shmem_##NAME##_atomic_fetch_and, shmem_##NAME##_atomic_fetch_or,                  \
                 shmem_##NAME##_atomic_fetch_xor, shmem_##NAME##_atomic_and,                       \
                 shmem_##NAME##_atomic_or, shmem_##NAME##_atomic_xor, t.get()))

// Heap targets first; the global-target cases run last, so a job without symmetric static data
// has run every heap case before the first global target ends it.
#define HEAP_EXTENDED(TYPE, NAME) EXTENDED_CASES(AmoTest, HEAP_TARGET, TYPE, NAME)
#define HEAP_STANDARD(TYPE, NAME) STANDARD_CASES(AmoTest, HEAP_TARGET, TYPE, NAME)
#define HEAP_BITWISE(TYPE, NAME) BITWISE_CASES(AmoTest, HEAP_TARGET, TYPE, NAME)
SHMEM_AMO_EXTENDED_TYPES(HEAP_EXTENDED)
SHMEM_AMO_STANDARD_TYPES(HEAP_STANDARD)
SHMEM_AMO_BITWISE_TYPES(HEAP_BITWISE)

#define STATIC_EXTENDED(TYPE, NAME) EXTENDED_CASES(StaticTargetTest, STATIC_TARGET, TYPE, NAME)
#define STATIC_STANDARD(TYPE, NAME) STANDARD_CASES(StaticTargetTest, STATIC_TARGET, TYPE, NAME)
#define STATIC_BITWISE(TYPE, NAME) BITWISE_CASES(StaticTargetTest, STATIC_TARGET, TYPE, NAME)
SHMEM_AMO_EXTENDED_TYPES(STATIC_EXTENDED)
SHMEM_AMO_STANDARD_TYPES(STATIC_STANDARD)
SHMEM_AMO_BITWISE_TYPES(STATIC_BITWISE)
