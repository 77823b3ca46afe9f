// ctx_amo.cpp: the shmem_ctx_ forms of the atomic memory operations. Each turns the context's
// team PE into a world PE (ctx.h) and is then the AMO without ctx (amo.h). Generated from the
// AMO type tables in <shmem/types.h>.
#include "amo.h"
#include "ctx.h"

using namespace shmem::detail;

#define SHMEM_CTX_NAME(NAME, OP) "shmem_ctx_" #NAME "_atomic_" #OP

#define SHMEM_DEFINE_CTX_AMO_EXTENDED(TYPE, NAME)                                                  \
    SHMEM_EXPORT TYPE pshmem_ctx_##NAME##_atomic_fetch(shmem_ctx_t ctx, const TYPE *source,        \
                                                       int pe) {                                   \
        const char *call = SHMEM_CTX_NAME(NAME, fetch);                                            \
        return fetch(call, source, ctx_world_pe(call, ctx, pe), ctx);                              \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_atomic_set(shmem_ctx_t ctx, TYPE *dest, TYPE value,      \
                                                     int pe) {                                     \
        const char *call = SHMEM_CTX_NAME(NAME, set);                                              \
        set(call, dest, value, ctx_world_pe(call, ctx, pe), ctx);                                  \
    }                                                                                              \
    SHMEM_EXPORT TYPE pshmem_ctx_##NAME##_atomic_swap(shmem_ctx_t ctx, TYPE *dest, TYPE value,     \
                                                      int pe) {                                    \
        const char *call = SHMEM_CTX_NAME(NAME, swap);                                             \
        return swap(call, dest, value, ctx_world_pe(call, ctx, pe), ctx);                          \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_atomic_fetch_nbi(shmem_ctx_t ctx, TYPE *out,             \
                                                           const TYPE *source, int pe) {           \
        const char *call = SHMEM_CTX_NAME(NAME, fetch_nbi);                                        \
        int world = ctx_world_pe(call, ctx, pe);                                                   \
        *fetch_buffer(call, out) = fetch(call, source, world, ctx);                                \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_atomic_swap_nbi(shmem_ctx_t ctx, TYPE *out, TYPE *dest,  \
                                                          TYPE value, int pe) {                    \
        const char *call = SHMEM_CTX_NAME(NAME, swap_nbi);                                         \
        int world = ctx_world_pe(call, ctx, pe);                                                   \
        *fetch_buffer(call, out) = swap(call, dest, value, world, ctx);                            \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_fetch)                                              \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_set)                                                \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_swap)                                               \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_fetch_nbi)                                          \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_swap_nbi)
SHMEM_AMO_EXTENDED_TYPES(SHMEM_DEFINE_CTX_AMO_EXTENDED)

#define SHMEM_DEFINE_CTX_AMO_STANDARD(TYPE, NAME)                                                  \
    SHMEM_EXPORT TYPE pshmem_ctx_##NAME##_atomic_compare_swap(shmem_ctx_t ctx, TYPE *dest,         \
                                                              TYPE cond, TYPE value, int pe) {     \
        const char *call = SHMEM_CTX_NAME(NAME, compare_swap);                                     \
        return compare_swap(call, dest, cond, value, ctx_world_pe(call, ctx, pe), ctx);            \
    }                                                                                              \
    SHMEM_EXPORT TYPE pshmem_ctx_##NAME##_atomic_fetch_inc(shmem_ctx_t ctx, TYPE *dest, int pe) {  \
        const char *call = SHMEM_CTX_NAME(NAME, fetch_inc);                                        \
        return fetch_add(call, dest, static_cast<TYPE>(1), ctx_world_pe(call, ctx, pe), ctx);      \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_atomic_inc(shmem_ctx_t ctx, TYPE *dest, int pe) {        \
        const char *call = SHMEM_CTX_NAME(NAME, inc);                                              \
        fetch_add(call, dest, static_cast<TYPE>(1), ctx_world_pe(call, ctx, pe), ctx);             \
    }                                                                                              \
    SHMEM_EXPORT TYPE pshmem_ctx_##NAME##_atomic_fetch_add(shmem_ctx_t ctx, TYPE *dest,            \
                                                           TYPE value, int pe) {                   \
        const char *call = SHMEM_CTX_NAME(NAME, fetch_add);                                        \
        return fetch_add(call, dest, value, ctx_world_pe(call, ctx, pe), ctx);                     \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_atomic_add(shmem_ctx_t ctx, TYPE *dest, TYPE value,      \
                                                     int pe) {                                     \
        const char *call = SHMEM_CTX_NAME(NAME, add);                                              \
        fetch_add(call, dest, value, ctx_world_pe(call, ctx, pe), ctx);                            \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_atomic_compare_swap_nbi(                                 \
        shmem_ctx_t ctx, TYPE *out, TYPE *dest, TYPE cond, TYPE value, int pe) {                   \
        const char *call = SHMEM_CTX_NAME(NAME, compare_swap_nbi);                                 \
        int world = ctx_world_pe(call, ctx, pe);                                                   \
        *fetch_buffer(call, out) = compare_swap(call, dest, cond, value, world, ctx);              \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, TYPE *out,         \
                                                               TYPE *dest, int pe) {               \
        const char *call = SHMEM_CTX_NAME(NAME, fetch_inc_nbi);                                    \
        int world = ctx_world_pe(call, ctx, pe);                                                   \
        *fetch_buffer(call, out) = fetch_add(call, dest, static_cast<TYPE>(1), world, ctx);        \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_atomic_fetch_add_nbi(shmem_ctx_t ctx, TYPE *out,         \
                                                               TYPE *dest, TYPE value, int pe) {   \
        const char *call = SHMEM_CTX_NAME(NAME, fetch_add_nbi);                                    \
        int world = ctx_world_pe(call, ctx, pe);                                                   \
        *fetch_buffer(call, out) = fetch_add(call, dest, value, world, ctx);                       \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_compare_swap)                                       \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_fetch_inc)                                          \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_inc)                                                \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_fetch_add)                                          \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_add)                                                \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_compare_swap_nbi)                                   \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_fetch_inc_nbi)                                      \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_fetch_add_nbi)
SHMEM_AMO_STANDARD_TYPES(SHMEM_DEFINE_CTX_AMO_STANDARD)

#define SHMEM_DEFINE_CTX_AMO_BITWISE_OP(TYPE, NAME, OP)                                            \
    SHMEM_EXPORT TYPE pshmem_ctx_##NAME##_atomic_fetch_##OP(shmem_ctx_t ctx, TYPE *dest,           \
                                                            TYPE value, int pe) {                  \
        const char *call = SHMEM_CTX_NAME(NAME, fetch_##OP);                                       \
        return fetch_##OP(call, dest, value, ctx_world_pe(call, ctx, pe), ctx);                    \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_atomic_##OP(shmem_ctx_t ctx, TYPE *dest, TYPE value,     \
                                                      int pe) {                                    \
        const char *call = SHMEM_CTX_NAME(NAME, OP);                                               \
        fetch_##OP(call, dest, value, ctx_world_pe(call, ctx, pe), ctx);                           \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_ctx_##NAME##_atomic_fetch_##OP##_nbi(                                 \
        shmem_ctx_t ctx, TYPE *out, TYPE *dest, TYPE value, int pe) {                              \
        const char *call = SHMEM_CTX_NAME(NAME, fetch_##OP##_nbi);                                 \
        int world = ctx_world_pe(call, ctx, pe);                                                   \
        *fetch_buffer(call, out) = fetch_##OP(call, dest, value, world, ctx);                      \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_fetch_##OP)                                         \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_##OP)                                               \
    SHMEM_WEAK_ALIAS(shmem_ctx_##NAME##_atomic_fetch_##OP##_nbi)
#define SHMEM_DEFINE_CTX_AMO_BITWISE(TYPE, NAME)                                                   \
    SHMEM_DEFINE_CTX_AMO_BITWISE_OP(TYPE, NAME, and)                                               \
    SHMEM_DEFINE_CTX_AMO_BITWISE_OP(TYPE, NAME, or)                                                \
    SHMEM_DEFINE_CTX_AMO_BITWISE_OP(TYPE, NAME, xor)
SHMEM_AMO_BITWISE_TYPES(SHMEM_DEFINE_CTX_AMO_BITWISE)
