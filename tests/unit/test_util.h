// test_util.h: small helpers shared by the multi-PE unit tests.
#pragma once

#include <gtest/gtest.h>
#include <shmem.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace testutil {

inline int me() { return shmem_my_pe(); }
// The loopback test transport is on (SHMEM_TEST_LOOPBACK): shmem_ptr may answer NULL for a peer
// it reaches through the transport table.
inline bool test_transport_on() { return std::getenv("SHMEM_TEST_LOOPBACK") != nullptr; }
inline int npes() { return shmem_n_pes(); }
// Where the multi-node harness (tests/multinode/multinode.sh) put the PEs: MULTINODE_LAYOUT
// lists the PEs of each node in blocks ("2,2,1": PEs 0-1, 2-3 and 4). The first PE of `pe`'s
// node and that node's PE count; the whole job when unset (one node).
inline std::pair<int, int> node_block(int pe) {
    const char *layout = std::getenv("MULTINODE_LAYOUT");
    int first = 0;
    for (const char *p = layout; p != nullptr && *p != '\0';) {
        char *end = nullptr;
        long count = std::strtol(p, &end, 10);
        if (end == p || count <= 0) break;
        if (pe < first + count) return {first, static_cast<int>(count)};
        first += static_cast<int>(count);
        p = *end == ',' ? end + 1 : end;
    }
    return {0, shmem_n_pes()};
}
// Whether `pe` runs on this PE's node, so that shmem_ptr reaches it (without a test transport).
inline bool on_my_node(int pe) { return node_block(pe) == node_block(shmem_my_pe()); }
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

// `v` for a failure message: integers in decimal and hex (so the upper half of a 64-bit value
// shows), other types as the stream prints them.
template <typename T>
std::string show(T v) {
    std::ostringstream o;
    if constexpr (std::is_integral_v<T>) {
        if constexpr (std::is_signed_v<T>) {
            o << static_cast<long long>(v);
        } else {
            o << static_cast<unsigned long long>(v);
        }
        o << " (0x" << std::hex << static_cast<unsigned long long>(v) << ")";
    } else {
        o << v;
    }
    return o.str();
}

// Whether `got` equals `want`, with both shown when not. Evaluates `got` once (it may be the
// routine under test itself).
template <typename T>
testing::AssertionResult same_value(T got, T want) {
    if (got == want) return testing::AssertionSuccess();
    return testing::AssertionFailure() << "got " << show(got) << ", want " << show(want);
}

// An active set of the deprecated collectives (PE_start, logPE_stride, PE_size).
struct ActiveSet {
    int start;
    int log;
    int size;

    int stride() const { return 1 << log; }
    // World PE of set member `i`.
    int pe(int i) const { return start + i * stride(); }
    // This PE's index in the set, or -1 when it is not a member.
    int index() const {
        int d = me() - start;
        if (d < 0 || d % stride() != 0 || d / stride() >= size) return -1;
        return d / stride();
    }
};

// The whole job, every other PE, and every PE but PE 0 (the whole job when it has one PE). They
// overlap, so a case that shares pSync or buffers between them runs one set at a time.
inline std::vector<ActiveSet> active_sets() {
    int n = npes();
    return {{0, 0, n}, {0, 1, (n + 1) / 2}, {n > 1 ? 1 : 0, 0, n > 1 ? n - 1 : 1}};
}

}  // namespace testutil
