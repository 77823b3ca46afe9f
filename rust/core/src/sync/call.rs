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
}
