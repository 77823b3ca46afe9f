// rma.cpp: puts and gets, byte, typed, sized and strided. On this device every peer's memory
// is mapped here, so a put is a copy into the peer's mapping and completes at once; the
// non-blocking forms are the same copy. Typed and sized routines are generated from the type
// tables in <shmem/types.h>.
#include "rma.h"

using namespace shmem::detail;

SHMEM_EXPORT void pshmem_putmem(void *dest, const void *source, size_t nelems, int pe) {
    put("shmem_putmem", dest, source, nelems, pe);
}

SHMEM_EXPORT void pshmem_getmem(void *dest, const void *source, size_t nelems, int pe) {
    get("shmem_getmem", dest, source, nelems, pe);
}

SHMEM_EXPORT void pshmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
    put("shmem_putmem_nbi", dest, source, nelems, pe, nullptr, true);
}

SHMEM_EXPORT void pshmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
    get("shmem_getmem_nbi", dest, source, nelems, pe, nullptr, true);
}

SHMEM_WEAK_ALIAS(shmem_putmem)
SHMEM_WEAK_ALIAS(shmem_getmem)
SHMEM_WEAK_ALIAS(shmem_putmem_nbi)
SHMEM_WEAK_ALIAS(shmem_getmem_nbi)

#define SHMEM_DEFINE_RMA_TYPED(TYPE, NAME)                                                         \
    SHMEM_EXPORT void pshmem_##NAME##_put(TYPE *dest, const TYPE *source, size_t nelems, int pe) { \
        const char *call = "shmem_" #NAME "_put";                                                  \
        put(call, dest, source, extent(call, nelems, sizeof(TYPE)), pe);                           \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_get(TYPE *dest, const TYPE *source, size_t nelems, int pe) { \
        const char *call = "shmem_" #NAME "_get";                                                  \
        get(call, dest, source, extent(call, nelems, sizeof(TYPE)), pe);                           \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_put_nbi(TYPE *dest, const TYPE *source, size_t nelems,       \
                                              int pe) {                                            \
        const char *call = "shmem_" #NAME "_put_nbi";                                              \
        put(call, dest, source, extent(call, nelems, sizeof(TYPE)), pe, nullptr, true);            \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_get_nbi(TYPE *dest, const TYPE *source, size_t nelems,       \
                                              int pe) {                                            \
        const char *call = "shmem_" #NAME "_get_nbi";                                              \
        get(call, dest, source, extent(call, nelems, sizeof(TYPE)), pe, nullptr, true);            \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_p(TYPE *dest, TYPE value, int pe) {                          \
        put_one<sizeof(TYPE)>("shmem_" #NAME "_p", dest, &value, pe);                              \
    }                                                                                              \
    SHMEM_EXPORT TYPE pshmem_##NAME##_g(const TYPE *source, int pe) {                              \
        TYPE value;                                                                                \
        get_one<sizeof(TYPE)>("shmem_" #NAME "_g", &value, source, pe);                            \
        return value;                                                                              \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_iput(TYPE *dest, const TYPE *source, ptrdiff_t dst,          \
                                           ptrdiff_t sst, size_t nelems, int pe) {                 \
        strided<sizeof(TYPE)>("shmem_" #NAME "_iput", true, dest, source, dst, sst, nelems, pe);   \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_##NAME##_iget(TYPE *dest, const TYPE *source, ptrdiff_t dst,          \
                                           ptrdiff_t sst, size_t nelems, int pe) {                 \
        strided<sizeof(TYPE)>("shmem_" #NAME "_iget", false, dest, source, dst, sst, nelems, pe);  \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_put)                                                           \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_get)                                                           \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_put_nbi)                                                       \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_get_nbi)                                                       \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_p)                                                             \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_g)                                                             \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_iput)                                                          \
    SHMEM_WEAK_ALIAS(shmem_##NAME##_iget)
SHMEM_RMA_TYPES(SHMEM_DEFINE_RMA_TYPED)

#define SHMEM_DEFINE_RMA_SIZED(BITS)                                                               \
    SHMEM_EXPORT void pshmem_put##BITS(void *dest, const void *source, size_t nelems, int pe) {    \
        const char *call = "shmem_put" #BITS;                                                      \
        put(call, dest, source, extent(call, nelems, BITS / 8), pe);                               \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_get##BITS(void *dest, const void *source, size_t nelems, int pe) {    \
        const char *call = "shmem_get" #BITS;                                                      \
        get(call, dest, source, extent(call, nelems, BITS / 8), pe);                               \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_put##BITS##_nbi(void *dest, const void *source, size_t nelems,        \
                                             int pe) {                                             \
        const char *call = "shmem_put" #BITS "_nbi";                                               \
        put(call, dest, source, extent(call, nelems, BITS / 8), pe, nullptr, true);                \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_get##BITS##_nbi(void *dest, const void *source, size_t nelems,        \
                                             int pe) {                                             \
        const char *call = "shmem_get" #BITS "_nbi";                                               \
        get(call, dest, source, extent(call, nelems, BITS / 8), pe, nullptr, true);                \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_iput##BITS(void *dest, const void *source, ptrdiff_t dst,             \
                                        ptrdiff_t sst, size_t nelems, int pe) {                    \
        strided<BITS / 8>("shmem_iput" #BITS, true, dest, source, dst, sst, nelems, pe);           \
    }                                                                                              \
    SHMEM_EXPORT void pshmem_iget##BITS(void *dest, const void *source, ptrdiff_t dst,             \
                                        ptrdiff_t sst, size_t nelems, int pe) {                    \
        strided<BITS / 8>("shmem_iget" #BITS, false, dest, source, dst, sst, nelems, pe);          \
    }                                                                                              \
    SHMEM_WEAK_ALIAS(shmem_put##BITS)                                                              \
    SHMEM_WEAK_ALIAS(shmem_get##BITS)                                                              \
    SHMEM_WEAK_ALIAS(shmem_put##BITS##_nbi)                                                        \
    SHMEM_WEAK_ALIAS(shmem_get##BITS##_nbi)                                                        \
    SHMEM_WEAK_ALIAS(shmem_iput##BITS)                                                             \
    SHMEM_WEAK_ALIAS(shmem_iget##BITS)
SHMEM_RMA_SIZES(SHMEM_DEFINE_RMA_SIZED)
