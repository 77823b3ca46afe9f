//! Barrier over all PEs on the heaps' reserved words, in one of two shapes chosen at start-up,
//! carrying the call each PE entered it with ([`Call`]) so that PEs whose calls over all PEs
//! are out of step all find out at that barrier, rather than corrupt data or wait for ever.
//!
//! - Dissemination (PEs have cores of their own): in round k, PE i raises the round-k flag of
//!   PE (i + 2^k) mod n to the barrier's epoch and waits until its own round-k flag reaches it;
//!   log2(n) rounds of one cache-line transfer each. The sender's call travels in the same line
//!   as the flag (in one of two slots chosen by the epoch's parity: a sender is at most one
//!   barrier ahead of its receiver's reading), and the receiver compares it with its own. A PE
//!   that has seen a difference, itself or through a flag, marks its later flags; since every
//!   PE's arrival reaches every other PE through a chain of rounds, and any difference between
//!   two PEs' calls is a difference between two neighbours of that chain, every PE leaves a
//!   barrier whose calls differ knowing it.
//! - Central (more PEs than cores): every PE adds 1 to a counter on PE 0; the PE that brings it
//!   to epoch * n compares every PE's call with its own and raises PE 0's release word to the
//!   epoch, marked if they differ, which everyone else waits for. Each PE then needs the CPU
//!   twice per barrier, where dissemination needs it once per round, in an order the scheduler
//!   does not know.
//!
//! Epochs only grow and each word's meaning is "reached epoch e", so nothing is ever reset and a
//! PE already in the next barrier is harmless. Release stores (or read-modify-writes) and acquire
//! loads carry every store made before the barrier to every PE after it. Every PE also records
//! in its state line the last epoch it entered and its call: the central shape compares those,
//! and after a barrier whose calls differ (which no PE leaves for the next one) they say who
//! called what. This module never ends the job: it says what it found.

use crate::heap::{Heap, BARRIER_CENTRAL, BARRIER_FLAGS, BARRIER_ROUNDS, BARRIER_STATE};
use crate::mapping::Mapping;
use crate::sync::call::Call;
use crate::sync::wait;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Per-PE barrier state.
#[derive(Debug, Default)]
pub struct Barrier {
    epoch: AtomicU64,
    central: bool,
}

/// Why [`Barrier::sync`] returned without the barrier completing normally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Every PE entered this barrier, but their calls do not agree ([`Call::agrees`]); every
    /// PE returns this, and none goes on to the next barrier, so [`entries`] reads each PE's
    /// call for this epoch.
    OutOfStep {
        /// The barrier's epoch (the number of barriers over all PEs so far, this one included).
        epoch: u64,
    },
    /// The deadline passed before every PE had arrived.
    TimedOut {
        /// The barrier's epoch.
        epoch: u64,
    },
}

/// What a PE last did at the barrier, from its state line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entered {
    /// The last epoch it entered (0: none yet).
    pub epoch: u64,
    /// The call it entered that epoch with (`None` before its first barrier).
    pub call: Option<Call>,
}

fn flag_offset(round: usize) -> usize {
    BARRIER_FLAGS + round * 64
}

/// Where in the round-`round` line the sender's call for `epoch` goes: words 1..4 for even
/// epochs, 4..7 for odd ones.
fn slot_offset(round: usize, epoch: u64) -> usize {
    flag_offset(round) + 8 + (epoch % 2) as usize * 24
}

const COUNTER: usize = BARRIER_CENTRAL;
const RELEASE: usize = BARRIER_CENTRAL + 64;
/// Set beside the epoch in a flag or the release word: the calls of this barrier differ.
const OUT_OF_STEP: u64 = 1 << 63;

fn store_call(line: &Mapping, offset: usize, call: &Call) {
    for (i, w) in call.encode().into_iter().enumerate() {
        line.atomic_u64(offset + 8 * i).store(w, Ordering::Relaxed);
    }
}

fn load_call(line: &Mapping, offset: usize) -> Option<Call> {
    let w = |i: usize| line.atomic_u64(offset + 8 * i).load(Ordering::Relaxed);
    Call::decode([w(0), w(1), w(2)])
}

/// `pe`'s last entry, from its state line. Exact for every PE once a barrier has stopped
/// [`Stop::OutOfStep`]; otherwise a snapshot of a PE that may be moving on.
pub fn entered(heap: &Heap, pe: usize) -> Entered {
    let line = heap.map(pe);
    let epoch = line.atomic_u64(BARRIER_STATE).load(Ordering::Acquire);
    Entered {
        epoch,
        call: load_call(line, BARRIER_STATE + 8),
    }
}

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

    /// Waits until every PE has called `sync` as many times as this one, and checks that
    /// their calls agree with `call`; gives up at `deadline`.
    pub fn sync(
        &self,
        heap: &Heap,
        my_pe: usize,
        n_pes: usize,
        call: Call,
        deadline: Option<Instant>,
    ) -> Result<(), Stop> {
        let epoch = self.epoch.fetch_add(1, Ordering::Relaxed) + 1;
        let state = heap.local();
        store_call(state, BARRIER_STATE + 8, &call);
        state
            .atomic_u64(BARRIER_STATE)
            .store(epoch, Ordering::Release);
        if n_pes == 1 {
            return Ok(());
        }
        if self.central {
            return self.sync_central(heap, my_pe, n_pes, &call, epoch, deadline);
        }
        let mut out_of_step = false;
        let mut dist = 1usize;
        let mut round = 0usize;
        while dist < n_pes {
            debug_assert!(round < BARRIER_ROUNDS);
            let to = heap.map((my_pe + dist) % n_pes);
            store_call(to, slot_offset(round, epoch), &call);
            let mark = if out_of_step { OUT_OF_STEP } else { 0 };
            to.atomic_u64(flag_offset(round))
                .store(epoch | mark, Ordering::Release);
            let mine: &AtomicU64 = heap.local().atomic_u64(flag_offset(round));
            let reached = || mine.load(Ordering::Acquire) & !OUT_OF_STEP >= epoch;
            if !wait::until_deadline(reached, deadline) {
                return Err(Stop::TimedOut { epoch });
            }
            // A flag already past this epoch comes from a sender whose calls agreed here.
            out_of_step |= mine.load(Ordering::Acquire) == epoch | OUT_OF_STEP
                || !load_call(heap.local(), slot_offset(round, epoch))
                    .is_some_and(|theirs| theirs.agrees(&call));
            dist <<= 1;
            round += 1;
        }
        if out_of_step {
            return Err(Stop::OutOfStep { epoch });
        }
        Ok(())
    }

    fn sync_central(
        &self,
        heap: &Heap,
        my_pe: usize,
        n_pes: usize,
        call: &Call,
        epoch: u64,
        deadline: Option<Instant>,
    ) -> Result<(), Stop> {
        let root = heap.map(0);
        let release = root.atomic_u64(RELEASE);
        let arrived = root.atomic_u64(COUNTER).fetch_add(1, Ordering::AcqRel) + 1;
        if arrived == epoch * n_pes as u64 {
            // The counter's read-modify-writes form one release sequence: every PE's state
            // line, written before its increment, is visible here.
            let agree = (0..n_pes).filter(|&pe| pe != my_pe).all(|pe| {
                load_call(heap.map(pe), BARRIER_STATE + 8).is_some_and(|t| t.agrees(call))
            });
            if agree {
                release.store(epoch, Ordering::Release);
                return Ok(());
            }
            release.store(epoch | OUT_OF_STEP, Ordering::Release);
            return Err(Stop::OutOfStep { epoch });
        }
        let reached = || release.load(Ordering::Acquire) & !OUT_OF_STEP >= epoch;
        if !wait::until_deadline(reached, deadline) {
            return Err(Stop::TimedOut { epoch });
        }
        if release.load(Ordering::Acquire) == epoch | OUT_OF_STEP {
            return Err(Stop::OutOfStep { epoch });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::call::Step;
    use std::time::Duration;

    fn malloc(size: u64) -> Call {
        Call::new("shmem_malloc", Step::Alloc { size, align: 64 })
    }

    /// Runs one barrier per entry of `rounds` on `n` PEs (threads), PE i entering barrier k
    /// with `rounds[k](i)`, and returns each PE's outcomes (a PE stops at its first error).
    fn run(
        n: usize,
        central: bool,
        rounds: &[&(dyn Fn(usize) -> Call + Sync)],
        deadline: Option<Duration>,
    ) -> Vec<Vec<Result<(), Stop>>> {
        let heaps = Heap::in_process(n, 4096);
        std::thread::scope(|scope| {
            let handles: Vec<_> = heaps
                .iter()
                .enumerate()
                .map(|(pe, heap)| {
                    scope.spawn(move || {
                        let barrier = Barrier::new(central);
                        let mut outcomes = Vec::new();
                        for call in rounds {
                            let deadline = deadline.map(|d| Instant::now() + d);
                            let r = barrier.sync(heap, pe, n, call(pe), deadline);
                            outcomes.push(r);
                            if r.is_err() {
                                break;
                            }
                        }
                        outcomes
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn calls_that_agree_pass_and_are_recorded() {
        let barrier_or_sync = |pe: usize| {
            let routine = ["shmem_barrier_all", "shmem_sync_all"][pe % 2];
            Call::new(routine, Step::Sync)
        };
        let same_malloc = |_: usize| malloc(64);
        for central in [false, true] {
            for n in 1..=5 {
                let out = run(
                    n,
                    central,
                    &[&barrier_or_sync, &same_malloc, &barrier_or_sync],
                    None,
                );
                for (pe, o) in out.iter().enumerate() {
                    assert_eq!(o, &vec![Ok(()); 3], "n={n} central={central} PE {pe}");
                }
            }
        }
        let heaps = Heap::in_process(2, 4096);
        assert_eq!(
            entered(&heaps[0], 1),
            Entered {
                epoch: 0,
                call: None
            }
        );
    }

    /// Every pattern of two different calls over 2..=6 PEs: every PE returns `OutOfStep` from
    /// that barrier, none goes on (with 4 PEs or more, some PEs see only calls that agree with
    /// their own: they learn it from the marked flags).
    #[test]
    fn every_pe_learns_that_calls_differ() {
        for central in [false, true] {
            for n in 2..=6usize {
                for pattern in 1..(1u32 << n) - 1 {
                    let call = |pe: usize| malloc(if pattern >> pe & 1 == 1 { 128 } else { 64 });
                    let out = run(n, central, &[&|_| malloc(8), &call], None);
                    for (pe, o) in out.iter().enumerate() {
                        assert_eq!(
                            o,
                            &vec![Ok(()), Err(Stop::OutOfStep { epoch: 2 })],
                            "n={n} central={central} pattern={pattern:b} PE {pe}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn state_lines_say_who_called_what() {
        for central in [false, true] {
            let n = 3;
            let heaps = Heap::in_process(n, 4096);
            let calls = [
                malloc(64),
                Call::new("shmem_finalize", Step::Finalize),
                malloc(64),
            ];
            std::thread::scope(|scope| {
                for (pe, heap) in heaps.iter().enumerate() {
                    let call = calls[pe];
                    scope.spawn(move || {
                        let barrier = Barrier::new(central);
                        let r = barrier.sync(heap, pe, n, call, None);
                        assert_eq!(r, Err(Stop::OutOfStep { epoch: 1 }));
                    });
                }
            });
            for (pe, call) in calls.iter().enumerate() {
                for view in &heaps {
                    let e = entered(view, pe);
                    assert_eq!((e.epoch, e.call), (1, Some(*call)), "central={central}");
                }
            }
        }
    }

    #[test]
    fn a_pe_that_never_comes_times_the_others_out() {
        for central in [false, true] {
            let n = 3;
            let heaps = Heap::in_process(n, 4096);
            std::thread::scope(|scope| {
                // PE 2 never enters the barrier.
                for (pe, heap) in heaps.iter().enumerate().take(2) {
                    scope.spawn(move || {
                        let barrier = Barrier::new(central);
                        let deadline = Some(Instant::now() + Duration::from_millis(100));
                        let fin = Call::new("shmem_finalize", Step::Finalize);
                        let r = barrier.sync(heap, pe, n, fin, deadline);
                        assert_eq!(r, Err(Stop::TimedOut { epoch: 1 }), "central={central}");
                    });
                }
            });
            assert_eq!(entered(&heaps[0], 2).epoch, 0);
            assert_eq!(entered(&heaps[2], 0).epoch, 1);
        }
    }
}
