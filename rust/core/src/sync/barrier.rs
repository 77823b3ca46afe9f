//! Barrier over all PEs on the heaps' reserved words, in one of two shapes chosen at start-up.
//!
//! - Dissemination (PEs have cores of their own): in round k, PE i raises the round-k flag of
//!   PE (i + 2^k) mod n to the barrier's epoch and waits until its own round-k flag reaches it;
//!   log2(n) rounds of one cache-line transfer each.
//! - Central (more PEs than cores): every PE adds 1 to a counter on PE 0; the PE that brings it
//!   to epoch * n raises PE 0's release word to the epoch, which everyone else waits for. Each
//!   PE then needs the CPU twice per barrier, where dissemination needs it once per round, in
//!   an order the scheduler does not know.
//!
//! Epochs only grow and each word's meaning is "reached epoch e", so nothing is ever reset and a
//! PE already in the next barrier is harmless. Release stores (or read-modify-writes) and acquire
//! loads carry every store made before the barrier to every PE after it.

use crate::heap::{Heap, BARRIER_CENTRAL, BARRIER_FLAGS, BARRIER_ROUNDS};
use crate::sync::wait;
use std::sync::atomic::{AtomicU64, Ordering};

/// Per-PE barrier state.
#[derive(Debug, Default)]
pub struct Barrier {
    epoch: AtomicU64,
    central: bool,
}

fn flag_offset(round: usize) -> usize {
    BARRIER_FLAGS + round * 64
}

const COUNTER: usize = BARRIER_CENTRAL;
const RELEASE: usize = BARRIER_CENTRAL + 64;

impl Barrier {
    /// A barrier whose first epoch is 1 (words in a fresh heap are 0); `central` when the node
    /// runs more PEs than it has cores.
    pub fn new(central: bool) -> Self {
        Barrier {
            epoch: AtomicU64::new(0),
            central,
        }
    }

    /// True for the central shape (more PEs than cores, or chosen with `SHMEM_BARRIER`).
    pub fn central(&self) -> bool {
        self.central
    }

    /// Waits until every PE has called `sync` as many times as this one.
    pub fn sync(&self, heap: &Heap, my_pe: usize, n_pes: usize) {
        let epoch = self.epoch.fetch_add(1, Ordering::Relaxed) + 1;
        if n_pes == 1 {
            return;
        }
        if self.central {
            let root = heap.map(0);
            let release = root.atomic_u64(RELEASE);
            let arrived = root.atomic_u64(COUNTER).fetch_add(1, Ordering::AcqRel) + 1;
            if arrived == epoch * n_pes as u64 {
                release.store(epoch, Ordering::Release);
            } else {
                wait::until(|| release.load(Ordering::Acquire) >= epoch);
            }
            return;
        }
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
