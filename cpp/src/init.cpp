// init.cpp: starting and ending the library, job queries, and the shared error reporting.
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "ctx.h"
#include "internal.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"
#include "team.h"

namespace shmem::detail {

std::atomic<int> lib_phase{kNotStarted};

void check_job_state_layout(const char *call) {
    using S = shmem_job_state;
    using T = shmem_job_team;
    // In the order of job_state::layout() in rust/core/src/job_state.rs.
    struct Field {
        const char *name;
        size_t value;
    };
#define SHMEM_FIELD(type, field)                                                                   \
    { "offset of " #type "." #field, offsetof(type, field) }
    static constexpr Field mine[] = {
        {"sizeof(shmem_job_state)", sizeof(S)},
        {"alignof(shmem_job_state)", alignof(S)},
        SHMEM_FIELD(shmem_job_state, size),
        SHMEM_FIELD(shmem_job_state, version),
        SHMEM_FIELD(shmem_job_state, my_pe),
        SHMEM_FIELD(shmem_job_state, n_pes),
        SHMEM_FIELD(shmem_job_state, heap_base),
        SHMEM_FIELD(shmem_job_state, heap_size),
        SHMEM_FIELD(shmem_job_state, data_base),
        SHMEM_FIELD(shmem_job_state, data_size),
        SHMEM_FIELD(shmem_job_state, data_span),
        SHMEM_FIELD(shmem_job_state, bases),
        SHMEM_FIELD(shmem_job_state, reach),
        SHMEM_FIELD(shmem_job_state, data_off_reason),
        SHMEM_FIELD(shmem_job_state, reserved),
        SHMEM_FIELD(shmem_job_state, barrier_words),
        SHMEM_FIELD(shmem_job_state, team_areas),
        SHMEM_FIELD(shmem_job_state, team_area_size),
        SHMEM_FIELD(shmem_job_state, team_slots),
        SHMEM_FIELD(shmem_job_state, central_barrier),
        SHMEM_FIELD(shmem_job_state, teams),
        SHMEM_FIELD(shmem_job_state, transport),
        SHMEM_FIELD(shmem_job_state, mapped_bases),
        SHMEM_FIELD(shmem_job_state, amo_bases),
        SHMEM_FIELD(shmem_job_state, control_bases),
        SHMEM_FIELD(shmem_job_state, control_size),
        SHMEM_FIELD(shmem_job_state, control_state),
        SHMEM_FIELD(shmem_job_state, control_barrier),
        SHMEM_FIELD(shmem_job_state, control_teams),
        SHMEM_FIELD(shmem_job_state, heap_on_device),
        SHMEM_FIELD(shmem_job_state, device_id),
        SHMEM_FIELD(shmem_job_state, heap_device_bases),
        SHMEM_FIELD(shmem_job_state, mte_ub_offset),
        SHMEM_FIELD(shmem_job_state, mte_ub_size),
        SHMEM_FIELD(shmem_job_state, mte_event_id),
        {"sizeof(shmem_job_team)", sizeof(T)},
        SHMEM_FIELD(shmem_job_team, start),
        SHMEM_FIELD(shmem_job_team, stride),
        SHMEM_FIELD(shmem_job_team, size),
        SHMEM_FIELD(shmem_job_team, slot),
        {"SHMEM_TEAM_AREA_LINE_BYTES", SHMEM_TEAM_AREA_LINE_BYTES},
        {"SHMEM_TEAM_AREA_LINES", SHMEM_TEAM_AREA_LINES},
        {"SHMEM_TEAM_AREA_CENTRAL_COUNT", SHMEM_TEAM_AREA_CENTRAL_COUNT},
        {"SHMEM_TEAM_AREA_CENTRAL_RELEASE", SHMEM_TEAM_AREA_CENTRAL_RELEASE},
        {"SHMEM_TEAM_AREA_ID_WORD", SHMEM_TEAM_AREA_ID_WORD},
        {"SHMEM_TEAM_AREA_SYNC_EPOCH", SHMEM_TEAM_AREA_SYNC_EPOCH},
        {"SHMEM_TEAM_AREA_CALL", SHMEM_TEAM_AREA_CALL},
        {"kTeamCallWords", kTeamCallWords},
        {"kTeamNameBytes", kTeamNameBytes},
        {"kTeamCallBusy", kTeamCallBusy},
        {"SHMEM_TEAM_AREA_ROUNDS", SHMEM_TEAM_AREA_ROUNDS},
        {"sizeof(shmem_transport_ops)", sizeof(shmem_transport_ops)},
        SHMEM_FIELD(shmem_transport_ops, size),
        SHMEM_FIELD(shmem_transport_ops, version),
        SHMEM_FIELD(shmem_transport_ops, name),
        SHMEM_FIELD(shmem_transport_ops, self),
        SHMEM_FIELD(shmem_transport_ops, put),
        SHMEM_FIELD(shmem_transport_ops, get),
        SHMEM_FIELD(shmem_transport_ops, put_nbi),
        SHMEM_FIELD(shmem_transport_ops, get_nbi),
        SHMEM_FIELD(shmem_transport_ops, amo),
        SHMEM_FIELD(shmem_transport_ops, fence),
        SHMEM_FIELD(shmem_transport_ops, quiet),
        SHMEM_FIELD(shmem_transport_ops, progress),
    };
#undef SHMEM_FIELD
    constexpr size_t count = sizeof mine / sizeof mine[0];
    rust::Vec<size_t> theirs = core::job_state_layout();
    for (size_t i = 0; i < count || i < theirs.size(); i++) {
        if (i < count && i < theirs.size() && mine[i].value == theirs[i]) continue;
        if (i >= count || i >= theirs.size()) {
            fail(call,
                 "the job state has %zu layout entries in shmem/job_state.h but %zu in the "
                 "runtime: the library was built from mismatched sources",
                 count, theirs.size());
        }
        fail(call,
             "the job state's %s is %zu in shmem/job_state.h but %zu in the runtime: the "
             "library was built from mismatched sources",
             mine[i].name, mine[i].value, theirs[i]);
    }
    // The runtime fills what it knows: a state from a runtime that knows fewer fields than
    // this header is as wrong as a moved field.
    if (g.size != sizeof(S) || g.version != SHMEM_JOB_STATE_VERSION) {
        fail(call, "the job state is %u bytes of version %u, but shmem/job_state.h says %zu of %u",
             g.size, g.version, sizeof(S), SHMEM_JOB_STATE_VERSION);
    }
}

void log_call_errorv(const char *call, const char *fmt, va_list ap) {
    char msg[512];
    int head = std::snprintf(msg, sizeof msg, "%s: ", call);
    std::vsnprintf(msg + head, sizeof msg - static_cast<size_t>(head), fmt, ap);
    core::log_error(msg);
}

void log_call_error(const char *call, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_call_errorv(call, fmt, ap);
    va_end(ap);
}

void fail(const char *call, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_call_errorv(call, fmt, ap);
    va_end(ap);
    fail_logged();
}

void fail_logged() {
    std::fflush(nullptr);
    core::stop_after_error(1);
    std::_Exit(1);  // global_exit does not return; this keeps [[noreturn]] honest
}

void require_running(const char *call) {
    switch (lib_phase.load(std::memory_order_acquire)) {
    case kRunning: return;
    case kNotStarted: fail(call, "the library is not initialized (call shmem_init first)");
    default: fail(call, "called after shmem_finalize");
    }
}

void fail_pe(const char *call, int pe) {
    require_running(call);
    fail(call, "invalid argument pe=%d: not in [0, %d)", pe, g.n_pes);
}

void fail_addr(const char *call, const char *arg, const void *addr, size_t n) {
    fail(call, "invalid argument %s=%p with %zu bytes: not inside the symmetric heap [%p, %p)", arg,
         addr, n, reinterpret_cast<void *>(g.heap_base),
         reinterpret_cast<void *>(g.heap_base + g.heap_size));
}

void remote_other(const char *call, const char *arg, const void *addr, size_t n, int pe) {
    if (symmetric_range(addr, n)) {
        fail(call, "PE %d is not reachable from PE %d: neither mapped nor reached by a transport",
             pe, g.my_pe);
    }
    uintptr_t off = reinterpret_cast<uintptr_t>(addr) - g.data_base;
    bool in_data = off <= g.data_size && n <= g.data_size - off;
    if (!in_data) fail_addr(call, arg, addr, n);
    // Inside the static data, which remote() only misses when it is not symmetric.
    fail(call, "invalid argument %s=%p: a global or static variable, but %s", arg, addr,
         g.data_off_reason);
}

void remote_miss(const char *call, const char *arg, const void *addr, size_t n, int pe, bool amo) {
    if (symmetric_range(addr, n) &&
        (amo ? g.transport != nullptr : g.reach[pe] == SHMEM_JOB_REACH_TRANSPORT)) {
        return;
    }
    remote_other(call, arg, addr, n, pe);
}

void adopt() {
    teams_start();
    contexts_start();
    lib_phase.store(kRunning, std::memory_order_release);
}

}  // namespace shmem::detail

using namespace shmem::detail;
namespace core = shmem::core;

SHMEM_EXPORT void pshmem_init(void) {
    if (lib_phase.load(std::memory_order_acquire) != kNotStarted) {
        fail("shmem_init", lib_phase.load() == kRunning
                               ? "called again while the library is initialized"
                               : "called after shmem_finalize; the library cannot be restarted");
    }
    check_job_state_layout("shmem_init");
    try {
        core::init();
        adopt();
    } catch (const rust::Error &) {
        fail_logged();
    }
}

SHMEM_EXPORT int pshmem_init_thread(int requested, int *provided) {
    if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE) {
        fail("shmem_init_thread",
             "invalid argument requested=%d: not one of SHMEM_THREAD_SINGLE..MULTIPLE", requested);
    }
    if (provided == nullptr) fail("shmem_init_thread", "invalid argument provided=NULL");
    pshmem_init();
    // The data path takes no locks and the runtime's shared state is synchronised, so every
    // level is provided; tests/unit/thread_test.cc runs concurrent RMA, AMOs, quiet and waits
    // from several threads per PE.
    *provided = SHMEM_THREAD_MULTIPLE;
    return 0;
}

SHMEM_EXPORT void pshmem_query_thread(int *provided) {
    require_running("shmem_query_thread");
    if (provided == nullptr) fail("shmem_query_thread", "invalid argument provided=NULL");
    *provided = SHMEM_THREAD_MULTIPLE;
}

// Returns int although <shmem.h> declares shmem_finalize void: programs that resolve
// shmem_finalize by name as CANN's `int shmem_finalize(void)` (torch_npu) then read 0.
SHMEM_EXPORT int pshmem_finalize(void) {
    require_running("shmem_finalize");
    launch_stop();
    std::atomic_thread_fence(std::memory_order_seq_cst);
    try {
        core::finalize();
    } catch (const rust::Error &) {
        fail_logged();
    }
    lib_phase.store(kFinalized, std::memory_order_release);
    contexts_stop();
    teams_stop();
    return 0;
}

namespace {

void finalize_if_running() {
    if (lib_phase.load(std::memory_order_acquire) == kRunning) pshmem_finalize();
}

}  // namespace

void shmem::detail::finalize_at_exit(const char *call) {
    // Once per process: the library cannot start twice, and the handler looks at the phase.
    static const bool registered = std::atexit(finalize_if_running) == 0;
    if (!registered) fail(call, "cannot register the finalization at exit (atexit failed)");
}

SHMEM_EXPORT void pshmem_global_exit(int status) {
    std::fflush(nullptr);
    core::global_exit(status);
    // Not reached (the runtime exits); a non-zero status never becomes the 0 of its low byte.
    std::_Exit(status != 0 && (status & 0xff) == 0 ? 255 : status);
}

SHMEM_EXPORT int pshmem_my_pe(void) {
    require_running("shmem_my_pe");
    return g.my_pe;
}

SHMEM_EXPORT int pshmem_n_pes(void) {
    require_running("shmem_n_pes");
    return g.n_pes;
}

SHMEM_EXPORT void pshmem_info_get_version(int *major, int *minor) {
    if (major == nullptr || minor == nullptr) {
        fail("shmem_info_get_version", "invalid argument %s=NULL",
             major == nullptr ? "major" : "minor");
    }
    *major = SHMEM_MAJOR_VERSION;
    *minor = SHMEM_MINOR_VERSION;
}

SHMEM_EXPORT void pshmem_info_get_name(char *name) {
    if (name == nullptr) fail("shmem_info_get_name", "invalid argument name=NULL");
    static_assert(sizeof SHMEM_VENDOR_STRING <= SHMEM_MAX_NAME_LEN);
    std::memcpy(name, SHMEM_VENDOR_STRING, sizeof SHMEM_VENDOR_STRING);
}

SHMEM_WEAK_ALIAS(shmem_init)
SHMEM_WEAK_ALIAS(shmem_init_thread)
SHMEM_WEAK_ALIAS(shmem_query_thread)
// The alias keeps <shmem.h>'s void type for C and C++ callers; the symbol is pshmem_finalize's.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wattribute-alias"
extern "C" __attribute__((visibility("default"), weak, alias("pshmem_finalize"))) void
shmem_finalize(void);
#pragma GCC diagnostic pop
SHMEM_WEAK_ALIAS(shmem_global_exit)
SHMEM_WEAK_ALIAS(shmem_my_pe)
SHMEM_WEAK_ALIAS(shmem_n_pes)
SHMEM_WEAK_ALIAS(shmem_info_get_version)
SHMEM_WEAK_ALIAS(shmem_info_get_name)
