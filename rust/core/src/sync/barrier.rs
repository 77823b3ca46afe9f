//! Barrier over all PEs on the heaps' reserved barrier flags: a dissemination barrier. In round
//! k, PE i raises the round-k flag of PE (i + 2^k) mod n to the barrier's epoch and waits until
//! its own round-k flag reaches the epoch. Each flag has exactly one writer per round and epochs
//! only grow, so flags never need resetting and a peer already in the next barrier is harmless.
//! Release stores and acquire loads carry every store made before the barrier to every PE after.

use crate::heap::{Heap, BARRIER_FLAGS, BARRIER_ROUNDS};
use crate::sync::wait;
use std::sync::atomic::{AtomicU64, Ordering};

/// Per-PE barrier state.
#[derive(Debug, Default)]
pub struct Barrier {
    epoch: AtomicU64,
}

fn flag_offset(round: usize) -> usize {
    BARRIER_FLAGS + round * 64
}

impl Barrier {
    /// A barrier whose first epoch is 1 (flags in a fresh heap are 0).
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits until every PE has called `sync` as many times as this one.
    pub fn sync(&self, heap: &Heap, my_pe: usize, n_pes: usize) {
        let epoch = self.epoch.fetch_add(1, Ordering::Relaxed) + 1;
        let mut dist = 1usize;
        let mut round = 0usize;
        while dist < n_pes {
            debug_assert!(round < BARRIER_ROUNDS);
            let to = (my_pe + dist) % n_pes;
            heap.map(to)
                .atomic_u64(flag_offset(round))
                .store(epoch, Ordering::Release);
            let mine: &AtomicU64 = heap.local().atomic_u64(flag_offset(round));
            wait::until(|| mine.load(Ordering::Acquire) >= epoch);
            dist <<= 1;
            round += 1;
        }
    }
}
