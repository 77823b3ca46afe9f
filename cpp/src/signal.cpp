// signal.cpp: put-with-signal (typed, sized, byte; blocking and nbi; with and without a
// context), shmem_signal_fetch and shmem_signal_wait_until.
//
// A put-with-signal is the put (rma.h) followed by one atomic update of the peer's 64-bit signal
// word with release ordering, so a PE that reads the signal with acquire ordering (fetch,
// wait_until, or the wait/test routines) sees the data. On x86-64 ordinary stores are already
// ordered; the copy of a larger block may use string or non-temporal stores, which are not, so
// from kFencedBytes on a full fence comes between the copy and the signal.
#include <atomic>

#include "amo.h"
#include "ctx.h"
#include "rma.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"
#include "watch.h"

using namespace shmem::detail;

namespace {

// From this size memcpy may use `rep movsb` or non-temporal stores (glibc: ~2 KiB and up).
constexpr size_t kFencedBytes = 1024;

// Put `n` bytes, then update the signal. Everything is checked before anything is written.
inline void put_signal(const char *call, void *dest, const void *source, size_t n,
                       uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,
                       const void *ctx = nullptr, bool nbi = false) {
    if (SHMEM_UNLIKELY(sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)) {
        require_running(call);
        fail(call, "invalid argument sig_op=%d: not SHMEM_SIGNAL_SET (%d) or SHMEM_SIGNAL_ADD (%d)",
             sig_op, SHMEM_SIGNAL_SET, SHMEM_SIGNAL_ADD);
    }
    uint64_t *sig = target<uint64_t>(call, "sig_addr", sig_addr, pe);
    // A miss: the transport's, or a refusal that must come before the put writes anything.
    if (SHMEM_UNLIKELY(sig == nullptr)) remote_miss(call, "sig_addr", sig_addr, 8, pe, true);
    uintptr_t d = reinterpret_cast<uintptr_t>(dest);
    uintptr_t s = reinterpret_cast<uintptr_t>(sig_addr);
    if (SHMEM_UNLIKELY(n != 0 && s + sizeof(uint64_t) > d && s < d + n)) {
        fail(call, "invalid arguments dest=%p with %zu bytes and sig_addr=%p: they overlap", dest,
             n, static_cast<void *>(sig_addr));
    }
    put(call, dest, source, n, pe, ctx, nbi);
    if (SHMEM_UNLIKELY(sig == nullptr)) {  // a transport is in use: the update goes through it
        // The transport's fence orders the put before the signal's update on the context; the
        // CPU's fence a copy into a mapped peer (string or non-temporal stores) before it.
        std::atomic_thread_fence(std::memory_order_seq_cst);
        transport_fence(ctx);
        transport_amo(
            call, "sig_addr", ctx,
            sig_op == SHMEM_SIGNAL_SET ? SHMEM_TRANSPORT_AMO_SET : SHMEM_TRANSPORT_AMO_FETCH_ADD,
            sig_addr, sizeof(uint64_t), signal, 0, pe);
        return;
    }
    if (n >= kFencedBytes) std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sig_op == SHMEM_SIGNAL_SET) {
        __atomic_store_n(sig, signal, __ATOMIC_RELEASE);
    } else {
        __atomic_fetch_add(sig, signal, __ATOMIC_RELEASE);
    }
}

// The local signal word: symmetric (peers update it) and aligned.
inline const uint64_t *signal_word(const char *call, const uint64_t *sig_addr) {
    require_running(call);
    if (SHMEM_UNLIKELY(!symmetric_range(sig_addr, sizeof(uint64_t)))) {
        fail(call, "invalid argument sig_addr=%p: not a symmetric address",
             static_cast<const void *>(sig_addr));
    }
    if (SHMEM_UNLIKELY(reinterpret_cast<uintptr_t>(sig_addr) % sizeof(uint64_t) != 0)) {
        fail(call, "invalid argument sig_addr=%p: not aligned to 8 bytes",
             static_cast<const void *>(sig_addr));
    }
    return sig_addr;
}

}  // namespace

SHMEM_EXPORT uint64_t pshmem_signal_fetch(const uint64_t *sig_addr) {
    const uint64_t *p = signal_word("shmem_signal_fetch", sig_addr);
    if (SHMEM_UNLIKELY(translate_in(g.amo_bases, p, sizeof(uint64_t), g.my_pe) == nullptr)) {
        return transport_amo("shmem_signal_fetch", "sig_addr", nullptr, SHMEM_TRANSPORT_AMO_FETCH,
                             p, sizeof(uint64_t), 0, 0, g.my_pe);
    }
    return load_watched(p);
}

SHMEM_EXPORT uint64_t pshmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value) {
    const char *call = "shmem_signal_wait_until";
    const uint64_t *p = signal_word(call, sig_addr);
    if (SHMEM_UNLIKELY(!valid_cmp(cmp))) {
        fail(call, "invalid argument cmp=%d: not one of SHMEM_CMP_EQ..SHMEM_CMP_LE", cmp);
    }
    uint64_t v = 0;
    wait_for([&] {
        v = load_watched(p);
        return holds(v, cmp, cmp_value);
    });
    return v;
}

SHMEM_WEAK_ALIAS(shmem_signal_fetch)
SHMEM_WEAK_ALIAS(shmem_signal_wait_until)

// The four routines of one element size: blocking and nbi (the same here: the put completes at
// once), without and with a context, named shmem_NAME_signal, shmem_ctx_NAME_signal, ...
#define SHMEM_DEFINE_PUT_SIGNAL(TYPE, SIZE, NAME)                                                  \
    SHMEM_EXPORT void pshmem_##NAME##_signal(TYPE *dest, const TYPE *source, size_t nelems,        \
                                             uint64_t *sig_addr, uint64_t signal, int sig_op,      \
                                             int pe) {                                             \
        const char *call = "shmem_" #NAME "_signal";                                               \
        put_signal(call, dest, source, extent(call, nelems, SIZE), sig_addr, signal, sig_op, pe);  \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_signal_nbi(TYPE *dest, const TYPE *source, size_t nelems,    \
                                                 uint64_t *sig_addr, uint64_t signal, int sig_op,  \
                                                 int pe) {                                         \
        const char *call = "shmem_" #NAME "_signal_nbi";                                           \
        put_signal(call, dest, source, extent(call, nelems, SIZE), sig_addr, signal, sig_op, pe,   \
                   nullptr, true);                                                                 \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_signal(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,  \
                                                 size_t nelems, uint64_t *sig_addr,                \
                                                 uint64_t signal, int sig_op, int pe) {            \
        const char *call = "shmem_ctx_" #NAME "_signal";                                           \
        int world = ctx_world_pe(call, ctx, pe);                                                   \
        put_signal(call, dest, source, extent(call, nelems, SIZE), sig_addr, signal, sig_op,       \
                   world, ctx);                                                                    \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_signal_nbi(                                              \
        shmem_ctx_t ctx, TYPE *dest, const TYPE *source, size_t nelems, uint64_t *sig_addr,        \
        uint64_t signal, int sig_op, int pe) {                                                     \
        const char *call = "shmem_ctx_" #NAME "_signal_nbi";                                       \
        int world = ctx_world_pe(call, ctx, pe);                                                   \
        put_signal(call, dest, source, extent(call, nelems, SIZE), sig_addr, signal, sig_op,       \
                   world, ctx, true);                                                              \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_signal)                                                        \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_signal_nbi)                                                    \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_signal)                                                    \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_signal_nbi)

#define SHMEM_DEFINE_PUT_SIGNAL_TYPED(TYPE, NAME)                                                  \
    SHMEM_DEFINE_PUT_SIGNAL(TYPE, sizeof(TYPE), NAME##_put)
SHMEM_RMA_TYPES(SHMEM_DEFINE_PUT_SIGNAL_TYPED)

#define SHMEM_DEFINE_PUT_SIGNAL_SIZED(BITS) SHMEM_DEFINE_PUT_SIGNAL(void, BITS / 8, put##BITS)
SHMEM_RMA_SIZES(SHMEM_DEFINE_PUT_SIGNAL_SIZED)

SHMEM_DEFINE_PUT_SIGNAL(void, 1, putmem)
