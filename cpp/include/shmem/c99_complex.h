/*
 * shmem/c99_complex.h: in C++ built by GCC or Clang, the complex sum and product reductions
 * also take C99's float _Complex * and double _Complex *, as code written for other OpenSHMEM
 * libraries passes them. Each overload hands its pointers, unchanged, to the routine of the
 * same name that takes std::complex (the same two-element layout). <shmem.h> includes it with
 * SHMEM_C99_NAME(x) defined as shmem_##x, <pshmem.h> as pshmem_##x. No include guard: it is
 * included once per prefix. C has these types already and needs nothing here.
 */
#ifndef SHMEM_C99_NAME
#error "shmem/c99_complex.h is included by <shmem.h> and <pshmem.h> only"
#endif

#ifdef SHMEM_C99_COMPLEX_TYPES
extern "C++" {
#define SHMEM_C99_REDUCE(C99, T, N, OP)                                                            \
    inline int SHMEM_C99_NAME(N##_##OP##_reduce)(shmem_team_t team, C99 * dest, const C99 *source, \
                                                 size_t nreduce) {                                 \
        return SHMEM_C99_NAME(N##_##OP##_reduce)(team, reinterpret_cast<T *>(dest),                \
                                                 reinterpret_cast<const T *>(source), nreduce);    \
    }                                                                                              \
    inline void SHMEM_C99_NAME(N##_##OP##_to_all)(C99 * dest, const C99 *source, int nreduce,      \
                                                  int PE_start, int logPE_stride, int PE_size,     \
                                                  C99 *pWrk, long *pSync) {                        \
        SHMEM_C99_NAME(N##_##OP##_to_all)                                                          \
        (reinterpret_cast<T *>(dest), reinterpret_cast<const T *>(source), nreduce, PE_start,      \
         logPE_stride, PE_size, reinterpret_cast<T *>(pWrk), pSync);                               \
    }
SHMEM_C99_COMPLEX_TYPES(SHMEM_C99_REDUCE, sum)
SHMEM_C99_COMPLEX_TYPES(SHMEM_C99_REDUCE, prod)
#undef SHMEM_C99_REDUCE
}
#endif
