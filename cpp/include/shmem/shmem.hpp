// shmem/shmem.hpp: a small C++17 layer over the OpenSHMEM C API of <shmem.h>, header-only.
//
//   shmem::runtime rt;                                  // shmem_init ... shmem_finalize
//   auto buf = shmem::symmetric_array<long>(n);         // shmem_calloc ... shmem_free
//   shmem::put(buf.data(), src, n, rt.right());         // typed, checked at compile time
//   shmem::barrier_all();
//
// Every call goes straight to the C routine of its type (the overloads of <shmem/generic.h>);
// the templates only check at compile time that the type is one the routine supports. Where
// the C API reports an error by its result, this layer throws in the caller: an allocation that
// returns NULL throws std::bad_alloc, a refused thread level throws shmem::error. Other bad
// input (a PE out of range, an address that is not symmetric) ends the job with a message, as
// in C. Allocation and freeing are collective: every PE must construct and destroy its
// symmetric arrays in the same order with the same sizes.
#ifndef SHMEM_SHMEM_HPP
#define SHMEM_SHMEM_HPP

#if __cplusplus < 201703L
#error "shmem/shmem.hpp needs C++17"
#endif

#include <shmem.h>

#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace shmem {

// An error the C API reported by its result.
class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

namespace detail {

// Which types each routine family supports: the type tables of <shmem/types.h> (their generic
// part; the fixed-width types are typedefs of its members).
template <typename T>
struct rma_type : std::false_type {};
template <typename T>
struct amo_standard_type : std::false_type {};
template <typename T>
struct amo_extended_type : std::false_type {};
template <typename T>
struct amo_bitwise_type : std::false_type {};
template <typename T>
struct sync_type : std::false_type {};
#define SHMEM_HPP_RMA(T, N)                                                                        \
    template <>                                                                                    \
    struct rma_type<T> : std::true_type {};
#define SHMEM_HPP_AMO_STANDARD(T, N)                                                               \
    template <>                                                                                    \
    struct amo_standard_type<T> : std::true_type {};
#define SHMEM_HPP_AMO_EXTENDED(T, N)                                                               \
    template <>                                                                                    \
    struct amo_extended_type<T> : std::true_type {};
#define SHMEM_HPP_AMO_BITWISE(T, N)                                                                \
    template <>                                                                                    \
    struct amo_bitwise_type<T> : std::true_type {};
#define SHMEM_HPP_SYNC(T, N)                                                                       \
    template <>                                                                                    \
    struct sync_type<T> : std::true_type {};
SHMEM_RMA_GENERIC_TYPES(SHMEM_HPP_RMA)
SHMEM_AMO_STANDARD_GENERIC_TYPES(SHMEM_HPP_AMO_STANDARD)
SHMEM_AMO_EXTENDED_GENERIC_TYPES(SHMEM_HPP_AMO_EXTENDED)
SHMEM_AMO_BITWISE_GENERIC_TYPES(SHMEM_HPP_AMO_BITWISE)
SHMEM_SYNC_GENERIC_TYPES(SHMEM_HPP_SYNC)
#undef SHMEM_HPP_RMA
#undef SHMEM_HPP_AMO_STANDARD
#undef SHMEM_HPP_AMO_EXTENDED
#undef SHMEM_HPP_AMO_BITWISE
#undef SHMEM_HPP_SYNC

// The type of a value argument, not deduced from it.
template <typename T>
struct type_identity {
    using type = T;
};
template <typename T>
using same_t = typename type_identity<T>::type;

template <typename T>
constexpr void check_rma() {
    static_assert(rma_type<std::remove_cv_t<T>>::value,
                  "shmem: not a standard RMA type of OpenSHMEM (see <shmem/types.h>)");
}
template <typename T>
constexpr void check_amo_standard() {
    static_assert(amo_standard_type<std::remove_cv_t<T>>::value,
                  "shmem: not a standard AMO type (int, long, long long, their unsigned "
                  "forms, and the fixed-width and size types of those sizes)");
}
template <typename T>
constexpr void check_amo_extended() {
    static_assert(amo_extended_type<std::remove_cv_t<T>>::value,
                  "shmem: not an extended AMO type (the standard AMO types, float, double)");
}
template <typename T>
constexpr void check_amo_bitwise() {
    static_assert(amo_bitwise_type<std::remove_cv_t<T>>::value,
                  "shmem: not a bitwise AMO type (unsigned int, unsigned long, unsigned long "
                  "long, int32_t, int64_t, uint32_t, uint64_t)");
}
template <typename T>
constexpr void check_sync() {
    static_assert(sync_type<std::remove_cv_t<T>>::value,
                  "shmem: not a point-to-point synchronisation type (short, int, long, long "
                  "long, their unsigned forms, and the fixed-width and size types)");
}

}  // namespace detail

// ---- Runtime --------------------------------------------------------------------------------

enum class thread_level : int {
    single = SHMEM_THREAD_SINGLE,
    funneled = SHMEM_THREAD_FUNNELED,
    serialized = SHMEM_THREAD_SERIALIZED,
    multiple = SHMEM_THREAD_MULTIPLE,
};

// Starts the library for its lifetime: shmem_init (or shmem_init_thread) in the constructor,
// shmem_finalize in the destructor. One per program, like the calls it makes.
class runtime {
public:
    runtime() { shmem_init(); }
    // Throws shmem::error when the library cannot provide `level`.
    explicit runtime(thread_level level) {
        int provided = 0;
        if (shmem_init_thread(static_cast<int>(level), &provided) != 0) {
            throw error("shmem_init_thread: the library did not start");
        }
        if (provided < static_cast<int>(level)) {
            shmem_finalize();
            throw error("shmem_init_thread: thread level " +
                        std::to_string(static_cast<int>(level)) + " requested, " +
                        std::to_string(provided) + " provided");
        }
    }
    runtime(const runtime &) = delete;
    runtime &operator=(const runtime &) = delete;
    ~runtime() { shmem_finalize(); }

    int my_pe() const { return shmem_my_pe(); }
    int n_pes() const { return shmem_n_pes(); }
    // The next and previous PE around the ring of all PEs.
    int right() const { return (my_pe() + 1) % n_pes(); }
    int left() const { return (my_pe() + n_pes() - 1) % n_pes(); }
};

inline int my_pe() { return shmem_my_pe(); }
inline int n_pes() { return shmem_n_pes(); }
inline void barrier_all() { shmem_barrier_all(); }
inline void sync_all() { shmem_sync_all(); }
inline void quiet() { shmem_quiet(); }
inline void fence() { shmem_fence(); }

// ---- Symmetric memory -----------------------------------------------------------------------

// Frees symmetric memory (collective, like shmem_free).
struct deleter {
    void operator()(void *p) const noexcept { shmem_free(p); }
};

// An owning pointer to a symmetric block.
template <typename T>
using unique_ptr = std::unique_ptr<T, deleter>;

// `count` zeroed elements of T on the symmetric heap (collective); throws std::bad_alloc when
// the heap cannot hold them (the library logs why). A count of 0 gives an empty pointer.
template <typename T>
unique_ptr<T[]> make_symmetric(std::size_t count) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                  "shmem: symmetric memory holds trivially copyable types only");
    if (count == 0) return unique_ptr<T[]>();
    void *p = shmem_calloc(count, sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return unique_ptr<T[]>(static_cast<T *>(p));
}

// A symmetric array of `size` zeroed elements: the same address on every PE, freed when it
// goes out of scope. Construction and destruction are collective.
template <typename T>
class symmetric_array {
public:
    explicit symmetric_array(std::size_t size) : data_(make_symmetric<T>(size)), size_(size) {}

    T *data() noexcept { return data_.get(); }
    const T *data() const noexcept { return data_.get(); }
    std::size_t size() const noexcept { return size_; }
    T &operator[](std::size_t i) noexcept { return data_[i]; }
    const T &operator[](std::size_t i) const noexcept { return data_[i]; }
    T *begin() noexcept { return data(); }
    T *end() noexcept { return data() + size_; }
    const T *begin() const noexcept { return data(); }
    const T *end() const noexcept { return data() + size_; }

private:
    unique_ptr<T[]> data_;
    std::size_t size_;
};

// ---- Remote memory access (T: a standard RMA type) ------------------------------------------

template <typename T>
void put(T *dest, const T *source, std::size_t nelems, int pe) {
    detail::check_rma<T>();
    shmem_put(dest, source, nelems, pe);
}
template <typename T>
void get(T *dest, const T *source, std::size_t nelems, int pe) {
    detail::check_rma<T>();
    shmem_get(dest, source, nelems, pe);
}
template <typename T>
void put_nbi(T *dest, const T *source, std::size_t nelems, int pe) {
    detail::check_rma<T>();
    shmem_put_nbi(dest, source, nelems, pe);
}
template <typename T>
void get_nbi(T *dest, const T *source, std::size_t nelems, int pe) {
    detail::check_rma<T>();
    shmem_get_nbi(dest, source, nelems, pe);
}
template <typename T>
void p(T *dest, T value, int pe) {
    detail::check_rma<T>();
    shmem_p(dest, value, pe);
}
template <typename T>
T g(const T *source, int pe) {
    detail::check_rma<T>();
    return shmem_g(source, pe);
}
template <typename T>
void iput(T *dest, const T *source, std::ptrdiff_t dst, std::ptrdiff_t sst, std::size_t nelems,
          int pe) {
    detail::check_rma<T>();
    shmem_iput(dest, source, dst, sst, nelems, pe);
}
template <typename T>
void iget(T *dest, const T *source, std::ptrdiff_t dst, std::ptrdiff_t sst, std::size_t nelems,
          int pe) {
    detail::check_rma<T>();
    shmem_iget(dest, source, dst, sst, nelems, pe);
}

// ---- Atomic memory operations ---------------------------------------------------------------
// The value argument is not deduced (only the pointer is), so atomic_add(&long_var, 1, pe)
// works with an int literal.

template <typename T>
T atomic_fetch(const T *source, int pe) {
    detail::check_amo_extended<T>();
    return shmem_atomic_fetch(source, pe);
}
template <typename T>
void atomic_set(T *dest, detail::same_t<T> value, int pe) {
    detail::check_amo_extended<T>();
    shmem_atomic_set(dest, value, pe);
}
template <typename T>
T atomic_swap(T *dest, detail::same_t<T> value, int pe) {
    detail::check_amo_extended<T>();
    return shmem_atomic_swap(dest, value, pe);
}
template <typename T>
T atomic_compare_swap(T *dest, detail::same_t<T> cond, detail::same_t<T> value, int pe) {
    detail::check_amo_standard<T>();
    return shmem_atomic_compare_swap(dest, cond, value, pe);
}
template <typename T>
T atomic_fetch_inc(T *dest, int pe) {
    detail::check_amo_standard<T>();
    return shmem_atomic_fetch_inc(dest, pe);
}
template <typename T>
void atomic_inc(T *dest, int pe) {
    detail::check_amo_standard<T>();
    shmem_atomic_inc(dest, pe);
}
template <typename T>
T atomic_fetch_add(T *dest, detail::same_t<T> value, int pe) {
    detail::check_amo_standard<T>();
    return shmem_atomic_fetch_add(dest, value, pe);
}
template <typename T>
void atomic_add(T *dest, detail::same_t<T> value, int pe) {
    detail::check_amo_standard<T>();
    shmem_atomic_add(dest, value, pe);
}
#define SHMEM_HPP_BITWISE(OP)                                                                      \
    template <typename T>                                                                          \
    T atomic_fetch_##OP(T *dest, detail::same_t<T> value, int pe) {                                \
        detail::check_amo_bitwise<T>();                                                            \
        return shmem_atomic_fetch_##OP(dest, value, pe);                                           \
    }                                                                                              \
    template <typename T>                                                                          \
    void atomic_##OP(T *dest, detail::same_t<T> value, int pe) {                                   \
        detail::check_amo_bitwise<T>();                                                            \
        shmem_atomic_##OP(dest, value, pe);                                                        \
    }
SHMEM_HPP_BITWISE(and)
SHMEM_HPP_BITWISE(or)
SHMEM_HPP_BITWISE(xor)
#undef SHMEM_HPP_BITWISE

// ---- Point-to-point synchronisation ---------------------------------------------------------

enum class cmp : int {
    eq = SHMEM_CMP_EQ,
    ne = SHMEM_CMP_NE,
    gt = SHMEM_CMP_GT,
    ge = SHMEM_CMP_GE,
    lt = SHMEM_CMP_LT,
    le = SHMEM_CMP_LE,
};

// Blocks until `*ivar op value` holds; ivar is a local symmetric element peers update.
template <typename T>
void wait_until(T *ivar, cmp op, detail::same_t<T> value) {
    detail::check_sync<T>();
    shmem_wait_until(ivar, static_cast<int>(op), value);
}
// Whether `*ivar op value` holds now.
template <typename T>
bool test(T *ivar, cmp op, detail::same_t<T> value) {
    detail::check_sync<T>();
    return shmem_test(ivar, static_cast<int>(op), value) != 0;
}

}  // namespace shmem

#endif  // SHMEM_SHMEM_HPP
