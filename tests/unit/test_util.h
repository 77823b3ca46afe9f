// test_util.h: small helpers shared by the multi-PE unit tests.
#pragma once

#include <shmem.h>

#include <cstddef>
#include <cstdint>

namespace shmem_test {

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

}  // namespace shmem_test
