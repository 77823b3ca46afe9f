// team.h: what the facade's files know of a team. Teams are made and ended in team.cpp.
//
// A team is an arithmetic progression of world PEs: team PE i is world PE start + i * stride.
// A handle exists only on the team's members (others get SHMEM_TEAM_INVALID from a split), so
// my_pe is always a valid team PE number.
#pragma once

#include <atomic>

#include "internal.h"

struct shmem_team_s {
    int start = 0;   // world PE of team PE 0
    int stride = 1;  // world PEs between consecutive team PEs (>= 1)
    int size = 0;    // PEs in the team
    int my_pe = -1;  // this PE's number in the team
    shmem_team_config_t config{};
    long config_mask = 0;
    // Index of the team's synchronisation area in every member's reserved heap prefix; the same
    // on every member. The predefined teams use 0 (world) and 1 (shared).
    int slot = -1;
    // Contexts created from the team and not yet destroyed.
    std::atomic<int> contexts{0};
};

namespace shmem::detail {

// The team behind `team` as passed to `call` in argument `arg`; ends the job with a message
// naming both when it is SHMEM_TEAM_INVALID, destroyed or not a team handle, or when the library
// is not running.
shmem_team_s *team_check(const char *call, const char *arg, shmem_team_t team);

// The live team behind `team`, or nullptr (SHMEM_TEAM_INVALID, destroyed, unknown, or library not
// running). For the routines whose specification answers an invalid team with a value.
shmem_team_s *team_find(shmem_team_t team);

// Adds a team made by a split to the live set / removes it (team.cpp owns the set).
void team_register(shmem_team_s *team);
void team_unregister(shmem_team_s *team);

// World PE number of team PE `pe` (no checks).
inline int team_world_pe(const shmem_team_s *t, int pe) { return t->start + pe * t->stride; }

// Team PE number of world PE `world_pe`, or -1 when it is not a member.
inline int team_pe_of(const shmem_team_s *t, int world_pe) {
    int d = world_pe - t->start;
    if (d < 0 || d % t->stride != 0 || d / t->stride >= t->size) return -1;
    return d / t->stride;
}

// Called by shmem_init once the job is known, and by shmem_finalize.
void teams_start();
void teams_stop();

}  // namespace shmem::detail
