/* cann_teams.h: the call between cann_teams_host.c and cann_teams_kernel.c. */
#ifndef CANN_TEAMS_H
#define CANN_TEAMS_H
#include <stdint.h>

#define CANN_TEAMS_ROUNDS 5

/* Runs the team kernel on `team` (a CANN handle, as the host got it) with `blocks` blocks;
 * `token` is symmetric, `blocks` int64 slots per round
 * (rounds 1 .. CANN_TEAMS_ROUNDS). Returns the mistakes the blocks found. */
int run_team_kernel(int team, int my_pe, int n_pes, int64_t *token, int round, int blocks);

#endif
