// test_util.h: small helpers shared by the multi-PE unit tests.
#pragma once

#include <shmem.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace testutil {

inline int me() { return shmem_my_pe(); }
inline int npes() { return shmem_n_pes(); }
inline int next_pe() { return (me() + 1) % npes(); }
inline int prev_pe() { return (me() + npes() - 1) % npes(); }
// A peer half the job away (the strided target); the same PE only in a 1-PE job.
inline int far_pe() { return (me() + npes() / 2) % npes(); }
inline int far_source() { return (me() + npes() - npes() / 2) % npes(); }

// Byte i of the pattern that PE `pe` writes in round `round`.
inline unsigned char pattern(int pe, size_t i, int round = 0) {
    return static_cast<unsigned char>((pe * 131 + static_cast<int>(i) * 7 + round * 29) & 0xff);
}

// The PEs a case talks to: this PE sends to `to` and receives from `from`; gets read `to`.
struct Peer {
    const char *name;
    int to;
    int from;
};

// The next PE and the PE half the job away (distinct targets from 3 PEs on).
inline std::vector<Peer> peers() {
    return {{"next", next_pe(), prev_pe()}, {"far", far_pe(), far_source()}};
}

// A symmetric target of `n` elements: shmem_calloc'ed (freed with this object) or a global
// array, so every case runs on heap and static data alike.
template <typename T>
class Target {
public:
    static Target heap(size_t n) {
        return Target(static_cast<T *>(shmem_calloc(n, sizeof(T))), true);
    }
    static Target fixed(T *global) { return Target(global, false); }
    Target(const Target &) = delete;
    Target &operator=(const Target &) = delete;
    ~Target() {
        if (owned_) shmem_free(p_);
    }
    T *get() const { return p_; }

private:
    Target(T *p, bool owned) : p_(p), owned_(owned) {}
    T *p_;
    bool owned_;
};

}  // namespace testutil
