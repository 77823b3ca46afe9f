//! Barrier over all PEs on the heaps' reserved words, in one of two shapes chosen at start-up,
//! carrying a tag of the call each PE entered it with ([`Call::tag`]) so that PEs whose calls
//! over all PEs are out of step all find out at that barrier, rather than corrupt data or wait
//! for ever. The tag travels in the words the barrier writes anyway: no extra cache line.
//!
//! - Dissemination (PEs have cores of their own): in round k, PE i raises the round-k flag of
//!   PE (i + 2^k) mod n to the barrier's epoch and waits until its own round-k flag reaches it;
//!   log2(n) rounds of one cache-line transfer each. A flag holds the epoch's low 32 bits (a
//!   flag is never more than one epoch away from its reader's, so they compare modulo 2^32),
//!   the sender's tag, and a mark; the receiver compares the tag with its own. A PE that has
//!   seen a difference, itself or as a mark, marks its later flags. Every PE's arrival reaches
//!   every other PE through a chain of rounds, and a difference between two PEs' calls is a
//!   difference between two neighbours of that chain, so every PE leaves a barrier whose calls
//!   differ knowing it. A flag already one epoch ahead comes from a PE that left this barrier
//!   unmarked, which it cannot have done unless every call agreed.
//! - Central (more PEs than cores): every PE ORs its tag, and above it its complement, into a
//!   word beside a counter on PE 0, then adds 1 to the counter; the PE that brings it to
//!   epoch * n finds a bit set in both halves if the tags differ, and raises PE 0's release
//!   word to the epoch, marked if so, which everyone else waits for. Each PE then needs the CPU twice per
//!   barrier, where dissemination needs it once per round, in an order the scheduler does not
//!   know.
//!
//! Epochs only grow and each word's meaning is "reached epoch e", so nothing is ever reset (but
//! the central tag word, by the last arrival, for the next epoch) and a PE already in
//! the next barrier is harmless. Release stores (or read-modify-writes) and acquire loads carry
//! every store made before the barrier to every PE after it. Every PE also records in its own
//! state line the last epoch it entered and its whole call: after a barrier whose calls differ
//! (which no PE leaves for the next one) they say who called what. This module never ends the
//! job: it says what it found.

use crate::heap::{Heap, BARRIER_CENTRAL, BARRIER_FLAGS, BARRIER_ROUNDS, BARRIER_STATE};
use crate::mapping::Mapping;
use crate::sync::call::{Call, TAG_BITS};
use crate::sync::wait;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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
    /// PE returns this, and none goes on to the next barrier, so [`entered`] reads each PE's
    /// call for this epoch.
    OutOfStep {
        /// The barrier's epoch (the number of barriers over all PEs so far, this one included).
        epoch: u64,
    },
    /// The caller's `give_up` said so before every PE had arrived.
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

/// Asked with the barrier's epoch while a PE waits at it: true ends the wait ([`Stop::TimedOut`]).
pub type GiveUp<'a> = &'a mut dyn FnMut(u64) -> bool;

/// Waits for `reached`, asking `give_up` (if any) between checks; false if it gave up.
fn wait_for(reached: impl FnMut() -> bool, give_up: &mut Option<GiveUp<'_>>, epoch: u64) -> bool {
    match give_up {
        None => {
            wait::until(reached);
            true
        }
        Some(give_up) => wait::until_or(reached, Some(&mut || give_up(epoch))),
    }
}

/// Offset in a PE's state line of its nap stamp ([`wait::publish_naps`]), after its last
/// epoch and call.
const NAP_STAMP: usize = BARRIER_STATE + 32;

/// `pe`'s nap stamp: where it publishes its naps, and where peers read them.
pub fn nap_stamp(heap: &Heap, pe: usize) -> &AtomicU64 {
    heap.map(pe).atomic_u64(NAP_STAMP)
}

/// Tells when a wait at the barrier cannot end: every PE that has not entered it has been
/// waiting in the library ([`wait::napping`]) for `patience` without a break. Nobody is then
/// computing who could release anybody, since the PEs at the barrier only wait too. A PE that
/// is merely late (computing, or blocked outside the library) is waited for as long as it
/// takes. Looks at the state lines at most every [`Hopeless::LOOK_EVERY`].
#[derive(Debug)]
pub struct Hopeless<'h> {
    heap: &'h Heap,
    n_pes: usize,
    patience: Duration,
    /// Since when every missing PE has been seen waiting.
    since: Option<Instant>,
    looked: Option<Instant>,
}

impl<'h> Hopeless<'h> {
    /// How often the state lines are read while waiting.
    pub const LOOK_EVERY: Duration = Duration::from_millis(50);

    /// A watch over the barrier on `heap` of an `n_pes` job.
    pub fn new(heap: &'h Heap, n_pes: usize, patience: Duration) -> Self {
        Hopeless {
            heap,
            n_pes,
            patience,
            since: None,
            looked: None,
        }
    }

    /// True once the barrier of `epoch` cannot complete (see [`Hopeless`]).
    pub fn check(&mut self, epoch: u64) -> bool {
        let now = Instant::now();
        if self.looked.is_some_and(|t| now - t < Self::LOOK_EVERY) {
            return false;
        }
        self.looked = Some(now);
        let mut missing = (0..self.n_pes)
            .filter(|&pe| entered(self.heap, pe).epoch < epoch)
            .peekable();
        let stuck =
            missing.peek().is_some() && missing.all(|pe| wait::napping(nap_stamp(self.heap, pe)));
        if !stuck {
            self.since = None;
            return false;
        }
        now - *self.since.get_or_insert(now) >= self.patience
    }
}

fn flag_offset(round: usize) -> usize {
    BARRIER_FLAGS + round * 64
}

/// Set in a flag or the release word, beside the epoch: the calls of this barrier differ.
const OUT_OF_STEP: u64 = 1 << 63;
const EPOCH_MASK: u64 = (1 << 32) - 1;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;

/// A dissemination flag: the epoch's low 32 bits, the sender's tag, the mark.
fn flag(epoch: u64, tag: u64, out_of_step: bool) -> u64 {
    let mark = if out_of_step { OUT_OF_STEP } else { 0 };
    (epoch & EPOCH_MASK) | tag << 32 | mark
}

/// How far a flag's epoch is ahead of `epoch`, modulo 2^32: 0 or 1 once reached, 2^32 - 1
/// before.
fn ahead(flag: u64, epoch: u64) -> u64 {
    (flag & EPOCH_MASK).wrapping_sub(epoch) & EPOCH_MASK
}

const COUNTER: usize = BARRIER_CENTRAL;
/// The central shape's tag word on PE 0 for `epoch`, beside the counter (one per epoch parity):
/// the OR of every PE's tag in the low [`TAG_BITS`] bits, the OR of their complements above.
fn tag_word(epoch: u64) -> usize {
    COUNTER + 8 + (epoch % 2) as usize * 8
}
const RELEASE: usize = BARRIER_CENTRAL + 64;

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

    /// Waits until every PE has called `sync` as many times as this one, and checks that
    /// their calls agree with `call`; gives up when `give_up(epoch)` says so (asked now and
    /// then once the wait has stopped spinning).
    pub fn sync(
        &self,
        heap: &Heap,
        my_pe: usize,
        n_pes: usize,
        call: Call,
        mut give_up: Option<GiveUp<'_>>,
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
        let tag = call.tag();
        if self.central {
            return self.sync_central(heap, n_pes, tag, epoch, give_up);
        }
        let mut out_of_step = false;
        let mut dist = 1usize;
        let mut round = 0usize;
        while dist < n_pes {
            debug_assert!(round < BARRIER_ROUNDS);
            heap.map((my_pe + dist) % n_pes)
                .atomic_u64(flag_offset(round))
                .store(flag(epoch, tag, out_of_step), Ordering::Release);
            let mine: &AtomicU64 = heap.local().atomic_u64(flag_offset(round));
            let reached = || ahead(mine.load(Ordering::Acquire), epoch) <= 1;
            if !wait_for(reached, &mut give_up, epoch) {
                return Err(Stop::TimedOut { epoch });
            }
            let got = mine.load(Ordering::Acquire);
            if ahead(got, epoch) == 0 {
                out_of_step |= got & OUT_OF_STEP != 0 || (got >> 32) & TAG_MASK != tag;
            }
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
        n_pes: usize,
        tag: u64,
        epoch: u64,
        mut give_up: Option<GiveUp<'_>>,
    ) -> Result<(), Stop> {
        let root = heap.map(0);
        let release = root.atomic_u64(RELEASE);
        let tags = root.atomic_u64(tag_word(epoch));
        tags.fetch_or(tag | (!tag & TAG_MASK) << TAG_BITS, Ordering::Relaxed);
        let arrived = root.atomic_u64(COUNTER).fetch_add(1, Ordering::AcqRel) + 1;
        if arrived == epoch * n_pes as u64 {
            // The counter's read-modify-writes form one release sequence: every PE's OR, made
            // before its increment, is visible here. A bit set both in some tag and in some
            // complement is a bit where two tags differ.
            let seen = tags.load(Ordering::Relaxed);
            let differ = seen & (seen >> TAG_BITS) & TAG_MASK != 0;
            // The other word last served the previous epoch, which every PE has left; it
            // serves the next one only after the release below.
            root.atomic_u64(tag_word(epoch + 1))
                .store(0, Ordering::Relaxed);
            let mark = if differ { OUT_OF_STEP } else { 0 };
            release.store(epoch | mark, Ordering::Release);
            return if differ {
                Err(Stop::OutOfStep { epoch })
            } else {
                Ok(())
            };
        }
        let reached = || release.load(Ordering::Acquire) & !OUT_OF_STEP >= epoch;
        if !wait_for(reached, &mut give_up, epoch) {
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
                            let mut past = |_| deadline.is_some_and(|d| Instant::now() >= d);
                            let give_up: Option<GiveUp<'_>> = Some(&mut past);
                            let r = barrier.sync(heap, pe, n, call(pe), give_up);
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
    fn flags_compare_modulo_two_to_the_32() {
        let tag = malloc(64).tag();
        for epoch in [
            1u64,
            2,
            (1 << 32) - 1,
            1 << 32,
            (1 << 32) + 1,
            5 << 32,
            u64::MAX >> 2,
        ] {
            let before = flag(epoch - 1, tag, false);
            assert_eq!(ahead(before, epoch), EPOCH_MASK, "epoch {epoch}");
            assert_eq!(ahead(flag(epoch, tag, true), epoch), 0, "epoch {epoch}");
            assert_eq!(
                ahead(flag(epoch + 1, tag, false), epoch),
                1,
                "epoch {epoch}"
            );
            let word = flag(epoch, tag, true);
            assert_eq!((word >> 32) & TAG_MASK, tag);
            assert_ne!(word & OUT_OF_STEP, 0);
        }
        // A fresh heap's 0 has not reached the first epoch.
        assert_eq!(ahead(0, 1), EPOCH_MASK);
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
                        let deadline = Instant::now() + Duration::from_millis(100);
                        let fin = Call::new("shmem_finalize", Step::Finalize);
                        let mut past = |_| Instant::now() >= deadline;
                        let r = barrier.sync(heap, pe, n, fin, Some(&mut past));
                        assert_eq!(r, Err(Stop::TimedOut { epoch: 1 }), "central={central}");
                    });
                }
            });
            assert_eq!(entered(&heaps[0], 2).epoch, 0);
            assert_eq!(entered(&heaps[2], 0).epoch, 1);
        }
    }

    /// A missing PE that computes is waited for; one that waits in the library for the
    /// whole patience is not.
    #[test]
    fn only_missing_pes_that_wait_in_the_library_make_a_barrier_hopeless() {
        let heaps = Heap::in_process(3, 4096);
        let patience = Duration::from_millis(300);
        let mut watch = Hopeless::new(&heaps[0], 3, patience);
        // PEs 0 and 1 entered epoch 1; PE 2 did not, and does not nap: it computes.
        for heap in &heaps[..2] {
            heap.local()
                .atomic_u64(BARRIER_STATE)
                .store(1, Ordering::Release);
        }
        let start = Instant::now();
        while start.elapsed() < 2 * patience {
            assert!(!watch.check(1), "a computing PE is waited for");
            std::thread::sleep(Duration::from_millis(10));
        }
        // PE 2 now naps in a library wait: hopeless once the patience has passed.
        let stamp = nap_stamp(&heaps[2], 2);
        let start = Instant::now();
        let gave_up = loop {
            stamp.store(wait::node_clock_ns(), Ordering::Relaxed);
            if watch.check(1) {
                break start.elapsed();
            }
            assert!(start.elapsed() < 20 * patience, "never gave up");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(gave_up >= patience, "gave up after {gave_up:?}");
        // Everyone arrived: nothing is missing, nothing is hopeless.
        heaps[2]
            .local()
            .atomic_u64(BARRIER_STATE)
            .store(1, Ordering::Release);
        let mut watch = Hopeless::new(&heaps[0], 3, Duration::ZERO);
        assert!(!watch.check(1));
    }
}
