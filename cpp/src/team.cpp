// team.cpp: the predefined teams, the set of live teams, and the team queries.
#include "team.h"

#include <algorithm>
#include <mutex>
#include <vector>

using namespace shmem::detail;

// The predefined handles (SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED) point at these.
extern "C" __attribute__((visibility("default"))) shmem_team_s shmem_internal_team_world{};
extern "C" __attribute__((visibility("default"))) shmem_team_s shmem_internal_team_shared{};

namespace {

// Teams made by splits and not destroyed. Team routines are not on the data path, so a mutex
// and a linear search are fine; the predefined teams are checked first.
std::mutex live_mutex;
std::vector<shmem_team_s *> live;

bool predefined(const shmem_team_s *t) {
    return t == &shmem_internal_team_world || t == &shmem_internal_team_shared;
}

}  // namespace

namespace shmem::detail {

void teams_start() {
    shmem_team_s &world = shmem_internal_team_world;
    world.start = 0;
    world.stride = 1;
    world.size = g.n_pes;
    world.my_pe = g.my_pe;
    world.config = shmem_team_config_t{};
    world.config_mask = 0;
    world.slot = 0;
    // Every PE of this job shares memory with every other (one node, device `host`); a job
    // spanning nodes stops at init until a network data path exists.
    shmem_team_s &shared = shmem_internal_team_shared;
    shared.start = 0;
    shared.stride = 1;
    shared.size = g.n_pes;
    shared.my_pe = g.my_pe;
    shared.config = shmem_team_config_t{};
    shared.config_mask = 0;
    shared.slot = 1;
}

void teams_stop() {
    std::lock_guard<std::mutex> lock(live_mutex);
    for (shmem_team_s *t : live) delete t;
    live.clear();
    shmem_internal_team_world.size = 0;
    shmem_internal_team_shared.size = 0;
}

shmem_team_s *team_find(shmem_team_t team) {
    if (team == SHMEM_TEAM_INVALID || g.phase.load(std::memory_order_acquire) != kRunning) {
        return nullptr;
    }
    if (predefined(team)) return team;
    std::lock_guard<std::mutex> lock(live_mutex);
    auto it = std::find(live.begin(), live.end(), team);
    return it == live.end() ? nullptr : *it;
}

shmem_team_s *team_check(const char *call, const char *arg, shmem_team_t team) {
    require_running(call);
    if (team == SHMEM_TEAM_INVALID) fail(call, "invalid argument %s=SHMEM_TEAM_INVALID", arg);
    shmem_team_s *t = team_find(team);
    if (t == nullptr) {
        fail(call, "invalid argument %s=%p: not a team (destroyed, or never created)", arg,
             static_cast<void *>(team));
    }
    return t;
}

void team_register(shmem_team_s *team) {
    std::lock_guard<std::mutex> lock(live_mutex);
    live.push_back(team);
}

void team_unregister(shmem_team_s *team) {
    std::lock_guard<std::mutex> lock(live_mutex);
    live.erase(std::remove(live.begin(), live.end(), team), live.end());
}

}  // namespace shmem::detail

SHMEM_EXPORT int pshmem_team_my_pe(shmem_team_t team) {
    const shmem_team_s *t = team_find(team);
    return t == nullptr ? -1 : t->my_pe;
}

SHMEM_EXPORT int pshmem_team_n_pes(shmem_team_t team) {
    const shmem_team_s *t = team_find(team);
    return t == nullptr ? -1 : t->size;
}

SHMEM_EXPORT int pshmem_team_get_config(shmem_team_t team, long config_mask,
                                        shmem_team_config_t *config) {
    const shmem_team_s *t = team_find(team);
    if (t == nullptr) return -1;
    if (config_mask & ~SHMEM_TEAM_NUM_CONTEXTS) {
        fail("shmem_team_get_config",
             "invalid argument config_mask=%#lx: bits other than SHMEM_TEAM_NUM_CONTEXTS",
             config_mask);
    }
    if (config_mask != 0 && config == nullptr) {
        fail("shmem_team_get_config", "invalid argument config=NULL with config_mask=%#lx",
             config_mask);
    }
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS) config->num_contexts = t->config.num_contexts;
    return 0;
}

SHMEM_EXPORT int pshmem_team_translate_pe(shmem_team_t src_team, int src_pe,
                                          shmem_team_t dest_team) {
    const shmem_team_s *src = team_find(src_team);
    const shmem_team_s *dest = team_find(dest_team);
    if (src == nullptr || dest == nullptr || src_pe < 0 || src_pe >= src->size) return -1;
    return team_pe_of(dest, team_world_pe(src, src_pe));
}

SHMEM_WEAK_ALIAS(shmem_team_my_pe)
SHMEM_WEAK_ALIAS(shmem_team_n_pes)
SHMEM_WEAK_ALIAS(shmem_team_get_config)
SHMEM_WEAK_ALIAS(shmem_team_translate_pe)
