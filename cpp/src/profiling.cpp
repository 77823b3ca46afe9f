// profiling.cpp: shmem_pcontrol. The library keeps no profile of its own; the level is recorded
// (the last one set wins) and has no effect. A profiling tool defines its own shmem_pcontrol
// (ours is a weak alias of pshmem_pcontrol) and so sees every call with its extra arguments.
#include <atomic>

#include "internal.h"

namespace {

// 1 is the level the specification recommends after shmem_init: profiling on, default detail.
std::atomic<int> pcontrol_level{1};

}  // namespace

SHMEM_EXPORT void pshmem_pcontrol(const int level, ...) {
    pcontrol_level.store(level, std::memory_order_relaxed);
}

SHMEM_WEAK_ALIAS(shmem_pcontrol)
