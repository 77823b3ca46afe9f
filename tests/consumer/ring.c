/* Consumer check in C: every PE puts a value into the next PE's symmetric buffer; after a
 * barrier each PE checks the value its left neighbour wrote. Needs at least 2 PEs: a 1-PE
 * pass would prove nothing. Exits 0 on success. */
#include <shmem.h>
#include <stdio.h>

enum { SLOTS = 64 };

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    if (npes < 2) {
        fprintf(stderr, "ring_c: needs at least 2 PEs, got %d\n", npes);
        shmem_finalize();
        return 2;
    }

    long *slot = (long *)shmem_malloc(SLOTS * sizeof(long));
    if (slot == NULL) {
        fprintf(stderr, "ring_c: PE %d: shmem_malloc failed\n", me);
        return 1;
    }
    for (int i = 0; i < SLOTS; i++) {
        slot[i] = -1;
    }
    shmem_barrier_all();

    long mine[SLOTS];
    for (int i = 0; i < SLOTS; i++) {
        mine[i] = 1000L * me + i;
    }
    shmem_putmem(slot, mine, sizeof mine, (me + 1) % npes);
    shmem_barrier_all();

    int left = (me + npes - 1) % npes;
    int errors = 0;
    for (int i = 0; i < SLOTS; i++) {
        if (slot[i] != 1000L * left + i) {
            if (errors++ == 0) {
                fprintf(stderr, "ring_c: PE %d: slot[%d] = %ld, expected %ld from PE %d\n", me, i,
                        slot[i], 1000L * left + i, left);
            }
        }
    }
    shmem_barrier_all();
    shmem_free(slot);
    if (errors == 0 && me == 0) {
        printf("ring_c: OK on %d PEs\n", npes);
    }
    shmem_finalize();
    return errors == 0 ? 0 : 1;
}
