// cann_data.cpp: CANN SHMEM's host data plane (symmetric memory, heap queries, RMA and
// put-with-signal on int32_t signals), each routine a thin form of the OpenSHMEM routine of
// this library. What CANN answers by a return value (NULL, or a logged refusal) is answered so
// here: a routine called before start-up or with `pe` outside the job, or a memory kind this
// library lacks, logs one line naming the routine, the argument and its value, and returns.
#include <aclshmem.h>

#include <cinttypes>

#include <pshmem.h>

#include "internal.h"

using namespace shmem::detail;

namespace {

// aclshmemx_set_mte_config's bounds: the unified buffer's block size, and the MTE event ids of
// a core (AscendC's TEventID 0..7).
constexpr uint32_t kMteUbAlign = 32;
constexpr uint32_t kMteEventIds = 8;

// Whether the library is running; logs the refusal when it is not.
bool running(const char *call) {
    if (!SHMEM_UNLIKELY(lib_phase.load(std::memory_order_acquire) != kRunning)) return true;
    log_call_error(call, "the library is not initialised (code %d, ACLSHMEM_NOT_INITED)",
                   ACLSHMEM_NOT_INITED);
    return false;
}

// Whether `pe` is a PE of the running job; logs the refusal when it is not.
bool pe_ok(const char *call, long pe) {
    if (!running(call)) return false;
    if (!SHMEM_UNLIKELY(pe < 0 || pe >= g.n_pes)) return true;
    log_call_error(call,
                   "invalid argument pe=%ld: not in [0, %d) (code %d, ACLSHMEM_INVALID_PARAM)", pe,
                   g.n_pes, ACLSHMEM_INVALID_PARAM);
    return false;
}

// Whether the heap is memory of kind `mem_type`: DEVICE_SIDE on an NPU (the npu device),
// HOST_SIDE in host memory; logs the refusal otherwise.
bool kind_ok(const char *call, aclshmem_mem_type_t mem_type) {
    aclshmem_mem_type_t heap = g.heap_on_device != 0 ? DEVICE_SIDE : HOST_SIDE;
    if (mem_type == heap) return true;
    if (mem_type == DEVICE_SIDE || mem_type == HOST_SIDE) {
        log_call_error(
            call,
            "mem_type=%s: not supported (code %d, ACLSHMEM_NOT_SUPPORTED): this job's "
            "symmetric heap is %s, use %s",
            mem_type == DEVICE_SIDE ? "DEVICE_SIDE" : "HOST_SIDE", ACLSHMEM_NOT_SUPPORTED,
            heap == DEVICE_SIDE ? "NPU memory" : "host memory (SHMEM_DEVICE=npu puts it on an NPU)",
            heap == DEVICE_SIDE ? "DEVICE_SIDE" : "HOST_SIDE");
    } else {
        log_call_error(
            call,
            "invalid argument mem_type=%d: not HOST_SIDE (0) or DEVICE_SIDE (1) (code %d, "
            "ACLSHMEM_INVALID_VALUE)",
            static_cast<int>(mem_type), ACLSHMEM_INVALID_VALUE);
    }
    return false;
}

// Updates the int32_t signal at `sig_addr` on `pe` after every put issued before it (`sig_op`
// already checked).
void signal_after(void *sig_addr, int32_t signal, int sig_op, int pe) {
    pshmem_fence();
    auto *sig = static_cast<int32_t *>(sig_addr);
    if (sig_op == ACLSHMEM_SIGNAL_SET) {
        pshmem_int32_atomic_set(sig, signal, pe);
    } else {
        pshmem_int32_atomic_add(sig, signal, pe);
    }
}

// The sig_op check comes before the data moves, so a refused call moves nothing.
bool sig_op_ok(const char *call, int sig_op) {
    if (sig_op == ACLSHMEM_SIGNAL_SET || sig_op == ACLSHMEM_SIGNAL_ADD) return true;
    log_call_error(
        call,
        "invalid argument sig_op=%d: not ACLSHMEM_SIGNAL_SET (0) or ACLSHMEM_SIGNAL_ADD (1) "
        "(code %d, ACLSHMEM_INVALID_PARAM)",
        sig_op, ACLSHMEM_INVALID_PARAM);
    return false;
}

}  // namespace

// ---- Symmetric memory ----------------------------------------------------------------------

SHMEM_EXPORT void *aclshmem_malloc(size_t size) {
    return running("aclshmem_malloc") ? pshmem_malloc(size) : nullptr;
}

SHMEM_EXPORT void *aclshmem_calloc(size_t nmemb, size_t size) {
    return running("aclshmem_calloc") ? pshmem_calloc(nmemb, size) : nullptr;
}

SHMEM_EXPORT void *aclshmem_align(size_t alignment, size_t size) {
    return running("aclshmem_align") ? pshmem_align(alignment, size) : nullptr;
}

SHMEM_EXPORT void aclshmem_free(void *ptr) {
    if (ptr != nullptr && running("aclshmem_free")) pshmem_free(ptr);
}

SHMEM_EXPORT void *aclshmemx_malloc(size_t size, aclshmem_mem_type_t mem_type) {
    const char *call = "aclshmemx_malloc";
    return running(call) && kind_ok(call, mem_type) ? pshmem_malloc(size) : nullptr;
}

SHMEM_EXPORT void *aclshmemx_calloc(size_t count, size_t size, aclshmem_mem_type_t mem_type) {
    const char *call = "aclshmemx_calloc";
    return running(call) && kind_ok(call, mem_type) ? pshmem_calloc(count, size) : nullptr;
}

SHMEM_EXPORT void *aclshmemx_align(size_t alignment, size_t size, aclshmem_mem_type_t mem_type) {
    const char *call = "aclshmemx_align";
    return running(call) && kind_ok(call, mem_type) ? pshmem_align(alignment, size) : nullptr;
}

SHMEM_EXPORT void aclshmemx_free(void *ptr, aclshmem_mem_type_t mem_type) {
    const char *call = "aclshmemx_free";
    if (ptr != nullptr && running(call) && kind_ok(call, mem_type)) pshmem_free(ptr);
}

SHMEM_EXPORT void *aclshmemx_get_heap_base(aclshmem_mem_type_t mem_type) {
    const char *call = "aclshmemx_get_heap_base";
    if (!running(call) || !kind_ok(call, mem_type)) return nullptr;
    return reinterpret_cast<void *>(g.heap_base);
}

SHMEM_EXPORT void *aclshmem_ptr(void *ptr, int pe) {
    return pe_ok("aclshmem_ptr", pe) ? pshmem_ptr(ptr, pe) : nullptr;
}

// ---- RMA -----------------------------------------------------------------------------------

SHMEM_EXPORT void aclshmem_putmem(void *dst, void *src, size_t elem_size, int32_t pe) {
    if (pe_ok("aclshmem_putmem", pe)) pshmem_putmem(dst, src, elem_size, pe);
}

SHMEM_EXPORT void aclshmem_getmem(void *dst, void *src, size_t elem_size, int32_t pe) {
    if (pe_ok("aclshmem_getmem", pe)) pshmem_getmem(dst, src, elem_size, pe);
}

SHMEM_EXPORT void aclshmem_putmem_nbi(void *dst, void *src, size_t elem_size, int32_t pe) {
    if (pe_ok("aclshmem_putmem_nbi", pe)) pshmem_putmem_nbi(dst, src, elem_size, pe);
}

SHMEM_EXPORT void aclshmem_getmem_nbi(void *dst, void *src, size_t elem_size, int32_t pe) {
    if (pe_ok("aclshmem_getmem_nbi", pe)) pshmem_getmem_nbi(dst, src, elem_size, pe);
}

SHMEM_EXPORT void aclshmemx_putmem_signal(void *dst, void *src, size_t elem_size, void *sig_addr,
                                          int32_t signal, int sig_op, int pe) {
    const char *call = "aclshmemx_putmem_signal";
    if (!pe_ok(call, pe) || !sig_op_ok(call, sig_op)) return;
    pshmem_putmem(dst, src, elem_size, pe);
    signal_after(sig_addr, signal, sig_op, pe);
}

SHMEM_EXPORT void aclshmemx_putmem_signal_nbi(void *dst, void *src, size_t elem_size,
                                              void *sig_addr, int32_t signal, int sig_op, int pe) {
    const char *call = "aclshmemx_putmem_signal_nbi";
    if (!pe_ok(call, pe) || !sig_op_ok(call, sig_op)) return;
    pshmem_putmem_nbi(dst, src, elem_size, pe);
    signal_after(sig_addr, signal, sig_op, pe);
}

SHMEM_EXPORT int aclshmemx_set_mte_config(uint64_t offset, uint32_t ub_size, uint32_t event_id) {
    const char *call = "aclshmemx_set_mte_config";
    if (!running(call)) return ACLSHMEM_NOT_INITED;
    // The unified buffer is addressed in 32-byte blocks and a core has 8 MTE event ids: the
    // AscendC architecture stages its copies through [offset, offset + ub_size) in chunks of
    // ub_size and synchronises them on event_id, so each must be valid as given.
    const char *arg = nullptr;
    unsigned long long value = 0;
    const char *why = nullptr;
    if (ub_size < kMteUbAlign || ub_size % kMteUbAlign != 0) {
        arg = "ub_size", value = ub_size, why = "not a nonzero multiple of 32 bytes";
    } else if (offset % kMteUbAlign != 0) {
        arg = "offset", value = offset, why = "not 32-byte aligned";
    } else if (event_id >= kMteEventIds) {
        arg = "event_id", value = event_id, why = "not in [0, 8)";
    }
    if (arg != nullptr) {
        log_call_error(call, "invalid argument %s=%llu: %s (code %d, ACLSHMEM_INVALID_PARAM)", arg,
                       value, why, ACLSHMEM_INVALID_PARAM);
        return ACLSHMEM_INVALID_PARAM;
    }
    // Read by kernels only (the CPU architecture has no unified buffer and ignores them); a
    // device copy of the state takes them at its next refresh.
    g.mte_ub_offset = offset;
    g.mte_ub_size = ub_size;
    g.mte_event_id = event_id;
    return ACLSHMEM_SUCCESS;
}

// The typed forms, one definition per CANN type.
#define ACLSHMEMI_DEFINE_RMA(NAME, TYPE)                                                           \
    SHMEM_EXPORT void aclshmem_put_##NAME##_mem(TYPE *dest, TYPE *source, size_t nelems, int pe) { \
        if (pe_ok("aclshmem_put_" #NAME "_mem", pe))                                               \
            pshmem_##NAME##_put(dest, source, nelems, pe);                                         \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_put_##NAME##_mem_nbi(TYPE *dest, TYPE *source, size_t nelems,       \
                                                    int pe) {                                      \
        if (pe_ok("aclshmem_put_" #NAME "_mem_nbi", pe))                                           \
            pshmem_##NAME##_put_nbi(dest, source, nelems, pe);                                     \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_get_##NAME##_mem(TYPE *dest, TYPE *source, size_t nelems, int pe) { \
        if (pe_ok("aclshmem_get_" #NAME "_mem", pe))                                               \
            pshmem_##NAME##_get(dest, source, nelems, pe);                                         \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_get_##NAME##_mem_nbi(TYPE *dest, TYPE *source, size_t nelems,       \
                                                    int pe) {                                      \
        if (pe_ok("aclshmem_get_" #NAME "_mem_nbi", pe))                                           \
            pshmem_##NAME##_get_nbi(dest, source, nelems, pe);                                     \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_put_##NAME##_mem_signal(TYPE *dst, TYPE *src, size_t elem_size,     \
                                                       uint8_t *sig_addr, int32_t signal,          \
                                                       int sig_op, int pe) {                       \
        const char *call = "aclshmem_put_" #NAME "_mem_signal";                                    \
        if (!pe_ok(call, pe) || !sig_op_ok(call, sig_op)) return;                                  \
        pshmem_##NAME##_put(dst, src, elem_size, pe);                                              \
        signal_after(sig_addr, signal, sig_op, pe);                                                \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_put_##NAME##_mem_signal_nbi(TYPE *dst, TYPE *src, size_t elem_size, \
                                                           uint8_t *sig_addr, int32_t signal,      \
                                                           int sig_op, int pe) {                   \
        const char *call = "aclshmem_put_" #NAME "_mem_signal_nbi";                                \
        if (!pe_ok(call, pe) || !sig_op_ok(call, sig_op)) return;                                  \
        pshmem_##NAME##_put_nbi(dst, src, elem_size, pe);                                          \
        signal_after(sig_addr, signal, sig_op, pe);                                                \
    }                                                                                              \
    SHMEM_EXPORT void aclshmem_##NAME##_p(TYPE *dst, const TYPE value, int pe) {                   \
        if (pe_ok("aclshmem_" #NAME "_p", pe)) pshmem_##NAME##_p(dst, value, pe);                  \
    }                                                                                              \
    SHMEM_EXPORT TYPE aclshmem_##NAME##_g(TYPE *src, int32_t pe) {                                 \
        return pe_ok("aclshmem_" #NAME "_g", pe) ? pshmem_##NAME##_g(src, pe) : TYPE{};            \
    }
ACLSHMEMI_HOST_TYPES(ACLSHMEMI_DEFINE_RMA)
#undef ACLSHMEMI_DEFINE_RMA
