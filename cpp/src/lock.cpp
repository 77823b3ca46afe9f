// lock.cpp: distributed locks (shmem_set_lock, shmem_test_lock, shmem_clear_lock): a queue
// lock in the MCS style, built from AMOs on the lock words (peer.h: CPU atomics on the mappings,
// or the transport's while one is in use), so PEs get the lock in the order they asked and each
// waiter watches only its own word.
//
// The user gives one symmetric `long` per lock, 0 on every PE; every PE's copy is split into
// two 32-bit words (lower address first):
//
//   bytes 0..3  tail  used on the lock's home PE only: 0 when the lock is free, else 1 + the
//                     number of the PE that asked last (the end of the queue).
//   bytes 4..7  node  this PE's place in the queue: bit 31 WAITING (set by this PE when it
//                     joins, cleared by its predecessor to hand the lock over), bit 30 HELD
//                     (this PE holds the lock), bits 0..29: 0, or 1 + the PE queued right
//                     behind this one (written by that PE once it has joined).
//
// The home PE is the lock's offset within its symmetric segment, counted in longs, modulo the
// number of PEs: the same on every PE, and neighbouring locks of an array live on different
// PEs. When the lock is free and nobody waits, every word is 0 again, as it started.
//
// set_lock: claim our node (0 -> WAITING), swap ourselves into the home tail. Tail was 0: the
// lock is ours. Else write our number into the predecessor's node and wait until it clears our
// WAITING bit. clear_lock: complete our puts (a full fence), then if nobody is behind us, swap
// the tail back to 0; if somebody is (or the swap fails because somebody just joined), wait for
// its number to appear in our node and clear its WAITING bit. Waits use the library's policy
// (watch.h); a PE that dies ends the job, and with it every wait.
#include <cstdint>

#include "internal.h"
#include "peer.h"
#include "watch.h"

using namespace shmem::detail;

namespace {

constexpr uint32_t kWaiting = 1u << 31;
constexpr uint32_t kHeld = 1u << 30;
constexpr uint32_t kNextMask = kHeld - 1;  // PE numbers below 2^30 - 1 fit

// The words of one lock: its tail on the home PE, and the node (4 bytes further) on any PE.
// Both change by AMOs only (peer.h: through the transport while one is in use), since several
// PEs change them; a PE reads its own node with plain loads.
struct Lock {
    const char *call;
    long *user;  // the argument, for messages
    Sym tail;
    Sym node;
    int home;

    uint32_t amo(int op, Sym s, int pe, uint32_t value, uint32_t compare = 0) const {
        return peer_amo<uint32_t>(call, op, s, pe, value, compare);
    }
    uint32_t my_node() const { return peer_load<uint32_t>(call, node, g.my_pe); }
};

// World PE number of the PE whose ticket (1 + its number) a lock word holds.
int pe_of(const Lock &l, uint32_t ticket) {
    if (SHMEM_UNLIKELY(ticket == 0 || ticket > static_cast<uint32_t>(g.n_pes))) {
        fail(l.call,
             "invalid argument lock=%p: the lock word holds %u, which no lock routine "
             "wrote (was the lock not 0 on every PE before its first use?)",
             static_cast<void *>(l.user), ticket);
    }
    return static_cast<int>(ticket) - 1;
}

Lock checked(const char *call, long *lock) {
    require_running(call);
    if (SHMEM_UNLIKELY(lock == nullptr)) fail(call, "invalid argument lock=NULL");
    if (SHMEM_UNLIKELY(reinterpret_cast<uintptr_t>(lock) % sizeof(long) != 0)) {
        fail(call, "invalid argument lock=%p: not aligned to its %zu-byte type",
             static_cast<void *>(lock), sizeof(long));
    }
    if (SHMEM_UNLIKELY(!symmetric_range(lock, sizeof(long)))) {
        remote_other(call, "lock", lock, sizeof(long), g.my_pe);  // names why, and fails
    }
    Sym tail = sym_of_addr(lock);
    int home = static_cast<int>((tail.off / sizeof(long)) % static_cast<uint64_t>(g.n_pes));
    return Lock{call, lock, tail, tail.plus(sizeof(uint32_t)), home};
}

uint32_t ticket() { return static_cast<uint32_t>(g.my_pe) + 1; }

// Claims this PE's node for a new request; false if it is in use (held or waiting).
bool claim(const Lock &l) {
    return l.amo(SHMEM_TRANSPORT_AMO_COMPARE_SWAP, l.node, g.my_pe, kWaiting, 0) == 0;
}

// Called once this PE is at the head of the queue: WAITING off, HELD on, in one step (the
// successor may be writing its number into the same word).
void mark_held(const Lock &l, bool waiting_set) {
    if (waiting_set) {
        l.amo(SHMEM_TRANSPORT_AMO_FETCH_XOR, l.node, g.my_pe, kWaiting | kHeld);
    } else {
        l.amo(SHMEM_TRANSPORT_AMO_FETCH_OR, l.node, g.my_pe, kHeld);
    }
}

}  // namespace

SHMEM_EXPORT void pshmem_set_lock(long *lock) {
    const char *call = "shmem_set_lock";
    Lock l = checked(call, lock);
    if (SHMEM_UNLIKELY(!claim(l))) {
        fail(call, "invalid argument lock=%p: already held or requested by this PE",
             static_cast<void *>(lock));
    }
    uint32_t pred = l.amo(SHMEM_TRANSPORT_AMO_SWAP, l.tail, l.home, ticket());
    if (pred == 0) {
        mark_held(l, true);
        return;
    }
    // Join behind the predecessor; it hands over by clearing our WAITING bit.
    l.amo(SHMEM_TRANSPORT_AMO_FETCH_OR, l.node, pe_of(l, pred), ticket());
    wait_for([&] { return (l.my_node() & kWaiting) == 0; });
    mark_held(l, false);
}

SHMEM_EXPORT int pshmem_test_lock(long *lock) {
    Lock l = checked("shmem_test_lock", lock);
    if (!claim(l)) return 1;  // this PE holds it already
    if (l.amo(SHMEM_TRANSPORT_AMO_COMPARE_SWAP, l.tail, l.home, ticket(), 0) != 0) {
        // Not queued, so nobody else writes our node: release the claim.
        l.amo(SHMEM_TRANSPORT_AMO_SET, l.node, g.my_pe, 0);
        return 1;
    }
    mark_held(l, true);
    return 0;
}

SHMEM_EXPORT void pshmem_clear_lock(long *lock) {
    const char *call = "shmem_clear_lock";
    Lock l = checked(call, lock);
    uint32_t node = l.my_node();
    if (SHMEM_UNLIKELY((node & kHeld) == 0)) {
        fail(call, "invalid argument lock=%p: not held by this PE", static_cast<void *>(lock));
    }
    // Quiet: every put and AMO of the critical section lands before the next holder enters.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    transport_quiet(nullptr);
    uint32_t next = node & kNextMask;
    if (next == 0) {
        uint32_t mine = ticket();
        if (l.amo(SHMEM_TRANSPORT_AMO_COMPARE_SWAP, l.tail, l.home, 0, mine) == mine) {
            // Nobody queued behind us, and newcomers find the lock free: our node is ours.
            l.amo(SHMEM_TRANSPORT_AMO_SET, l.node, g.my_pe, 0);
            return;
        }
        // A PE has swapped itself into the tail but not yet written its number to our node.
        wait_for([&] { return (l.my_node() & kNextMask) != 0; });
        next = l.my_node() & kNextMask;
    }
    // Nobody else writes our node any more: reset it, then hand the lock over.
    l.amo(SHMEM_TRANSPORT_AMO_SET, l.node, g.my_pe, 0);
    l.amo(SHMEM_TRANSPORT_AMO_FETCH_AND, l.node, pe_of(l, next), ~kWaiting);
}

SHMEM_WEAK_ALIAS(shmem_set_lock)
SHMEM_WEAK_ALIAS(shmem_test_lock)
SHMEM_WEAK_ALIAS(shmem_clear_lock)
