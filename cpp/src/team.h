// team.h: what the facade's files know of a team. Teams are made and ended in team.cpp.
//
// A team's members are an arithmetic progression of world PEs (team PE i is world PE
// start + i * stride), or any list of distinct world PEs (team PE i is world PE pes[i], in the
// order shmemx_team_create or a split of a list team gave them): a list team keeps its members
// in the table of its slot (team_list), outside the object, whose size is part of the ABI. The
// progression needs no table: team_world_pe is one multiply unless `listed`.
// A handle exists only on the team's members (others get SHMEM_TEAM_INVALID from a split), so
// my_pe is always a valid team PE number.
//
// Each team owns a synchronisation area, the same slot of every member's control segment (host
// memory beside the heap, shmem/job_state.h's control_* fields; layout below); its barriers and
// broadcasts count epochs there that only grow, so no word is ever reset while the team lives.
// A split zeroes the area of the slot it takes. The barrier itself is the runtime's (the one
// implementation, for the world barrier too); the facade calls it through the bridge.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "internal.h"
#include "rust/cxx.h"
#include "shmem-core/src/ffi.rs.h"

struct shmem_team_s {
    int start = 0;  // world PE of team PE 0
    // World PEs between consecutive team PEs: negative when a split listed the parent's PEs
    // downwards, 0 only for a list team (`listed`).
    int stride = 1;
    int size = 0;    // PEs in the team
    int my_pe = -1;  // this PE's number in the team
    shmem_team_config_t config{};
    // Nonzero: the members are the list team_list(slot) holds (start is its first, stride 0);
    // in what was padding, so the size is unchanged.
    int listed = 0;
    long config_mask = 0;
    // Index of the team's synchronisation area in every member's control segment; the same on
    // every member. The predefined teams use 0 (world) and 1 (shared).
    int slot = -1;
    // Contexts created from the team and not yet destroyed.
    std::atomic<int> contexts{0};
    // The last team collective this PE entered on the team, as team_enter wrote it into its CALL
    // line (name nullptr: none, or a call it did not keep): the same routine with the same
    // arguments again only counts itself there. 24 bytes, the size of what was here before,
    // since the predefined teams are exported objects a program may hold a copy of (a copy
    // relocation): their size is part of the ABI.
    struct LastCall {
        const char *name = nullptr;
        uint64_t count = 0;
        uint32_t extra = 0;
        uint32_t tag = 0;
    } last_call;
    // Members marked reached through the transport (peer_via_transport): nonzero on every member
    // or on none, and then the team's collectives take the shapes in which a PE waits only on
    // its own words (coll.cpp), the same on every member.
    uint64_t transport_members = 0;
    // Broadcasts this PE has entered on the team: every member makes the same collective calls
    // in the same order, so the counts agree between members.
    uint64_t bcast_epoch = 0;
};

namespace shmem::detail {

// The team behind `team` as passed to `call` in argument `arg`; ends the job with a message
// naming both when it is SHMEM_TEAM_INVALID, destroyed or not a team handle, or when the library
// is not running.
shmem_team_s *team_check(const char *call, const char *arg, shmem_team_t team);

// The live team behind `team`, or nullptr (SHMEM_TEAM_INVALID, destroyed, unknown, or library not
// running). For the routines whose specification answers an invalid team with a value.
shmem_team_s *team_find(shmem_team_t team);

// The team of this PE that holds slot `slot` (the predefined teams: 0 world, 1 shared), or
// nullptr (no such team here, or library not running). A team's slot is its number kernel-side
// and its CANN handle.
shmem_team_s *team_at_slot(int slot);

// Adds a team made by a split to the live set / removes it (team.cpp owns the set).
void team_register(shmem_team_s *team);
void team_unregister(shmem_team_s *team);

// Team slots a PE can use at once (the slot masks are 64 bits).
constexpr int kMaxTeamSlots = 64;

// The members of the list team at each slot of this PE (nullptr where the slot holds none or a
// progression): world PEs in team PE order, `size` of them, allocated by the call that makes the
// team before its handle exists and freed when it ends (team.cpp). Indexed by slot, which is
// unique among this PE's live teams; plain pointers, so nothing runs at the library's unload.
extern int *team_lists[kMaxTeamSlots] __attribute__((visibility("hidden")));

// The members of `t` as the runtime's team calls take them: the list of a list team, empty for
// a progression (start, stride, size say them).
inline rust::Slice<const int32_t> team_list_arg(const shmem_team_s *t) {
    if (!t->listed) return {};
    return {team_lists[t->slot], static_cast<size_t>(t->size)};
}

// World PE number of team PE `pe` (no checks).
inline int team_world_pe(const shmem_team_s *t, int pe) {
    if (SHMEM_UNLIKELY(t->listed)) return team_lists[t->slot][pe];
    return t->start + pe * t->stride;
}

// Team PE number of world PE `world_pe`, or -1 when it is not a member.
inline int team_pe_of(const shmem_team_s *t, int world_pe) {
    if (t->listed) {
        const int *l = team_lists[t->slot];
        for (int i = 0; i < t->size; i++) {
            if (l[i] == world_pe) return i;
        }
        return -1;
    }
    int d = world_pe - t->start;
    if (t->stride == 0) return d == 0 && t->size > 0 ? 0 : -1;
    if (d % t->stride != 0) return -1;
    int i = d / t->stride;
    return i >= 0 && i < t->size ? i : -1;
}

// Arguments of a team collective that every member must pass alike (team_enter's `checks`).
constexpr unsigned kTeamCheckCount = 1;  // `count`: nelems or nreduce
constexpr unsigned kTeamCheckRoot = 2;   // `extra`: PE_root
constexpr unsigned kTeamCheckSst = 4;    // `extra`: sst

// The CALL line of a member's team area (SHMEM_TEAM_AREA_CALL): the number of team
// collectives it has entered on the team (kTeamCallBusy set while it rewrites the line), then
// kTeamCallWords words of the last one, its name cut to kTeamNameBytes.
constexpr size_t kTeamNameBytes = 32;
constexpr size_t kTeamCallWords = 3 + kTeamNameBytes / 8;
constexpr uint64_t kTeamCallBusy = uint64_t{1} << 63;

// Records that this PE enters team collective `call` on `t` (every team collective, before its
// first wait) with the arguments every member must pass alike; returns the tag its barriers and
// flags carry, so that members whose calls differ end the job naming both instead of waiting
// for ever or mixing data. A few stores into this PE's own line, no call into the runtime; one
// store when the call repeats the last one on the team. A team of one PE checks nothing (tag
// 0).
uint64_t team_enter(shmem_team_s *t, const char *call, unsigned checks = 0, uint64_t count = 0,
                    uint64_t extra = 0);

// Barrier over the team's members on its area (no completion of puts): the runtime's barrier,
// for the team collective `tag` came from (team_enter); ends the job when their calls differ.
void team_barrier(const shmem_team_s *t, uint64_t tag);

// Once a wait on `t` naps: ends the job when a member is at this PE's team collective number
// in another call (the runtime looks at most every 50 ms).
inline void team_watch(const shmem_team_s *t) {
    core::team_watch(t->start, t->stride, t->size, t->my_pe, t->slot, team_list_arg(t));
}

// Ends the job: a flag of `t` carries a tag other than this PE's call's.
[[noreturn]] inline void team_out_of_step(const shmem_team_s *t) {
    core::team_out_of_step(t->start, t->stride, t->size, t->my_pe, t->slot, team_list_arg(t));
    __builtin_unreachable();
}

// Called by shmem_init once the job is known, and by shmem_finalize.
void teams_start();
void teams_stop();

}  // namespace shmem::detail
