/*
 * team_reuse.c: a destroyed team's slot taken at once by a team that leaves out one of its
 * members. PEs 0 and 1 make a pair from the world team, use it and destroy it; PE 0 then goes
 * straight on to split teams PE 1 is not in: its own team of one PE (no barrier: at once) and
 * the team of PE 0 and the PEs from 2 on, whose new teams (PE 0 alone, PE 0 with PE 2) take
 * the pair's slot and ready PE 0's area of it while PE 1 may still be leaving the pair's last
 * barrier. In every fourth round PE 0 is late for the destroy, so that PE 1 waits there (and
 * naps) and PE 0's arrival is the last. Every member checks what the other wrote. Exits 0 on
 * success.
 */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <unistd.h>

#include "check.h"

#define ROUNDS 400

static long box[2];

/* Each member puts `value + its world PE` into the next member's box, then the team's sync;
 * every member checks what the previous one wrote. */
static void pass_around(shmem_team_t team, long value) {
    int n = shmem_team_n_pes(team), me = shmem_team_my_pe(team);
    int next = shmem_team_translate_pe(team, (me + 1) % n, SHMEM_TEAM_WORLD);
    int prev = shmem_team_translate_pe(team, (me + n - 1) % n, SHMEM_TEAM_WORLD);
    shmem_long_p(&box[0], value + shmem_my_pe(), next);
    shmem_quiet();
    CHECK(shmem_team_sync(team) == 0);
    if (box[0] != value + prev) {
        fprintf(stderr, "PE %d: got %ld from team PE %d of %d, want %ld\n", shmem_my_pe(), box[0],
                (me + n - 1) % n, n, value + prev);
    }
    CHECK(box[0] == value + prev);
    CHECK(shmem_team_sync(team) == 0);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    /* The world without PE 1 (everyone when there is no PE 1), made once by its members. */
    int rest[64], n_rest = 0;
    for (int pe = 0; pe < npes && n_rest < 64; pe++) {
        if (pe != 1 || npes == 1) rest[n_rest++] = pe;
    }
    shmem_team_t without_1 = SHMEM_TEAM_INVALID, solo = SHMEM_TEAM_INVALID;
    if (me != 1 || npes == 1) {
        CHECK(shmemx_team_create(rest, n_rest, NULL, 0, &without_1) == 0);
    }
    if (me == 0) CHECK(shmemx_team_create(&me, 1, NULL, 0, &solo) == 0);
    for (int round = 0; round < ROUNDS; round++) {
        shmem_team_t pair = SHMEM_TEAM_INVALID;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes >= 2 ? 2 : 1, NULL, 0, &pair) ==
              0);
        int pair_slot = -1;
        if (me <= 1) {
            CHECK(pair != SHMEM_TEAM_INVALID);
            pair_slot = shmemx_team_index(pair);
            pass_around(pair, 1000L * round);
            if (me == 0 && round % 4 == 0) usleep(2000);
            shmem_team_destroy(pair);
            if (me == 0) {
                /* Straight from the destroy's barrier into the pair's slot. */
                shmem_team_t alone = SHMEM_TEAM_INVALID;
                CHECK(shmem_team_split_strided(solo, 0, 1, 1, NULL, 0, &alone) == 0);
                CHECK(pair_slot < 0 || shmemx_team_index(alone) == pair_slot);
                shmem_team_destroy(alone);
            }
        } else {
            CHECK(pair == SHMEM_TEAM_INVALID);
        }
        if (without_1 != SHMEM_TEAM_INVALID) {
            /* PE 0 alone, then PE 0 with the next member: the pair's slot is free on every
             * member, so both take it. */
            shmem_team_t alone = SHMEM_TEAM_INVALID, two = SHMEM_TEAM_INVALID;
            CHECK(shmem_team_split_strided(without_1, 0, 1, 1, NULL, 0, &alone) == 0);
            if (me == 0) {
                CHECK(alone != SHMEM_TEAM_INVALID);
                CHECK(pair_slot < 0 || shmemx_team_index(alone) == pair_slot);
                shmem_team_destroy(alone);
            }
            int size = n_rest >= 2 ? 2 : 1;
            CHECK(shmem_team_split_strided(without_1, 0, 1, size, NULL, 0, &two) == 0);
            if (shmem_team_my_pe(without_1) < size) {
                CHECK(two != SHMEM_TEAM_INVALID);
                CHECK(pair_slot < 0 || shmemx_team_index(two) == pair_slot);
                pass_around(two, 1000L * round + 500);
                shmem_team_destroy(two);
            }
        }
    }
    if (without_1 != SHMEM_TEAM_INVALID) shmem_team_destroy(without_1);
    if (solo != SHMEM_TEAM_INVALID) shmem_team_destroy(solo);
    shmem_barrier_all();
    if (me == 0) printf("team_reuse: %d PEs, %d rounds ok\n", npes, ROUNDS);
    shmem_finalize();
    return 0;
}
