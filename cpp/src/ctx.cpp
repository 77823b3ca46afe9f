// ctx.cpp: communication contexts: the default context, creation and destruction, the team of
// a context, and shmem_ctx_fence/quiet.
//
// Contexts are slots of one array owned by the library (ctx_slots, ctx.h), so any handle is
// checked by its address before it is read, a destroyed handle still points at readable memory
// and its use is reported as such. A destroyed slot is reused only once kQuarantine others wait
// behind it (or every slot has been used), so a stale handle is very likely caught. Creation
// and destruction take a lock; the data path (ctx.h) never does.
#include "ctx.h"

#include <atomic>
#include <deque>
#include <mutex>

#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"

using namespace shmem::detail;

// SHMEM_CTX_DEFAULT points at this. Constant-initialised; contexts_start gives it the world team.
// (C linkage from its declaration in <shmem/constants.h>.)
__attribute__((visibility("default"))) shmem_ctx_s shmem_internal_ctx_default{};

namespace shmem::detail {

// Zero-initialised (unused, size 0): a slot past those handed out reads as "never created".
shmem_ctx_s ctx_slots[kCtxSlots];

}  // namespace shmem::detail

namespace {

constexpr long kKnownOptions = SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE;
constexpr size_t kQuarantine = 64;

struct Pool {
    std::mutex mutex;
    size_t used = 0;                 // ctx_slots[0, used) have been handed out
    std::deque<shmem_ctx_s *> free;  // destroyed slots, oldest first
};

// Never destroyed: a handle used from an atexit handler must still be checkable.
Pool &pool() {
    static Pool *p = new Pool;
    return *p;
}

// Completes the context's operations and takes it out of use. Caller holds the pool lock.
void retire(Pool &p, shmem_ctx_s *c, CtxState why) {
    std::atomic_thread_fence(std::memory_order_seq_cst);  // the implied shmem_ctx_quiet
    if (SHMEM_UNLIKELY(g.transport != nullptr)) transport_quiet(c);
    c->size.store(0, std::memory_order_relaxed);
    c->state = why;
    c->team->contexts.fetch_sub(1, std::memory_order_relaxed);
    p.free.push_back(c);
}

int create(const char *call, shmem_team_s *t, long options, shmem_ctx_t *out) {
    *out = SHMEM_CTX_INVALID;
    if (options & ~kKnownOptions) {
        log_call_error(
            call,
            "invalid argument options=%#lx: unknown bits %#lx (known: SHMEM_CTX_SERIALIZED, "
            "SHMEM_CTX_PRIVATE, SHMEM_CTX_NOSTORE)",
            options, options & ~kKnownOptions);
        return 1;
    }
    Pool &p = pool();
    std::unique_lock<std::mutex> lock(p.mutex);
    int have = t->contexts.load(std::memory_order_relaxed);
    if ((t->config_mask & SHMEM_TEAM_NUM_CONTEXTS) && have >= t->config.num_contexts) {
        lock.unlock();
        log_call_error(call,
                       "team %p already has %d contexts, the num_contexts it was configured with "
                       "(SHMEM_TEAM_NUM_CONTEXTS); destroy one first",
                       static_cast<void *>(t), have);
        return 1;
    }
    shmem_ctx_s *c;
    if (p.free.size() > kQuarantine || (p.used == kCtxSlots && !p.free.empty())) {
        c = p.free.front();
        p.free.pop_front();
    } else if (p.used < kCtxSlots) {
        c = &ctx_slots[p.used++];
    } else {
        lock.unlock();
        log_call_error(call, "no context left: %zu contexts exist at once, the library's limit",
                       kCtxSlots);
        return 1;
    }
    c->team = t;
    c->start = t->start;
    c->stride = t->stride;
    c->options = options;
    c->state = kCtxLive;
    c->size.store(t->size, std::memory_order_release);
    t->contexts.fetch_add(1, std::memory_order_relaxed);
    *out = c;
    return 0;
}

void require_out(const char *call, const char *arg, const void *out) {
    if (out == nullptr) fail(call, "invalid argument %s=NULL", arg);
}

}  // namespace

namespace shmem::detail {

void fail_ctx(const char *call, shmem_ctx_t ctx, int pe) {
    require_running(call);
    if (ctx == SHMEM_CTX_INVALID) fail(call, "invalid argument ctx=SHMEM_CTX_INVALID");
    int state;
    int size;
    {
        Pool &p = pool();
        std::lock_guard<std::mutex> lock(p.mutex);
        if (ctx_is_ours(ctx)) {
            state = ctx->state;
            size = ctx->size.load(std::memory_order_relaxed);
        } else {
            state = kCtxUnused;
            size = 0;
        }
    }
    void *addr = static_cast<void *>(ctx);
    switch (state) {
    case kCtxDestroyed:
        fail(call, "invalid argument ctx=%p: the context was destroyed (shmem_ctx_destroy)", addr);
    case kCtxTeamDestroyed:
        fail(call, "invalid argument ctx=%p: the context was destroyed with its team", addr);
    case kCtxLive:
        if (pe != kNoPe) {
            fail(call, "invalid argument pe=%d: not in [0, %d), the context's team has %d PEs", pe,
                 size, size);
        }
        break;
    default: break;
    }
    fail(call, "invalid argument ctx=%p: not a context (never created)", addr);
}

void ctx_invalid_or_fail(const char *call, shmem_ctx_t ctx) {
    require_running(call);
    if (ctx != SHMEM_CTX_INVALID) fail_ctx(call, ctx, kNoPe);
}

void ctx_destroy_all_of_team(shmem_team_s *team) {
    Pool &p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    for (size_t i = 0; i < p.used; i++) {
        shmem_ctx_s &c = ctx_slots[i];
        if (c.state == kCtxLive && c.team == team) retire(p, &c, kCtxTeamDestroyed);
    }
}

void contexts_start() {
    shmem_ctx_s &d = shmem_internal_ctx_default;
    d.team = &shmem_internal_team_world;
    d.start = 0;
    d.stride = 1;
    d.options = 0;
    d.state = kCtxLive;
    d.size.store(g.n_pes, std::memory_order_release);
}

void contexts_stop() {
    Pool &p = pool();
    std::lock_guard<std::mutex> lock(p.mutex);
    for (size_t i = 0; i < p.used; i++) {
        shmem_ctx_s &c = ctx_slots[i];
        if (c.state == kCtxLive) retire(p, &c, kCtxDestroyed);
    }
    shmem_internal_ctx_default.size.store(0, std::memory_order_relaxed);
}

}  // namespace shmem::detail

SHMEM_EXPORT int pshmem_ctx_create(long options, shmem_ctx_t *ctx) {
    const char *call = "shmem_ctx_create";
    require_running(call);
    require_out(call, "ctx", ctx);
    return create(call, &shmem_internal_team_world, options, ctx);
}

SHMEM_EXPORT int pshmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx) {
    const char *call = "shmem_team_create_ctx";
    require_running(call);
    require_out(call, "ctx", ctx);
    // A PE left out of a split holds SHMEM_TEAM_INVALID; the specification answers it with a
    // failed creation, not an error.
    if (team == SHMEM_TEAM_INVALID) {
        *ctx = SHMEM_CTX_INVALID;
        return 1;
    }
    return create(call, team_check(call, "team", team), options, ctx);
}

SHMEM_EXPORT void pshmem_ctx_destroy(shmem_ctx_t ctx) {
    const char *call = "shmem_ctx_destroy";
    require_running(call);
    if (ctx == SHMEM_CTX_INVALID) return;  // what a failed creation left: nothing to destroy
    if (ctx == SHMEM_CTX_DEFAULT) {
        fail(call,
             "invalid argument ctx=SHMEM_CTX_DEFAULT: the default context cannot be "
             "destroyed");
    }
    {
        Pool &p = pool();
        std::lock_guard<std::mutex> lock(p.mutex);
        if (ctx_is_slot(ctx) && ctx->state == kCtxLive) {
            retire(p, ctx, kCtxDestroyed);
            return;
        }
    }
    fail_ctx(call, ctx, kNoPe);
}

SHMEM_EXPORT int pshmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team) {
    const char *call = "shmem_ctx_get_team";
    require_running(call);
    require_out(call, "team", team);
    if (ctx == SHMEM_CTX_INVALID) {
        *team = SHMEM_TEAM_INVALID;
        return 1;
    }
    ctx_require(call, ctx);
    *team = ctx->team;
    return 0;
}

// On SHMEM_CTX_INVALID, what a failed creation leaves (a team this PE is not in, a full team),
// fence and quiet do nothing, as OpenSHMEM specifies: the program need not test the handle.
// Decided on the cold path: SHMEM_CTX_INVALID (NULL) is no context of the arena either, so a
// live context pays no test for it.
SHMEM_EXPORT void pshmem_ctx_fence(shmem_ctx_t ctx) {
    if (SHMEM_UNLIKELY(!ctx_usable(ctx))) return ctx_invalid_or_fail("shmem_ctx_fence", ctx);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (SHMEM_UNLIKELY(g.transport != nullptr)) transport_fence(ctx);
}

SHMEM_EXPORT void pshmem_ctx_quiet(shmem_ctx_t ctx) {
    if (SHMEM_UNLIKELY(!ctx_usable(ctx))) return ctx_invalid_or_fail("shmem_ctx_quiet", ctx);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (SHMEM_UNLIKELY(g.transport != nullptr)) transport_quiet(ctx);
}

SHMEM_WEAK_ALIAS(shmem_ctx_create)
SHMEM_WEAK_ALIAS(shmem_team_create_ctx)
SHMEM_WEAK_ALIAS(shmem_ctx_destroy)
SHMEM_WEAK_ALIAS(shmem_ctx_get_team)
SHMEM_WEAK_ALIAS(shmem_ctx_fence)
SHMEM_WEAK_ALIAS(shmem_ctx_quiet)
