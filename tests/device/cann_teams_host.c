/* cann_teams_host.c: one CANN team handle serves the host and the kernel.
 *
 * Teams split with CANN's host calls (strided and 2-D, after an OpenSHMEM split so that the
 * CANN handles do not start at 1) are handed to a kernel as they are; the kernel checks this
 * PE's number and the team's size against the host's answers and runs barriers on the team
 * (cann_teams_kernel.c). A destroyed team's handle is then refused by the host calls, and a
 * new split reusing its slot works again. Every PE checks its own results. */
#include <aclshmem.h>

#include <stdio.h>
#include <stdlib.h>

#include "cann_teams.h"

#define BLOCKS 3

static int failures;

static void check_team(const char *what, aclshmem_team_t team, int64_t *token, int round) {
    if (team == ACLSHMEM_TEAM_INVALID) return; /* this PE is not in it */
    int me = aclshmem_team_my_pe(team), n = aclshmem_team_n_pes(team);
    if (me < 0 || n < 1) {
        fprintf(stderr, "PE %d: %s: host team %d: my_pe %d n_pes %d\n", aclshmem_my_pe(), what,
                team, me, n);
        failures++;
        return;
    }
    int bad = run_team_kernel(team, me, n, token, round, BLOCKS);
    if (bad != 0) {
        fprintf(stderr, "PE %d: %s: team %d: %d mistakes in the kernel\n", aclshmem_my_pe(), what,
                team, bad);
        failures++;
    }
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int64_t *token = aclshmem_calloc((CANN_TEAMS_ROUNDS + 1) * BLOCKS, sizeof(int64_t));
    /* An OpenSHMEM team first: it takes the lowest free slot. */
    shmem_team_t evens;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &evens);

    aclshmem_team_t odd_first = ACLSHMEM_TEAM_INVALID, x = ACLSHMEM_TEAM_INVALID,
                    y = ACLSHMEM_TEAM_INVALID;
    int rc = aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, npes - 1, -1, npes, &odd_first);
    if (rc != 0 || odd_first == ACLSHMEM_TEAM_INVALID) {
        fprintf(stderr, "PE %d: split_strided: %d, team %d\n", me, rc, odd_first);
        failures++;
    }
    rc = aclshmem_team_split_2d(ACLSHMEM_TEAM_WORLD, 2, &x, &y);
    if (rc != 0 || x == ACLSHMEM_TEAM_INVALID || y == ACLSHMEM_TEAM_INVALID) {
        fprintf(stderr, "PE %d: split_2d: %d, teams %d %d\n", me, rc, x, y);
        failures++;
    }
    int round = 1;
    check_team("world", ACLSHMEM_TEAM_WORLD, token, round++);
    check_team("reversed world", odd_first, token, round++);
    check_team("2-D x", x, token, round++);
    check_team("2-D y", y, token, round++);

    /* Destroyed: refused on the host; a new split may reuse the slot and works. */
    aclshmem_team_t old = x;
    aclshmem_team_destroy(x);
    if (aclshmem_team_n_pes(old) != -1) {
        fprintf(stderr, "PE %d: team %d still answers after destroy\n", me, old);
        failures++;
    }
    aclshmem_team_t again = ACLSHMEM_TEAM_INVALID;
    if (aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 0, 1, npes, &again) != 0) failures++;
    check_team("reused slot", again, token, round++);

    aclshmem_team_destroy(again);
    aclshmem_team_destroy(y);
    aclshmem_team_destroy(odd_first);
    if (evens != SHMEM_TEAM_INVALID) shmem_team_destroy(evens);
    aclshmem_free(token);
    shmem_finalize();
    if (failures != 0) {
        fprintf(stderr, "PE %d: FAILED (%d)\n", me, failures);
        return 1;
    }
    printf("PE %d: CANN team handles work in kernels\n", me);
    return 0;
}
