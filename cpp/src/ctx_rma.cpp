// ctx_rma.cpp: the shmem_ctx_ forms of the puts and gets (byte, typed, sized, strided, p/g). Each
// turns the context's team PE into a world PE (ctx.h) and is then the routine without ctx
// (rma.h). Typed and sized routines are generated from the type tables in <shmem/types.h>.
#include "ctx.h"
#include "rma.h"

using namespace shmem::detail;

SHMEM_EXPORT void pshmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                                    int pe) {
    const char *call = "shmem_ctx_putmem";
    put(call, dest, source, nelems, ctx_world_pe(call, ctx, pe), ctx);
}

SHMEM_EXPORT void pshmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                                    int pe) {
    const char *call = "shmem_ctx_getmem";
    get(call, dest, source, nelems, ctx_world_pe(call, ctx, pe), ctx);
}

SHMEM_EXPORT void pshmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source,
                                        size_t nelems, int pe) {
    const char *call = "shmem_ctx_putmem_nbi";
    put(call, dest, source, nelems, ctx_world_pe(call, ctx, pe), ctx, true);
}

SHMEM_EXPORT void pshmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source,
                                        size_t nelems, int pe) {
    const char *call = "shmem_ctx_getmem_nbi";
    get(call, dest, source, nelems, ctx_world_pe(call, ctx, pe), ctx, true);
}

SHMEM_WEAK_ALIAS(shmem_ctx_putmem)
SHMEM_WEAK_ALIAS(shmem_ctx_getmem)
SHMEM_WEAK_ALIAS(shmem_ctx_putmem_nbi)
SHMEM_WEAK_ALIAS(shmem_ctx_getmem_nbi)

// One contiguous put or get of `nelems` elements of SIZE bytes on a context.
#define SHMEM_CTX_CONTIGUOUS(OP, NAME, SIZE, NBI)                                                  \
    const char *call = NAME;                                                                       \
    OP(call, dest, source, extent(call, nelems, SIZE), ctx_world_pe(call, ctx, pe), ctx, NBI)

#define SHMEM_DEFINE_CTX_RMA_TYPED(TYPE, NAME)                                                     \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_put(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,     \
                                              size_t nelems, int pe) {                             \
        SHMEM_CTX_CONTIGUOUS(put, "shmem_ctx_" #NAME "_put", sizeof(TYPE), false);                 \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_get(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,     \
                                              size_t nelems, int pe) {                             \
        SHMEM_CTX_CONTIGUOUS(get, "shmem_ctx_" #NAME "_get", sizeof(TYPE), false);                 \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_put_nbi(shmem_ctx_t ctx, TYPE *dest, const TYPE *source, \
                                                  size_t nelems, int pe) {                         \
        SHMEM_CTX_CONTIGUOUS(put, "shmem_ctx_" #NAME "_put_nbi", sizeof(TYPE), true);              \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_get_nbi(shmem_ctx_t ctx, TYPE *dest, const TYPE *source, \
                                                  size_t nelems, int pe) {                         \
        SHMEM_CTX_CONTIGUOUS(get, "shmem_ctx_" #NAME "_get_nbi", sizeof(TYPE), true);              \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_p(shmem_ctx_t ctx, TYPE *dest, TYPE value, int pe) {     \
        const char *call = "shmem_ctx_" #NAME "_p";                                                \
        put_one<sizeof(TYPE)>(call, dest, &value, ctx_world_pe(call, ctx, pe), ctx);               \
    }                                                                                              \
    SHMEM_EXPORT TYPE pshmem_ctx_##NAME##_g(shmem_ctx_t ctx, const TYPE *source, int pe) {         \
        const char *call = "shmem_ctx_" #NAME "_g";                                                \
        TYPE value;                                                                                \
        get_one<sizeof(TYPE)>(call, &value, source, ctx_world_pe(call, ctx, pe), ctx);             \
        return value;                                                                              \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_iput(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,    \
                                               ptrdiff_t dst, ptrdiff_t sst, size_t nelems,        \
                                               int pe) {                                           \
        const char *call = "shmem_ctx_" #NAME "_iput";                                             \
        strided<sizeof(TYPE)>(call, true, dest, source, dst, sst, nelems,                          \
                              ctx_world_pe(call, ctx, pe), ctx);                                   \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_iget(shmem_ctx_t ctx, TYPE *dest, const TYPE *source,    \
                                               ptrdiff_t dst, ptrdiff_t sst, size_t nelems,        \
                                               int pe) {                                           \
        const char *call = "shmem_ctx_" #NAME "_iget";                                             \
        strided<sizeof(TYPE)>(call, false, dest, source, dst, sst, nelems,                         \
                              ctx_world_pe(call, ctx, pe), ctx);                                   \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_put)                                                       \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_get)                                                       \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_put_nbi)                                                   \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_get_nbi)                                                   \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_p)                                                         \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_g)                                                         \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_iput)                                                      \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_iget)
SHMEM_RMA_TYPES(SHMEM_DEFINE_CTX_RMA_TYPED)

#define SHMEM_DEFINE_CTX_RMA_SIZED(BITS)                                                           \
    SHMEM_EXPORT void pshmem_ctx_put##BITS(shmem_ctx_t ctx, void *dest, const void *source,        \
                                           size_t nelems, int pe) {                                \
        SHMEM_CTX_CONTIGUOUS(put, "shmem_ctx_put" #BITS, BITS / 8, false);                         \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_get##BITS(shmem_ctx_t ctx, void *dest, const void *source,        \
                                           size_t nelems, int pe) {                                \
        SHMEM_CTX_CONTIGUOUS(get, "shmem_ctx_get" #BITS, BITS / 8, false);                         \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_put##BITS##_nbi(shmem_ctx_t ctx, void *dest, const void *source,  \
                                                 size_t nelems, int pe) {                          \
        SHMEM_CTX_CONTIGUOUS(put, "shmem_ctx_put" #BITS "_nbi", BITS / 8, true);                   \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_get##BITS##_nbi(shmem_ctx_t ctx, void *dest, const void *source,  \
                                                 size_t nelems, int pe) {                          \
        SHMEM_CTX_CONTIGUOUS(get, "shmem_ctx_get" #BITS "_nbi", BITS / 8, true);                   \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_iput##BITS(shmem_ctx_t ctx, void *dest, const void *source,       \
                                            ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) { \
        const char *call = "shmem_ctx_iput" #BITS;                                                 \
        strided<BITS / 8>(call, true, dest, source, dst, sst, nelems, ctx_world_pe(call, ctx, pe), \
                          ctx);                                                                    \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_iget##BITS(shmem_ctx_t ctx, void *dest, const void *source,       \
                                            ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) { \
        const char *call = "shmem_ctx_iget" #BITS;                                                 \
        strided<BITS / 8>(call, false, dest, source, dst, sst, nelems,                             \
                          ctx_world_pe(call, ctx, pe), ctx);                                       \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_ctx_put##BITS)                                                          \
    SHMEM_WEAK_ALIAS(shmem_ctx_get##BITS)                                                          \
    SHMEM_WEAK_ALIAS(shmem_ctx_put##BITS##_nbi)                                                    \
    SHMEM_WEAK_ALIAS(shmem_ctx_get##BITS##_nbi)                                                    \
    SHMEM_WEAK_ALIAS(shmem_ctx_iput##BITS)                                                         \
    SHMEM_WEAK_ALIAS(shmem_ctx_iget##BITS)
SHMEM_RMA_SIZES(SHMEM_DEFINE_CTX_RMA_SIZED)
