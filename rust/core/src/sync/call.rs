//! Which call over all PEs a barrier belongs to: the routine and the arguments every PE must
//! agree on, as three heap words (each PE's record of its call) and as a 31-bit tag that a
//! barrier carries beside its epoch in the words it already writes (see
//! [`crate::sync::barrier`]).
//!
//! Two PEs agree when they entered the barrier for the same step: plain synchronisations
//! (`shmem_barrier_all`, `shmem_sync_all`) agree with each other whatever the routine; an
//! allocation agrees with an allocation of the same size and alignment, whichever allocation
//! routine made it (the blocks then have the same offset on every PE); frees and resizes agree
//! on the block's offset (and the new size); `shmem_finalize` agrees only with itself. Anything
//! else means the PEs' collective calls are out of step: from there on the same address would
//! name different blocks, or one PE would wait for ever.
//!
//! A team collective ([`TeamCall`]) is checked the same way on its team's barriers: members
//! agree when they called the same routine with the same counts and root (a collect's count
//! may differ between members and is not compared).

use std::fmt;

/// The public routines whose calls enter the barrier over all PEs.
const ROUTINES: &[&str] = &[
    "shmem_barrier_all",
    "shmem_sync_all",
    "shmem_finalize",
    "shmem_malloc",
    "shmem_malloc_with_hints",
    "shmem_calloc",
    "shmem_align",
    "shmem_realloc",
    "shmem_free",
];

/// Index in [`ROUTINES`] for a routine not in it (the description then names the step only).
const OTHER_ROUTINE: u64 = 0xff;

/// An offset that names no block (the pointer was outside the symmetric heap).
const NO_OFFSET: u64 = u64::MAX;

/// Bits of [`Call::tag`].
pub const TAG_BITS: u32 = 31;

/// What the PEs must agree on, with its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// A plain synchronisation: `shmem_barrier_all` or `shmem_sync_all`.
    Sync,
    /// A new block of `size` bytes aligned to `align`.
    Alloc {
        /// Bytes asked for.
        size: u64,
        /// Alignment asked for.
        align: u64,
    },
    /// Freeing the block at heap offset `offset` (`u64::MAX`: not a heap address).
    Free {
        /// The block's offset in the user heap.
        offset: u64,
    },
    /// Resizing the block at heap offset `offset` to `size` bytes.
    Realloc {
        /// The block's offset in the user heap (`u64::MAX`: not a heap address).
        offset: u64,
        /// The new size.
        size: u64,
    },
    /// `shmem_finalize`.
    Finalize,
}

/// One PE's call: the routine it called and the step it asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    routine: u64,
    /// The step every PE must agree on.
    pub step: Step,
}

impl Call {
    /// `shmem_barrier_all()`.
    pub const BARRIER_ALL: Call = Call {
        routine: 0,
        step: Step::Sync,
    };
    /// `shmem_sync_all()`.
    pub const SYNC_ALL: Call = Call {
        routine: 1,
        step: Step::Sync,
    };

    /// The call of routine `routine` (a public name such as `"shmem_malloc"`) for `step`.
    pub fn new(routine: &str, step: Step) -> Call {
        let routine = ROUTINES
            .iter()
            .position(|r| *r == routine)
            .map_or(OTHER_ROUTINE, |i| i as u64);
        Call { routine, step }
    }

    /// A free or resize of the block at `offset` in the user heap (`None`: not a heap address).
    pub fn offset_word(offset: Option<usize>) -> u64 {
        offset.map_or(NO_OFFSET, |o| o as u64)
    }

    /// True when two PEs making these calls are in step.
    pub fn agrees(&self, other: &Call) -> bool {
        self.step == other.step
    }

    fn kind_and_args(&self) -> (u64, u64, u64) {
        match self.step {
            Step::Sync => (1, 0, 0),
            Step::Alloc { size, align } => (2, size, align),
            Step::Free { offset } => (3, offset, 0),
            Step::Realloc { offset, size } => (4, offset, size),
            Step::Finalize => (5, 0, 0),
        }
    }

    /// The step in [`TAG_BITS`] bits, small enough to travel beside an epoch in one word: the
    /// kind of step exactly (3 bits), its arguments hashed (28 bits). Calls that agree have the
    /// same tag; calls of different kinds never do; calls of one kind with different arguments
    /// do with probability 2^-28.
    pub fn tag(&self) -> u64 {
        let (kind, a, b) = self.kind_and_args();
        // splitmix64's finaliser over both arguments: fixed, so every PE computes the same.
        let mut h = a ^ b.rotate_left(32) ^ 0x9e37_79b9_7f4a_7c15;
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^= h >> 31;
        kind << 28 | (h & ((1 << 28) - 1))
    }

    /// The three words a state line holds; the first is never 0, which marks "nothing written".
    pub fn encode(&self) -> [u64; 3] {
        let (kind, a, b) = self.kind_and_args();
        [kind | self.routine << 8, a, b]
    }

    /// The call [`Call::encode`] wrote, or `None` for words that hold no call.
    pub fn decode(words: [u64; 3]) -> Option<Call> {
        let [w, a, b] = words;
        let step = match w & 0xff {
            1 => Step::Sync,
            2 => Step::Alloc { size: a, align: b },
            3 => Step::Free { offset: a },
            4 => Step::Realloc { offset: a, size: b },
            5 => Step::Finalize,
            _ => return None,
        };
        Some(Call {
            routine: (w >> 8) & 0xff,
            step,
        })
    }

    /// The routine's public name, or what the step is when the routine is not known here.
    pub fn routine(&self) -> &'static str {
        match ROUTINES.get(self.routine as usize) {
            Some(name) => name,
            None => match self.step {
                Step::Sync => "a barrier over all PEs",
                Step::Alloc { .. } => "a symmetric allocation",
                Step::Free { .. } => "a symmetric free",
                Step::Realloc { .. } => "a symmetric reallocation",
                Step::Finalize => "a finalize",
            },
        }
    }
}

fn offset_text(offset: u64) -> String {
    if offset == NO_OFFSET {
        "a pointer outside the symmetric heap".to_string()
    } else {
        format!("the block at heap offset {offset}")
    }
}

impl fmt::Display for Call {
    /// `shmem_malloc(size=64, align=64)`, `shmem_free(the block at heap offset 128)`, ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.routine();
        // A description rather than a routine's name: its arguments follow after a space.
        let open = if name.starts_with("shmem_") {
            "("
        } else {
            " ("
        };
        match self.step {
            Step::Sync | Step::Finalize => write!(f, "{name}{open})"),
            Step::Alloc { size, align } => write!(f, "{name}{open}size={size}, align={align})"),
            Step::Free { offset } => write!(f, "{name}{open}{})", offset_text(offset)),
            Step::Realloc { offset, size } => {
                write!(f, "{name}{open}{}, size={size})", offset_text(offset))
            }
        }
    }
}

pub use crate::layout::{TEAM_CALL_WORDS, TEAM_NAME_BYTES};

/// Arguments of a team collective that every member must pass alike (bits of
/// [`TeamCall::new`]'s `checks`; the facade's `kTeamCheck*`).
pub const TEAM_COUNT: u32 = 1;
/// The root (`PE_root`), in `extra`.
pub const TEAM_ROOT: u32 = 2;
/// The source stride (`sst`), in `extra`.
pub const TEAM_SST: u32 = 4;

/// One member's team collective: the routine and the arguments every member must agree on.
/// Two members agree when their calls are equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TeamCall {
    name: [u8; TEAM_NAME_BYTES],
    checks: u32,
    count: u64,
    extra: u64,
}

impl TeamCall {
    /// `routine` (its public name) with `count` and `extra` where `checks` says they are
    /// compared ([`TEAM_COUNT`], [`TEAM_ROOT`], [`TEAM_SST`]); unchecked ones are dropped. The
    /// facade's `team_enter` builds the same words.
    #[cfg(test)]
    pub fn new(routine: &str, checks: u32, count: u64, extra: u64) -> TeamCall {
        let mut name = [0u8; TEAM_NAME_BYTES];
        let n = routine.len().min(TEAM_NAME_BYTES);
        name[..n].copy_from_slice(&routine.as_bytes()[..n]);
        let checks = checks & (TEAM_COUNT | TEAM_ROOT | TEAM_SST);
        TeamCall {
            name,
            checks,
            count: if checks & TEAM_COUNT != 0 { count } else { 0 },
            extra: if checks & (TEAM_ROOT | TEAM_SST) != 0 {
                extra
            } else {
                0
            },
        }
    }

    /// The words a member's record holds; the first is never 0, which marks "nothing written".
    #[cfg(test)]
    pub fn encode(&self) -> [u64; TEAM_CALL_WORDS] {
        let mut w = [0u64; TEAM_CALL_WORDS];
        w[0] = 1 | u64::from(self.checks) << 8;
        w[1] = self.count;
        w[2] = self.extra;
        for (i, chunk) in self.name.chunks_exact(8).enumerate() {
            w[3 + i] = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        }
        w
    }

    /// The call [`TeamCall::encode`] wrote, or `None` for words that hold none.
    pub fn decode(w: [u64; TEAM_CALL_WORDS]) -> Option<TeamCall> {
        if w[0] & 0xff != 1 {
            return None;
        }
        let mut name = [0u8; TEAM_NAME_BYTES];
        for (i, chunk) in name.chunks_exact_mut(8).enumerate() {
            chunk.copy_from_slice(&w[3 + i].to_le_bytes());
        }
        Some(TeamCall {
            name,
            checks: (w[0] >> 8) as u32,
            count: w[1],
            extra: w[2],
        })
    }

    /// The call in [`TAG_BITS`] bits, as the facade's `team_enter` computes it for the team
    /// barriers: calls that agree have the same tag, different ones the same with probability
    /// 2^-28, and none the tag of a call over all PEs.
    #[cfg(test)]
    pub fn tag(&self) -> u64 {
        let w = self.encode();
        let mut h = 0x9e37_79b9_7f4a_7c15u64;
        for x in w {
            h = (h ^ x).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            h ^= h >> 29;
        }
        h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^= h >> 31;
        6 << 28 | (h & ((1 << 28) - 1))
    }

    /// The routine's public name.
    pub fn routine(&self) -> &str {
        let end = self
            .name
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(TEAM_NAME_BYTES);
        std::str::from_utf8(&self.name[..end]).unwrap_or("a team collective")
    }
}

impl fmt::Display for TeamCall {
    /// `shmem_float_sum_reduce(nreduce=4)`, `shmem_broadcastmem(nelems=8, PE_root=0)`, ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.routine();
        let mut args = Vec::new();
        if self.checks & TEAM_COUNT != 0 {
            let arg = if name.ends_with("_reduce") {
                "nreduce"
            } else {
                "nelems"
            };
            args.push(format!("{arg}={}", self.count));
        }
        if self.checks & TEAM_ROOT != 0 {
            args.push(format!("PE_root={}", self.extra));
        }
        if self.checks & TEAM_SST != 0 {
            args.push(format!("sst={}", self.extra as i64));
        }
        write!(f, "{name}({})", args.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let calls = [
            Call::new("shmem_barrier_all", Step::Sync),
            Call::new("shmem_sync_all", Step::Sync),
            Call::new("shmem_finalize", Step::Finalize),
            Call::new(
                "shmem_calloc",
                Step::Alloc {
                    size: 4096,
                    align: 64,
                },
            ),
            Call::new(
                "shmem_free",
                Step::Free {
                    offset: Call::offset_word(None),
                },
            ),
            Call::new(
                "shmem_realloc",
                Step::Realloc {
                    offset: 64,
                    size: 1 << 40,
                },
            ),
            Call::new("aclshmem_malloc", Step::Alloc { size: 1, align: 8 }),
        ];
        for call in calls {
            assert_ne!(call.encode()[0], 0);
            assert_eq!(Call::decode(call.encode()), Some(call));
        }
        assert_eq!(Call::decode([0, 0, 0]), None);
        assert_eq!(
            Call::BARRIER_ALL,
            Call::new("shmem_barrier_all", Step::Sync)
        );
        assert_eq!(Call::SYNC_ALL, Call::new("shmem_sync_all", Step::Sync));
    }

    #[test]
    fn plain_syncs_agree_and_other_steps_must_match() {
        let barrier = Call::new("shmem_barrier_all", Step::Sync);
        let sync = Call::new("shmem_sync_all", Step::Sync);
        let finalize = Call::new("shmem_finalize", Step::Finalize);
        let malloc = |size| Call::new("shmem_malloc", Step::Alloc { size, align: 64 });
        let hints = Call::new(
            "shmem_malloc_with_hints",
            Step::Alloc {
                size: 64,
                align: 64,
            },
        );
        assert!(barrier.agrees(&sync));
        assert!(malloc(64).agrees(&hints));
        assert!(!malloc(64).agrees(&malloc(128)));
        assert!(!malloc(64).agrees(&finalize));
        assert!(!barrier.agrees(&finalize));
        assert!(!barrier.agrees(&malloc(64)));
    }

    #[test]
    fn tags_fit_and_follow_agreement() {
        let barrier = Call::new("shmem_barrier_all", Step::Sync);
        let sync = Call::new("shmem_sync_all", Step::Sync);
        let finalize = Call::new("shmem_finalize", Step::Finalize);
        let malloc = |size| Call::new("shmem_malloc", Step::Alloc { size, align: 64 });
        let calloc = Call::new(
            "shmem_calloc",
            Step::Alloc {
                size: 64,
                align: 64,
            },
        );
        assert_eq!(barrier.tag(), sync.tag());
        assert_eq!(malloc(64).tag(), calloc.tag());
        assert_ne!(barrier.tag(), finalize.tag());
        assert_ne!(malloc(64).tag(), finalize.tag());
        let mut seen = std::collections::HashSet::new();
        for size in 1..=4096u64 {
            let tag = malloc(size).tag();
            assert!(tag < 1 << TAG_BITS);
            assert!(seen.insert(tag), "sizes up to 4096 have distinct tags");
        }
        let free = |offset| Call::new("shmem_free", Step::Free { offset });
        assert_ne!(free(0).tag(), free(64).tag());
        assert_ne!(free(0).tag(), free(Call::offset_word(None)).tag());
    }

    #[test]
    fn descriptions_name_routine_and_arguments() {
        let malloc = Call::new(
            "shmem_malloc",
            Step::Alloc {
                size: 64,
                align: 64,
            },
        );
        assert_eq!(malloc.to_string(), "shmem_malloc(size=64, align=64)");
        let fin = Call::new("shmem_finalize", Step::Finalize);
        assert_eq!(fin.to_string(), "shmem_finalize()");
        let free = Call::new("shmem_free", Step::Free { offset: 128 });
        assert_eq!(free.to_string(), "shmem_free(the block at heap offset 128)");
        let bad = Call::new(
            "shmem_realloc",
            Step::Realloc {
                offset: Call::offset_word(None),
                size: 8,
            },
        );
        assert_eq!(
            bad.to_string(),
            "shmem_realloc(a pointer outside the symmetric heap, size=8)"
        );
        let other = Call::new("aclshmem_malloc", Step::Alloc { size: 8, align: 8 });
        assert_eq!(
            other.to_string(),
            "a symmetric allocation (size=8, align=8)"
        );
    }

    #[test]
    fn team_calls_round_trip_agree_and_describe_themselves() {
        let reduce = |n| TeamCall::new("shmem_float_sum_reduce", TEAM_COUNT, n, 0);
        let bcast = |n, root| TeamCall::new("shmem_broadcastmem", TEAM_COUNT | TEAM_ROOT, n, root);
        let collect = |n| TeamCall::new("shmem_int_collect", 0, n, 0);
        let calls = [
            reduce(4),
            bcast(16, 1),
            collect(3),
            TeamCall::new("shmem_longdouble_prod_reduce", TEAM_COUNT, 1 << 40, 0),
            TeamCall::new("shmem_int64_alltoalls", TEAM_COUNT | TEAM_SST, 2, 3),
        ];
        for c in calls {
            assert_ne!(c.encode()[0], 0);
            assert_eq!(TeamCall::decode(c.encode()), Some(c));
            assert!(c.tag() < 1 << TAG_BITS);
            assert_ne!(c.tag(), Call::BARRIER_ALL.tag());
        }
        assert_eq!(TeamCall::decode([0; TEAM_CALL_WORDS]), None);
        assert_eq!(reduce(4), reduce(4));
        assert_eq!(reduce(4).tag(), reduce(4).tag());
        assert_ne!(reduce(4).tag(), reduce(8).tag());
        assert_ne!(bcast(16, 0).tag(), bcast(16, 1).tag());
        assert_ne!(bcast(4, 0).tag(), reduce(4).tag());
        // A collect's count is its own: members with different counts agree.
        assert_eq!(collect(3), collect(5));
        assert_eq!(collect(3).tag(), collect(5).tag());
        assert_eq!(reduce(4).to_string(), "shmem_float_sum_reduce(nreduce=4)");
        assert_eq!(
            bcast(16, 1).to_string(),
            "shmem_broadcastmem(nelems=16, PE_root=1)"
        );
        assert_eq!(collect(3).to_string(), "shmem_int_collect()");
        assert_eq!(
            calls[4].to_string(),
            "shmem_int64_alltoalls(nelems=2, sst=3)"
        );
        assert_eq!(calls[3].routine(), "shmem_longdouble_prod_reduce");
    }
}
