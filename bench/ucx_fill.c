/* bench/ucx_fill.c: an LD_PRELOAD library for ucx_perftest that writes a pattern into every
 * buffer UCP allocates for it (ucp_mem_map with UCP_MEM_MAP_ALLOCATE), once, right after the
 * allocation and before any timed step.
 *
 * Why: ucx_perftest never writes its buffers. Anonymous memory that was never written reads as
 * the kernel's zero page (one page, or one 2 MiB huge page, shared by all such mappings), so
 * the side that sends the data (the put's initiator, the get's responder) copies from a page
 * that stays in the CPU's cache, not from 64 MiB of DRAM. Over TCP, where UCX copies every byte
 * through its segments, that copy is cheaper than one of real data (docs/performance.md,
 * "Across nodes: smem_bm_copy against ucx_perftest", has the figures). With this library
 * ucx_perftest moves data, as any program does; nothing else of it changes (same binary, same UCX,
 * same buffers, same timing).
 *
 * Built by scripts/bench-multinode.sh (cc -shared -fPIC ... -ldl); needs no UCX headers: the
 * two structures are declared below with UCX 1.x's layout (their first fields, which UCP's
 * field masks keep stable across versions). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef int ucs_status_t; /* UCS_OK is 0 */

/* ucp_mem_map_params_t's leading fields (field_mask bits: ADDRESS 1, LENGTH 2, FLAGS 4). */
struct map_params {
    uint64_t field_mask;
    void *address;
    size_t length;
    unsigned flags;
};
#define PARAM_FIELD_FLAGS (1u << 2)
#define MEM_MAP_ALLOCATE (1u << 1)

/* ucp_mem_attr_t (field_mask bits: ADDRESS 1, LENGTH 2), with room for later fields. */
struct mem_attr {
    uint64_t field_mask;
    void *address;
    size_t length;
    uint64_t spare[8];
};

typedef ucs_status_t (*map_fn)(void *context, const struct map_params *params, void **memh);
typedef ucs_status_t (*query_fn)(void *memh, struct mem_attr *attr);

ucs_status_t ucp_mem_map(void *context, const struct map_params *params, void **memh) {
    static map_fn real_map;
    static query_fn query;
    if (!real_map) {
        real_map = (map_fn)dlsym(RTLD_NEXT, "ucp_mem_map");
        query = (query_fn)dlsym(RTLD_NEXT, "ucp_mem_query");
    }
    if (!real_map) return -1; /* UCS_ERR_NO_MESSAGE: no UCP underneath */
    ucs_status_t s = real_map(context, params, memh);
    int allocated =
        params && (params->field_mask & PARAM_FIELD_FLAGS) && (params->flags & MEM_MAP_ALLOCATE);
    if (s != 0 || !allocated || !query) return s; /* registered user memory: left as it is */
    struct mem_attr a = {.field_mask = 1 | 2};
    if (query(*memh, &a) == 0 && a.address && a.length) memset(a.address, 0x5a, a.length);
    return s;
}
