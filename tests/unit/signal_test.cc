// signal_test.cc: put-with-signal, shmem_signal_fetch and shmem_signal_wait_until. Every form
// (typed over SHMEM_RMA_TYPES, sized, byte; blocking and nbi; with and without a context) with
// SHMEM_SIGNAL_SET and SHMEM_SIGNAL_ADD, generated from <shmem/types.h>: the receiver waits for
// the signal alone and must then see the whole payload. Then ping-pong between PE pairs, many
// PEs adding to one signal, and heap and global signal words and payloads.
#include <gtest/gtest.h>
#include <shmem.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"

using namespace testutil;

namespace {

constexpr size_t kElems = 9;

template <typename T>
T value(int pe, size_t i, int round) {
    return static_cast<T>(1 + (pe * 37 + static_cast<int>(i) * 3 + round * 11) % 127);
}

// A put-with-signal routine with its context argument bound (or ignored, for the forms
// without one), so one check covers all four forms.
template <typename T>
struct Form {
    const char *name;
    void (*plain)(T *, const T *, size_t, uint64_t *, uint64_t, int, int);
    void (*with_ctx)(shmem_ctx_t, T *, const T *, size_t, uint64_t *, uint64_t, int, int);
    bool nbi;
    void operator()(shmem_ctx_t ctx, T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int op,
                    int pe) const {
        if (plain != nullptr) {
            plain(d, s, n, sig, v, op, pe);
        } else {
            with_ctx(ctx, d, s, n, sig, v, op, pe);
        }
    }
};

// Symmetric payload of kElems T and a signal word, on the heap or in global variables.
template <typename T>
struct Place {
    T *data;
    uint64_t *sig;
};

// One form, both operations, to the next PE and to the PE half the job away: the receiver waits
// for its signal only, then checks the payload.
template <typename T>
void check_form(const Form<T> &f, Place<T> at, int round) {
    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    ASSERT_EQ(shmem_ctx_create(0, &ctx), 0);
    for (const Peer &p : peers()) {
        for (int op : {SHMEM_SIGNAL_SET, SHMEM_SIGNAL_ADD}) {
            round++;
            std::fill(at.data, at.data + kElems, T(0));
            *at.sig = 5;
            shmem_barrier_all();
            std::vector<T> src(kElems);
            for (size_t i = 0; i < kElems; i++) src[i] = value<T>(me(), i, round);
            uint64_t sent = 1000 + static_cast<uint64_t>(round);
            f(ctx, at.data, src.data(), kElems, at.sig, sent, op, p.to);
            if (f.nbi) shmem_ctx_quiet(ctx);
            uint64_t want = op == SHMEM_SIGNAL_SET ? sent : 5 + sent;
            EXPECT_EQ(shmem_signal_wait_until(at.sig, SHMEM_CMP_EQ, want), want);
            for (size_t i = 0; i < kElems; i++) {
                ASSERT_TRUE(at.data[i] == value<T>(p.from, i, round))
                    << f.name << (op == SHMEM_SIGNAL_SET ? " SET" : " ADD") << " to " << p.name
                    << ": element " << i << " from PE " << p.from;
            }
            EXPECT_EQ(shmem_signal_fetch(at.sig), want);
            shmem_barrier_all();
        }
    }
    shmem_ctx_destroy(ctx);
}

template <typename T>
void check_forms(const std::vector<Form<T>> &forms, T *global_data, uint64_t *global_sig) {
    auto *data = static_cast<T *>(shmem_calloc(kElems, sizeof(T)));
    auto *sig = static_cast<uint64_t *>(shmem_calloc(1, sizeof(uint64_t)));
    ASSERT_TRUE(data && sig);
    int round = 0;
    for (const Form<T> &f : forms) {
        check_form(f, Place<T>{data, sig}, round += 10);
        check_form(f, Place<T>{global_data, global_sig}, round += 10);
        // Heap payload with a global signal word: the two may be of different kinds.
        check_form(f, Place<T>{data, global_sig}, round += 10);
    }
    shmem_free(sig);
    shmem_free(data);
}

template <size_t Bytes>
struct Blob {
    unsigned char b[Bytes];
    bool operator==(const Blob &o) const { return std::memcmp(b, o.b, Bytes) == 0; }
};

}  // namespace

// Global payloads (one per type, and one for the sized forms) and signal words.
namespace {
#define DEFINE_GLOBAL(TYPE, NAME) alignas(64) TYPE g_sig_data_##NAME[kElems];
SHMEM_RMA_TYPES(DEFINE_GLOBAL)
#undef DEFINE_GLOBAL
alignas(64) unsigned char g_sig_bytes[kElems * 32];
alignas(64) uint64_t g_sig_word;
alignas(64) uint64_t g_sig_words[64];
}  // namespace

template <size_t Bytes>
Blob<Bytes> blob_value(int pe, size_t i, int round) {
    Blob<Bytes> v;
    for (size_t k = 0; k < Bytes; k++) {
        v.b[k] = static_cast<unsigned char>(
            1 + (pe * 37 + static_cast<int>(i * Bytes + k) * 3 + round * 11) % 251);
    }
    return v;
}

namespace {

// The sized and byte forms take void *; checked through Blob elements of their size.
using VoidPutSignal = void (*)(void *, const void *, size_t, uint64_t *, uint64_t, int, int);
using VoidCtxPutSignal = void (*)(shmem_ctx_t, void *, const void *, size_t, uint64_t *, uint64_t,
                                  int, int);

template <size_t Bytes>
void check_void_forms(VoidPutSignal put, VoidPutSignal put_nbi, VoidCtxPutSignal ctx_put,
                      VoidCtxPutSignal ctx_put_nbi, size_t unit) {
    using B = Blob<Bytes>;
    // Each routine counts `unit`-byte elements (1 for putmem); the check moves kElems blobs.
    size_t n = kElems * Bytes / unit;
    struct Adapter {
        VoidPutSignal p;
        VoidCtxPutSignal c;
        size_t n;
    };
    std::vector<std::pair<const char *, Adapter>> adapters = {
        {"blocking", {put, nullptr, n}},
        {"nbi", {put_nbi, nullptr, n}},
        {"ctx", {nullptr, ctx_put, n}},
        {"ctx nbi", {nullptr, ctx_put_nbi, n}}};
    auto *heap = static_cast<B *>(shmem_calloc(kElems, sizeof(B)));
    auto *sig = static_cast<uint64_t *>(shmem_calloc(1, sizeof(uint64_t)));
    ASSERT_TRUE(heap && sig);
    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    ASSERT_EQ(shmem_ctx_create(0, &ctx), 0);
    int round = 0;
    for (auto &[name, a] : adapters) {
        for (B *data : {heap, reinterpret_cast<B *>(g_sig_bytes)}) {
            for (uint64_t *s : {sig, &g_sig_word}) {
                for (const Peer &p : peers()) {
                    for (int op : {SHMEM_SIGNAL_SET, SHMEM_SIGNAL_ADD}) {
                        round++;
                        std::memset(static_cast<void *>(data), 0, kElems * sizeof(B));
                        *s = 0;
                        shmem_barrier_all();
                        std::vector<B> src(kElems);
                        for (size_t i = 0; i < kElems; i++)
                            src[i] = blob_value<Bytes>(me(), i, round);
                        uint64_t sent = static_cast<uint64_t>(round) << 33;  // above 32 bits
                        if (a.p) {
                            a.p(data, src.data(), a.n, s, sent, op, p.to);
                        } else {
                            a.c(ctx, data, src.data(), a.n, s, sent, op, p.to);
                        }
                        if (a.p) {
                            shmem_quiet();
                        } else {
                            shmem_ctx_quiet(ctx);
                        }
                        EXPECT_EQ(shmem_signal_wait_until(s, SHMEM_CMP_GE, sent), sent);
                        for (size_t i = 0; i < kElems; i++) {
                            ASSERT_TRUE(data[i] == blob_value<Bytes>(p.from, i, round))
                                << name << " to " << p.name << ": element " << i;
                        }
                        shmem_barrier_all();
                    }
                }
            }
        }
    }
    shmem_ctx_destroy(ctx);
    shmem_free(sig);
    shmem_free(heap);
}

}  // namespace

// ---- Generated: every typed form
// -----------------------------------------------------------------

#define SIGNAL_TYPED_CASES(TYPE, NAME)                                                             \
    TEST(PutSignalTest, Shmem_##NAME##_put_signal_SetAndAdd_EveryForm_Test) {                      \
        std::vector<Form<TYPE>> forms = {                                                          \
            {"shmem_" #NAME "_put_signal", shmem_##NAME##_put_signal, nullptr, false},             \
            {"shmem_" #NAME "_put_signal_nbi", shmem_##NAME##_put_signal_nbi, nullptr, true},      \
            {"shmem_ctx_" #NAME "_put_signal", nullptr, shmem_ctx_##NAME##_put_signal, false},     \
            {"shmem_ctx_" #NAME "_put_signal_nbi", nullptr, shmem_ctx_##NAME##_put_signal_nbi,     \
             true}};                                                                               \
        check_forms<TYPE>(forms, g_sig_data_##NAME, &g_sig_word);                                  \
    }
SHMEM_RMA_TYPES(SIGNAL_TYPED_CASES)

#define SIGNAL_SIZED_CASES(BITS)                                                                   \
    TEST(PutSignalTest, ShmemPut##BITS##Signal_SetAndAdd_EveryForm_Test) {                         \
        check_void_forms<BITS / 8>(shmem_put##BITS##_signal, shmem_put##BITS##_signal_nbi,         \
                                   shmem_ctx_put##BITS##_signal, shmem_ctx_put##BITS##_signal_nbi, \
                                   BITS / 8);                                                      \
    }
SHMEM_RMA_SIZES(SIGNAL_SIZED_CASES)

TEST(PutSignalTest, ShmemPutmemSignal_SetAndAdd_EveryForm_Test) {
    check_void_forms<32>(shmem_putmem_signal, shmem_putmem_signal_nbi, shmem_ctx_putmem_signal,
                         shmem_ctx_putmem_signal_nbi, 1);
}

// ---- Ping-pong, many senders, waits ------------------------------------------------------------

// PEs 0-1, 2-3, ... exchange a payload and a signal back and forth; an odd last PE plays with
// itself. SET carries the round number; ADD adds 1 per message, so the count is the round. The
// payload is large enough for the copy to take the fenced path.
TEST(SignalTest, PutmemSignal_PingPongSetAndAdd_PayloadSeenWithSignal_Test) {
    constexpr int kRounds = 200;
    constexpr size_t kBytes = 4096;
    int partner = (me() ^ 1) < npes() ? (me() ^ 1) : me();
    bool first = me() <= partner;
    auto *buf = static_cast<unsigned char *>(shmem_malloc(kBytes));
    auto *sig = static_cast<uint64_t *>(shmem_calloc(1, sizeof(uint64_t)));
    ASSERT_TRUE(buf && sig);
    std::vector<unsigned char> src(kBytes);
    for (int op : {SHMEM_SIGNAL_SET, SHMEM_SIGNAL_ADD}) {
        *sig = 0;
        shmem_barrier_all();
        uint64_t received = 0;
        for (int r = 1; r <= kRounds; r++) {
            // The lower PE of a pair sends odd rounds, the other even ones; the sender of round
            // r+1 is the receiver of round r, so neither overwrites a payload not yet read.
            bool alone = partner == me();
            bool sending = alone || first == (r % 2 == 1);
            if (sending) {
                std::fill(src.begin(), src.end(), static_cast<unsigned char>(r * 7 + me()));
                uint64_t v = op == SHMEM_SIGNAL_SET ? static_cast<uint64_t>(r) : 1;
                shmem_putmem_signal(buf, src.data(), kBytes, sig, v, op, partner);
            }
            if (alone || !sending) {
                received++;
                uint64_t want = op == SHMEM_SIGNAL_SET ? static_cast<uint64_t>(r) : received;
                ASSERT_EQ(shmem_signal_wait_until(sig, SHMEM_CMP_GE, want), want) << "round " << r;
                auto expect = static_cast<unsigned char>(r * 7 + partner);
                for (size_t i = 0; i < kBytes; i += 61) {
                    ASSERT_EQ(buf[i], expect) << "round " << r << " byte " << i;
                }
                ASSERT_EQ(buf[kBytes - 1], expect) << "round " << r;
            }
        }
        shmem_barrier_all();
    }
    shmem_free(sig);
    shmem_free(buf);
}

// Every PE adds its payload and 1 to PE 0's and to the last PE's signal: each waits for the
// count alone, then sees every payload.
TEST(SignalTest, PutSignalAdd_EveryPeToOne_CountAndPayloads_Test) {
    const int n = npes();
    auto *slots = static_cast<long *>(shmem_calloc(static_cast<size_t>(n), sizeof(long)));
    ASSERT_NE(slots, nullptr);
    for (int target : {0, n - 1}) {
        for (uint64_t *sig : {&g_sig_words[0], &g_sig_words[8]}) {
            std::fill(slots, slots + n, 0L);
            *sig = 0;
            shmem_barrier_all();
            long mine = 40 + me() + 1000L * target;
            shmem_long_put_signal(&slots[me()], &mine, 1, sig, 1, SHMEM_SIGNAL_ADD, target);
            if (me() == target) {
                EXPECT_EQ(shmem_signal_wait_until(sig, SHMEM_CMP_EQ, static_cast<uint64_t>(n)),
                          static_cast<uint64_t>(n));
                for (int q = 0; q < n; q++) {
                    EXPECT_EQ(slots[q], 40 + q + 1000L * target) << "from PE " << q;
                }
            }
            shmem_barrier_all();
        }
    }
    shmem_free(slots);
}

// shmem_signal_wait_until with every comparison, on a word the next PE sets after a barrier.
TEST(SignalTest, ShmemSignalWaitUntil_EveryComparison_ReturnsSatisfyingValue_Test) {
    struct Case {
        int cmp;
        uint64_t cmp_value;
        uint64_t sent;  // what the previous PE stores; satisfies the comparison
    };
    const Case cases[] = {{SHMEM_CMP_EQ, 77, 77},   {SHMEM_CMP_NE, 0, 1ull << 63},
                          {SHMEM_CMP_GT, 100, 101}, {SHMEM_CMP_GE, 100, 100},
                          {SHMEM_CMP_LT, 100, 3},   {SHMEM_CMP_LE, 100, 100}};
    uint64_t *sig = &g_sig_words[16];
    for (const Case &c : cases) {
        // Start from a value that does not satisfy the comparison.
        uint64_t start = c.cmp == SHMEM_CMP_LT || c.cmp == SHMEM_CMP_LE ? 1000 : 0;
        *sig = start;
        EXPECT_EQ(shmem_signal_fetch(sig), start);
        shmem_barrier_all();
        long dummy = 0;
        shmem_putmem_signal(&g_sig_words[32], &dummy, 0, sig, c.sent, SHMEM_SIGNAL_SET, next_pe());
        EXPECT_EQ(shmem_signal_wait_until(sig, c.cmp, c.cmp_value), c.sent) << "cmp " << c.cmp;
        shmem_barrier_all();
    }
}

// A context's PE numbers are those of its team; SHMEM_TEAM_SHARED's context signals the next PE
// of the shared team.
TEST(SignalTest, ShmemCtxPutmemSignal_SharedTeamContext_TeamNumbering_Test) {
    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    ASSERT_EQ(shmem_team_create_ctx(SHMEM_TEAM_SHARED, SHMEM_CTX_PRIVATE, &ctx), 0);
    int n = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    int mine = shmem_team_my_pe(SHMEM_TEAM_SHARED);
    int to = (mine + 1) % n;
    int from = shmem_team_translate_pe(SHMEM_TEAM_SHARED, (mine + n - 1) % n, SHMEM_TEAM_WORLD);
    uint64_t *sig = &g_sig_words[24];
    *sig = 0;
    shmem_barrier_all();
    long payload = 9000 + me();
    shmem_ctx_long_put_signal_nbi(ctx, reinterpret_cast<long *>(&g_sig_words[40]), &payload, 1, sig,
                                  3, SHMEM_SIGNAL_ADD, to);
    shmem_ctx_quiet(ctx);
    EXPECT_EQ(shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 3), 3u);
    EXPECT_EQ(static_cast<long>(g_sig_words[40]), 9000 + from);
    shmem_barrier_all();
    shmem_ctx_destroy(ctx);
}
