// zero_length_test.cc: a transfer of no bytes is valid whatever its addresses (OpenSHMEM 1.5:
// NULL, a local buffer, anything), to every PE of the job (this one, mapped peers, and peers the
// loopback or UCX transport reaches in this suite's twins): every contiguous put and get (byte,
// typed, sized; blocking and nbi; with and without a context), the strided forms with nelems 0,
// put-with-signal (whose signal must still arrive) and CANN's forms. Nothing may be written, and
// the job must go on: every PE then checks data and signals the other PEs sent it.
#include <aclshmem.h>
#include <gtest/gtest.h>
#include <shmem.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "test_util.h"

using namespace testutil;

namespace {

// Every contiguous and strided RMA routine with no bytes to move at `dest` and `source` (which
// may be NULL), to world PE `pe`; `ctx` and `team_pe` for the shmem_ctx_ forms.
void every_rma(void *dest, void *source, int pe, shmem_ctx_t ctx, int team_pe) {
    shmem_putmem(dest, source, 0, pe);
    shmem_getmem(dest, source, 0, pe);
    shmem_putmem_nbi(dest, source, 0, pe);
    shmem_getmem_nbi(dest, source, 0, pe);
    shmem_ctx_putmem(ctx, dest, source, 0, team_pe);
    shmem_ctx_getmem(ctx, dest, source, 0, team_pe);
    shmem_ctx_putmem_nbi(ctx, dest, source, 0, team_pe);
    shmem_ctx_getmem_nbi(ctx, dest, source, 0, team_pe);
#define ZERO_TYPED(TYPE, NAME)                                                                     \
    {                                                                                              \
        auto *d = static_cast<TYPE *>(dest);                                                       \
        auto *s = static_cast<TYPE *>(source);                                                     \
        shmem_##NAME##_put(d, s, 0, pe);                                                           \
        shmem_##NAME##_get(d, s, 0, pe);                                                           \
        shmem_##NAME##_put_nbi(d, s, 0, pe);                                                       \
        shmem_##NAME##_get_nbi(d, s, 0, pe);                                                       \
        shmem_##NAME##_iput(d, s, 1, 1, 0, pe);                                                    \
        shmem_##NAME##_iget(d, s, 2, 3, 0, pe);                                                    \
        shmem_ctx_##NAME##_put(ctx, d, s, 0, team_pe);                                             \
        shmem_ctx_##NAME##_get(ctx, d, s, 0, team_pe);                                             \
        shmem_ctx_##NAME##_put_nbi(ctx, d, s, 0, team_pe);                                         \
        shmem_ctx_##NAME##_get_nbi(ctx, d, s, 0, team_pe);                                         \
        shmem_ctx_##NAME##_iput(ctx, d, s, 1, 1, 0, team_pe);                                      \
        shmem_ctx_##NAME##_iget(ctx, d, s, 2, 3, 0, team_pe);                                      \
    }
    SHMEM_RMA_TYPES(ZERO_TYPED)
#undef ZERO_TYPED
#define ZERO_SIZED(BITS)                                                                           \
    shmem_put##BITS(dest, source, 0, pe);                                                          \
    shmem_get##BITS(dest, source, 0, pe);                                                          \
    shmem_put##BITS##_nbi(dest, source, 0, pe);                                                    \
    shmem_get##BITS##_nbi(dest, source, 0, pe);                                                    \
    shmem_iput##BITS(dest, source, 1, 1, 0, pe);                                                   \
    shmem_iget##BITS(dest, source, 1, 1, 0, pe);                                                   \
    shmem_ctx_put##BITS(ctx, dest, source, 0, team_pe);                                            \
    shmem_ctx_get##BITS(ctx, dest, source, 0, team_pe);                                            \
    shmem_ctx_put##BITS##_nbi(ctx, dest, source, 0, team_pe);                                      \
    shmem_ctx_get##BITS##_nbi(ctx, dest, source, 0, team_pe);                                      \
    shmem_ctx_iput##BITS(ctx, dest, source, 1, 1, 0, team_pe);                                     \
    shmem_ctx_iget##BITS(ctx, dest, source, 1, 1, 0, team_pe);
    SHMEM_RMA_SIZES(ZERO_SIZED)
#undef ZERO_SIZED
    // CANN's forms (a PE outside the job is logged and refused there, never reached here).
    aclshmem_putmem(dest, source, 0, pe);
    aclshmem_getmem(dest, source, 0, pe);
    aclshmem_putmem_nbi(dest, source, 0, pe);
    aclshmem_getmem_nbi(dest, source, 0, pe);
#define ZERO_CANN(NAME, TYPE)                                                                      \
    {                                                                                              \
        auto *d = static_cast<TYPE *>(dest);                                                       \
        auto *s = static_cast<TYPE *>(source);                                                     \
        aclshmem_put_##NAME##_mem(d, s, 0, pe);                                                    \
        aclshmem_get_##NAME##_mem(d, s, 0, pe);                                                    \
        aclshmem_put_##NAME##_mem_nbi(d, s, 0, pe);                                                \
        aclshmem_get_##NAME##_mem_nbi(d, s, 0, pe);                                                \
    }
    ACLSHMEMI_HOST_TYPES(ZERO_CANN)
#undef ZERO_CANN
}

// Every put-with-signal routine with no bytes at `dest` and `source`, each adding 1 to `sig` on
// world PE `pe`; returns how many it made. CANN's forms add 1 to the int32_t `csig`.
int every_signal_add(void *dest, void *source, uint64_t *sig, int32_t *csig, int pe,
                     shmem_ctx_t ctx, int team_pe, int *cann_count) {
    int n = 0;
    const int add = SHMEM_SIGNAL_ADD;
#define ZERO_SIGNAL(TYPE, NAME)                                                                    \
    {                                                                                              \
        auto *d = static_cast<TYPE *>(dest);                                                       \
        auto *s = static_cast<TYPE *>(source);                                                     \
        shmem_##NAME##_signal(d, s, 0, sig, 1, add, pe);                                           \
        shmem_##NAME##_signal_nbi(d, s, 0, sig, 1, add, pe);                                       \
        shmem_ctx_##NAME##_signal(ctx, d, s, 0, sig, 1, add, team_pe);                             \
        shmem_ctx_##NAME##_signal_nbi(ctx, d, s, 0, sig, 1, add, team_pe);                         \
        n += 4;                                                                                    \
    }
    ZERO_SIGNAL(char, putmem)
#define ZERO_SIGNAL_TYPED(TYPE, NAME) ZERO_SIGNAL(TYPE, NAME##_put)
    SHMEM_RMA_TYPES(ZERO_SIGNAL_TYPED)
#undef ZERO_SIGNAL_TYPED
#define ZERO_SIGNAL_SIZED(BITS) ZERO_SIGNAL(char, put##BITS)
    SHMEM_RMA_SIZES(ZERO_SIGNAL_SIZED)
#undef ZERO_SIGNAL_SIZED
#undef ZERO_SIGNAL
    int c = 0;
    aclshmemx_putmem_signal(dest, source, 0, csig, 1, ACLSHMEM_SIGNAL_ADD, pe);
    aclshmemx_putmem_signal_nbi(dest, source, 0, csig, 1, ACLSHMEM_SIGNAL_ADD, pe);
    c += 2;
#define ZERO_CANN_SIGNAL(NAME, TYPE)                                                               \
    aclshmem_put_##NAME##_mem_signal(static_cast<TYPE *>(dest), static_cast<TYPE *>(source), 0,    \
                                     reinterpret_cast<uint8_t *>(csig), 1, ACLSHMEM_SIGNAL_ADD,    \
                                     pe);                                                          \
    aclshmem_put_##NAME##_mem_signal_nbi(static_cast<TYPE *>(dest), static_cast<TYPE *>(source),   \
                                         0, reinterpret_cast<uint8_t *>(csig), 1,                  \
                                         ACLSHMEM_SIGNAL_ADD, pe);                                 \
    c += 2;
    ACLSHMEMI_HOST_TYPES(ZERO_CANN_SIGNAL)
#undef ZERO_CANN_SIGNAL
    *cann_count = c;
    return n;
}

// Polls `done` until it holds or 60 s pass (then false: a lost signal is a failure, not a hang).
template <typename F>
bool within_deadline(F done) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::yield();
    }
    return true;
}

// The addresses a zero-length call may name: NULL, a local (non-symmetric) buffer, symmetric
// memory, and a symmetric destination with a NULL source and the other way round.
struct Addresses {
    const char *name;
    void *dest;
    void *source;
};

std::vector<Addresses> addresses(unsigned char *sym, unsigned char *local) {
    return {{"NULL, NULL", nullptr, nullptr},  {"local, local", local, local + 8},
            {"symmetric, local", sym, local},  {"local, symmetric", local, sym},
            {"symmetric, NULL", sym, nullptr}, {"NULL, symmetric", nullptr, sym}};
}

constexpr size_t kBytes = 64;
constexpr unsigned char kUntouched = 0x5a;

}  // namespace

// Every form to every PE, on the default context and on a created one (world numbering): the
// sentinel bytes of every PE stay as they were, and a put afterwards lands as usual.
TEST(ZeroLengthTest, EveryRmaForm_AnyAddresses_EveryPe_NothingMovesAndJobGoesOn_Test) {
    auto *sym = static_cast<unsigned char *>(shmem_malloc(kBytes));
    auto *after = static_cast<int *>(shmem_calloc(static_cast<size_t>(npes()), sizeof(int)));
    ASSERT_TRUE(sym != nullptr && after != nullptr);
    std::memset(sym, kUntouched, kBytes);
    unsigned char local[kBytes];
    std::memset(local, kUntouched, sizeof local);
    shmem_ctx_t created = SHMEM_CTX_INVALID;
    ASSERT_EQ(shmem_ctx_create(0, &created), 0);
    shmem_barrier_all();
    for (shmem_ctx_t ctx : {SHMEM_CTX_DEFAULT, created}) {
        for (const Addresses &a : addresses(sym, local)) {
            for (int pe = 0; pe < npes(); pe++) {
                SCOPED_TRACE(::testing::Message() << a.name << " to PE " << pe);
                every_rma(a.dest, a.source, pe, ctx, pe);
            }
        }
        shmem_ctx_quiet(ctx);
    }
    shmem_quiet();
    shmem_barrier_all();
    for (size_t i = 0; i < kBytes; i++) {
        ASSERT_EQ(sym[i], kUntouched) << "symmetric byte " << i;
        ASSERT_EQ(local[i], kUntouched) << "local byte " << i;
    }
    // The job goes on: every PE writes its number to every PE.
    for (int pe = 0; pe < npes(); pe++) shmem_ctx_int_p(created, &after[me()], 100 + me(), pe);
    shmem_ctx_quiet(created);
    shmem_barrier_all();
    for (int from = 0; from < npes(); from++) EXPECT_EQ(after[from], 100 + from) << "PE " << from;
    shmem_ctx_destroy(created);
    shmem_barrier_all();
    shmem_free(after);
    shmem_free(sym);
}

// The contexts of SHMEM_TEAM_SHARED number the PEs of this node: zero-length calls to each.
TEST(ZeroLengthTest, EveryRmaForm_SharedTeamContext_EveryTeamPe_Test) {
    auto *sym = static_cast<unsigned char *>(shmem_malloc(kBytes));
    ASSERT_NE(sym, nullptr);
    std::memset(sym, kUntouched, kBytes);
    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    ASSERT_EQ(shmem_team_create_ctx(SHMEM_TEAM_SHARED, 0, &ctx), 0);
    shmem_barrier_all();
    int n = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    for (int t = 0; t < n; t++) {
        int world = shmem_team_translate_pe(SHMEM_TEAM_SHARED, t, SHMEM_TEAM_WORLD);
        ASSERT_GE(world, 0);
        every_rma(nullptr, nullptr, world, ctx, t);
        every_rma(sym, nullptr, world, ctx, t);
    }
    shmem_ctx_quiet(ctx);
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
    for (size_t i = 0; i < kBytes; i++) ASSERT_EQ(sym[i], kUntouched) << "byte " << i;
    shmem_barrier_all();
    shmem_free(sym);
}

// A put-with-signal of no bytes still updates the signal: every form adds 1 at every PE, and
// every PE sees each other PE's count; SHMEM_SIGNAL_SET sets the value sent.
TEST(ZeroLengthTest, PutSignal_NoBytes_SignalStillDelivered_EveryPe_Test) {
    const size_t n = static_cast<size_t>(npes());
    auto *sig = static_cast<uint64_t *>(shmem_calloc(n, sizeof(uint64_t)));
    auto *set = static_cast<uint64_t *>(shmem_calloc(n, sizeof(uint64_t)));
    auto *csig = static_cast<int32_t *>(shmem_calloc(n, sizeof(int32_t)));
    auto *sym = static_cast<unsigned char *>(shmem_malloc(kBytes));
    ASSERT_TRUE(sig && set && csig && sym);
    std::memset(sym, kUntouched, kBytes);
    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    ASSERT_EQ(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx), 0);
    shmem_barrier_all();
    int forms = 0, cann_forms = 0;
    for (int pe = 0; pe < npes(); pe++) {
        forms =
            every_signal_add(nullptr, nullptr, &sig[me()], &csig[me()], pe, ctx, pe, &cann_forms);
        every_signal_add(sym, nullptr, &sig[me()], &csig[me()], pe, ctx, pe, &cann_forms);
        shmem_putmem_signal(nullptr, nullptr, 0, &set[me()], 1000 + static_cast<uint64_t>(me()),
                            SHMEM_SIGNAL_SET, pe);
    }
    shmem_ctx_quiet(ctx);
    shmem_quiet();
    const uint64_t want = 2 * static_cast<uint64_t>(forms);
    const int32_t cann_want = 2 * cann_forms;
    for (size_t from = 0; from < n; from++) {
        uint64_t *s = &sig[from];
        uint64_t *v = &set[from];
        int32_t *c = &csig[from];
        EXPECT_TRUE(within_deadline([&] { return shmem_signal_fetch(s) == want; }))
            << "signal from PE " << from << ": " << shmem_signal_fetch(s) << " of " << want;
        EXPECT_TRUE(within_deadline([&] { return shmem_signal_fetch(v) == 1000 + from; }))
            << "SET signal from PE " << from << ": " << shmem_signal_fetch(v);
        EXPECT_TRUE(within_deadline([&] { return shmem_int32_test(c, SHMEM_CMP_EQ, cann_want); }))
            << "CANN signal from PE " << from << ": " << *c << " of " << cann_want;
    }
    shmem_barrier_all();
    for (size_t i = 0; i < kBytes; i++) ASSERT_EQ(sym[i], kUntouched) << "byte " << i;
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
    shmem_free(sym);
    shmem_free(csig);
    shmem_free(set);
    shmem_free(sig);
}
