// cann_team.cpp: CANN SHMEM's host teams and barriers. CANN names a team by an int: here the
// team's slot (team.h), the number kernels name it by, so one handle serves the host and the
// kernel (0 the world team, 1 the shared team, a split the lowest slot free on every parent PE).
// This file answers CANN's codes for handles that name no team of this PE.
#include <aclshmem.h>

#include <cstring>

#include <pshmem.h>

#include "internal.h"
#include "team.h"

using namespace shmem::detail;

namespace {

// The team behind `team`, or SHMEM_TEAM_INVALID (logged, naming `arg`, when `log`). A CANN
// handle is the team's slot, the number kernels name it by (shmem/device.h), so a handle a split
// returned on the host is passed to a kernel as it is.
shmem_team_t lookup(const char *call, const char *arg, aclshmem_team_t team, bool log = true) {
    if (lib_phase.load(std::memory_order_acquire) != kRunning) {
        if (log) {
            log_call_error(call, "the library is not initialised (code %d, ACLSHMEM_NOT_INITED)",
                           ACLSHMEM_NOT_INITED);
        }
        return SHMEM_TEAM_INVALID;
    }
    shmem_team_t t = team_at_slot(team);
    if (t == nullptr) {
        if (log) {
            log_call_error(call,
                           "invalid argument %s=%d: not a team of this PE (code %d, "
                           "ACLSHMEM_INVALID_PARAM)",
                           arg, team, ACLSHMEM_INVALID_PARAM);
        }
        return SHMEM_TEAM_INVALID;
    }
    return t;
}

// The handle of the team `t` a successful split made (its slot), or ACLSHMEM_TEAM_INVALID for
// a PE the split left out.
aclshmem_team_t handle_of(shmem_team_t t) {
    return t == SHMEM_TEAM_INVALID ? ACLSHMEM_TEAM_INVALID : static_cast<aclshmem_team_t>(t->slot);
}

}  // namespace

SHMEM_EXPORT int aclshmem_team_split_strided(aclshmem_team_t parent_team, int pe_start,
                                             int pe_stride, int pe_size,
                                             aclshmem_team_t *new_team) {
    const char *call = "aclshmem_team_split_strided";
    if (new_team == nullptr) {
        log_call_error(call, "invalid argument new_team=NULL (code %d, ACLSHMEM_INVALID_PARAM)",
                       ACLSHMEM_INVALID_PARAM);
        return ACLSHMEM_INVALID_PARAM;
    }
    *new_team = ACLSHMEM_TEAM_INVALID;
    shmem_team_t parent = lookup(call, "parent_team", parent_team);
    if (parent == SHMEM_TEAM_INVALID) return ACLSHMEM_INVALID_PARAM;
    shmem_team_t t = SHMEM_TEAM_INVALID;
    if (pshmem_team_split_strided(parent, pe_start, pe_stride, pe_size, nullptr, 0, &t) != 0) {
        log_call_error(
            call,
            "invalid arguments pe_start=%d pe_stride=%d pe_size=%d: not PEs of the parent team "
            "of %d PEs, or a member is in too many teams (code %d, ACLSHMEM_INVALID_PARAM)",
            pe_start, pe_stride, pe_size, pshmem_team_n_pes(parent), ACLSHMEM_INVALID_PARAM);
        return ACLSHMEM_INVALID_PARAM;
    }
    *new_team = handle_of(t);
    return ACLSHMEM_SUCCESS;
}

SHMEM_EXPORT int aclshmem_team_split_2d(aclshmem_team_t parent_team, int x_range,
                                        aclshmem_team_t *x_team, aclshmem_team_t *y_team) {
    const char *call = "aclshmem_team_split_2d";
    if (x_team == nullptr || y_team == nullptr) {
        log_call_error(call, "invalid argument %s=NULL (code %d, ACLSHMEM_INVALID_PARAM)",
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
        log_call_error(
            call,
            "invalid argument x_range=%d for a parent team of %d PEs, or a member is in too "
            "many teams (code %d, ACLSHMEM_INVALID_PARAM)",
            x_range, pshmem_team_n_pes(parent), ACLSHMEM_INVALID_PARAM);
        return ACLSHMEM_INVALID_PARAM;
    }
    *x_team = handle_of(x);
    *y_team = handle_of(y);
    return ACLSHMEM_SUCCESS;
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
    shmem_team_t t = lookup(call, "team", team);
    if (t == SHMEM_TEAM_INVALID) return;
    if (t == SHMEM_TEAM_WORLD || t == SHMEM_TEAM_SHARED) {
        log_call_error(
            call,
            "invalid argument team=%d: the %s team is predefined and not destroyed (code %d, "
            "ACLSHMEM_INVALID_PARAM)",
            team, t == SHMEM_TEAM_WORLD ? "world" : "shared", ACLSHMEM_INVALID_PARAM);
        return;
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
        log_call_error(call, "invalid argument config=NULL (code %d, ACLSHMEM_INVALID_PARAM)",
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
