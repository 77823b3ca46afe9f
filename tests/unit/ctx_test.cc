// ctx_test.cc: communication contexts. Context management (create, team_create_ctx, destroy,
// get_team, options); the shmem_ctx_ form of every RMA routine (typed, sized, byte, nbi,
// strided, p/g) and every AMO of the AMO type tables, generated from <shmem/types.h>, each on
// SHMEM_CTX_DEFAULT, on a context of SHMEM_TEAM_WORLD and on one of SHMEM_TEAM_SHARED, to the
// next PE of the context's team (in team numbering), on heap and global targets; contexts used
// from several threads; and, where the library has team splits, a strided team's context.
#include <gtest/gtest.h>
#include <shmem.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "test_util.h"

using namespace testutil;

namespace {

constexpr size_t kElems = 7;  // elements one call moves
constexpr size_t kCap = 24;   // elements in a target: room for kElems at stride 3 (19)

// A context and where this PE sends through it: `to` is the next PE in the context's team
// numbering; `to_world` and `from_world` are world numbers of the PE this one sends to and the
// one that sends to it.
struct Where {
    const char *name;
    shmem_ctx_t ctx;
    int to;
    int to_world;
    int from_world;
};

Where where(const char *name, shmem_ctx_t ctx) {
    shmem_team_t team = SHMEM_TEAM_INVALID;
    EXPECT_EQ(shmem_ctx_get_team(ctx, &team), 0) << name;
    int n = shmem_team_n_pes(team);
    int mine = shmem_team_my_pe(team);
    int to = (mine + 1) % n;
    int from = (mine + n - 1) % n;
    return {name, ctx, to, shmem_team_translate_pe(team, to, SHMEM_TEAM_WORLD),
            shmem_team_translate_pe(team, from, SHMEM_TEAM_WORLD)};
}

// The contexts every generated case runs on; made once per PE, kept for the whole binary.
const std::vector<Where> &contexts() {
    static const std::vector<Where> list = [] {
        shmem_ctx_t world = SHMEM_CTX_INVALID, shared = SHMEM_CTX_INVALID;
        EXPECT_EQ(shmem_ctx_create(0, &world), 0);
        EXPECT_EQ(shmem_team_create_ctx(SHMEM_TEAM_SHARED, SHMEM_CTX_SERIALIZED, &shared), 0);
        return std::vector<Where>{where("default", SHMEM_CTX_DEFAULT), where("world", world),
                                  where("shared", shared)};
    }();
    return list;
}

// Element i that PE `pe` writes in `round`: 1..127, exact in every type; never 0.
template <typename T>
T value(int pe, size_t i, int round) {
    return static_cast<T>(1 + (pe * 37 + static_cast<int>(i) * 3 + round * 11) % 127);
}

template <typename T>
std::vector<T> block(int pe, int round, size_t n = kElems) {
    std::vector<T> v(n);
    for (size_t i = 0; i < n; i++) v[i] = value<T>(pe, i, round);
    return v;
}

template <typename T>
void reset(T *sym) {
    std::fill(sym, sym + kCap, T(0));
    shmem_barrier_all();
}

// `got[i * stride]` holds element i of `round` from `pe` for i < kElems; the gaps hold 0.
template <typename T>
void expect_elems(const T *got, size_t stride, int pe, int round, const std::string &what) {
    for (size_t i = 0; i < kCap; i++) {
        bool written = i % stride == 0 && i / stride < kElems;
        T want = written ? value<T>(pe, i / stride, round) : T(0);
        ASSERT_TRUE(got[i] == want)
            << what << ": element " << i << " is " << static_cast<long double>(got[i]) << ", want "
            << static_cast<long double>(want) << " (from PE " << pe << ")";
    }
}

// ---- RMA ---------------------------------------------------------------------------------------

template <typename T>
struct RmaFns {
    void (*put)(shmem_ctx_t, T *, const T *, size_t, int);
    void (*put_nbi)(shmem_ctx_t, T *, const T *, size_t, int);
    void (*get)(shmem_ctx_t, T *, const T *, size_t, int);
    void (*get_nbi)(shmem_ctx_t, T *, const T *, size_t, int);
    void (*iput)(shmem_ctx_t, T *, const T *, ptrdiff_t, ptrdiff_t, size_t, int);
    void (*iget)(shmem_ctx_t, T *, const T *, ptrdiff_t, ptrdiff_t, size_t, int);
};

// Every contiguous and strided form of `f` on every context. `Elem` is what the routines move
// (T, or a sized element); `sym` is a symmetric array of kCap of them.
template <typename T>
void check_rma(const RmaFns<T> &f, T *sym) {
    int round = 0;
    for (const Where &w : contexts()) {
        std::string at = std::string(w.name) + " context";
        // put, put_nbi: land on the next team PE; nbi completes at shmem_ctx_quiet.
        for (bool nbi : {false, true}) {
            reset(sym);
            std::vector<T> src = block<T>(me(), ++round);
            (nbi ? f.put_nbi : f.put)(w.ctx, sym, src.data(), kElems, w.to);
            if (nbi) shmem_ctx_quiet(w.ctx);
            shmem_barrier_all();
            expect_elems(sym, 1, w.from_world, round, at + (nbi ? " put_nbi" : " put"));
        }
        // get, get_nbi: read the next team PE.
        for (bool nbi : {false, true}) {
            reset(sym);
            std::vector<T> mine = block<T>(me(), ++round, kCap);
            std::copy(mine.begin(), mine.end(), sym);
            shmem_barrier_all();
            std::vector<T> got(kCap, T(0));
            (nbi ? f.get_nbi : f.get)(w.ctx, got.data(), sym, kElems, w.to);
            if (nbi) shmem_ctx_quiet(w.ctx);
            expect_elems(got.data(), 1, w.to_world, round, at + (nbi ? " get_nbi" : " get"));
            shmem_barrier_all();
        }
        // iput: every element of the source, every third element of the target.
        reset(sym);
        std::vector<T> src = block<T>(me(), ++round);
        f.iput(w.ctx, sym, src.data(), 3, 1, kElems, w.to);
        shmem_barrier_all();
        expect_elems(sym, 3, w.from_world, round, at + " iput");
        // iget: every second element of the target, packed here.
        reset(sym);
        std::vector<T> spread(kCap, T(0));
        for (size_t i = 0; i < kElems; i++) spread[2 * i] = value<T>(me(), i, round);
        std::copy(spread.begin(), spread.end(), sym);
        shmem_barrier_all();
        std::vector<T> got(kCap, T(0));
        f.iget(w.ctx, got.data(), sym, 1, 2, kElems, w.to);
        expect_elems(got.data(), 1, w.to_world, round, at + " iget");
        shmem_barrier_all();
    }
}

template <typename T, typename P, typename G>
void check_p_g(P p, G g, T *sym) {
    int round = 50;
    for (const Where &w : contexts()) {
        reset(sym);
        ++round;
        for (size_t i = 0; i < kElems; i++) p(w.ctx, &sym[i], value<T>(me(), i, round), w.to);
        shmem_ctx_quiet(w.ctx);
        shmem_barrier_all();
        expect_elems(sym, 1, w.from_world, round, std::string(w.name) + " context p");
        shmem_barrier_all();
        for (size_t i = 0; i < kElems; i++) {
            T got = g(w.ctx, &sym[i], w.to);
            ASSERT_TRUE(got == value<T>(me(), i, round))
                << w.name << " context g: element " << i << " from PE " << w.to_world;
        }
        shmem_barrier_all();
    }
}

// ---- Sized and byte RMA: elements of Bytes bytes, checked byte by byte --------------------------

template <size_t Bytes>
struct Blob {
    unsigned char b[Bytes];
    bool operator==(const Blob &o) const { return std::memcmp(b, o.b, Bytes) == 0; }
};

using VoidRma = void (*)(shmem_ctx_t, void *, const void *, size_t, int);
using VoidStrided = void (*)(shmem_ctx_t, void *, const void *, ptrdiff_t, ptrdiff_t, size_t, int);

// Byte k of element i of `round` from `pe`: 1..251.
unsigned char byte_of(int pe, size_t i, size_t k, int round) {
    return static_cast<unsigned char>(
        1 + (pe * 37 + static_cast<int>(i * 16 + k) * 3 + round * 11) % 251);
}

template <size_t Bytes>
std::vector<unsigned char> blobs(int pe, int round, size_t n) {
    std::vector<unsigned char> v(n * Bytes);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < Bytes; k++) v[i * Bytes + k] = byte_of(pe, i, k, round);
    }
    return v;
}

// `got` holds kElems elements of `round` from `pe`, `stride` elements apart, 0 in the gaps.
template <size_t Bytes>
void expect_blobs(const unsigned char *got, size_t stride, int pe, int round,
                  const std::string &what) {
    for (size_t i = 0; i < kCap; i++) {
        bool written = i % stride == 0 && i / stride < kElems;
        for (size_t k = 0; k < Bytes; k++) {
            int want = written ? byte_of(pe, i / stride, k, round) : 0;
            ASSERT_EQ(static_cast<int>(got[i * Bytes + k]), want)
                << what << ": byte " << k << " of element " << i << " (from PE " << pe << ")";
        }
    }
}

template <size_t Bytes>
void check_sized(VoidRma put, VoidRma put_nbi, VoidRma get, VoidRma get_nbi, VoidStrided iput,
                 VoidStrided iget, unsigned char *sym) {
    int round = 100;
    auto clear = [&] {
        std::memset(sym, 0, kCap * Bytes);
        shmem_barrier_all();
    };
    for (const Where &w : contexts()) {
        std::string at = std::string(w.name) + " context";
        for (bool nbi : {false, true}) {
            clear();
            std::vector<unsigned char> src = blobs<Bytes>(me(), ++round, kElems);
            (nbi ? put_nbi : put)(w.ctx, sym, src.data(), kElems, w.to);
            if (nbi) shmem_ctx_quiet(w.ctx);
            shmem_barrier_all();
            expect_blobs<Bytes>(sym, 1, w.from_world, round, at + " put");
        }
        for (bool nbi : {false, true}) {
            clear();
            std::vector<unsigned char> mine = blobs<Bytes>(me(), ++round, kElems);
            std::memcpy(sym, mine.data(), mine.size());
            shmem_barrier_all();
            std::vector<unsigned char> got(kCap * Bytes, 0);
            (nbi ? get_nbi : get)(w.ctx, got.data(), sym, kElems, w.to);
            if (nbi) shmem_ctx_quiet(w.ctx);
            expect_blobs<Bytes>(got.data(), 1, w.to_world, round, at + " get");
            shmem_barrier_all();
        }
        if (iput == nullptr) continue;  // the byte routines have no strided form
        clear();
        std::vector<unsigned char> src = blobs<Bytes>(me(), ++round, kElems);
        iput(w.ctx, sym, src.data(), 3, 1, kElems, w.to);
        shmem_barrier_all();
        expect_blobs<Bytes>(sym, 3, w.from_world, round, at + " iput");
        clear();
        std::vector<unsigned char> spread(kCap * Bytes, 0);
        std::vector<unsigned char> mine = blobs<Bytes>(me(), round, kElems);
        for (size_t i = 0; i < kElems; i++) {
            std::memcpy(&spread[2 * i * Bytes], &mine[i * Bytes], Bytes);
        }
        std::memcpy(sym, spread.data(), spread.size());
        shmem_barrier_all();
        std::vector<unsigned char> got(kCap * Bytes, 0);
        iget(w.ctx, got.data(), sym, 1, 2, kElems, w.to);
        expect_blobs<Bytes>(got.data(), 1, w.to_world, round, at + " iget");
        shmem_barrier_all();
    }
}

// ---- AMO ---------------------------------------------------------------------------------------

// Above 2^40 for 64-bit integers, so their upper half takes part.
template <typename T>
T initial(int pe) {
    if constexpr (std::is_integral_v<T> && sizeof(T) >= 8) {
        return static_cast<T>((T(1) << 40) + static_cast<T>(10 + 4 * pe));
    } else {
        return static_cast<T>(10 + 4 * pe);
    }
}
template <typename T>
T operand(int pe) {
    return static_cast<T>(100 + 3 * pe);
}
template <typename T>
T bits_initial(int pe) {
    auto p = static_cast<uint64_t>(pe);
    return static_cast<T>(0xA5A5F00F5A5A0FF0ull ^ (p << 36) ^ (p << 20));
}
template <typename T>
T bits_operand(int pe) {
    auto p = static_cast<uint64_t>(pe);
    return static_cast<T>(0x0FF0F0F0FF0F0F0Full ^ (p << 44) ^ (p << 8));
}

// On every context: each PE sets its element to start(me); applies `op(ctx, elem, w)` to the
// element of its next team PE; then `check(own value, w)`.
template <typename T, typename Start, typename Op, typename Check>
void amo_rounds(T *sym, Start start, Op op, Check check) {
    for (const Where &w : contexts()) {
        SCOPED_TRACE(w.name);
        *sym = start(me());
        shmem_barrier_all();
        op(w.ctx, sym, w);
        shmem_barrier_all();
        check(*sym, w);
        shmem_barrier_all();
    }
}

#define EXPECT_AMO(got, want, what) EXPECT_TRUE(same_value<T>((got), (want))) << (what)

template <typename T>
struct ExtendedFns {
    T (*fetch)(shmem_ctx_t, const T *, int);
    void (*set)(shmem_ctx_t, T *, T, int);
    T (*swap)(shmem_ctx_t, T *, T, int);
    void (*fetch_nbi)(shmem_ctx_t, T *, const T *, int);
    void (*swap_nbi)(shmem_ctx_t, T *, T *, T, int);
};

template <typename T>
void check_extended(const ExtendedFns<T> &f, T *sym) {
    amo_rounds(
        sym, initial<T>,
        [&](shmem_ctx_t c, T *e, const Where &w) {
            EXPECT_AMO(f.fetch(c, e, w.to), initial<T>(w.to_world), "fetch");
            T out = T(7);
            f.fetch_nbi(c, &out, e, w.to);
            shmem_ctx_quiet(c);
            EXPECT_AMO(out, initial<T>(w.to_world), "fetch_nbi");
        },
        [&](T v, const Where &) { EXPECT_AMO(v, initial<T>(me()), "fetch changed nothing"); });
    amo_rounds(
        sym, initial<T>,
        [&](shmem_ctx_t c, T *e, const Where &w) { f.set(c, e, operand<T>(me()), w.to); },
        [&](T v, const Where &w) { EXPECT_AMO(v, operand<T>(w.from_world), "set"); });
    amo_rounds(
        sym, initial<T>,
        [&](shmem_ctx_t c, T *e, const Where &w) {
            EXPECT_AMO(f.swap(c, e, operand<T>(me()), w.to), initial<T>(w.to_world), "swap");
        },
        [&](T v, const Where &w) { EXPECT_AMO(v, operand<T>(w.from_world), "swap"); });
    amo_rounds(
        sym, initial<T>,
        [&](shmem_ctx_t c, T *e, const Where &w) {
            T out = T(7);
            f.swap_nbi(c, &out, e, operand<T>(me()), w.to);
            shmem_ctx_quiet(c);
            EXPECT_AMO(out, initial<T>(w.to_world), "swap_nbi");
        },
        [&](T v, const Where &w) { EXPECT_AMO(v, operand<T>(w.from_world), "swap_nbi"); });
}

template <typename T>
struct StandardFns {
    T (*compare_swap)(shmem_ctx_t, T *, T, T, int);
    T (*fetch_inc)(shmem_ctx_t, T *, int);
    void (*inc)(shmem_ctx_t, T *, int);
    T (*fetch_add)(shmem_ctx_t, T *, T, int);
    void (*add)(shmem_ctx_t, T *, T, int);
    void (*compare_swap_nbi)(shmem_ctx_t, T *, T *, T, T, int);
    void (*fetch_inc_nbi)(shmem_ctx_t, T *, T *, int);
    void (*fetch_add_nbi)(shmem_ctx_t, T *, T *, T, int);
};

template <typename T>
void check_standard(const StandardFns<T> &f, T *sym) {
    // compare_swap: a miss (cond off by one) changes nothing, then a hit stores.
    amo_rounds(
        sym, initial<T>,
        [&](shmem_ctx_t c, T *e, const Where &w) {
            T was = initial<T>(w.to_world);
            EXPECT_AMO(f.compare_swap(c, e, T(was + 1), operand<T>(me()), w.to), was, "miss");
            EXPECT_AMO(f.compare_swap(c, e, was, operand<T>(me()), w.to), was, "hit");
        },
        [&](T v, const Where &w) { EXPECT_AMO(v, operand<T>(w.from_world), "compare_swap"); });
    amo_rounds(
        sym, initial<T>,
        [&](shmem_ctx_t c, T *e, const Where &w) {
            T out = T(7);
            f.compare_swap_nbi(c, &out, e, initial<T>(w.to_world), operand<T>(me()), w.to);
            shmem_ctx_quiet(c);
            EXPECT_AMO(out, initial<T>(w.to_world), "compare_swap_nbi");
        },
        [&](T v, const Where &w) { EXPECT_AMO(v, operand<T>(w.from_world), "compare_swap_nbi"); });
    // fetch_inc, inc, fetch_inc_nbi: three increments in all.
    amo_rounds(
        sym, initial<T>,
        [&](shmem_ctx_t c, T *e, const Where &w) {
            EXPECT_AMO(f.fetch_inc(c, e, w.to), initial<T>(w.to_world), "fetch_inc");
            f.inc(c, e, w.to);
            T out = T(7);
            f.fetch_inc_nbi(c, &out, e, w.to);
            shmem_ctx_quiet(c);
            EXPECT_AMO(out, T(initial<T>(w.to_world) + 2), "fetch_inc_nbi");
        },
        [&](T v, const Where &) { EXPECT_AMO(v, T(initial<T>(me()) + 3), "three increments"); });
    // fetch_add, add, fetch_add_nbi: the sender's operand three times.
    amo_rounds(
        sym, initial<T>,
        [&](shmem_ctx_t c, T *e, const Where &w) {
            T d = operand<T>(me());
            EXPECT_AMO(f.fetch_add(c, e, d, w.to), initial<T>(w.to_world), "fetch_add");
            f.add(c, e, d, w.to);
            T out = T(7);
            f.fetch_add_nbi(c, &out, e, d, w.to);
            shmem_ctx_quiet(c);
            EXPECT_AMO(out, T(initial<T>(w.to_world) + d + d), "fetch_add_nbi");
        },
        [&](T v, const Where &w) {
            T d = operand<T>(w.from_world);
            EXPECT_AMO(v, T(initial<T>(me()) + d + d + d), "three adds");
        });
}

template <typename T>
struct BitwiseFns {
    T (*fetch_and)(shmem_ctx_t, T *, T, int);
    T (*fetch_or)(shmem_ctx_t, T *, T, int);
    T (*fetch_xor)(shmem_ctx_t, T *, T, int);
    void (*and_)(shmem_ctx_t, T *, T, int);
    void (*or_)(shmem_ctx_t, T *, T, int);
    void (*xor_)(shmem_ctx_t, T *, T, int);
    void (*fetch_and_nbi)(shmem_ctx_t, T *, T *, T, int);
    void (*fetch_or_nbi)(shmem_ctx_t, T *, T *, T, int);
    void (*fetch_xor_nbi)(shmem_ctx_t, T *, T *, T, int);
};

// One bitwise operation three ways (fetching, plain, fetching nbi) on three elements.
template <typename T, typename Apply>
void check_bitwise_op(T *sym, const char *what, T (*fetching)(shmem_ctx_t, T *, T, int),
                      void (*plain)(shmem_ctx_t, T *, T, int),
                      void (*nbi)(shmem_ctx_t, T *, T *, T, int), Apply apply) {
    for (int form = 0; form < 3; form++) {
        amo_rounds(
            sym, bits_initial<T>,
            [&](shmem_ctx_t c, T *e, const Where &w) {
                T d = bits_operand<T>(me());
                if (form == 0) {
                    EXPECT_AMO(fetching(c, e, d, w.to), bits_initial<T>(w.to_world), what);
                } else if (form == 1) {
                    plain(c, e, d, w.to);
                } else {
                    T out = T(7);
                    nbi(c, &out, e, d, w.to);
                    shmem_ctx_quiet(c);
                    EXPECT_AMO(out, bits_initial<T>(w.to_world), what);
                }
            },
            [&](T v, const Where &w) {
                EXPECT_AMO(v, apply(bits_initial<T>(me()), bits_operand<T>(w.from_world)), what)
                    << " (form " << form << ")";
            });
    }
}

template <typename T>
void check_bitwise(const BitwiseFns<T> &f, T *sym) {
    check_bitwise_op(sym, "and", f.fetch_and, f.and_, f.fetch_and_nbi,
                     [](T a, T b) { return T(a & b); });
    check_bitwise_op(sym, "or", f.fetch_or, f.or_, f.fetch_or_nbi,
                     [](T a, T b) { return T(a | b); });
    check_bitwise_op(sym, "xor", f.fetch_xor, f.xor_, f.fetch_xor_nbi,
                     [](T a, T b) { return T(a ^ b); });
}

// ---- Global targets ----------------------------------------------------------------------------

#define DEFINE_GLOBAL_TARGET(TYPE, NAME) alignas(64) TYPE g_ctx_##NAME[kCap];
SHMEM_RMA_TYPES(DEFINE_GLOBAL_TARGET)
#undef DEFINE_GLOBAL_TARGET
alignas(64) unsigned char g_ctx_bytes[kCap * 16];

// A target of kCap T on the heap, then the global one.
template <typename T, typename Body>
void on_heap_and_global(T *global, Body body) {
    {
        SCOPED_TRACE("heap target");
        Target<T> t = Target<T>::heap(kCap);
        ASSERT_NE(t.get(), nullptr);
        body(t.get());
    }
    {
        SCOPED_TRACE("global target");
        body(global);
    }
}

}  // namespace

// ---- Context management ------------------------------------------------------------------------

TEST(CtxTest, ShmemCtxCreate_EveryOption_WorldTeamAndUsable_Test) {
    const long options[] = {0, SHMEM_CTX_SERIALIZED, SHMEM_CTX_PRIVATE, SHMEM_CTX_NOSTORE,
                            SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE};
    auto *sym = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    ASSERT_NE(sym, nullptr);
    for (long o : options) {
        shmem_ctx_t ctx = SHMEM_CTX_INVALID;
        ASSERT_EQ(shmem_ctx_create(o, &ctx), 0) << "options " << o;
        EXPECT_NE(ctx, SHMEM_CTX_INVALID);
        EXPECT_NE(ctx, SHMEM_CTX_DEFAULT);
        shmem_team_t team = SHMEM_TEAM_INVALID;
        EXPECT_EQ(shmem_ctx_get_team(ctx, &team), 0);
        EXPECT_EQ(team, SHMEM_TEAM_WORLD);
        shmem_ctx_long_p(ctx, sym, 1000 + me() + o, next_pe());
        shmem_ctx_quiet(ctx);
        shmem_barrier_all();
        EXPECT_EQ(*sym, 1000 + prev_pe() + o) << "options " << o;
        shmem_ctx_destroy(ctx);
        shmem_barrier_all();
    }
    shmem_free(sym);
}

TEST(CtxTest, ShmemCtxCreate_UnknownOptionBits_FailsWithInvalidCtx_Test) {
    for (long o : {1L << 3, 1L << 20, -1L, SHMEM_CTX_PRIVATE | (1L << 9)}) {
        shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
        EXPECT_NE(shmem_ctx_create(o, &ctx), 0) << "options " << o;
        EXPECT_EQ(ctx, SHMEM_CTX_INVALID);
        ctx = SHMEM_CTX_DEFAULT;
        EXPECT_NE(shmem_team_create_ctx(SHMEM_TEAM_WORLD, o, &ctx), 0) << "options " << o;
        EXPECT_EQ(ctx, SHMEM_CTX_INVALID);
    }
}

TEST(CtxTest, ShmemTeamCreateCtx_PredefinedTeams_GetTeamAnswersThem_Test) {
    for (shmem_team_t team : {SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED}) {
        shmem_ctx_t ctx = SHMEM_CTX_INVALID;
        ASSERT_EQ(shmem_team_create_ctx(team, 0, &ctx), 0);
        shmem_team_t got = SHMEM_TEAM_INVALID;
        EXPECT_EQ(shmem_ctx_get_team(ctx, &got), 0);
        EXPECT_EQ(got, team);
        shmem_ctx_destroy(ctx);
    }
}

TEST(CtxTest, ShmemTeamCreateCtx_InvalidTeam_FailsWithInvalidCtx_Test) {
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
    EXPECT_NE(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &ctx), 0);
    EXPECT_EQ(ctx, SHMEM_CTX_INVALID);
    shmem_ctx_destroy(ctx);  // SHMEM_CTX_INVALID: nothing to do
}

TEST(CtxTest, ShmemCtxGetTeam_DefaultAndInvalid_Test) {
    shmem_team_t team = SHMEM_TEAM_INVALID;
    EXPECT_EQ(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &team), 0);
    EXPECT_EQ(team, SHMEM_TEAM_WORLD);
    team = SHMEM_TEAM_WORLD;
    EXPECT_NE(shmem_ctx_get_team(SHMEM_CTX_INVALID, &team), 0);
    EXPECT_EQ(team, SHMEM_TEAM_INVALID);
}

// SHMEM_CTX_INVALID is what a failed creation leaves: shmem_ctx_fence, shmem_ctx_quiet and
// shmem_ctx_destroy on it do nothing, and shmem_ctx_get_team answers SHMEM_TEAM_INVALID, so one
// code path serves PEs whose creation worked and those whose did not (a team they are not in).
TEST(CtxTest, ShmemCtxFenceQuietDestroy_InvalidCtx_NoOps_Test) {
    auto *sym = static_cast<long *>(shmem_calloc(2, sizeof(long)));
    ASSERT_NE(sym, nullptr);
    shmem_long_p(&sym[0], 300 + me(), next_pe());
    shmem_ctx_fence(SHMEM_CTX_INVALID);
    shmem_ctx_quiet(SHMEM_CTX_INVALID);
    shmem_ctx_destroy(SHMEM_CTX_INVALID);
    shmem_team_t got = SHMEM_TEAM_WORLD;
    EXPECT_NE(shmem_ctx_get_team(SHMEM_CTX_INVALID, &got), 0);
    EXPECT_EQ(got, SHMEM_TEAM_INVALID);
    shmem_barrier_all();
    EXPECT_EQ(sym[0], 300 + prev_pe());

    // The even PEs form a team; the odd ones get SHMEM_TEAM_INVALID and, from it, no context.
    const int size = (npes() + 1) / 2;
    shmem_team_t team = SHMEM_TEAM_INVALID;
    ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, size, nullptr, 0, &team), 0);
    const bool member = me() % 2 == 0;
    ASSERT_EQ(team != SHMEM_TEAM_INVALID, member);
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
    int rc = shmem_team_create_ctx(team, 0, &ctx);
    ASSERT_EQ(rc == 0, member);
    ASSERT_EQ(ctx != SHMEM_CTX_INVALID, member);
    if (member) shmem_ctx_long_p(ctx, &sym[1], 400 + me(), (me() / 2 + 1) % size);
    shmem_ctx_fence(ctx);
    shmem_ctx_quiet(ctx);
    got = SHMEM_TEAM_WORLD;
    EXPECT_EQ(shmem_ctx_get_team(ctx, &got) == 0, member);
    EXPECT_EQ(got, member ? team : SHMEM_TEAM_INVALID);
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
    if (member) {
        EXPECT_EQ(sym[1], 400 + 2 * ((me() / 2 + size - 1) % size));
        shmem_team_destroy(team);
    } else {
        EXPECT_EQ(sym[1], 0);
    }
    shmem_barrier_all();
    shmem_free(sym);
}

TEST(CtxTest, ShmemCtxDestroy_ManyCreatedAndDestroyed_LiveHandlesDistinctAndWork_Test) {
    constexpr int kMany = 150;
    auto *sym = static_cast<long *>(shmem_calloc(kMany, sizeof(long)));
    ASSERT_NE(sym, nullptr);
    for (int cycle = 0; cycle < 3; cycle++) {
        std::vector<shmem_ctx_t> ctxs(kMany, SHMEM_CTX_INVALID);
        for (auto &c : ctxs) ASSERT_EQ(shmem_ctx_create(SHMEM_CTX_PRIVATE, &c), 0);
        std::set<shmem_ctx_t> distinct(ctxs.begin(), ctxs.end());
        EXPECT_EQ(distinct.size(), static_cast<size_t>(kMany));
        for (int i = 0; i < kMany; i++) {
            shmem_ctx_long_atomic_set(ctxs[i], &sym[i], cycle * 1000 + me() * kMany + i, far_pe());
        }
        // Destroying completes a context's operations: no quiet before it.
        for (int i = kMany - 1; i >= 0; i -= 2) shmem_ctx_destroy(ctxs[i]);
        for (int i = kMany - 2; i >= 0; i -= 2) shmem_ctx_destroy(ctxs[i]);
        shmem_barrier_all();
        for (int i = 0; i < kMany; i++) {
            ASSERT_EQ(sym[i], cycle * 1000 + far_source() * kMany + i) << "element " << i;
        }
        shmem_barrier_all();
    }
    shmem_free(sym);
}

// The library holds at most 65536 contexts at once: creation past that fails (non-zero,
// SHMEM_CTX_INVALID) instead of handing out a slot twice, and works again once one is destroyed.
TEST(CtxTest, ShmemCtxCreate_PastTheLimit_FailsThenRecovers_Test) {
    constexpr size_t kLimit = size_t{1} << 16;
    std::vector<shmem_ctx_t> ctxs;
    ctxs.reserve(kLimit);
    shmem_ctx_t c = SHMEM_CTX_INVALID;
    while (ctxs.size() <= kLimit && shmem_ctx_create(SHMEM_CTX_PRIVATE, &c) == 0) {
        ctxs.push_back(c);
    }
    EXPECT_EQ(ctxs.size(), kLimit);
    EXPECT_EQ(c, SHMEM_CTX_INVALID);
    ASSERT_FALSE(ctxs.empty());
    EXPECT_EQ(std::set<shmem_ctx_t>(ctxs.begin(), ctxs.end()).size(), ctxs.size());
    shmem_ctx_destroy(ctxs.back());
    ctxs.pop_back();
    ASSERT_EQ(shmem_ctx_create(0, &c), 0) << "one was destroyed";
    ctxs.push_back(c);
    auto *sym = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    ASSERT_NE(sym, nullptr);
    shmem_ctx_long_atomic_add(c, sym, me() + 1, next_pe());
    shmem_ctx_quiet(c);
    shmem_barrier_all();
    EXPECT_EQ(*sym, prev_pe() + 1);
    for (shmem_ctx_t x : ctxs) shmem_ctx_destroy(x);
    shmem_barrier_all();
    shmem_free(sym);
}

TEST(CtxTest, ShmemCtxFenceQuiet_OrderAndCompleteOnEveryContext_Test) {
    auto *data = static_cast<long *>(shmem_calloc(4, sizeof(long)));
    auto *flag = static_cast<long *>(shmem_calloc(4, sizeof(long)));
    ASSERT_TRUE(data && flag);
    size_t k = 0;
    for (const Where &w : contexts()) {
        // data then (fence) flag; the receiver that sees the flag must see the data.
        shmem_ctx_long_p(w.ctx, &data[k], 500 + me(), w.to);
        shmem_ctx_fence(w.ctx);
        shmem_ctx_long_atomic_set(w.ctx, &flag[k], 1, w.to);
        shmem_long_wait_until(&flag[k], SHMEM_CMP_EQ, 1);
        EXPECT_EQ(data[k], 500 + w.from_world) << w.name;
        k++;
    }
    shmem_barrier_all();
    shmem_free(flag);
    shmem_free(data);
}

// Several threads per PE, each with its own private context, plus one shared context that every
// thread uses at once; every update is counted by the PE it was sent to.
TEST(CtxTest, Contexts_SeveralThreads_EachUpdateCounted_Test) {
    constexpr int kThreads = 4;
    constexpr int kRounds = 100;
    const int n = npes();
    auto *counter = static_cast<long *>(shmem_calloc(2, sizeof(long)));
    auto *slots = static_cast<int *>(shmem_calloc(static_cast<size_t>(n) * kThreads, sizeof(int)));
    ASSERT_TRUE(counter && slots);
    shmem_ctx_t shared = SHMEM_CTX_INVALID;
    ASSERT_EQ(shmem_ctx_create(0, &shared), 0);
    std::vector<int> failures(kThreads, 0);
    auto body = [&](int t) {
        shmem_ctx_t mine = SHMEM_CTX_INVALID;
        if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &mine) != 0) {
            failures[t]++;
            return;
        }
        int to = (me() + 1 + t) % n;
        for (int r = 0; r < kRounds; r++) {
            shmem_ctx_long_atomic_add(mine, &counter[0], 1, to);
            shmem_ctx_long_atomic_inc(shared, &counter[1], 0);
            shmem_ctx_int_p(mine, &slots[me() * kThreads + t], r + 1, to);
        }
        shmem_ctx_quiet(mine);
        shmem_ctx_destroy(mine);
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) threads.emplace_back(body, t);
    for (auto &th : threads) th.join();
    shmem_ctx_quiet(shared);
    shmem_barrier_all();
    for (int t = 0; t < kThreads; t++) EXPECT_EQ(failures[t], 0) << "thread " << t;
    long want = 0;
    for (int q = 0; q < n; q++) {
        for (int t = 0; t < kThreads; t++) {
            if ((q + 1 + t) % n != me()) continue;
            want += kRounds;
            EXPECT_EQ(slots[q * kThreads + t], kRounds) << "from PE " << q << " thread " << t;
        }
    }
    EXPECT_EQ(counter[0], want);
    if (me() == 0) EXPECT_EQ(counter[1], static_cast<long>(n) * kThreads * kRounds);
    shmem_barrier_all();
    shmem_ctx_destroy(shared);
    shmem_free(slots);
    shmem_free(counter);
}

// A team of every second PE from PE 1 (PEs 1, 3, 5, ...), configured for two contexts: its
// contexts number PEs in the team, and a third simultaneous context is refused.
TEST(CtxTest, ShmemTeamCreateCtx_StridedTeam_TeamNumberingAndNumContexts_Test) {
    if (npes() < 2) GTEST_SKIP() << "needs 2 PEs";
    const int size = npes() / 2;
    shmem_team_config_t config{};
    config.num_contexts = 2;
    shmem_team_t team = SHMEM_TEAM_INVALID;
    ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, size, &config,
                                       SHMEM_TEAM_NUM_CONTEXTS, &team),
              0);
    auto *sym = static_cast<long *>(shmem_calloc(2, sizeof(long)));
    ASSERT_NE(sym, nullptr);
    bool member = me() % 2 == 1 && me() / 2 < size;
    ASSERT_EQ(team != SHMEM_TEAM_INVALID, member);
    if (member) {
        shmem_ctx_t a = SHMEM_CTX_INVALID, b = SHMEM_CTX_INVALID, c = SHMEM_CTX_DEFAULT;
        ASSERT_EQ(shmem_team_create_ctx(team, 0, &a), 0);
        ASSERT_EQ(shmem_team_create_ctx(team, SHMEM_CTX_PRIVATE, &b), 0);
        EXPECT_NE(shmem_team_create_ctx(team, 0, &c), 0) << "a third context, num_contexts 2";
        EXPECT_EQ(c, SHMEM_CTX_INVALID);
        shmem_ctx_destroy(b);
        ASSERT_EQ(shmem_team_create_ctx(team, 0, &b), 0) << "one was destroyed";
        int mine = shmem_team_my_pe(team);
        EXPECT_EQ(mine, me() / 2);
        int to = (mine + 1) % size;
        shmem_ctx_long_p(a, &sym[0], 7000 + me(), to);  // team PE `to` is world 2*to+1
        shmem_ctx_long_atomic_add(b, &sym[1], me(), to);
        shmem_ctx_quiet(a);
        shmem_ctx_quiet(b);
        shmem_ctx_destroy(a);
        shmem_ctx_destroy(b);
    }
    shmem_barrier_all();
    if (member) {
        int from_team = (me() / 2 + size - 1) % size;
        int from = 2 * from_team + 1;
        EXPECT_EQ(sym[0], 7000 + from);
        EXPECT_EQ(sym[1], from);
    } else {
        EXPECT_EQ(sym[0], 0);
        EXPECT_EQ(sym[1], 0);
    }
    shmem_barrier_all();
    if (member) shmem_team_destroy(team);
    shmem_free(sym);
}

// ---- Generated: the shmem_ctx_ form of every RMA routine ---------------------------------------

#define CTX_RMA_CASES(TYPE, NAME)                                                                  \
    TEST(CtxRmaTest, ShmemCtx_##NAME##_PutGetNbiStrided_EveryContext_Test) {                       \
        RmaFns<TYPE> f{shmem_ctx_##NAME##_put,  shmem_ctx_##NAME##_put_nbi,                        \
                       shmem_ctx_##NAME##_get,  shmem_ctx_##NAME##_get_nbi,                        \
                       shmem_ctx_##NAME##_iput, shmem_ctx_##NAME##_iget};                          \
        on_heap_and_global<TYPE>(g_ctx_##NAME, [&](TYPE *sym) { check_rma(f, sym); });             \
    }                                                                                              \
    TEST(CtxRmaTest, ShmemCtx_##NAME##_PG_EveryContext_Test) {                                     \
        on_heap_and_global<TYPE>(g_ctx_##NAME, [&](TYPE *sym) {                                    \
            check_p_g<TYPE>(shmem_ctx_##NAME##_p, shmem_ctx_##NAME##_g, sym);                      \
        });                                                                                        \
    }
SHMEM_RMA_TYPES(CTX_RMA_CASES)

#define CTX_SIZED_CASES(BITS)                                                                      \
    TEST(CtxRmaTest, ShmemCtxPut##BITS##_PutGetNbiStrided_EveryContext_Test) {                     \
        unsigned char *heap = static_cast<unsigned char *>(shmem_calloc(kCap, 16));                \
        ASSERT_NE(heap, nullptr);                                                                  \
        for (unsigned char *sym : {heap, g_ctx_bytes}) {                                           \
            check_sized<BITS / 8>(shmem_ctx_put##BITS, shmem_ctx_put##BITS##_nbi,                  \
                                  shmem_ctx_get##BITS, shmem_ctx_get##BITS##_nbi,                  \
                                  shmem_ctx_iput##BITS, shmem_ctx_iget##BITS, sym);                \
        }                                                                                          \
        shmem_free(heap);                                                                          \
    }
SHMEM_RMA_SIZES(CTX_SIZED_CASES)

TEST(CtxRmaTest, ShmemCtxPutmem_PutGetNbi_EveryContext_Test) {
    unsigned char *heap = static_cast<unsigned char *>(shmem_calloc(kCap, 16));
    ASSERT_NE(heap, nullptr);
    for (unsigned char *sym : {heap, g_ctx_bytes}) {
        // Bytes: element i of the check is byte i.
        check_sized<1>(shmem_ctx_putmem, shmem_ctx_putmem_nbi, shmem_ctx_getmem,
                       shmem_ctx_getmem_nbi, nullptr, nullptr, sym);
    }
    shmem_free(heap);
}

// ---- Generated: the shmem_ctx_ form of every AMO -----------------------------------------------

#define CTX_AMO_EXTENDED_CASES(TYPE, NAME)                                                         \
    TEST(CtxAmoTest, ShmemCtx_##NAME##_FetchSetSwap_EveryContext_Test) {                           \
        ExtendedFns<TYPE> f{shmem_ctx_##NAME##_atomic_fetch, shmem_ctx_##NAME##_atomic_set,        \
                            shmem_ctx_##NAME##_atomic_swap, shmem_ctx_##NAME##_atomic_fetch_nbi,   \
                            shmem_ctx_##NAME##_atomic_swap_nbi};                                   \
        on_heap_and_global<TYPE>(g_ctx_##NAME, [&](TYPE *sym) { check_extended(f, sym); });        \
    }
SHMEM_AMO_EXTENDED_TYPES(CTX_AMO_EXTENDED_CASES)

#define CTX_AMO_STANDARD_CASES(TYPE, NAME)                                                         \
    TEST(CtxAmoTest, ShmemCtx_##NAME##_CswapIncAdd_EveryContext_Test) {                            \
        StandardFns<TYPE> f{                                                                       \
            shmem_ctx_##NAME##_atomic_compare_swap,  shmem_ctx_##NAME##_atomic_fetch_inc,          \
            shmem_ctx_##NAME##_atomic_inc,           shmem_ctx_##NAME##_atomic_fetch_add,          \
            shmem_ctx_##NAME##_atomic_add,           shmem_ctx_##NAME##_atomic_compare_swap_nbi,   \
            shmem_ctx_##NAME##_atomic_fetch_inc_nbi, shmem_ctx_##NAME##_atomic_fetch_add_nbi};     \
        on_heap_and_global<TYPE>(g_ctx_##NAME, [&](TYPE *sym) { check_standard(f, sym); });        \
    }
SHMEM_AMO_STANDARD_TYPES(CTX_AMO_STANDARD_CASES)

#define CTX_AMO_BITWISE_CASES(TYPE, NAME)                                                          \
    TEST(CtxAmoTest, ShmemCtx_##NAME##_AndOrXor_EveryContext_Test) {                               \
        BitwiseFns<TYPE> f{shmem_ctx_##NAME##_atomic_fetch_and,                                    \
                           shmem_ctx_##NAME##_atomic_fetch_or,                                     \
                           shmem_ctx_##NAME##_atomic_fetch_xor,                                    \
                           shmem_ctx_##NAME##_atomic_and,                                          \
                           shmem_ctx_##NAME##_atomic_or,                                           \
                           shmem_ctx_##NAME##_atomic_xor,                                          \
                           shmem_ctx_##NAME##_atomic_fetch_and_nbi,                                \
                           shmem_ctx_##NAME##_atomic_fetch_or_nbi,                                 \
                           shmem_ctx_##NAME##_atomic_fetch_xor_nbi};                               \
        on_heap_and_global<TYPE>(g_ctx_##NAME, [&](TYPE *sym) { check_bitwise(f, sym); });         \
    }
SHMEM_AMO_BITWISE_TYPES(CTX_AMO_BITWISE_CASES)
