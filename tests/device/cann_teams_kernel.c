/* cann_teams_kernel.c: the kernel half of cann_teams (the host half, cann_teams_host.c, uses
 * CANN's host header, which cannot share a file with the kernel-side one).
 *
 * run_team_kernel launches a kernel of `blocks` blocks that names `team` exactly as the host's
 * aclshmem_team_split_* returned it and checks what the host saw: this PE's number and the
 * team's size; then the team's members pass a token around the team (put, barrier on the
 * team, read), so a kernel barrier on the wrong team hangs or reads a stale token. */
#include <shmem/device.h>
#include <shmem/launch.h>

#include <stdint.h>
#include <stdio.h>

#include "cann_teams.h"

typedef struct team_args {
    aclshmem_team_t team;
    int my_pe, n_pes; /* as the host saw them */
    int64_t *token;   /* symmetric: this round's slots, one per block */
    int round;
    int errors;
} team_args;

static void team_kernel(void *p) {
    team_args *a = p;
    int b = aclshmemx_block_idx();
    int me = aclshmem_team_my_pe(a->team), n = aclshmem_team_n_pes(a->team);
    if (me != a->my_pe || n != a->n_pes) {
        fprintf(stderr, "PE %d block %d: team %d: kernel sees my_pe %d of %d, the host %d of %d\n",
                aclshmem_my_pe(), b, a->team, me, n, a->my_pe, a->n_pes);
        __atomic_fetch_add(&a->errors, 1, __ATOMIC_RELAXED);
        return; /* a wrong team would make the exchange below hang */
    }
    int next = aclshmem_team_translate_pe(a->team, (me + 1) % n, ACLSHMEM_TEAM_WORLD);
    int64_t mine = ((int64_t)a->round << 32) | ((int64_t)aclshmem_my_pe() << 16) | b;
    aclshmem_int64_p(&a->token[b], mine, next);
    aclshmem_barrier(a->team);
    int prev = aclshmem_team_translate_pe(a->team, (me + n - 1) % n, ACLSHMEM_TEAM_WORLD);
    int64_t want = ((int64_t)a->round << 32) | ((int64_t)prev << 16) | b;
    if (a->token[b] != want) {
        fprintf(stderr, "PE %d block %d: team %d: token %llx, want %llx\n", aclshmem_my_pe(), b,
                a->team, (unsigned long long)a->token[b], (unsigned long long)want);
        __atomic_fetch_add(&a->errors, 1, __ATOMIC_RELAXED);
    }
    aclshmem_barrier(a->team); /* nobody overwrites a token before its reader has read it */
}

int run_team_kernel(int team, int my_pe, int n_pes, int64_t *token, int round, int blocks) {
    /* Each round its own slots: a PE of another team may start its next round before this one
     * is read. */
    team_args a = {team, my_pe, n_pes, token + (size_t)round * (size_t)blocks, round, 0};
    if (shmemx_cpu_launch(team_kernel, &a, blocks) != 0) return 1;
    return a.errors;
}
