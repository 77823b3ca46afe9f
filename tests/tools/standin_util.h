// standin_util.h: what the device libraries' stand-ins (tests/acl, tests/cuda) both need of the
// host: parsing their size variables, aligned address-space reservations, memfd-backed memory,
// and lookups in their address-ordered maps. Header-only, C++17, never installed.
#ifndef SHMEM_TESTS_STANDIN_UTIL_H
#define SHMEM_TESTS_STANDIN_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

namespace standin {

// Parses an unsigned decimal number with an optional K/M/G suffix (powers of 1024).
inline bool parse_size(const char *text, uint64_t *out) {
    if (!text || *text < '0' || *text > '9') return false;
    char *end = nullptr;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text) return false;
    int shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10, ++end;
    if (*end == 'M' || *end == 'm') shift = 20, ++end;
    if (*end == 'G' || *end == 'g') shift = 30, ++end;
    if (*end) return false;
    if (shift && v > (~0ULL >> shift)) return false;
    *out = static_cast<uint64_t>(v) << shift;
    return true;
}

inline size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Reserves [base, base + size) as PROT_NONE, aligned to `align`; nullptr when out of space.
inline void *reserve_range(size_t size, size_t align) {
    size_t span = size + align;
    void *raw = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    uintptr_t base = round_up(start, align);
    if (base > start) munmap(raw, base - start);
    uintptr_t end = start + span;
    if (end > base + size) munmap(reinterpret_cast<void *>(base + size), end - base - size);
    return reinterpret_cast<void *>(base);
}

// Returns [va, va + size) to an inaccessible reservation.
inline void unmap_to_reserved(uintptr_t va, size_t size) {
    mmap(reinterpret_cast<void *>(va), size, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}

// A memfd of `size` bytes named `name`; -1 with errno set on failure.
inline int make_memfd(const char *name, size_t size) {
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) return -1;
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

// The first key of the address-ordered map `m` inside [p, p + n), or 0.
template <typename Map>
uintptr_t first_start_in(const Map &m, uintptr_t p, size_t n) {
    auto it = m.lower_bound(p);
    if (it != m.end() && it->first - p < n) return it->first;
    return 0;
}

}  // namespace standin

#endif  // SHMEM_TESTS_STANDIN_UTIL_H
