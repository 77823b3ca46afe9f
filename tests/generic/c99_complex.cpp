// c99_complex.cpp: C++ code written as for other OpenSHMEM libraries, passing C99's
// float _Complex * and double _Complex * to the complex sum and product reductions: typed,
// generic, active-set and profiling (pshmem_) forms. Built with -pedantic -Werror as C++11, 14
// and 17 by GCC or Clang; every PE checks its own results. Exits 0 on success.
#include <pshmem.h>
#include <shmem.h>

#include <cstdio>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "PE %d: %s:%d: check failed: %s\n", shmem_my_pe(), __FILE__,      \
                         __LINE__, #cond);                                                         \
            shmem_global_exit(1);                                                                  \
        }                                                                                          \
    } while (0)

namespace {

const int kN = 3;
long psync[SHMEM_REDUCE_SYNC_SIZE];

// PE p's element i: (p + i + 1) + (i - p) i, exact in float for the PE counts tested.
template <typename C, typename R>
C contribution(int p, int i) {
    C z;
    __real__ z = static_cast<R>(p + i + 1);
    __imag__ z = static_cast<R>(i - p);
    return z;
}

template <typename C, typename R>
bool same(C a, C b) {
    return __real__ a == __real__ b && __imag__ a == __imag__ b;
}

// The expected sum and product of element i over `npes` PEs.
template <typename C, typename R>
void expected(int npes, int i, C *sum, C *prod) {
    *sum = contribution<C, R>(0, i);
    *prod = *sum;
    for (int p = 1; p < npes; p++) {
        *sum += contribution<C, R>(p, i);
        *prod *= contribution<C, R>(p, i);
    }
}

// Every form for one C99 complex type `C` of real type `R`; `typed_sum` and friends are the
// routines of that type, called with C99 pointers.
template <typename C, typename R>
void check(int (*generic_sum)(shmem_team_t, C *, const C *, size_t),
           int (*generic_prod)(shmem_team_t, C *, const C *, size_t),
           int (*typed_sum)(shmem_team_t, C *, const C *, size_t),
           int (*typed_prod)(shmem_team_t, C *, const C *, size_t),
           int (*profiled_sum)(shmem_team_t, C *, const C *, size_t),
           void (*sum_to_all)(C *, const C *, int, int, int, int, C *, long *),
           void (*prod_to_all)(C *, const C *, int, int, int, int, C *, long *)) {
    int me = shmem_my_pe(), npes = shmem_n_pes();
    C *src = static_cast<C *>(shmem_malloc(kN * sizeof(C)));
    C *dst = static_cast<C *>(shmem_malloc(kN * sizeof(C)));
    C *work = static_cast<C *>(shmem_malloc(SHMEM_REDUCE_MIN_WRKDATA_SIZE * sizeof(C)));
    CHECK(src != NULL && dst != NULL && work != NULL);
    for (int i = 0; i < kN; i++) src[i] = contribution<C, R>(me, i);
    for (int form = 0; form < 7; form++) {
        for (int i = 0; i < kN; i++) dst[i] = C();
        bool is_sum = form % 2 == 0;
        switch (form) {
        case 0: CHECK(generic_sum(SHMEM_TEAM_WORLD, dst, src, kN) == 0); break;
        case 1: CHECK(generic_prod(SHMEM_TEAM_WORLD, dst, src, kN) == 0); break;
        case 2: CHECK(typed_sum(SHMEM_TEAM_WORLD, dst, src, kN) == 0); break;
        case 3: CHECK(typed_prod(SHMEM_TEAM_WORLD, dst, src, kN) == 0); break;
        case 4: CHECK(profiled_sum(SHMEM_TEAM_WORLD, dst, src, kN) == 0); break;
        case 5: prod_to_all(dst, src, kN, 0, 0, npes, work, psync); break;
        default: sum_to_all(dst, src, kN, 0, 0, npes, work, psync); break;
        }
        for (int i = 0; i < kN; i++) {
            C sum, prod;
            expected<C, R>(npes, i, &sum, &prod);
            if (!same<C, R>(dst[i], is_sum ? sum : prod)) {
                std::fprintf(stderr, "PE %d: form %d, element %d: got %g%+gi, want %g%+gi\n", me,
                             form, i, static_cast<double>(__real__ dst[i]),
                             static_cast<double>(__imag__ dst[i]),
                             static_cast<double>(__real__(is_sum ? sum : prod)),
                             static_cast<double>(__imag__(is_sum ? sum : prod)));
                shmem_global_exit(1);
            }
        }
        shmem_barrier_all();  // nobody reads src or reuses psync before everyone is done
    }
    shmem_free(work);
    shmem_free(dst);
    shmem_free(src);
}

}  // namespace

int main() {
    shmem_init();
    for (long &w : psync) w = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    // The generic names, the typed names and the pshmem_ twins resolve to the C99 overloads.
    check<float _Complex, float>(shmem_sum_reduce, shmem_prod_reduce, shmem_complexf_sum_reduce,
                                 shmem_complexf_prod_reduce, pshmem_complexf_sum_reduce,
                                 shmem_complexf_sum_to_all, shmem_complexf_prod_to_all);
    check<double _Complex, double>(shmem_sum_reduce, shmem_prod_reduce, shmem_complexd_sum_reduce,
                                   shmem_complexd_prod_reduce, pshmem_complexd_sum_reduce,
                                   shmem_complexd_sum_to_all, shmem_complexd_prod_to_all);
    // Direct calls, as such code makes them: every PE gives 1 + 1i.
    static double _Complex one, total;
    __real__ one = 1.0;
    __imag__ one = 1.0;
    CHECK(shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, &total, &one, 1) == 0);
    CHECK(__real__ total == shmem_n_pes() && __imag__ total == shmem_n_pes());
    CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, &total, &one, 1) == 0);
    CHECK(__real__ total == shmem_n_pes() && __imag__ total == shmem_n_pes());
    if (shmem_my_pe() == 0) std::printf("C99 complex reductions: every form checked\n");
    shmem_finalize();
    return 0;
}
