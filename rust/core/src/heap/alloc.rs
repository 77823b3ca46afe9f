//! The symmetric allocator: offsets into the user part of the heap. It is deterministic (the
//! same sequence of calls gives the same offsets on every PE), which is what makes an address
//! returned by `shmem_malloc` valid on every PE. It knows nothing of memory or peers.

use std::collections::BTreeMap;

/// Every block starts on at least this many bytes (one cache line).
pub const MIN_ALIGN: usize = 64;

/// Why a request could not be met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllocError {
    /// No free range is large enough.
    Exhausted {
        /// Bytes asked for, after rounding.
        wanted: usize,
        /// Largest free range at the moment.
        largest_free: usize,
        /// Free bytes in all.
        total_free: usize,
    },
    /// `offset` is not the start of a live block.
    NotABlock {
        /// The offset that was passed.
        offset: usize,
    },
}

/// First-fit allocator over `[0, size)` with coalescing frees.
#[derive(Debug)]
pub struct Allocator {
    /// Free ranges: start -> length, never adjacent (always coalesced).
    free: BTreeMap<usize, usize>,
    /// Live blocks: start -> length.
    used: BTreeMap<usize, usize>,
}

fn round_up(x: usize, to: usize) -> Option<usize> {
    x.checked_add(to - 1).map(|v| v & !(to - 1))
}

impl Allocator {
    /// An allocator with all of `[0, size)` free.
    pub fn new(size: usize) -> Self {
        let mut free = BTreeMap::new();
        if size > 0 {
            free.insert(0, size);
        }
        Allocator {
            free,
            used: BTreeMap::new(),
        }
    }

    /// Reserves `len` bytes (> 0) aligned to `align` (a power of two); returns the offset.
    pub fn alloc(&mut self, len: usize, align: usize) -> Result<usize, AllocError> {
        debug_assert!(len > 0 && align.is_power_of_two());
        let align = align.max(MIN_ALIGN);
        let exhausted = |s: &Self, wanted| AllocError::Exhausted {
            wanted,
            largest_free: s.free.values().copied().max().unwrap_or(0),
            total_free: s.free.values().sum(),
        };
        let Some(len) = round_up(len, MIN_ALIGN) else {
            return Err(exhausted(self, len));
        };
        let mut found = None;
        for (&start, &flen) in &self.free {
            let Some(at) = round_up(start, align) else {
                break;
            };
            if at.checked_add(len).is_some_and(|end| end <= start + flen) {
                found = Some((start, flen, at));
                break;
            }
        }
        let Some((start, flen, at)) = found else {
            return Err(exhausted(self, len));
        };
        self.free.remove(&start);
        if at > start {
            self.free.insert(start, at - start);
        }
        let end = at + len;
        if end < start + flen {
            self.free.insert(end, start + flen - end);
        }
        self.used.insert(at, len);
        Ok(at)
    }

    /// Returns a block to the free ranges.
    pub fn free(&mut self, offset: usize) -> Result<(), AllocError> {
        let len = self
            .used
            .remove(&offset)
            .ok_or(AllocError::NotABlock { offset })?;
        let (mut start, mut end) = (offset, offset + len);
        if let Some((&prev, &plen)) = self.free.range(..start).next_back() {
            if prev + plen == start {
                self.free.remove(&prev);
                start = prev;
            }
        }
        if let Some(&nlen) = self.free.get(&end) {
            self.free.remove(&end);
            end += nlen;
        }
        self.free.insert(start, end - start);
        Ok(())
    }

    /// Length of the live block at `offset`.
    pub fn block_len(&self, offset: usize) -> Option<usize> {
        self.used.get(&offset).copied()
    }

    /// Tries to resize the block at `offset` in place (shrink, or grow into the free range
    /// right after it). Returns false when it cannot, leaving everything unchanged.
    pub fn resize_in_place(&mut self, offset: usize, new_len: usize) -> Result<bool, AllocError> {
        let len = self
            .block_len(offset)
            .ok_or(AllocError::NotABlock { offset })?;
        let Some(new_len) = round_up(new_len.max(1), MIN_ALIGN) else {
            return Ok(false);
        };
        let end = offset + len;
        if new_len <= len {
            if new_len < len {
                self.used.insert(offset, new_len);
                // Give the tail back, merging with a free range that follows.
                let mut tail_end = end;
                if let Some(&nlen) = self.free.get(&end) {
                    self.free.remove(&end);
                    tail_end += nlen;
                }
                self.free
                    .insert(offset + new_len, tail_end - (offset + new_len));
            }
            return Ok(true);
        }
        let extra = new_len - len;
        match self.free.get(&end).copied() {
            Some(flen) if flen >= extra => {
                self.free.remove(&end);
                if flen > extra {
                    self.free.insert(end + extra, flen - extra);
                }
                self.used.insert(offset, new_len);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Number of live blocks.
    #[cfg(test)]
    pub fn live_blocks(&self) -> usize {
        self.used.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_and_disjoint() {
        let mut a = Allocator::new(1 << 20);
        let x = a.alloc(1, 1).unwrap();
        let y = a.alloc(100, 1).unwrap();
        let z = a.alloc(10, 4096).unwrap();
        assert_eq!(x % 64, 0);
        assert_eq!(y % 64, 0);
        assert_eq!(z % 4096, 0);
        assert!(x + 64 <= y && y + 128 <= z);
    }

    #[test]
    fn same_sequence_same_offsets() {
        let run = || {
            let mut a = Allocator::new(1 << 16);
            let p = a.alloc(300, 64).unwrap();
            let q = a.alloc(5000, 256).unwrap();
            a.free(p).unwrap();
            let r = a.alloc(64, 64).unwrap();
            (p, q, r)
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn free_coalesces_back_to_one_range() {
        let mut a = Allocator::new(1 << 16);
        let blocks: Vec<_> = (0..10)
            .map(|i| a.alloc(100 * (i + 1), 64).unwrap())
            .collect();
        for b in blocks
            .iter()
            .rev()
            .step_by(2)
            .chain(blocks.iter().step_by(2))
        {
            a.free(*b).unwrap();
        }
        assert_eq!(a.live_blocks(), 0);
        assert_eq!(a.free.len(), 1);
        assert_eq!(a.alloc(1 << 16, 64).unwrap(), 0);
    }

    #[test]
    fn exhaustion_reports_largest_free() {
        let mut a = Allocator::new(4096);
        a.alloc(1024, 64).unwrap();
        match a.alloc(4000, 64) {
            Err(AllocError::Exhausted {
                largest_free,
                total_free,
                ..
            }) => {
                assert_eq!(largest_free, 3072);
                assert_eq!(total_free, 3072);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            a.alloc(usize::MAX - 10, 64),
            Err(AllocError::Exhausted { .. })
        ));
    }

    #[test]
    fn double_free_and_interior_free_are_refused() {
        let mut a = Allocator::new(4096);
        let p = a.alloc(128, 64).unwrap();
        assert_eq!(
            a.free(p + 64),
            Err(AllocError::NotABlock { offset: p + 64 })
        );
        a.free(p).unwrap();
        assert_eq!(a.free(p), Err(AllocError::NotABlock { offset: p }));
    }

    #[test]
    fn resize_in_place_grows_and_shrinks() {
        let mut a = Allocator::new(4096);
        let p = a.alloc(128, 64).unwrap();
        assert!(a.resize_in_place(p, 1024).unwrap());
        assert_eq!(a.block_len(p), Some(1024));
        let q = a.alloc(64, 64).unwrap();
        assert_eq!(q, 1024);
        assert!(!a.resize_in_place(p, 2048).unwrap());
        assert!(a.resize_in_place(p, 64).unwrap());
        assert_eq!(a.alloc(900, 64).unwrap(), 64);
    }
}
