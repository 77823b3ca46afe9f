// memfabric_bridge.h: what the facade's memfabric files share around the runtime's bridge
// (defined in memfabric.cpp): the caller's text as the bridge's strings, and the bridge's
// answers as memfabric's codes with their reasons. Internal to libshmem.so.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rust/cxx.h"

namespace shmemi_mf {

// `s` as the bridge's UTF-8 string ("" for NULL) into `out`; false, with the reason naming
// `arg` in `why`, when it is not UTF-8.
bool text(const char *s, const char *arg, rust::Str &out, char *why, size_t why_len);

// The bridge's `rc`; its `reason` into `why` when it failed.
int32_t answer(int32_t rc, const rust::String &reason, char *why, size_t why_len);

}  // namespace shmemi_mf
