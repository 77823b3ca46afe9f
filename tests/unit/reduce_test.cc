// reduce_test.cc: every reduction of SHMEM_REDUCE_OPS, team-based (every type of its table) and
// active-set (shmem_TYPENAME_OP_to_all), small and large (split by chunk across members), in
// place and not, on the world, on a strided team listed downwards and on active sets with a
// stride. Inputs are small integers, so every result is exact in every type and the expected
// value is computed here the same way.
#include <gtest/gtest.h>
#include <shmem.h>

#include <complex>
#include <cstring>
#include <string>
#include <type_traits>

#include "test_util.h"

using namespace testutil;

namespace {

enum class Op { And, Or, Xor, Max, Min, Sum, Prod };

Op op_of(const std::string &name) {
    if (name == "and") return Op::And;
    if (name == "or") return Op::Or;
    if (name == "xor") return Op::Xor;
    if (name == "max") return Op::Max;
    if (name == "min") return Op::Min;
    if (name == "sum") return Op::Sum;
    return Op::Prod;
}

template <typename T>
struct is_complex : std::false_type {};
template <typename T>
struct is_complex<std::complex<T>> : std::true_type {};

// Input of member `pe` at element `i`: bit patterns for the bitwise operations, values in
// [-5, 5] (signed types) or [0, 10] for max/min/sum, and 1 or 2 (at most 3 twos per element,
// so the product fits in a signed char) for prod.
template <typename T>
T input(Op op, int pe, size_t i) {
    int k = static_cast<int>(i % 1009);
    switch (op) {
    case Op::And:
    case Op::Or:
    case Op::Xor: return static_cast<T>((pe * 5 + k * 3) & 0x7f);
    case Op::Prod:
        if constexpr (is_complex<T>::value) {
            return (pe + k) % 3 == 0 ? T(0, 1) : T(1, 0);
        } else {
            return static_cast<T>((pe + k) % 3 == 0 && pe < 3 ? 2 : 1);
        }
    default: {
        int v = (pe * 7 + k * 3) % 11;
        if constexpr (is_complex<T>::value) {
            return T(static_cast<float>(v), static_cast<float>(k % 4));
        } else if constexpr (std::is_signed_v<T> || std::is_floating_point_v<T>) {
            return static_cast<T>(v - 5);
        } else {
            return static_cast<T>(v);
        }
    }
    }
}

template <typename T>
T combine(Op op, T a, T b) {
    if constexpr (is_complex<T>::value) {
        return op == Op::Sum ? a + b : a * b;
    } else {
        switch (op) {
        case Op::And:
            if constexpr (std::is_integral_v<T>) return static_cast<T>(a & b);
            break;
        case Op::Or:
            if constexpr (std::is_integral_v<T>) return static_cast<T>(a | b);
            break;
        case Op::Xor:
            if constexpr (std::is_integral_v<T>) return static_cast<T>(a ^ b);
            break;
        case Op::Max: return a > b ? a : b;
        case Op::Min: return a < b ? a : b;
        case Op::Sum: return static_cast<T>(a + b);
        case Op::Prod: return static_cast<T>(a * b);
        }
        return a;
    }
}

// Expected result at element i over members 0..n-1.
template <typename T>
T expected(Op op, int n, size_t i) {
    T acc = input<T>(op, 0, i);
    for (int pe = 1; pe < n; pe++) acc = combine(op, acc, input<T>(op, pe, i));
    return acc;
}

// World, and world PEs n-1, n-3, ... listed downwards.
struct Teams {
    Teams() {
        EXPECT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes() - 1, -2, (npes() + 1) / 2,
                                           nullptr, 0, &down),
                  0);
    }
    ~Teams() { shmem_team_destroy(down); }
    shmem_team_t down = SHMEM_TEAM_INVALID;
};

constexpr size_t kSmall = 7;
constexpr size_t kLarge = 5003;  // past one block per member: the chunked path, uneven chunks

template <typename T>
void check_team(const char *name, const char *opname,
                int (*fn)(shmem_team_t, T *, const T *, size_t)) {
    SCOPED_TRACE(std::string(name) + "_" + opname + "_reduce");
    Op op = op_of(opname);
    T *src = static_cast<T *>(shmem_calloc(kLarge, sizeof(T)));
    T *dst = static_cast<T *>(shmem_calloc(kLarge, sizeof(T)));
    ASSERT_NE(src, nullptr);
    ASSERT_NE(dst, nullptr);
    Teams teams;
    for (shmem_team_t team : {SHMEM_TEAM_WORLD, teams.down}) {
        if (team == SHMEM_TEAM_INVALID) continue;
        int tn = shmem_team_n_pes(team), tme = shmem_team_my_pe(team);
        for (size_t n : {size_t{0}, kSmall, kLarge}) {
            for (bool in_place : {false, true}) {
                for (size_t i = 0; i < n; i++) src[i] = input<T>(op, tme, i);
                T *out = in_place ? src : dst;
                if (!in_place) std::memset(static_cast<void *>(dst), 0, kLarge * sizeof(T));
                ASSERT_EQ(fn(team, out, src, n), 0);
                for (size_t i = 0; i < n; i++) {
                    ASSERT_TRUE(out[i] == expected<T>(op, tn, i))
                        << "element " << i << " of " << n << (in_place ? " in place" : "");
                }
                // The next round rewrites src: every member must be done with this one.
                shmem_team_sync(team);
            }
        }
    }
    shmem_free(dst);
    shmem_free(src);
}

static long g_psync[2][SHMEM_REDUCE_SYNC_SIZE];

template <typename T>
void check_to_all(const char *name, const char *opname,
                  void (*fn)(T *, const T *, int, int, int, int, T *, long *)) {
    SCOPED_TRACE(std::string(name) + "_" + opname + "_to_all");
    Op op = op_of(opname);
    T *src = static_cast<T *>(shmem_calloc(kLarge, sizeof(T)));
    T *dst = static_cast<T *>(shmem_calloc(kLarge, sizeof(T)));
    T *wrk = static_cast<T *>(shmem_calloc(kLarge / 2 + SHMEM_REDUCE_MIN_WRKDATA_SIZE, sizeof(T)));
    ASSERT_NE(src, nullptr);
    ASSERT_NE(dst, nullptr);
    for (const ActiveSet &s : active_sets()) {
        shmem_barrier_all();  // the sets overlap and share buffers and pSync
        int i = s.index();
        if (i < 0) continue;
        int k = 0;
        for (size_t n : {kSmall, kLarge}) {
            for (bool in_place : {false, true}) {
                for (size_t e = 0; e < n; e++) src[e] = input<T>(op, i, e);
                T *out = in_place ? src : dst;
                // Alternate two pSync arrays, and reuse each at once.
                fn(out, src, static_cast<int>(n), s.start, s.log, s.size, wrk, g_psync[k++ % 2]);
                for (size_t e = 0; e < n; e++) ASSERT_TRUE(out[e] == expected<T>(op, s.size, e));
                shmem_sync(s.start, s.log, s.size, g_psync[k++ % 2]);
            }
        }
        for (auto &ps : g_psync) {
            for (long w : ps) ASSERT_EQ(w, SHMEM_SYNC_VALUE);
        }
    }
    shmem_barrier_all();
    shmem_free(wrk);
    shmem_free(dst);
    shmem_free(src);
}

}  // namespace

#define CHECK_TEAM(TYPE, NAME, OP) check_team<TYPE>(#NAME, #OP, shmem_##NAME##_##OP##_reduce);
#define CHECK_TEAM_OP(OP, TEAM_TYPES, ACTIVE_SET_TYPES) TEAM_TYPES(CHECK_TEAM, OP)
#define CHECK_TO_ALL(TYPE, NAME, OP) check_to_all<TYPE>(#NAME, #OP, shmem_##NAME##_##OP##_to_all);
#define CHECK_TO_ALL_OP(OP, TEAM_TYPES, ACTIVE_SET_TYPES) ACTIVE_SET_TYPES(CHECK_TO_ALL, OP)

TEST(Reduce, EveryTeamTypeAndOp_Test){SHMEM_REDUCE_OPS(CHECK_TEAM_OP)}

TEST(Reduce, EveryActiveSetTypeAndOp_Test) {
    SHMEM_REDUCE_OPS(CHECK_TO_ALL_OP)
}

// Global (static) arrays as source and dest, in place too.
static double g_values[64];
static double g_result[64];

TEST(Reduce, StaticTargets_Test) {
    for (int i = 0; i < 64; i++) g_values[i] = me() + i;
    ASSERT_EQ(shmem_double_sum_reduce(SHMEM_TEAM_WORLD, g_result, g_values, 64), 0);
    double pes = npes();
    for (int i = 0; i < 64; i++) ASSERT_EQ(g_result[i], pes * (pes - 1) / 2 + pes * i);
    ASSERT_EQ(shmem_double_max_reduce(SHMEM_TEAM_WORLD, g_values, g_values, 64), 0);
    for (int i = 0; i < 64; i++) ASSERT_EQ(g_values[i], pes - 1 + i);
}

TEST(Reduce, ManyRoundsReuseEpochs_Test) {
    long *x = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    ASSERT_NE(x, nullptr);
    for (long r = 1; r <= 300; r++) {
        *x = r * (me() + 1);
        ASSERT_EQ(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, x, x, 1), 0);
        ASSERT_EQ(*x, r * npes() * (npes() + 1) / 2);
    }
    shmem_free(x);
}
