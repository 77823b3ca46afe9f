// ctx.h: what the facade's files know of a communication context. Contexts are made and ended in
// ctx.cpp; the shmem_ctx_ data routines (ctx_rma.cpp, ctx_amo.cpp, signal.cpp) only turn a
// context and a team PE number into a world PE number, here, inline.
//
// A context is its team's PE numbering plus its options. To a mapped PE every operation
// completes when its call returns, so shmem_ctx_quiet/fence are CPU fences; a transport keeps
// what it has not completed per context, and the data routines pass it the context's handle.
#pragma once

#include <atomic>
#include <climits>

#include "internal.h"
#include "team.h"

// 32 bytes and as aligned: a slot of the context arena (below) is found by a shift. Every member
// starts at zero, so the arena is .bss (no bytes in the file, no page until used).
struct alignas(32) shmem_ctx_s {
    // The team's PEs as world PEs: team PE i is world PE start + i * stride, for i < size;
    // stride 0 (size > 1): a list team's, whose members `team` holds (team.h). size is 0 while
    // the context cannot be used (destroyed; the default context outside init..finalize), so
    // the data path checks one value; the reason is in `state`.
    std::atomic<int> size{0};
    int start = 0;
    int stride = 0;
    int state = 0;  // shmem::detail::CtxState, written under ctx.cpp's lock
    long options = 0;
    shmem_team_s *team = nullptr;
};

static_assert(sizeof(shmem_ctx_s) == 32, "a context is one 32-byte slot of the arena");

namespace shmem::detail {

// Every context but SHMEM_CTX_DEFAULT is a slot of this library-owned array (ctx.cpp), so a
// handle is checked by its address alone: whatever a program passes (a stale handle, a small
// integer, a pointer to unmapped memory), nothing is read through it until it is known to be
// the default context or a slot. Untouched slots cost no memory (zero pages of .bss).
constexpr size_t kCtxSlots = size_t{1} << 16;
constexpr unsigned kCtxSlotShift = 5;
static_assert(sizeof(shmem_ctx_s) == size_t{1} << kCtxSlotShift);
extern shmem_ctx_s ctx_slots[kCtxSlots] __attribute__((visibility("hidden")));

// Whether `ctx` is a slot of the arena, from its address only. The offset is rotated right by
// the slot shift: a misaligned offset's low bits land in the top bits, so one unsigned compare
// checks the range and the alignment together.
SHMEM_HOT_INLINE bool ctx_is_slot(const shmem_ctx_s *ctx) {
    uintptr_t off = reinterpret_cast<uintptr_t>(ctx) - reinterpret_cast<uintptr_t>(ctx_slots);
    uintptr_t index = (off >> kCtxSlotShift) | (off << (64 - kCtxSlotShift));
    return index < kCtxSlots;
}

// Whether `ctx` is one of the library's contexts (live or not): readable, its `size` says
// whether it may be used.
SHMEM_HOT_INLINE bool ctx_is_ours(const shmem_ctx_s *ctx) {
    return ctx_is_slot(ctx) || ctx == SHMEM_CTX_DEFAULT;
}

enum CtxState : int { kCtxUnused = 0, kCtxLive = 1, kCtxDestroyed = 2, kCtxTeamDestroyed = 3 };

// For fail_ctx: the call has no PE argument.
constexpr int kNoPe = INT_MIN;

// Reports why `ctx` (and `pe`, unless kNoPe) was refused by `call`: library not running,
// SHMEM_CTX_INVALID, not a context (never created, or not a handle at all), destroyed (by
// shmem_ctx_destroy or with its team), or `pe` outside the context's team.
[[noreturn]] void fail_ctx(const char *call, shmem_ctx_t ctx, int pe) __attribute__((cold));

// World PE number of PE `pe` of the team of `ctx`, or a clear error. The same few loads for
// every context, SHMEM_CTX_DEFAULT included; a handle that is not a context is refused before
// anything is read through it.
inline int ctx_world_pe(const char *call, shmem_ctx_t ctx, int pe) {
    if (SHMEM_UNLIKELY(!ctx_is_ours(ctx))) fail_ctx(call, ctx, pe);
    unsigned size = static_cast<unsigned>(ctx->size.load(std::memory_order_relaxed));
    if (SHMEM_UNLIKELY(static_cast<unsigned>(pe) >= size)) fail_ctx(call, ctx, pe);
    int stride = ctx->stride;
    if (SHMEM_UNLIKELY(stride == 0)) return team_world_pe(ctx->team, pe);
    return ctx->start + pe * stride;
}

// Whether `ctx` is a live context.
inline bool ctx_usable(shmem_ctx_t ctx) {
    return ctx_is_ours(ctx) && ctx->size.load(std::memory_order_relaxed) != 0;
}

// Fails unless `ctx` is a live context (for the routines without a PE argument).
inline void ctx_require(const char *call, shmem_ctx_t ctx) {
    if (SHMEM_UNLIKELY(!ctx_usable(ctx))) fail_ctx(call, ctx, kNoPe);
}

// For shmem_ctx_fence and shmem_ctx_quiet when `ctx` is not usable: returns for
// SHMEM_CTX_INVALID (they do nothing on it) while the library runs, else fails as fail_ctx.
void ctx_invalid_or_fail(const char *call, shmem_ctx_t ctx) __attribute__((cold, noinline));

// Destroys every context created from `team` (shmem_team_destroy calls it before the team
// goes): each is completed, then refused with "its team was destroyed" if used again.
void ctx_destroy_all_of_team(shmem_team_s *team);

// Called by shmem_init after teams_start (the default context gets the world team), and by
// shmem_finalize before teams_stop (every context is destroyed).
void contexts_start();
void contexts_stop();

}  // namespace shmem::detail
