// memfabric.h: libshmem.so's entry points for libmf_smem.so (memfabric_hybrid's API over this
// library, cpp/smem/). Exported under the private prefix shmemi_mf_ (libshmem.map) so that
// libmf_smem.so reaches this process's one runtime; not part of the public API, no header of
// it is installed.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// Serves memfabric's config store at `url` in this process (smem_create_config_store). Returns
// 0, -2000 (the URL) or -1 (the start); on failure writes the reason, NUL-terminated, into
// `why` (`why_len` bytes, truncated to fit).
int32_t shmemi_mf_config_store_open(const char *url, char *why, size_t why_len);
}
