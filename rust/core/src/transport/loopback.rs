//! The loopback test transport: reaches the PEs chosen by `SHMEM_TEST_LOOPBACK` through the
//! transport table while copying through their mappings, so that the facade's transport path
//! (per-call choice, non-blocking calls, per-context quiet and fence, AMOs under the atomicity
//! rule, progress in waits) runs on one node before a network transport exists. For testing
//! only: it is never faster than the mapped path and never chosen without the variable.
//!
//! It counts the calls it serves and logs the counts at debug level when the job ends, so a test
//! can prove the calls went through the table.

use super::{bump, AmoOp, Counts, Ctx, Segment, Transport, TransportError, SEGMENTS};
use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The address a loopback PE sends: this prefix and its process id.
const ADDRESS_PREFIX: &[u8] = b"loopback:";

/// The loopback transport of one PE.
#[derive(Debug)]
pub struct Loopback {
    /// Per PE: whether this transport reaches it (the others are mapped).
    chosen: Vec<bool>,
    /// Per segment, per PE: the segment's base as mapped here (0: not mapped).
    bases: [Vec<usize>; SEGMENTS],
    /// Per segment: its size on every PE, once attached.
    sizes: [usize; SEGMENTS],
    counts: Counts,
}

impl Loopback {
    /// A loopback transport reaching the PEs `chosen` marks, through the mappings `heap_bases`,
    /// `data_bases` (per PE; empty when static data is not symmetric) and `control_bases`. It
    /// keeps these mappings for itself: the job state publishes none for the chosen PEs.
    pub fn new(
        chosen: Vec<bool>,
        heap_bases: &[usize],
        data_bases: &[usize],
        control_bases: &[usize],
    ) -> Loopback {
        Loopback {
            chosen,
            bases: [
                heap_bases.to_vec(),
                data_bases.to_vec(),
                control_bases.to_vec(),
            ],
            sizes: [0; SEGMENTS],
            counts: Counts::default(),
        }
    }

    /// The address of [offset, offset+len) of `segment` on `pe` as mapped here.
    fn at(
        &self,
        pe: usize,
        segment: Segment,
        offset: u64,
        len: usize,
    ) -> Result<usize, TransportError> {
        let s = segment as usize;
        let size = self.sizes[s];
        let base = self.bases[s].get(pe).copied().unwrap_or(0);
        let fits = usize::try_from(offset)
            .ok()
            .and_then(|o| o.checked_add(len).map(|end| (o, end)))
            .filter(|&(_, end)| end <= size && base != 0);
        match fits {
            Some((o, _)) => Ok(base + o),
            None if base == 0 && pe < self.chosen.len() => Err(TransportError::Unsupported {
                transport: "loopback",
                what: "reach a segment that is not mapped here",
            }),
            None if pe >= self.chosen.len() => Err(TransportError::Unreachable {
                transport: "loopback",
                pe,
            }),
            None => Err(TransportError::OutOfRange {
                pe,
                segment,
                offset,
                len,
                size,
            }),
        }
    }
}

impl Transport for Loopback {
    fn name(&self) -> &'static str {
        "loopback"
    }

    fn c_name(&self) -> &'static CStr {
        c"loopback"
    }

    fn can_reach(&self, pe: usize) -> bool {
        self.chosen.get(pe).copied().unwrap_or(false)
    }

    fn address(&self) -> Vec<u8> {
        let mut a = ADDRESS_PREFIX.to_vec();
        a.extend_from_slice(std::process::id().to_string().as_bytes());
        a
    }

    fn connect(&mut self, addresses: &[Vec<u8>]) -> Result<(), TransportError> {
        for (pe, a) in addresses.iter().enumerate() {
            if !a.starts_with(ADDRESS_PREFIX) {
                return Err(TransportError::BadPeerData {
                    pe,
                    what: "address",
                    why: format!(
                        "{:?} is not a loopback address (is SHMEM_TEST_LOOPBACK set for every PE?)",
                        String::from_utf8_lossy(a)
                    ),
                });
            }
        }
        Ok(())
    }

    fn register(
        &mut self,
        segment: Segment,
        _base: usize,
        len: usize,
    ) -> Result<Vec<u8>, TransportError> {
        // The key is the segment's length: the data is reached through the mapping.
        self.sizes[segment as usize] = len;
        Ok((len as u64).to_le_bytes().to_vec())
    }

    fn attach(&mut self, segment: Segment, keys: &[Vec<u8>]) -> Result<(), TransportError> {
        let mine = self.sizes[segment as usize] as u64;
        for (pe, k) in keys.iter().enumerate() {
            let theirs = <[u8; 8]>::try_from(k.as_slice())
                .map(u64::from_le_bytes)
                .map_err(|_| TransportError::BadPeerData {
                    pe,
                    what: "remote key",
                    why: format!("{} bytes, expected 8", k.len()),
                })?;
            if theirs != mine {
                return Err(TransportError::BadPeerData {
                    pe,
                    what: "remote key",
                    why: format!(
                        "its {} has {theirs} bytes, this PE's {mine}",
                        segment.name()
                    ),
                });
            }
        }
        Ok(())
    }

    fn put(
        &self,
        _ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        source: &[u8],
    ) -> Result<(), TransportError> {
        bump(&self.counts.puts);
        tracing::trace!("loopback put: {} bytes to PE {pe}", source.len());
        let to = self.at(pe, segment, offset, source.len())?;
        // SAFETY: `at` checked the range lies in the peer's segment as mapped here; `copy`
        // allows the overlap a put to this PE's own memory may have.
        unsafe { std::ptr::copy(source.as_ptr(), to as *mut u8, source.len()) };
        Ok(())
    }

    fn get(
        &self,
        _ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        dest: &mut [u8],
    ) -> Result<(), TransportError> {
        bump(&self.counts.gets);
        tracing::trace!("loopback get: {} bytes from PE {pe}", dest.len());
        let from = self.at(pe, segment, offset, dest.len())?;
        // SAFETY: `at` checked the range lies in the peer's segment as mapped here.
        unsafe { std::ptr::copy(from as *const u8, dest.as_mut_ptr(), dest.len()) };
        Ok(())
    }

    unsafe fn put_nbi(
        &self,
        ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        source: *const u8,
        len: usize,
    ) -> Result<(), TransportError> {
        bump(&self.counts.nbi);
        // Completed at once: a copy through the mapping has nothing to wait for.
        let bytes: &[u8] = if len == 0 {
            &[]
        } else {
            // SAFETY: the caller keeps `source` readable for `len` bytes (this function's
            // contract).
            unsafe { std::slice::from_raw_parts(source, len) }
        };
        self.put(ctx, pe, segment, offset, bytes)
    }

    unsafe fn get_nbi(
        &self,
        ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        dest: *mut u8,
        len: usize,
    ) -> Result<(), TransportError> {
        bump(&self.counts.nbi);
        let bytes: &mut [u8] = if len == 0 {
            &mut []
        } else {
            // SAFETY: the caller keeps `dest` writable for `len` bytes (this function's
            // contract) and does not read it meanwhile.
            unsafe { std::slice::from_raw_parts_mut(dest, len) }
        };
        self.get(ctx, pe, segment, offset, bytes)
    }

    fn amo(
        &self,
        _ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        op: AmoOp,
        size: usize,
        value: u64,
        compare: u64,
    ) -> Result<u64, TransportError> {
        bump(&self.counts.amos);
        tracing::trace!("loopback atomic {op:?}: {size} bytes on PE {pe}");
        let at = self.at(pe, segment, offset, size)?;
        if at % size != 0 {
            return Err(TransportError::BadArgument {
                arg: "offset",
                value: offset as i64,
            });
        }
        const SC: Ordering = Ordering::SeqCst;
        if size == 4 {
            // SAFETY: `at` is a mapped, 4-byte aligned element of the peer's segment, accessed
            // only atomically by the library while a transport is in use (the atomicity rule).
            let a = unsafe { AtomicU32::from_ptr(at as *mut u32) };
            let v = value as u32;
            let old = match op {
                AmoOp::Fetch => a.load(SC),
                AmoOp::Set => {
                    a.store(v, SC);
                    0
                }
                AmoOp::Swap => a.swap(v, SC),
                AmoOp::CompareSwap => a
                    .compare_exchange(compare as u32, v, SC, SC)
                    .unwrap_or_else(|found| found),
                AmoOp::FetchAdd => a.fetch_add(v, SC),
                AmoOp::FetchAnd => a.fetch_and(v, SC),
                AmoOp::FetchOr => a.fetch_or(v, SC),
                AmoOp::FetchXor => a.fetch_xor(v, SC),
            };
            Ok(old.into())
        } else {
            // SAFETY: as above, for an 8-byte aligned element (`size` is 4 or 8, checked by the
            // table).
            let a = unsafe { AtomicU64::from_ptr(at as *mut u64) };
            Ok(match op {
                AmoOp::Fetch => a.load(SC),
                AmoOp::Set => {
                    a.store(value, SC);
                    0
                }
                AmoOp::Swap => a.swap(value, SC),
                AmoOp::CompareSwap => a
                    .compare_exchange(compare, value, SC, SC)
                    .unwrap_or_else(|found| found),
                AmoOp::FetchAdd => a.fetch_add(value, SC),
                AmoOp::FetchAnd => a.fetch_and(value, SC),
                AmoOp::FetchOr => a.fetch_or(value, SC),
                AmoOp::FetchXor => a.fetch_xor(value, SC),
            })
        }
    }

    fn fence(&self, _ctx: Ctx) -> Result<(), TransportError> {
        bump(&self.counts.fences);
        std::sync::atomic::fence(Ordering::SeqCst);
        Ok(())
    }

    fn quiet(&self, _ctx: Ctx) -> Result<(), TransportError> {
        bump(&self.counts.quiets);
        std::sync::atomic::fence(Ordering::SeqCst);
        Ok(())
    }

    fn progress(&self) -> Result<(), TransportError> {
        bump(&self.counts.progress);
        Ok(())
    }

    fn finalize(&self) -> Result<(), TransportError> {
        self.counts.log("loopback", &self.chosen);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_pes(mem: &mut [u64; 8]) -> Loopback {
        let base = mem.as_mut_ptr() as usize;
        let mut t = Loopback::new(vec![false, true], &[base, base + 32], &[], &[]);
        let key = t.register(Segment::Heap, base, 32).unwrap();
        t.attach(Segment::Heap, &[key.clone(), key]).unwrap();
        t
    }

    #[test]
    fn copies_and_atomics_through_the_mapping() {
        let mut mem = [0u64; 8];
        let t = two_pes(&mut mem);
        assert!(t.can_reach(1) && !t.can_reach(0));
        t.put(Ctx(0), 1, Segment::Heap, 8, &7u64.to_ne_bytes())
            .unwrap();
        let mut out = [0u8; 8];
        t.get(Ctx(0), 1, Segment::Heap, 8, &mut out).unwrap();
        assert_eq!(u64::from_ne_bytes(out), 7);
        let old = t
            .amo(Ctx(0), 1, Segment::Heap, 8, AmoOp::FetchAdd, 8, 5, 0)
            .unwrap();
        assert_eq!(old, 7);
        let found = t
            .amo(Ctx(0), 1, Segment::Heap, 8, AmoOp::CompareSwap, 8, 1, 99)
            .unwrap();
        assert_eq!(found, 12);
        assert_eq!(t.counts.puts.load(Ordering::Relaxed), 1);
        assert_eq!(t.counts.amos.load(Ordering::Relaxed), 2);
        drop(t);
        assert_eq!(mem[5], 12);
    }

    #[test]
    fn refuses_ranges_outside_the_segment() {
        let mut mem = [0u64; 8];
        let t = two_pes(&mut mem);
        let e = t
            .put(Ctx(0), 1, Segment::Heap, 30, &[0; 4])
            .unwrap_err()
            .to_string();
        assert_eq!(e, "bytes [30, 30+4) are outside PE 1's heap of 32 bytes");
        assert!(t.get(Ctx(0), 1, Segment::Data, 0, &mut [0; 1]).is_err());
        assert!(t.put(Ctx(0), 2, Segment::Heap, 0, &[0]).is_err());
    }

    #[test]
    fn refuses_a_peer_without_the_variable() {
        let mut t = Loopback::new(vec![true, true], &[1, 2], &[], &[]);
        let e = t
            .connect(&[t.address(), b"".to_vec()])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("PE 1's address is malformed"), "{e}");
    }
}
