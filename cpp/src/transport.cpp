// transport.cpp: the facade's side of the transport table (shmem/transport.h), for the PEs the
// job state marks SHMEM_JOB_REACH_TRANSPORT and, while a transport is in use, every AMO. Out of
// line and never on the mapped path: rma.h and amo.h come here when the job state's view has no
// base for the PE (internal.h: remote, amo_remote), and each entry first asks remote_miss whether
// the call is the transport's or must fail. An address crosses the table as its segment and
// offset, the same on every PE. The peer_*_cold entries serve peer.h's helpers (collectives,
// locks, team words), which already hold the segment and offset.
#include "internal.h"
#include "peer.h"

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

template <bool Nbi>
void transport_put(const char *call, const void *ctx, void *addr, const void *source, size_t n,
                   int pe) {
    // No bytes: nothing to reach, whatever the addresses (NULL included) and the PE's path
    // (remote() has checked the PE). The transport is never asked to move nothing.
    if (n == 0) return;
    remote_miss(call, "dest", addr, n, pe, false);
    const shmem_transport_ops &t = ops(call, pe);
    int segment;
    uint64_t offset;
    locate(call, "dest", addr, n, &segment, &offset);
    auto op = Nbi ? t.put_nbi : t.put;
    if (SHMEM_UNLIKELY(op(t.self, ctx_key(ctx), pe, segment, offset, source, n) != 0)) {
        fail_logged();
    }
}

template <bool Nbi>
void transport_get(const char *call, const void *ctx, void *dest, const void *addr, size_t n,
                   int pe) {
    if (n == 0) return;  // as in transport_put
    remote_miss(call, "source", addr, n, pe, false);
    const shmem_transport_ops &t = ops(call, pe);
    int segment;
    uint64_t offset;
    locate(call, "source", addr, n, &segment, &offset);
    auto op = Nbi ? t.get_nbi : t.get;
    if (SHMEM_UNLIKELY(op(t.self, ctx_key(ctx), pe, segment, offset, dest, n) != 0)) {
        fail_logged();
    }
}

template void transport_put<false>(const char *, const void *, void *, const void *, size_t, int);
template void transport_put<true>(const char *, const void *, void *, const void *, size_t, int);
template void transport_get<false>(const char *, const void *, void *, const void *, size_t, int);
template void transport_get<true>(const char *, const void *, void *, const void *, size_t, int);

template <size_t Size>
void transport_put_one(const char *call, const void *ctx, void *addr, uint64_t value, int pe) {
    transport_put<false>(call, ctx, addr, &value, Size, pe);  // the low bytes: little-endian
}

template <size_t Size>
uint64_t transport_get_one(const char *call, const void *ctx, const void *addr, int pe) {
    uint64_t value = 0;
    transport_get<false>(call, ctx, &value, addr, Size, pe);
    return value;
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "an element travels in the low bytes of a uint64_t");
template void transport_put_one<1>(const char *, const void *, void *, uint64_t, int);
template void transport_put_one<2>(const char *, const void *, void *, uint64_t, int);
template void transport_put_one<4>(const char *, const void *, void *, uint64_t, int);
template void transport_put_one<8>(const char *, const void *, void *, uint64_t, int);
template uint64_t transport_get_one<1>(const char *, const void *, const void *, int);
template uint64_t transport_get_one<2>(const char *, const void *, const void *, int);
template uint64_t transport_get_one<4>(const char *, const void *, const void *, int);
template uint64_t transport_get_one<8>(const char *, const void *, const void *, int);

uint64_t transport_amo(const char *call, const char *arg, const void *ctx, int op, const void *addr,
                       size_t size, uint64_t value, uint64_t compare, int pe) {
    remote_miss(call, arg, addr, size, pe, true);  // size > 0: nullptr, or the call fails
    const shmem_transport_ops &t = ops(call, pe);
    int segment;
    uint64_t offset;
    locate(call, arg, addr, size, &segment, &offset);
    uint64_t old = 0;
    if (SHMEM_UNLIKELY(t.amo(t.self, ctx_key(ctx), pe, segment, offset, op, size, value, compare,
                             &old) != 0)) {
        fail_logged();
    }
    return old;
}

void peer_get_cold(const char *call, void *dest, Sym s, int pe, size_t n) {
    const shmem_transport_ops &t = ops(call, pe);
    if (SHMEM_UNLIKELY(t.get(t.self, nullptr, pe, s.segment, s.off, dest, n) != 0)) fail_logged();
}

void peer_put_cold(const char *call, Sym s, int pe, const void *source, size_t n) {
    const shmem_transport_ops &t = ops(call, pe);
    // The table's put is OpenSHMEM's (visible after quiet); the protocols on peer.h count on
    // their writes having landed when the helper returns.
    if (SHMEM_UNLIKELY(t.put(t.self, nullptr, pe, s.segment, s.off, source, n) != 0 ||
                       t.quiet(t.self, nullptr) != 0)) {
        fail_logged();
    }
}

uint64_t peer_amo_cold(const char *call, int op, Sym s, int pe, size_t size, uint64_t value,
                       uint64_t compare) {
    const shmem_transport_ops &t = ops(call, pe);
    uint64_t old = 0;
    if (SHMEM_UNLIKELY(
            t.amo(t.self, nullptr, pe, s.segment, s.off, op, size, value, compare, &old) != 0)) {
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
