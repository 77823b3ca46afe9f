// internal.h: state and helpers shared by the facade's files; never installed.
//
// The facade turns the C ABI into runtime calls and runs the data path itself: after init it
// holds every PE's heap base, so a put is a bounds check and a copy into mapped memory. It
// never allocates, locks, logs or calls into the runtime on that path.
#pragma once

#include <shmem.h>

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <shmem/job_state.h>

// Public entry points: default-visible, C linkage. pshmem_X is the definition, shmem_X a weak
// alias (defined in the same file, as aliases must be).
#define SHMEM_EXPORT extern "C" __attribute__((visibility("default")))
#define SHMEM_WEAK_ALIAS(name)                                                                     \
    extern "C"                                                                                     \
        __attribute__((visibility("default"), weak, alias("p" #name))) decltype(p##name) name;

#define SHMEM_UNLIKELY(x) __builtin_expect(!!(x), 0)
// For the few helpers of the per-call path: a file with hundreds of generated routines (the
// shmem_ctx_ ones) otherwise gets an out-of-line copy, a call and a return per put.
#define SHMEM_HOT_INLINE inline __attribute__((always_inline))

namespace shmem::detail {

// What the data path reads: the job state the runtime fills at init and clears at finalize
// (shmem/job_state.h). The facade reads it and writes only its team table and the AscendC
// scratch area (aclshmemx_set_mte_config).
}  // namespace shmem::detail

// Hidden: the data path reaches it relative to the code, with no load of its address.
extern "C" __attribute__((visibility("hidden"))) shmem_job_state shmem_job_state_g;

namespace shmem::detail {

// The facade's short name for the job state; a constant alias, so every use is a direct
// access to the one instance.
inline shmem_job_state &g = shmem_job_state_g;

// Where the library is: 0 not started, 1 running, 2 finalized. Set by init and finalize.
extern std::atomic<int> lib_phase;

// Fails `call` unless the job state's C layout is the runtime's (checked before every start).
void check_job_state_layout(const char *call);

enum Phase : int { kNotStarted = 0, kRunning = 1, kFinalized = 2 };

// Logs "call: message" as one error line and returns. For the errors a routine answers with a
// return value; `fail` below is for those that end the job.
void log_call_error(const char *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), cold));
void log_call_errorv(const char *call, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0), cold));
// Logs "call: message" and ends the job with status 1. For errors the facade detects.
// Joins the kernel launch pool's parked workers (launch.cpp); called by shmem_finalize.
void launch_stop();

[[noreturn]] void fail(const char *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), cold));
// Ends the job with status 1 after an error the runtime already logged.
[[noreturn]] void fail_logged();
// Reports why `pe` was refused: library not running, or PE out of range.
[[noreturn]] void fail_pe(const char *call, int pe) __attribute__((cold));
// Reports a remote range that is not inside the symmetric heap.
[[noreturn]] void fail_addr(const char *call, const char *arg, const void *addr, size_t n)
    __attribute__((cold));
// Fails unless the library is running.
void require_running(const char *call);

// Reports why the range [addr, addr+n), n > 0, cannot be reached on `pe`: not symmetric, not
// symmetric static data, or a PE neither mapped nor reached by a transport.
[[noreturn]] void remote_other(const char *call, const char *arg, const void *addr, size_t n,
                               int pe) __attribute__((cold));

// Address of [addr, addr+n) on `pe` (a valid PE) in the view `bases` (laid out as the job
// state's `bases`), or nullptr when the range is in neither symmetric segment (the heap, or the
// executable's global and static variables) or the view has no base there. Both segments are
// checked without a branch between them, so a static target costs the same as a heap one: the
// segment picks the column of the view. One branch covers every miss.
SHMEM_HOT_INLINE char *translate_in(const uintptr_t *bases, const void *addr, size_t n, int pe) {
    uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    uintptr_t heap_off = a - g.heap_base;
    uintptr_t data_off = a - g.data_base;
    bool in_heap = heap_off <= g.heap_size && n <= g.heap_size - heap_off;
    bool in_data = data_off <= g.data_span && n <= g.data_span - data_off;
    if (SHMEM_UNLIKELY(!(in_heap | in_data))) return nullptr;
    size_t column = in_heap ? 0 : 1;
    uintptr_t off = in_heap ? heap_off : data_off;
    uintptr_t base = bases[2 * static_cast<size_t>(pe) + column];
    if (SHMEM_UNLIKELY(base == 0)) return nullptr;
    char *to = reinterpret_cast<char *>(base + off);
    if (to == nullptr) __builtin_unreachable();  // a mapping holds no address 0: callers test once
    return to;
}

// The data path's view: nullptr also for a PE reached through the transport (shmem_ptr's
// answer for it).
SHMEM_HOT_INLINE char *translate(const void *addr, size_t n, int pe) {
    return translate_in(g.bases, addr, n, pe);
}

// Whether [addr, addr+n) is inside a symmetric segment (the job's, whatever PE it names).
inline bool symmetric_range(const void *addr, size_t n) {
    uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    uintptr_t heap_off = a - g.heap_base;
    uintptr_t data_off = a - g.data_base;
    return (heap_off <= g.heap_size && n <= g.heap_size - heap_off) ||
           (data_off <= g.data_span && n <= g.data_span - data_off);
}

// shmem_ptr's answer: where this PE may load and store `addr` of `pe`. Its own memory always (also
// when the loopback test transport reaches it through the table: `addr` is its own address); a
// peer reached through a transport never. On a device heap (the npu device), the address where
// this PE's device, and the kernels it runs, load and store it.
inline void *load_store_ptr(const void *addr, int pe) {
    if (pe == g.my_pe) return symmetric_range(addr, 1) ? const_cast<void *>(addr) : nullptr;
    uintptr_t off = reinterpret_cast<uintptr_t>(addr) - g.heap_base;
    if (SHMEM_UNLIKELY(g.heap_on_device != 0) && off < g.heap_size) {
        // A device heap: the peer's heap as this PE's device (its kernels) reaches it.
        uintptr_t base = g.heap_device_bases[pe];
        return base == 0 ? nullptr : reinterpret_cast<void *>(base + off);
    }
    return translate(addr, 1, pe);
}

// What a miss of remote() or amo_remote() for n > 0 bytes means, decided on the cold path: it
// returns when the range is symmetric and the call goes through the transport (`amo`: any AMO
// while a transport is in use; else a PE marked SHMEM_JOB_REACH_TRANSPORT); otherwise the call
// fails, naming `arg` and why. A transfer of no bytes never comes here: it touches nothing,
// whatever its addresses (NULL too, OpenSHMEM 1.5), so its callers return first.
void remote_miss(const char *call, const char *arg, const void *addr, size_t n, int pe, bool amo)
    __attribute__((cold, noinline));

// Address of [addr, addr+n) on `pe` as mapped here, or nullptr. A miss calls nothing here: the
// caller passes it to its cold path (transport_put, transport_get, transport_amo), which asks
// remote_miss whether the transport takes the call or the call fails. So the mapped path keeps
// no argument alive across a call, and a put or get of an element costs what a load or store
// and two range checks cost.
SHMEM_HOT_INLINE char *remote(const char *call, const void *addr, size_t n, int pe) {
    if (SHMEM_UNLIKELY(static_cast<unsigned>(pe) >= static_cast<unsigned>(g.n_pes))) {
        fail_pe(call, pe);
    }
    return translate(addr, n, pe);
}

// As remote(), in the AMO view: nullptr also while a transport is in use (every AMO goes through
// it).
SHMEM_HOT_INLINE char *amo_remote(const char *call, const void *addr, size_t n, int pe) {
    if (SHMEM_UNLIKELY(static_cast<unsigned>(pe) >= static_cast<unsigned>(g.n_pes))) {
        fail_pe(call, pe);
    }
    return translate_in(g.amo_bases, addr, n, pe);
}

// The cold path (transport.cpp), taken when remote() or amo_remote() answered nullptr: first
// remote_miss's verdict on `addr` (the argument `arg` of `call`), which fails the call unless the
// transport takes it; then the transport's operation. `addr` is a symmetric address as this PE
// sees it; `ctx` the context (nullptr or SHMEM_CTX_DEFAULT: the default one). Each ends the job
// when the transport fails (it logged why).
template <bool Nbi>
void transport_put(const char *call, const void *ctx, void *addr, const void *source, size_t n,
                   int pe) __attribute__((cold, noinline));
template <bool Nbi>
void transport_get(const char *call, const void *ctx, void *dest, const void *addr, size_t n,
                   int pe) __attribute__((cold, noinline));
// One element of Size bytes, carried in the low bytes of a uint64_t (so the caller's value never
// needs an address on the mapped path).
template <size_t Size>
void transport_put_one(const char *call, const void *ctx, void *addr, uint64_t value, int pe)
    __attribute__((cold, noinline));
template <size_t Size>
uint64_t transport_get_one(const char *call, const void *ctx, const void *addr, int pe)
    __attribute__((cold, noinline));
// One AMO (enum shmem_transport_amo_op) on the `size`-byte element at `addr` on `pe`; returns
// the old value.
uint64_t transport_amo(const char *call, const char *arg, const void *ctx, int op, const void *addr,
                       size_t size, uint64_t value, uint64_t compare, int pe)
    __attribute__((cold, noinline));
// Fence and quiet on `ctx` when a transport is in use (no-ops otherwise).
void transport_fence(const void *ctx);
void transport_quiet(const void *ctx);

// A local buffer argument that must not be NULL when it holds bytes.
inline void require_buffer(const char *call, const char *arg, const void *p, size_t n) {
    if (SHMEM_UNLIKELY(p == nullptr && n != 0)) {
        fail(call, "invalid argument %s=NULL with nelems=%zu", arg, n);
    }
}

}  // namespace shmem::detail

namespace shmem::detail {

// Starts the facade's part of a job the runtime has started: from here on the data path runs.
void adopt();

// For start-up routines whose programs never finalize (start_pes; CANN's attributes and unique
// ids, whose torch and Python callers end with the process): finalizes at a normal exit,
// collectively, unless the program finalized itself. Fails `call` if it cannot be arranged.
void finalize_at_exit(const char *call);

// Copy for the ranges where memcpy stalls on 4 KiB aliasing (copy.cpp).
void copy_aliasing(void *dst, const void *src, size_t n);

// The copy used by every put and get: memcpy, except for mid-sized copies whose destination is
// a few bytes past the source modulo a page, where memcpy stalls (measurements in copy.cpp).
inline void copy(void *dst, const void *src, size_t n) {
    uintptr_t shift = (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) & 4095;
    if (SHMEM_UNLIKELY(shift - 1 < 63 && n >= 2048 && n < (size_t{1} << 20)) &&
        (shift < 16 || (n >= 16384 && shift != 16 && shift != 32))) {
        copy_aliasing(dst, src, n);
        return;
    }
    std::memcpy(dst, src, n);
}

}  // namespace shmem::detail
