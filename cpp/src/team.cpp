// team.cpp: the predefined teams, the set of live teams, the team queries, the splits and
// shmemx_team_create that make teams, and destroy that ends them.
//
// A split agrees on a slot (see team.h) over the parent: every parent member publishes the
// slots it uses in its parent area, a parent barrier, everyone ORs all members' masks and takes
// the lowest free slot(s), so every member of the new team picks the same one; each member zeroes
// its area for that slot, and a second parent barrier ends the split. Argument errors are found
// alike on every PE (the arguments must be the same everywhere); per-PE problems (a bad config)
// are published with the masks, so the split fails on every PE together.
#include "team.h"

#include "ctx.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "coll.h"
#include "peer.h"
#include "watch.h"

using namespace shmem::detail;

// A program that names SHMEM_TEAM_WORLD may hold a copy of these objects (a copy relocation),
// sized when it was linked: their size must never change (LP64, libstdc++'s vector).
#if defined(__LP64__) && defined(__GLIBCXX__)
static_assert(sizeof(shmem_team_s) == 80, "the predefined teams' size is part of the ABI");
#endif

// The predefined handles (SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED) point at these.
extern "C" {
__attribute__((visibility("default"))) shmem_team_s shmem_internal_team_world{};
__attribute__((visibility("default"))) shmem_team_s shmem_internal_team_shared{};
}

namespace {

// Teams made by splits and not destroyed. Team routines are not on the data path, so a mutex
// and a linear search are fine; the predefined teams are checked first.
std::mutex live_mutex;
std::vector<shmem_team_s *> live;
// Slots used on this PE (bit s: slot s), the predefined teams' included. Changed by splits and
// destroys, which every member makes in the same order.
uint64_t used_slots = 0;
// shmemx_team_create: one at a time on this PE, and how many teams of each list it has made
// (part of the call's key).
std::mutex create_mutex;
std::map<std::vector<int>, uint64_t> create_count;

bool predefined(const shmem_team_s *t) {
    return t == &shmem_internal_team_world || t == &shmem_internal_team_shared;
}

void count_transport_members(shmem_team_s *t) {
    t->transport_members = 0;
    for (int i = 0; i < t->size; i++) {
        if (peer_via_transport(team_world_pe(t, i))) t->transport_members++;
    }
}

// One step of the hash of a team collective's call, a create's list and a team's id, and its
// end (splitmix64's mixing).
uint64_t mix_in(uint64_t h, uint64_t x) {
    h = (h ^ x) * 0xbf58476d1ce4e5b9u;
    return h ^ h >> 29;
}
uint64_t mix_out(uint64_t h) {
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebu;
    return h ^ h >> 31;
}

// This PE's word of its area of `slot` holding the team's id (SHMEM_TEAM_AREA_ID_WORD).
uint64_t *own_id_word(int slot) {
    return reinterpret_cast<uint64_t *>(peer_mapped(
        team_word(slot, SHMEM_TEAM_AREA_CENTRAL_RELEASE).plus(8 * SHMEM_TEAM_AREA_ID_WORD),
        g.my_pe));
}

// Readies this PE's area of `slot`, in its own control segment (always mapped here), for the
// team whose id is `id`: the id first, then zeroes everywhere else. A member of the slot's last
// team may still be reading this PE's words to leave its final barrier (destroy's): seeing the
// new id, it knows this PE left that barrier, which it did only once it was complete. The
// creation's next step (a parent barrier, or the key stored with release) publishes the zeroes.
void zero_own_area(int slot, uint64_t id) {
    uint64_t *id_word = own_id_word(slot);
    __atomic_store_n(id_word, id, __ATOMIC_RELEASE);
    auto *area = reinterpret_cast<unsigned char *>(peer_mapped(team_word(slot, 0), g.my_pe));
    auto *at = reinterpret_cast<unsigned char *>(id_word);
    std::memset(area, 0, static_cast<size_t>(at - area));
    std::memset(at + 8, 0, g.team_area_size - static_cast<size_t>(at - area) - 8);
}

// The id of a team made by a split of `parent` (as team `index` of the call): the same on every
// member, and new on each: the parent's id and its collective number, which every parent member
// has entered alike. (A parent of one PE counts no collectives; its splits make teams of one
// PE, which never read another member's words.)
uint64_t split_team_id(const shmem_team_s *parent, int index) {
    auto *line = reinterpret_cast<const uint64_t *>(
        peer_mapped(team_word(parent->slot, SHMEM_TEAM_AREA_CALL), g.my_pe));
    uint64_t number = __atomic_load_n(&line[0], __ATOMIC_RELAXED) & ~kTeamCallBusy;
    uint64_t h = mix_in(mix_in(0x9e3779b97f4a7c15u, *own_id_word(parent->slot)), number);
    return mix_out(mix_in(h, static_cast<uint64_t>(index)));
}

// Writes `t`'s entry of the job state's team table (cleared when `t` ends), for code that
// finds teams by slot rather than by handle. The table's entries are progressions (its layout
// is kernels' ABI): a list team's stays cleared, so kernel-side calls refuse it as not a team
// of this PE instead of numbering its PEs wrongly.
void publish_team(const shmem_team_s *t, bool live) {
    if (t->slot < 0 || t->slot >= g.team_slots || g.teams == nullptr) return;
    g.teams[t->slot] = live && !t->listed ? shmem_job_team{t->start, t->stride, t->size, t->slot}
                                          : shmem_job_team{0, 0, 0, t->slot};
}

// Frees the member list of the list team at `slot`, if any.
void drop_list(int slot) {
    if (slot < 0 || slot >= kMaxTeamSlots) return;
    delete[] team_lists[slot];
    team_lists[slot] = nullptr;
}

// Sets up a predefined team of world PEs start, start + stride, ... (size of them, this PE
// among them), with its areas at `slot`.
void start_predefined(shmem_team_s &t, int slot, int start, int stride, int size) {
    t.start = start;
    t.stride = stride;
    t.size = size;
    t.listed = 0;
    t.my_pe = (g.my_pe - start) / stride;
    t.config = shmem_team_config_t{};
    t.config_mask = 0;
    t.slot = slot;
    // The predefined teams' id is 0, a new control segment's: written by no PE, so no member
    // can find another's not yet written (no other team uses their slots).
    count_transport_members(&t);
    t.bcast_epoch = 0;
    // A new job's control segment holds no call yet.
    t.last_call = {};
    publish_team(&t, true);
}

const char *team_name(const shmem_team_s *t) {
    if (t == &shmem_internal_team_world) return "SHMEM_TEAM_WORLD";
    if (t == &shmem_internal_team_shared) return "SHMEM_TEAM_SHARED";
    return "a team";
}

}  // namespace

namespace shmem::detail {

int *team_lists[kMaxTeamSlots] = {};

uint64_t team_enter(shmem_team_s *t, const char *call, unsigned checks, uint64_t count,
                    uint64_t extra) {
    if (t->size <= 1) return 0;
    // The line's layout is the runtime's TeamCall (sync/call.rs), which reads it back to name
    // the calls: 1 | checks << 8, count, extra, then the name, NUL-padded.
    if ((checks & kTeamCheckCount) == 0) count = 0;
    if ((checks & (kTeamCheckRoot | kTeamCheckSst)) == 0) extra = 0;
    auto *line = reinterpret_cast<uint64_t *>(
        peer_mapped(team_word(t->slot, SHMEM_TEAM_AREA_CALL), g.my_pe));
    // Peers read the line only to explain a wait that naps: plain stores, the number last.
    uint64_t number = __atomic_load_n(&line[0], __ATOMIC_RELAXED) + 1;
    shmem_team_s::LastCall &last = t->last_call;
    // A routine's name is one string literal (its checks follow from it): the same pointer and
    // arguments as the last call find the line's words already right, and the tag known.
    if (last.name == call && last.count == count && last.extra == extra) {
        __atomic_store_n(&line[0], number, __ATOMIC_RELEASE);
        return last.tag;
    }
    uint64_t w[kTeamCallWords] = {1 | uint64_t{checks} << 8, count, extra};
    std::memcpy(&w[3], call, strnlen(call, kTeamNameBytes));
    // Marked busy while the words change, so that a reader never takes one call's words for
    // another's.
    __atomic_store_n(&line[0], number | kTeamCallBusy, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    for (size_t i = 0; i < kTeamCallWords; i++) {
        __atomic_store_n(&line[1 + i], w[i], __ATOMIC_RELAXED);
    }
    __atomic_store_n(&line[0], number, __ATOMIC_RELEASE);
    // The call in 31 bits, beside the barrier's epoch in its flags: equal calls have equal
    // tags, different ones the same with probability 2^-28 (kind 6 in the top bits keeps them
    // apart from the world barrier's call tags).
    uint64_t h = 0x9e3779b97f4a7c15u;
    for (uint64_t x : w) h = mix_in(h, x);
    h = mix_out(h);
    uint64_t tag = uint64_t{6} << 28 | (h & ((uint64_t{1} << 28) - 1));
    // Kept only when `extra` fits the cache's 32 bits (a root always does).
    last = {extra <= UINT32_MAX ? call : nullptr, count, static_cast<uint32_t>(extra),
            static_cast<uint32_t>(tag)};
    return tag;
}

void team_barrier(const shmem_team_s *t, uint64_t tag) {
    // A team of one PE has nothing to wait for (the barrier says the same): no bridge call.
    if (t->size <= 1) return;
    core::team_sync(t->start, t->stride, t->size, t->my_pe, t->slot, team_list_arg(t), tag);
}

void teams_start() {
    if (static_cast<size_t>(SHMEM_TEAM_AREA_LINES) * 64 > g.team_area_size) {
        fail("shmem_init", "a team area of %zu bytes cannot hold the %d words the teams use",
             g.team_area_size, SHMEM_TEAM_AREA_LINES);
    }
    // The shared team is the PEs of this node (those whose memory is mapped here), the whole
    // world on one node; the runtime says which (a progression of world PEs, see
    // Nodes::shared_team), the same on every member.
    start_predefined(shmem_internal_team_world, 0, 0, 1, g.n_pes);
    const core::TeamShape shared = core::shared_team();
    if (shared.size < 1 || shared.stride < 1 || g.my_pe < shared.start ||
        (g.my_pe - shared.start) % shared.stride != 0 ||
        (g.my_pe - shared.start) / shared.stride >= shared.size) {
        fail("shmem_init", "SHMEM_TEAM_SHARED (start %d, stride %d, size %d) does not hold PE %d",
             shared.start, shared.stride, shared.size, g.my_pe);
    }
    start_predefined(shmem_internal_team_shared, 1, shared.start, shared.stride, shared.size);
    used_slots = 0b11;
}

void teams_stop() {
    std::lock_guard<std::mutex> lock(live_mutex);
    for (shmem_team_s *t : live) {
        if (t->listed) drop_list(t->slot);
        delete t;
    }
    live.clear();
    for (shmem_team_s *t : {&shmem_internal_team_world, &shmem_internal_team_shared}) {
        t->size = 0;
        t->transport_members = 0;
    }
    used_slots = 0;
    std::lock_guard<std::mutex> create_lock(create_mutex);
    create_count.clear();
}

shmem_team_s *team_find(shmem_team_t team) {
    if (team == SHMEM_TEAM_INVALID || lib_phase.load(std::memory_order_acquire) != kRunning) {
        return nullptr;
    }
    if (predefined(team)) return team;
    std::lock_guard<std::mutex> lock(live_mutex);
    auto it = std::find(live.begin(), live.end(), team);
    return it == live.end() ? nullptr : *it;
}

shmem_team_s *team_at_slot(int slot) {
    if (slot < 0 || lib_phase.load(std::memory_order_acquire) != kRunning) return nullptr;
    for (shmem_team_s *t : {&shmem_internal_team_world, &shmem_internal_team_shared}) {
        if (t->slot == slot && t->size > 0) return t;
    }
    std::lock_guard<std::mutex> lock(live_mutex);
    auto it = std::find_if(live.begin(), live.end(),
                           [slot](const shmem_team_s *t) { return t->slot == slot; });
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
    publish_team(team, true);
}

void team_unregister(shmem_team_s *team) {
    std::lock_guard<std::mutex> lock(live_mutex);
    live.erase(std::remove(live.begin(), live.end(), team), live.end());
    publish_team(team, false);
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

SHMEM_EXPORT int shmemx_team_index(shmem_team_t team) {
    const shmem_team_s *t = team_find(team);
    return t == nullptr ? -1 : t->slot;
}

SHMEM_WEAK_ALIAS(shmem_team_my_pe)
SHMEM_WEAK_ALIAS(shmem_team_n_pes)
SHMEM_WEAK_ALIAS(shmem_team_get_config)
SHMEM_WEAK_ALIAS(shmem_team_translate_pe)

// ---- splits and destroy -----------------------------------------------------------------------

namespace {

// One team a split makes, as this PE sees it: its PEs in the parent's numbering (size 0 when this
// PE is not a member) and the configuration this PE passed for it.
struct NewTeam {
    int start = 0;
    int stride = 1;
    int size = 0;
    const shmem_team_config_t *config = nullptr;
    long mask = 0;
    const char *config_arg = "config";
};

bool config_ok(const char *call, const NewTeam &d) {
    if (d.mask & ~SHMEM_TEAM_NUM_CONTEXTS) {
        log_call_error(call,
                       "invalid argument %s_mask=%#lx: bits other than SHMEM_TEAM_NUM_CONTEXTS",
                       d.config_arg, d.mask);
        return false;
    }
    if (d.mask != 0 && d.config == nullptr) {
        log_call_error(call, "invalid argument %s=NULL with a non-zero mask %#lx", d.config_arg,
                       d.mask);
        return false;
    }
    if ((d.mask & SHMEM_TEAM_NUM_CONTEXTS) && d.config->num_contexts < 0) {
        log_call_error(call, "invalid argument %s->num_contexts=%d: negative", d.config_arg,
                       d.config->num_contexts);
        return false;
    }
    return true;
}

// The team object of world PEs `pes` (team PE i is pes[i], this PE among them; d.size of them)
// at `slot`, whose area every member has zeroed: registered, its slot marked used. A list whose
// steps are all equal is a progression (start, stride); any other keeps its members in
// team_lists[slot].
shmem_team_s *make_team(const std::vector<int> &pes, const NewTeam &d, int slot) {
    const int size = static_cast<int>(pes.size());
    const int stride = size > 1 ? pes[1] - pes[0] : 1;
    bool progression = true;
    for (int i = 2; i < size && progression; i++) progression = pes[i] - pes[i - 1] == stride;
    auto *t = new shmem_team_s;
    t->start = pes[0];
    t->stride = progression ? stride : 0;
    t->size = size;
    t->listed = progression ? 0 : 1;
    t->slot = slot;
    if (!progression) {
        drop_list(slot);
        team_lists[slot] = new int[pes.size()];
        std::copy(pes.begin(), pes.end(), team_lists[slot]);
    }
    t->my_pe = team_pe_of(t, g.my_pe);
    t->config = shmem_team_config_t{};
    if (d.mask & SHMEM_TEAM_NUM_CONTEXTS) t->config.num_contexts = d.config->num_contexts;
    t->config_mask = d.mask;
    count_transport_members(t);
    {
        std::lock_guard<std::mutex> lock(live_mutex);
        used_slots |= uint64_t{1} << t->slot;
    }
    team_register(t);
    return t;
}

// The lowest slot free in `used` (bit s: slot s used on some member), or -1.
int lowest_free_slot(uint64_t used) {
    for (int s = 0; s < g.team_slots && s < 64; s++) {
        if (!(used & (uint64_t{1} << s))) return s;
    }
    return -1;
}

// Makes the `count` teams of `defs` (collective over `parent`): every team i of every member
// takes the same slot, the i-th lowest slot free on every parent PE. Stores the handles in
// `out` (SHMEM_TEAM_INVALID where this PE is not a member) and returns 0, or stores
// SHMEM_TEAM_INVALID everywhere and returns -1 on every parent PE alike.
int split(const char *call, shmem_team_s *parent, const NewTeam *defs, int count,
          shmem_team_t *out) {
    bool ok = true;
    for (int i = 0; i < count; i++) {
        if (defs[i].size > 0 && !config_ok(call, defs[i])) ok = false;
    }
    uint64_t mine;
    {
        std::lock_guard<std::mutex> lock(live_mutex);
        mine = used_slots;
    }
    // Each member writes only its own words; the others read them after the barrier.
    Sym value = team_word(parent->slot, SHMEM_TEAM_AREA_VALUE);
    Sym value2 = team_word(parent->slot, SHMEM_TEAM_AREA_VALUE2);
    uint64_t tag = team_enter(parent, call);
    peer_store(call, value, g.my_pe, mine);
    peer_store(call, value2, g.my_pe, uint64_t{ok ? 0u : 1u});
    team_barrier(parent, tag);
    uint64_t used = 0;
    bool all_ok = true;
    for (int i = 0; i < parent->size; i++) {
        int pe = team_world_pe(parent, i);
        used |= peer_load<uint64_t>(call, value, pe);
        if (peer_load<uint64_t>(call, value2, pe) != 0) all_ok = false;
    }
    int slots[2] = {-1, -1};
    int found = 0;
    for (int s = 0; s < g.team_slots && s < 64 && found < count; s++) {
        if (!(used & (uint64_t{1} << s))) slots[found++] = s;
    }
    bool made = all_ok && found == count;
    if (all_ok && !made && parent->my_pe == 0) {
        log_call_error(call,
                       "no team slot is free on every PE of the parent team: a PE may belong to "
                       "at most %d teams at once (SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED "
                       "included); destroy a team first",
                       std::min(g.team_slots, 64));
    }
    if (made) {
        for (int i = 0; i < count; i++) {
            if (defs[i].size > 0) zero_own_area(slots[i], split_team_id(parent, i));
        }
    }
    // Nobody reads the published words after this, and every member's new area is zeroed.
    team_barrier(parent, tag);
    for (int i = 0; i < count; i++) out[i] = SHMEM_TEAM_INVALID;
    if (!made) return -1;
    for (int i = 0; i < count; i++) {
        const NewTeam &d = defs[i];
        if (d.size <= 0) continue;
        // The parent's PEs d.start, d.start + d.stride, ... as world PEs: a progression of a
        // progression is one, a progression of a list team's PEs may be any list.
        std::vector<int> pes(static_cast<size_t>(d.size));
        for (int j = 0; j < d.size; j++) pes[j] = team_world_pe(parent, d.start + j * d.stride);
        out[i] = make_team(pes, d, slots[i]);
    }
    return 0;
}

// The parent of a split: SHMEM_TEAM_INVALID gets the spec's non-zero return (and a logged line);
// anything else must be a live team.
shmem_team_s *split_parent(const char *call, shmem_team_t parent) {
    require_running(call);
    if (parent == SHMEM_TEAM_INVALID) {
        log_call_error(call, "invalid argument parent_team=SHMEM_TEAM_INVALID");
        return nullptr;
    }
    return team_check(call, "parent_team", parent);
}

}  // namespace

SHMEM_EXPORT int pshmem_team_split_strided(shmem_team_t parent_team, int start, int stride,
                                           int size, const shmem_team_config_t *config,
                                           long config_mask, shmem_team_t *new_team) {
    const char *call = "shmem_team_split_strided";
    if (new_team == nullptr) fail(call, "invalid argument new_team=NULL");
    *new_team = SHMEM_TEAM_INVALID;
    shmem_team_s *parent = split_parent(call, parent_team);
    if (parent == nullptr) return -1;
    int n = parent->size;
    // The same arguments on every PE: every PE finds the same error, and PE 0 of the parent
    // reports it.
    bool quiet = parent->my_pe != 0;
    long long last = start + static_cast<long long>(size - 1) * stride;
    if (size < 1) {
        if (!quiet) log_call_error(call, "invalid argument size=%d: not positive", size);
        return -1;
    }
    if (start < 0 || start >= n) {
        if (!quiet) {
            log_call_error(call, "invalid argument start=%d: not in [0, %d) (the parent's size)",
                           start, n);
        }
        return -1;
    }
    if (stride == 0 && size != 1) {
        if (!quiet) {
            log_call_error(call,
                           "invalid argument stride=0 with size=%d: only a team of one PE "
                           "may have stride 0",
                           size);
        }
        return -1;
    }
    if (last < 0 || last >= n) {
        if (!quiet) {
            log_call_error(call,
                           "invalid arguments start=%d, stride=%d, size=%d: the last PE would be "
                           "parent PE %lld, outside [0, %d) (the parent's size)",
                           start, stride, size, last, n);
        }
        return -1;
    }
    NewTeam def;
    int d = parent->my_pe - start;
    bool member = stride == 0 ? d == 0 : d % stride == 0 && d / stride >= 0 && d / stride < size;
    if (member) {
        def.start = start;
        def.stride = stride;
        def.size = size;
        def.config = config;
        def.mask = config_mask;
    }
    return split(call, parent, &def, 1, new_team);
}

SHMEM_EXPORT int pshmem_team_split_2d(shmem_team_t parent_team, int xrange,
                                      const shmem_team_config_t *xaxis_config, long xaxis_mask,
                                      shmem_team_t *xaxis_team,
                                      const shmem_team_config_t *yaxis_config, long yaxis_mask,
                                      shmem_team_t *yaxis_team) {
    const char *call = "shmem_team_split_2d";
    if (xaxis_team == nullptr) fail(call, "invalid argument xaxis_team=NULL");
    if (yaxis_team == nullptr) fail(call, "invalid argument yaxis_team=NULL");
    *xaxis_team = SHMEM_TEAM_INVALID;
    *yaxis_team = SHMEM_TEAM_INVALID;
    shmem_team_s *parent = split_parent(call, parent_team);
    if (parent == nullptr) return -1;
    if (xrange < 1) {
        if (parent->my_pe == 0) {
            log_call_error(call, "invalid argument xrange=%d: not positive", xrange);
        }
        return -1;
    }
    int n = parent->size;
    // A grid wider than the parent has one row: the parent itself.
    int xr = std::min(xrange, n);
    int p = parent->my_pe;
    int x = p % xr, y = p / xr;
    NewTeam defs[2];
    defs[0].start = y * xr;
    defs[0].stride = 1;
    defs[0].size = std::min(xr, n - y * xr);
    defs[0].config = xaxis_config;
    defs[0].mask = xaxis_mask;
    defs[0].config_arg = "xaxis_config";
    defs[1].start = x;
    defs[1].stride = xr;
    defs[1].size = (n - x + xr - 1) / xr;
    defs[1].config = yaxis_config;
    defs[1].mask = yaxis_mask;
    defs[1].config_arg = "yaxis_config";
    shmem_team_t out[2];
    int rc = split(call, parent, defs, 2, out);
    *xaxis_team = out[0];
    *yaxis_team = out[1];
    return rc;
}

// ---- teams their members alone make ------------------------------------------------------------
//
// shmemx_team_create has no parent team to agree over, so its members agree through words of
// their own in the world team's area (slot 0, the spare words of its VALUE line: kCreate*),
// which every PE has and which no other routine touches. Each member writes its used slots
// and whether its config is good, then the call's key (even), and waits until every member's
// key is this one (or its odd twin); every member then ORs the same masks and takes the same
// lowest free slot, zeroes its own area there and writes the odd key, and waits until no
// member's key is the even one. A member rewrites its words (its next create) only after every
// member wrote the odd key, which each does once it has read them all, and no member touches
// the new team's areas before every member has zeroed its own. The key is a hash of the list
// and of how many teams of that list this PE has created before, the same on every member
// that creates the teams it shares with others in the same order, so a member still in an
// earlier create never takes a later one's words for its own. The waits are the library's
// (wait.rs's policy, as in every collective): a member that dies ends the job through the
// store's host; one that never calls leaves the others waiting, as a skipped collective would.

namespace {

// Words of a PE's world team area (slot 0) that shmemx_team_create uses, in the VALUE line
// after its first word (the splits' and collectives' published value).
Sym create_word(int word) { return team_word(0, SHMEM_TEAM_AREA_VALUE).plus(8 * word); }
constexpr int kCreateKey = 1;    // the call's key: even while publishing, odd once zeroed
constexpr int kCreateMask = 2;   // the member's used slots
constexpr int kCreateError = 3;  // nonzero: the member's config is bad

uint64_t create_key(const std::vector<int> &pes, uint64_t count) {
    uint64_t h = 0x9e3779b97f4a7c15u ^ count;
    for (int pe : pes) h = mix_in(h, static_cast<uint32_t>(pe));
    h = mix_out(h) & ~uint64_t{1};
    return h == 0 ? 2 : h;
}

// Waits until every member has published for the call whose key is `key`: its key is `key` or
// `key | 1`. With `zeroed`, until every member has passed that: its key is no longer `key`
// (`key | 1`, or already a later call's, once it saw this PE's `key | 1`).
void wait_keys(const char *call, const std::vector<int> &pes, uint64_t key, bool zeroed) {
    for (int pe : pes) {
        if (pe == g.my_pe) continue;
        wait_for([&] {
            uint64_t k = peer_load<uint64_t>(call, create_word(kCreateKey), pe);
            return zeroed ? k != key : k == key || k == (key | 1);
        });
    }
}

}  // namespace

SHMEM_EXPORT int shmemx_team_create(const int *pes, int npes, const shmem_team_config_t *config,
                                    long config_mask, shmem_team_t *new_team) {
    const char *call = "shmemx_team_create";
    if (new_team == nullptr) fail(call, "invalid argument new_team=NULL");
    *new_team = SHMEM_TEAM_INVALID;
    require_running(call);
    if (npes < 1) {
        log_call_error(call, "invalid argument npes=%d: not positive", npes);
        return -1;
    }
    if (pes == nullptr) {
        log_call_error(call, "invalid argument pes=NULL with npes=%d", npes);
        return -1;
    }
    std::vector<int> list(pes, pes + npes);
    int me = -1;
    for (int i = 0; i < npes; i++) {
        if (list[i] < 0 || list[i] >= g.n_pes) {
            log_call_error(call, "invalid argument pes[%d]=%d: not a PE of the job [0, %d)", i,
                           list[i], g.n_pes);
            return -1;
        }
        for (int j = 0; j < i; j++) {
            if (list[j] == list[i]) {
                log_call_error(call,
                               "invalid argument pes: PE %d is listed twice (pes[%d], pes[%d])",
                               list[i], j, i);
                return -1;
            }
        }
        if (list[i] == g.my_pe) me = i;
    }
    if (me < 0) {
        log_call_error(call,
                       "invalid argument pes: the calling PE %d is not in the list (only the "
                       "listed PEs call it)",
                       g.my_pe);
        return -1;
    }
    NewTeam def;
    def.size = npes;
    def.config = config;
    def.mask = config_mask;
    const bool ok = config_ok(call, def);
    std::lock_guard<std::mutex> create_lock(create_mutex);
    const uint64_t key = create_key(list, create_count[list]++);
    uint64_t mine;
    {
        std::lock_guard<std::mutex> lock(live_mutex);
        mine = used_slots;
    }
    peer_store(call, create_word(kCreateMask), g.my_pe, mine);
    peer_store(call, create_word(kCreateError), g.my_pe, uint64_t{ok ? 0u : 1u});
    peer_store(call, create_word(kCreateKey), g.my_pe, key);
    wait_keys(call, list, key, false);
    uint64_t used = 0;
    bool all_ok = true;
    for (int pe : list) {
        used |= peer_load<uint64_t>(call, create_word(kCreateMask), pe);
        if (peer_load<uint64_t>(call, create_word(kCreateError), pe) != 0) all_ok = false;
    }
    const int slot = lowest_free_slot(used);
    if (all_ok && slot < 0 && me == 0) {
        log_call_error(call,
                       "no team slot is free on every listed PE: a PE may belong to at most %d "
                       "teams at once (SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED included); "
                       "destroy a team first",
                       std::min(g.team_slots, 64));
    }
    const bool made = all_ok && slot >= 0;
    // The key is new for every team made of this list, and the same on every member.
    if (made) zero_own_area(slot, mix_out(mix_in(key, 0x637265617465u)));
    peer_store(call, create_word(kCreateKey), g.my_pe, key | 1);
    wait_keys(call, list, key, true);
    if (!made) return -1;
    // Every member's area of the slot is zeroed: the team is ready for its first barrier.
    *new_team = make_team(list, def, slot);
    return 0;
}

SHMEM_EXPORT void pshmem_team_destroy(shmem_team_t team) {
    const char *call = "shmem_team_destroy";
    require_running(call);
    if (team == SHMEM_TEAM_INVALID) return;
    if (predefined(team)) {
        fail(call, "invalid argument team=%s: a predefined team cannot be destroyed",
             team_name(team));
    }
    shmem_team_s *t = team_check(call, "team", team);
    ctx_destroy_all_of_team(t);
    // After this barrier no member writes into the team's areas, and the last ones to read a
    // member's words there (member 0's release word, in the central shape) see the member's id
    // change before anything else there if it uses the slot for another team.
    team_barrier(t, team_enter(t, call));
    team_unregister(t);
    {
        std::lock_guard<std::mutex> lock(live_mutex);
        used_slots &= ~(uint64_t{1} << t->slot);
    }
    if (t->listed) drop_list(t->slot);
    delete t;
}

SHMEM_EXPORT void *pshmem_team_ptr(shmem_team_t team, const void *dest, int pe) {
    const char *call = "shmem_team_ptr";
    require_running(call);
    if (team == SHMEM_TEAM_INVALID) return nullptr;
    const shmem_team_s *t = team_check(call, "team", team);
    if (pe < 0 || pe >= t->size) {
        fail(call, "invalid argument pe=%d: not in [0, %d) (the team's size)", pe, t->size);
    }
    return load_store_ptr(dest, team_world_pe(t, pe));
}

SHMEM_WEAK_ALIAS(shmem_team_split_strided)
SHMEM_WEAK_ALIAS(shmem_team_split_2d)
SHMEM_WEAK_ALIAS(shmem_team_destroy)
SHMEM_WEAK_ALIAS(shmem_team_ptr)
