// cann_team.cpp: CANN SHMEM's host teams and barriers. CANN names a team by an int; this file
// owns the table from those ints to this library's OpenSHMEM teams (slot 0 is the world team,
// a split takes the lowest free slot) and answers CANN's codes for handles that name no team.
#include <aclshmem.h>

#include <array>
#include <cstdarg>
#include <cstring>
#include <mutex>

#include <pshmem.h>

#include "internal.h"

using namespace shmem::detail;

namespace {

// Logs "call: message" (one line).
__attribute__((format(printf, 2, 3), cold)) void refuse(const char *call, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_call_errorv(call, fmt, ap);
    va_end(ap);
}

// Handles made by splits; slot 0 (the world team) is never stored here.
std::mutex table_mutex;
std::array<shmem_team_t, ACLSHMEM_MAX_TEAMS> table{};

// The team behind `team`, or SHMEM_TEAM_INVALID (logged, naming `arg`, when `log`).
shmem_team_t lookup(const char *call, const char *arg, aclshmem_team_t team, bool log = true) {
    if (lib_phase.load(std::memory_order_acquire) != kRunning) {
        if (log) {
            refuse(call, "the library is not initialised (code %d, ACLSHMEM_NOT_INITED)",
                   ACLSHMEM_NOT_INITED);
        }
        return SHMEM_TEAM_INVALID;
    }
    if (team == ACLSHMEM_TEAM_WORLD) return SHMEM_TEAM_WORLD;
    shmem_team_t t = SHMEM_TEAM_INVALID;
    if (team > 0 && team < ACLSHMEM_MAX_TEAMS) {
        std::lock_guard<std::mutex> lock(table_mutex);
        t = table[static_cast<size_t>(team)];
    }
    if (t == SHMEM_TEAM_INVALID && log) {
        refuse(call,
               "invalid argument %s=%d: not a team of this PE (code %d, ACLSHMEM_INVALID_PARAM)",
               arg, team, ACLSHMEM_INVALID_PARAM);
    }
    return t;
}

// Stores `t` (a new team, or SHMEM_TEAM_INVALID for a PE left out) and returns its handle, or
// ACLSHMEM_TEAM_INVALID when every slot is taken.
aclshmem_team_t store(shmem_team_t t) {
    if (t == SHMEM_TEAM_INVALID) return ACLSHMEM_TEAM_INVALID;
    std::lock_guard<std::mutex> lock(table_mutex);
    for (size_t i = 1; i < table.size(); i++) {
        if (table[i] == SHMEM_TEAM_INVALID) {
            table[i] = t;
            return static_cast<aclshmem_team_t>(i);
        }
    }
    return ACLSHMEM_TEAM_INVALID;
}

// Stores the team `t` a successful split made into `*out`; the split's code.
int finish_split(const char *call, shmem_team_t t, aclshmem_team_t *out) {
    *out = store(t);
    if (t != SHMEM_TEAM_INVALID && *out == ACLSHMEM_TEAM_INVALID) {
        refuse(call, "%d team handles are in use (code %d, ACLSHMEM_INNER_ERROR)",
               ACLSHMEM_MAX_TEAMS - 1, ACLSHMEM_INNER_ERROR);
        return ACLSHMEM_INNER_ERROR;
    }
    return ACLSHMEM_SUCCESS;
}

}  // namespace

SHMEM_EXPORT int aclshmem_team_split_strided(aclshmem_team_t parent_team, int pe_start,
                                             int pe_stride, int pe_size,
                                             aclshmem_team_t *new_team) {
    const char *call = "aclshmem_team_split_strided";
    if (new_team == nullptr) {
        refuse(call, "invalid argument new_team=NULL (code %d, ACLSHMEM_INVALID_PARAM)",
               ACLSHMEM_INVALID_PARAM);
        return ACLSHMEM_INVALID_PARAM;
    }
    *new_team = ACLSHMEM_TEAM_INVALID;
    shmem_team_t parent = lookup(call, "parent_team", parent_team);
    if (parent == SHMEM_TEAM_INVALID) return ACLSHMEM_INVALID_PARAM;
    shmem_team_t t = SHMEM_TEAM_INVALID;
    if (pshmem_team_split_strided(parent, pe_start, pe_stride, pe_size, nullptr, 0, &t) != 0) {
        refuse(call,
               "invalid arguments pe_start=%d pe_stride=%d pe_size=%d: not PEs of the parent team "
               "of %d PEs, or a member is in too many teams (code %d, ACLSHMEM_INVALID_PARAM)",
               pe_start, pe_stride, pe_size, pshmem_team_n_pes(parent), ACLSHMEM_INVALID_PARAM);
        return ACLSHMEM_INVALID_PARAM;
    }
    return finish_split(call, t, new_team);
}

SHMEM_EXPORT int aclshmem_team_split_2d(aclshmem_team_t parent_team, int x_range,
                                        aclshmem_team_t *x_team, aclshmem_team_t *y_team) {
    const char *call = "aclshmem_team_split_2d";
    if (x_team == nullptr || y_team == nullptr) {
        refuse(call, "invalid argument %s=NULL (code %d, ACLSHMEM_INVALID_PARAM)",
               x_team == nullptr ? "x_team" : "y_team", ACLSHMEM_INVALID_PARAM);
        return ACLSHMEM_INVALID_PARAM;
    }
    *x_team = ACLSHMEM_TEAM_INVALID;
    *y_team = ACLSHMEM_TEAM_INVALID;
    shmem_team_t parent = lookup(call, "parent_team", parent_team);
    if (parent == SHMEM_TEAM_INVALID) return ACLSHMEM_INVALID_PARAM;
    shmem_team_t x = SHMEM_TEAM_INVALID;
    shmem_team_t y = SHMEM_TEAM_INVALID;
    if (pshmem_team_split_2d(parent, x_range, nullptr, 0, &x, nullptr, 0, &y) != 0) {
        refuse(call,
               "invalid argument x_range=%d for a parent team of %d PEs, or a member is in too "
               "many teams (code %d, ACLSHMEM_INVALID_PARAM)",
               x_range, pshmem_team_n_pes(parent), ACLSHMEM_INVALID_PARAM);
        return ACLSHMEM_INVALID_PARAM;
    }
    int code = finish_split(call, x, x_team);
    if (code != ACLSHMEM_SUCCESS) return code;
    return finish_split(call, y, y_team);
}

SHMEM_EXPORT int aclshmem_team_translate_pe(aclshmem_team_t src_team, int src_pe,
                                            aclshmem_team_t dest_team) {
    const char *call = "aclshmem_team_translate_pe";
    shmem_team_t src = lookup(call, "src_team", src_team);
    shmem_team_t dest = lookup(call, "dest_team", dest_team);
    if (src == SHMEM_TEAM_INVALID || dest == SHMEM_TEAM_INVALID) return -1;
    return pshmem_team_translate_pe(src, src_pe, dest);
}

SHMEM_EXPORT void aclshmem_team_destroy(aclshmem_team_t team) {
    const char *call = "aclshmem_team_destroy";
    if (team == ACLSHMEM_TEAM_WORLD) {
        refuse(call,
               "invalid argument team=ACLSHMEM_TEAM_WORLD: the world team is not destroyed "
               "(code %d, ACLSHMEM_INVALID_PARAM)",
               ACLSHMEM_INVALID_PARAM);
        return;
    }
    shmem_team_t t = lookup(call, "team", team);
    if (t == SHMEM_TEAM_INVALID) return;
    {
        std::lock_guard<std::mutex> lock(table_mutex);
        table[static_cast<size_t>(team)] = SHMEM_TEAM_INVALID;
    }
    pshmem_team_destroy(t);
}

SHMEM_EXPORT int aclshmem_team_my_pe(aclshmem_team_t team) {
    shmem_team_t t = lookup("aclshmem_team_my_pe", "team", team);
    return t == SHMEM_TEAM_INVALID ? -1 : pshmem_team_my_pe(t);
}

SHMEM_EXPORT int aclshmem_team_n_pes(aclshmem_team_t team) {
    shmem_team_t t = lookup("aclshmem_team_n_pes", "team", team);
    return t == SHMEM_TEAM_INVALID ? -1 : pshmem_team_n_pes(t);
}

SHMEM_EXPORT int aclshmem_team_get_config(aclshmem_team_t team, aclshmem_team_config_t *config) {
    const char *call = "aclshmem_team_get_config";
    if (config == nullptr) {
        refuse(call, "invalid argument config=NULL (code %d, ACLSHMEM_INVALID_PARAM)",
               ACLSHMEM_INVALID_PARAM);
        return ACLSHMEM_INVALID_PARAM;
    }
    shmem_team_t t = lookup(call, "team", team);
    if (t == SHMEM_TEAM_INVALID) return ACLSHMEM_INVALID_PARAM;
    shmem_team_config_t own{};
    if (pshmem_team_get_config(t, SHMEM_TEAM_NUM_CONTEXTS, &own) != 0) {
        return ACLSHMEM_INVALID_PARAM;
    }
    std::memset(config, 0, sizeof *config);
    config->num_contexts = own.num_contexts;
    config->uniqueid = static_cast<aclshmemx_team_uniqueid_t>(team);
    return ACLSHMEM_SUCCESS;
}

SHMEM_EXPORT void aclshmem_barrier(aclshmem_team_t team) {
    shmem_team_t t = lookup("aclshmem_barrier", "team", team);
    if (t == SHMEM_TEAM_INVALID) return;
    pshmem_quiet();
    pshmem_team_sync(t);
}

SHMEM_EXPORT void aclshmem_barrier_all(void) {
    if (lookup("aclshmem_barrier_all", "team", ACLSHMEM_TEAM_WORLD) != SHMEM_TEAM_INVALID) {
        pshmem_barrier_all();
    }
}

SHMEM_EXPORT void aclshmem_sync(aclshmem_team_t team) {
    shmem_team_t t = lookup("aclshmem_sync", "team", team);
    if (t != SHMEM_TEAM_INVALID) pshmem_team_sync(t);
}

SHMEM_EXPORT void aclshmem_sync_all(void) {
    if (lookup("aclshmem_sync_all", "team", ACLSHMEM_TEAM_WORLD) != SHMEM_TEAM_INVALID) {
        pshmem_sync_all();
    }
}

SHMEM_EXPORT void aclshmemx_barrier_on_stream(aclshmem_team_t team, aclrtStream stream) {
    refuse("aclshmemx_barrier_on_stream",
           "stream=%p (team=%d): not supported (code %d, ACLSHMEM_NOT_SUPPORTED): this library "
           "has no NPU stream; use aclshmem_barrier",
           stream, team, ACLSHMEM_NOT_SUPPORTED);
}

SHMEM_EXPORT void aclshmemx_barrier_all_on_stream(aclrtStream stream) {
    refuse("aclshmemx_barrier_all_on_stream",
           "stream=%p: not supported (code %d, ACLSHMEM_NOT_SUPPORTED): this library has no NPU "
           "stream; use aclshmem_barrier_all",
           stream, ACLSHMEM_NOT_SUPPORTED);
}
