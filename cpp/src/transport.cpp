// transport.cpp: the facade's side of the transport table (shmem/transport.h), for the PEs the
// job state marks SHMEM_JOB_REACH_TRANSPORT and, while a transport is in use, every AMO. Out of
// line and never on the mapped path: rma.h and amo.h come here when the job state's view has no
// base for the PE (internal.h: remote, amo_remote). An address crosses the table as its segment and
// offset, the same on every PE.
#include "internal.h"

namespace shmem::detail {

namespace {

// The context as the transport knows it: nullptr for the default one, however it was named.
inline const void *ctx_key(const void *ctx) { return ctx == SHMEM_CTX_DEFAULT ? nullptr : ctx; }

// Segment and offset of [addr, addr+n), which remote() found symmetric.
void locate(const char *call, const char *arg, const void *addr, size_t n, int *segment,
            uint64_t *offset) {
    uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    uintptr_t heap_off = a - g.heap_base;
    uintptr_t data_off = a - g.data_base;
    if (heap_off <= g.heap_size && n <= g.heap_size - heap_off) {
        *segment = SHMEM_TRANSPORT_SEGMENT_HEAP;
        *offset = heap_off;
    } else if (data_off <= g.data_span && n <= g.data_span - data_off) {
        *segment = SHMEM_TRANSPORT_SEGMENT_DATA;
        *offset = data_off;
    } else {
        fail_addr(call, arg, addr, n);
    }
}

const shmem_transport_ops &ops(const char *call, int pe) {
    if (SHMEM_UNLIKELY(g.transport == nullptr)) {
        fail(call, "PE %d is not reachable from PE %d: no transport reaches it", pe, g.my_pe);
    }
    return *g.transport;
}

}  // namespace

void transport_put(const char *call, const void *ctx, bool nbi, const void *addr,
                   const void *source, size_t n, int pe) {
    if (n == 0) return;
    const shmem_transport_ops &t = ops(call, pe);
    int segment;
    uint64_t offset;
    locate(call, "dest", addr, n, &segment, &offset);
    auto op = nbi ? t.put_nbi : t.put;
    if (SHMEM_UNLIKELY(op(t.self, ctx_key(ctx), pe, segment, offset, source, n) != 0)) {
        fail_logged();
    }
}

void transport_get(const char *call, const void *ctx, bool nbi, void *dest, const void *addr,
                   size_t n, int pe) {
    if (n == 0) return;
    const shmem_transport_ops &t = ops(call, pe);
    int segment;
    uint64_t offset;
    locate(call, "source", addr, n, &segment, &offset);
    auto op = nbi ? t.get_nbi : t.get;
    if (SHMEM_UNLIKELY(op(t.self, ctx_key(ctx), pe, segment, offset, dest, n) != 0)) {
        fail_logged();
    }
}

uint64_t transport_amo(const char *call, const void *ctx, int op, const void *addr, size_t size,
                       uint64_t value, uint64_t compare, int pe) {
    const shmem_transport_ops &t = ops(call, pe);
    int segment;
    uint64_t offset;
    locate(call, "dest", addr, size, &segment, &offset);
    uint64_t old = 0;
    if (SHMEM_UNLIKELY(t.amo(t.self, ctx_key(ctx), pe, segment, offset, op, size, value, compare,
                             &old) != 0)) {
        fail_logged();
    }
    return old;
}

void transport_fence(const void *ctx) {
    const shmem_transport_ops *t = g.transport;
    if (t != nullptr && t->fence(t->self, ctx_key(ctx)) != 0) fail_logged();
}

void transport_quiet(const void *ctx) {
    const shmem_transport_ops *t = g.transport;
    if (t != nullptr && t->quiet(t->self, ctx_key(ctx)) != 0) fail_logged();
}

}  // namespace shmem::detail
