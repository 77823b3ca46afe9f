// static_data.cpp: the library constructor that makes global and static variables symmetric.
//
// It must run before main and before any user thread, so it is a constructor of libshmem
// itself: the runtime moves the executable's data past RELRO into shared memory at the same
// addresses (rust/core/src/static_data/). It never fails the program: a failure only becomes
// the reason a global or static target is refused later.
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"

namespace {

__attribute__((constructor)) void shmem_static_data_constructor() {
    shmem::core::static_data_prepare();
}

}  // namespace
