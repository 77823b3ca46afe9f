// cann_stream.cpp: CANN SHMEM's on-stream host calls, ordered on a stream of the accelerator that
// holds the symmetric heap: an ACL stream on an NPU (the npu device), a CUDA stream on a GPU (the
// cuda device); NULL is the current device's default stream. Each call enqueues its work and
// returns; the work runs when the stream reaches it, after everything enqueued on that stream
// before, and before everything enqueued after:
// - putmem/getmem: one device-to-device copy between this PE's buffer and the peer's heap as
//   imported into this process (the device's copy engine);
// - quiet: the host's own operations are complete when their calls return, and the stream's
//   copies complete in stream order, so nothing is enqueued (the host side is quieted first);
// - barrier, barrier_all: a host function on the stream (aclrtLaunchHostFunc,
//   cuLaunchHostFunc) that runs the host routine when the stream reaches it, holding the stream
//   until it returns (it touches only the host control segment: no device call, as CUDA
//   requires of host functions);
// - signal_op, signal_wait_until: on an NPU, a host function running the host routine; on a
//   GPU, since a CUDA host function may not touch device memory, the stream's own memory
//   operations where CUDA has them (cuStreamWriteValue32 for SET, cuStreamWaitValue32 for EQ
//   and GE) and otherwise a one-thread kernel of the library's own (ADD, NE, GT, LT, LE:
//   rust/core/src/device/cuda_stream.ptx).
// Without an accelerator there is no stream: every call logs ACLSHMEM_NOT_SUPPORTED and does
// nothing. Bad arguments are logged naming the call, the argument and its value, as CANN's are.
#include <aclshmem.h>

#include <cinttypes>
#include <cstdint>

#include <pshmem.h>
#include <shmemx.h>

#include "internal.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"
#include "team.h"

using namespace shmem::detail;
namespace core = shmem::core;

namespace {

// The job state's heap_on_device for a GPU (the cuda device); 1 is an NPU.
constexpr int32_t kOnGpu = 2;

// Whether the library is running with its heap on an accelerator; logs the refusal otherwise.
bool on_device(const char *call, aclrtStream stream) {
    if (SHMEM_UNLIKELY(lib_phase.load(std::memory_order_acquire) != kRunning)) {
        log_call_error(call, "the library is not initialised (code %d, ACLSHMEM_NOT_INITED)",
                       ACLSHMEM_NOT_INITED);
        return false;
    }
    if (SHMEM_UNLIKELY(g.heap_on_device == 0)) {
        log_call_error(call,
                       "stream=%p: not supported (code %d, ACLSHMEM_NOT_SUPPORTED): the symmetric "
                       "heap is in host memory; on-stream calls need the npu or cuda device "
                       "(SHMEM_DEVICE)",
                       stream, ACLSHMEM_NOT_SUPPORTED);
        return false;
    }
    return true;
}

// Whether `pe` is a PE of the job; logged otherwise.
bool pe_in_job(const char *call, long pe) {
    if (!SHMEM_UNLIKELY(pe < 0 || pe >= g.n_pes)) return true;
    log_call_error(call,
                   "invalid argument pe=%ld: not in [0, %d) (code %d, ACLSHMEM_INVALID_PARAM)", pe,
                   g.n_pes, ACLSHMEM_INVALID_PARAM);
    return false;
}

// The address on `pe`'s device heap of this PE's symmetric heap range [addr, addr + n) (argument
// `arg`), as this process's device address space maps it; 0 (logged) when the range is not in
// the heap or `pe` is not on this node.
uintptr_t peer_heap(const char *call, const char *arg, const void *addr, size_t n, int pe) {
    uintptr_t off = reinterpret_cast<uintptr_t>(addr) - g.heap_base;
    if (SHMEM_UNLIKELY(off > g.heap_size || n > g.heap_size - off)) {
        log_call_error(call,
                       "invalid argument %s=%p (%zu bytes): not inside the symmetric heap [%p, %p) "
                       "(code %d, ACLSHMEM_INVALID_PARAM)",
                       arg, addr, n, reinterpret_cast<void *>(g.heap_base),
                       reinterpret_cast<void *>(g.heap_base + g.heap_size), ACLSHMEM_INVALID_PARAM);
        return 0;
    }
    uintptr_t base = g.heap_device_bases[pe];
    if (SHMEM_UNLIKELY(base == 0)) {
        log_call_error(call,
                       "pe=%d: not reachable from PE %d's device (another node) (code %d, "
                       "ACLSHMEM_NOT_SUPPORTED)",
                       pe, g.my_pe, ACLSHMEM_NOT_SUPPORTED);
        return 0;
    }
    return base + off;
}

uintptr_t stream_of(aclrtStream stream) { return reinterpret_cast<uintptr_t>(stream); }

// The copy of an on-stream put or get; `remote` is the symmetric side.
void copy_on_stream(const char *call, bool put, void *dst, void *src, size_t n, int32_t pe,
                    aclrtStream stream) {
    if (!on_device(call, stream) || !pe_in_job(call, pe) || n == 0) return;
    void *remote = put ? dst : src;
    void *local = put ? src : dst;
    if (local == nullptr) {
        log_call_error(call, "invalid argument %s=NULL (code %d, ACLSHMEM_INVALID_PARAM)",
                       put ? "src" : "dst", ACLSHMEM_INVALID_PARAM);
        return;
    }
    uintptr_t at = peer_heap(call, put ? "dst" : "src", remote, n, pe);
    if (at == 0) return;
    uintptr_t l = reinterpret_cast<uintptr_t>(local);
    core::stream_copy(call, put ? at : l, put ? l : at, n, stream_of(stream));
}

// What a host function on a stream does, with its arguments; freed by the function.
struct StreamWork {
    enum Kind { kSignal, kWait, kBarrier, kBarrierAll } kind;
    int32_t *sig_addr;
    int32_t value;
    int op;  // sig_op, or cmp
    int pe;
    aclshmem_team_t team;
};

extern "C" void run_stream_work(void *arg) {
    StreamWork *w = static_cast<StreamWork *>(arg);
    switch (w->kind) {
    case StreamWork::kSignal:
        pshmem_fence();
        if (w->op == ACLSHMEM_SIGNAL_SET) {
            pshmem_int32_atomic_set(w->sig_addr, w->value, w->pe);
        } else {
            pshmem_int32_atomic_add(w->sig_addr, w->value, w->pe);
        }
        break;
    case StreamWork::kWait: aclshmem_signal_wait_until(w->sig_addr, w->op, w->value); break;
    case StreamWork::kBarrier: aclshmem_barrier(w->team); break;
    case StreamWork::kBarrierAll: aclshmem_barrier_all(); break;
    }
    delete w;
}

void enqueue(const char *call, aclrtStream stream, StreamWork w) {
    auto *work = new StreamWork(w);
    if (core::stream_call(call, stream_of(stream), reinterpret_cast<uintptr_t>(&run_stream_work),
                          reinterpret_cast<uintptr_t>(work)) != 0) {
        delete work;  // never enqueued (logged)
    }
}

}  // namespace

SHMEM_EXPORT void aclshmemx_putmem_on_stream(void *dst, void *src, size_t elem_size, int32_t pe,
                                             aclrtStream stream) {
    copy_on_stream("aclshmemx_putmem_on_stream", true, dst, src, elem_size, pe, stream);
}

SHMEM_EXPORT void aclshmemx_getmem_on_stream(void *dst, void *src, size_t elem_size, int32_t pe,
                                             aclrtStream stream) {
    copy_on_stream("aclshmemx_getmem_on_stream", false, dst, src, elem_size, pe, stream);
}

SHMEM_EXPORT void aclshmemx_quiet_on_stream(aclrtStream stream) {
    if (on_device("aclshmemx_quiet_on_stream", stream)) pshmem_quiet();
}

SHMEM_EXPORT void aclshmemx_signal_op_on_stream(int32_t *sig_addr, int32_t signal, int sig_op,
                                                int32_t pe, aclrtStream stream) {
    const char *call = "aclshmemx_signal_op_on_stream";
    if (!on_device(call, stream) || !pe_in_job(call, pe)) return;
    if (sig_op != ACLSHMEM_SIGNAL_SET && sig_op != ACLSHMEM_SIGNAL_ADD) {
        log_call_error(call,
                       "invalid argument sig_op=%d: not ACLSHMEM_SIGNAL_SET (0) or "
                       "ACLSHMEM_SIGNAL_ADD (1) (code %d, ACLSHMEM_INVALID_PARAM)",
                       sig_op, ACLSHMEM_INVALID_PARAM);
        return;
    }
    uintptr_t at = peer_heap(call, "sig_addr", sig_addr, sizeof(int32_t), pe);
    if (at == 0) return;
    if (g.heap_on_device == kOnGpu) {
        core::stream_signal32(call, stream_of(stream), at, static_cast<uint32_t>(signal),
                              sig_op == ACLSHMEM_SIGNAL_ADD);
        return;
    }
    enqueue(call, stream, {StreamWork::kSignal, sig_addr, signal, sig_op, pe, 0});
}

SHMEM_EXPORT void aclshmemx_signal_wait_until_on_stream(int32_t *sig_addr, int cmp, int32_t cmp_val,
                                                        aclrtStream stream) {
    const char *call = "aclshmemx_signal_wait_until_on_stream";
    if (!on_device(call, stream)) return;
    if (cmp < ACLSHMEM_CMP_EQ || cmp > ACLSHMEM_CMP_LE) {
        log_call_error(call,
                       "invalid argument cmp=%d: not ACLSHMEM_CMP_EQ..ACLSHMEM_CMP_LE (0..5) "
                       "(code %d, ACLSHMEM_INVALID_PARAM)",
                       cmp, ACLSHMEM_INVALID_PARAM);
        return;
    }
    uintptr_t at = peer_heap(call, "sig_addr", sig_addr, sizeof(int32_t), g.my_pe);
    if (at == 0) return;
    if (g.heap_on_device == kOnGpu) {
        core::stream_wait32(call, stream_of(stream), at, static_cast<uint32_t>(cmp_val), cmp);
        return;
    }
    enqueue(call, stream, {StreamWork::kWait, sig_addr, cmp_val, cmp, g.my_pe, 0});
}

SHMEM_EXPORT void aclshmemx_barrier_on_stream(aclshmem_team_t team, aclrtStream stream) {
    const char *call = "aclshmemx_barrier_on_stream";
    if (!on_device(call, stream)) return;
    // The live set, not the job state's table, which leaves list teams out (team.cpp).
    if (team_at_slot(team) == nullptr) {
        log_call_error(call,
                       "invalid argument team=%d: not a team of this PE (code %d, "
                       "ACLSHMEM_INVALID_PARAM)",
                       team, ACLSHMEM_INVALID_PARAM);
        return;
    }
    enqueue(call, stream, {StreamWork::kBarrier, nullptr, 0, 0, 0, team});
}

SHMEM_EXPORT void aclshmemx_barrier_all_on_stream(aclrtStream stream) {
    const char *call = "aclshmemx_barrier_all_on_stream";
    if (on_device(call, stream))
        enqueue(call, stream, {StreamWork::kBarrierAll, nullptr, 0, 0, 0, 0});
}

// The names CANN's users also resolve (`shmemx_*` are its macros' targets, `shmem_*` what
// torch_npu looks up), as real functions.
SHMEM_EXPORT void shmemx_putmem_on_stream(void *dst, void *src, size_t elem_size, int32_t pe,
                                          aclrtStream stream) {
    copy_on_stream("shmemx_putmem_on_stream", true, dst, src, elem_size, pe, stream);
}
SHMEM_EXPORT void shmemx_getmem_on_stream(void *dst, void *src, size_t elem_size, int32_t pe,
                                          aclrtStream stream) {
    copy_on_stream("shmemx_getmem_on_stream", false, dst, src, elem_size, pe, stream);
}
SHMEM_EXPORT void shmemx_quiet_on_stream(aclrtStream stream) {
    if (on_device("shmemx_quiet_on_stream", stream)) pshmem_quiet();
}
SHMEM_EXPORT void pshmem_putmem_on_stream(void *dst, void *src, size_t elem_size, int32_t pe,
                                          aclrtStream stream) {
    copy_on_stream("shmem_putmem_on_stream", true, dst, src, elem_size, pe, stream);
}
SHMEM_EXPORT void pshmem_getmem_on_stream(void *dst, void *src, size_t elem_size, int32_t pe,
                                          aclrtStream stream) {
    copy_on_stream("shmem_getmem_on_stream", false, dst, src, elem_size, pe, stream);
}

// ---- The kernels' job state, and where the heap is -------------------------------------------

SHMEM_EXPORT const void *shmemx_job_state_device(void) {
    if (SHMEM_UNLIKELY(lib_phase.load(std::memory_order_acquire) != kRunning)) {
        log_call_error("shmemx_job_state_device", "the library is not initialised");
        return nullptr;
    }
    return reinterpret_cast<const void *>(core::device_job_state());
}

// Read from the job state without logging: bindings ask it before every tensor they make.
SHMEM_EXPORT int shmemx_heap_device(int *device_id) {
    if (lib_phase.load(std::memory_order_acquire) != kRunning) return -1;
    if (device_id != nullptr) *device_id = g.heap_on_device != 0 ? g.device_id : -1;
    return g.heap_on_device;
}

SHMEM_WEAK_ALIAS(shmem_putmem_on_stream)
SHMEM_WEAK_ALIAS(shmem_getmem_on_stream)
