//! The host data path to symmetric heaps in device memory the CPU cannot load or store (the npu
//! and cuda devices): a transport that reaches every PE of the node, this one included, through the
//! table. Heap bytes move with the device's copies ([`DeviceMemory`]) to and from the peers'
//! segments as imported into this process; static data and control words, which stay in host
//! memory, through their mappings (as the loopback transport does). Puts and gets complete on
//! return, so fence and quiet have nothing to wait for.
//!
//! AMOs on heap words are a read, the operation and a write under a lock word of the target PE's
//! control segment ([`crate::layout::DEVICE_LOCKS`], one of its stripes per word): atomic
//! among the host calls of every PE of the node. Kernels' atomics on the same words are not
//! atomic with them (as CPU and network atomics are not), so a word is updated by one side at a
//! time.

pub use crate::device::DeviceMemory;

use super::loopback::Loopback;
use super::{bump, AmoOp, Counts, Ctx, Segment, Transport, TransportError};
use crate::layout as control;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Lock stripes per PE in its control segment.
const STRIPES: usize = control::DEVICE_LOCK_STRIPES;

/// The device-copy transport of one PE.
#[derive(Debug)]
pub struct DeviceCopy {
    device: Box<dyn DeviceMemory>,
    /// Per PE: its user heap's base in this process's device address space (0: another node).
    heap_bases: Vec<usize>,
    /// Per PE: its control segment as mapped here (the AMO locks), 0 for another node.
    control_bases: Vec<usize>,
    /// Bytes of every PE's user heap.
    heap_size: usize,
    /// Static data and control words, through their mappings.
    host: Loopback,
    /// Bound on waiting for an AMO lock.
    timeout: Duration,
    counts: Counts,
}

impl DeviceCopy {
    /// The transport reaching the PEs of this node whose heaps `heap_bases` gives (device
    /// addresses; 0 for other nodes), with their static data `data_bases` (empty when not
    /// symmetric) and control segments `control_bases` as mapped here.
    pub fn new(
        device: Box<dyn DeviceMemory>,
        heap_bases: &[usize],
        data_bases: &[usize],
        control_bases: &[usize],
        timeout: Duration,
    ) -> DeviceCopy {
        let reach: Vec<bool> = heap_bases.iter().map(|&b| b != 0).collect();
        DeviceCopy {
            device,
            heap_bases: heap_bases.to_vec(),
            control_bases: control_bases.to_vec(),
            heap_size: 0,
            host: Loopback::new(reach, &vec![0; heap_bases.len()], data_bases, control_bases),
            timeout,
            counts: Counts::default(),
        }
    }

    /// The device address of [offset, offset+len) of `pe`'s heap.
    fn heap_at(&self, pe: usize, offset: u64, len: usize) -> Result<usize, TransportError> {
        let base = self.heap_bases.get(pe).copied().unwrap_or(0);
        if base == 0 {
            return Err(TransportError::Unreachable {
                transport: self.device.memory_name(),
                pe,
            });
        }
        usize::try_from(offset)
            .ok()
            .filter(|&o| o.checked_add(len).is_some_and(|end| end <= self.heap_size))
            .map(|o| base + o)
            .ok_or(TransportError::OutOfRange {
                pe,
                segment: Segment::Heap,
                offset,
                len,
                size: self.heap_size,
            })
    }

    fn failed(&self, what: &str, pe: usize, e: crate::error::Error) -> TransportError {
        TransportError::Library {
            call: format!("{} {what} on PE {pe}'s heap", self.device.memory_name()),
            why: e.to_string(),
        }
    }

    /// Runs `f` holding the lock of `pe`'s heap word at `offset`.
    fn locked<T>(
        &self,
        pe: usize,
        offset: u64,
        f: impl FnOnce() -> Result<T, TransportError>,
    ) -> Result<T, TransportError> {
        let base = self.control_bases.get(pe).copied().unwrap_or(0);
        if base == 0 {
            return Err(TransportError::Unreachable {
                transport: self.device.memory_name(),
                pe,
            });
        }
        let stripe = ((offset / 8) as usize) % STRIPES;
        // SAFETY: the lock words lie in `pe`'s control segment, mapped here for the job, and
        // are only ever accessed atomically.
        let lock =
            unsafe { AtomicU32::from_ptr((base + control::DEVICE_LOCKS + 4 * stripe) as *mut u32) };
        let start = Instant::now();
        let mut spins = 0u32;
        while lock
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spins += 1;
            if spins.is_multiple_of(64) {
                if start.elapsed() > self.timeout {
                    return Err(TransportError::TimedOut {
                        what: format!("taking the atomic lock of PE {pe}'s heap word {offset}"),
                        after: self.timeout,
                    });
                }
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        let r = f();
        lock.store(0, Ordering::Release);
        r
    }
}

/// `op` applied to `old` (an element of `size` bytes) with `value` and `compare`: the new value,
/// or `None` to leave the element as it is.
fn apply(op: AmoOp, old: u64, value: u64, compare: u64, size: usize) -> Option<u64> {
    let mask = if size == 4 {
        u64::from(u32::MAX)
    } else {
        u64::MAX
    };
    let new = match op {
        AmoOp::Fetch => return None,
        AmoOp::Set | AmoOp::Swap => value,
        AmoOp::CompareSwap if old & mask == compare & mask => value,
        AmoOp::CompareSwap => return None,
        AmoOp::FetchAdd => old.wrapping_add(value),
        AmoOp::FetchAnd => old & value,
        AmoOp::FetchOr => old | value,
        AmoOp::FetchXor => old ^ value,
    };
    Some(new & mask)
}

impl Transport for DeviceCopy {
    fn name(&self) -> &'static str {
        self.device.memory_name()
    }

    fn c_name(&self) -> &'static CStr {
        match self.device.memory_name() {
            "cuda" => c"cuda",
            "npu" => c"npu",
            _ => c"device",
        }
    }

    fn can_reach(&self, pe: usize) -> bool {
        self.heap_bases.get(pe).is_some_and(|&b| b != 0)
    }

    fn address(&self) -> Vec<u8> {
        self.host.address()
    }

    fn connect(&mut self, addresses: &[Vec<u8>]) -> Result<(), TransportError> {
        self.host.connect(addresses)
    }

    fn register(
        &mut self,
        segment: Segment,
        base: usize,
        len: usize,
    ) -> Result<Vec<u8>, TransportError> {
        if segment == Segment::Heap {
            self.heap_size = len;
        }
        self.host.register(segment, base, len)
    }

    fn attach(&mut self, segment: Segment, keys: &[Vec<u8>]) -> Result<(), TransportError> {
        self.host.attach(segment, keys)
    }

    fn put(
        &self,
        ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        source: &[u8],
    ) -> Result<(), TransportError> {
        if segment != Segment::Heap {
            return self.host.put(ctx, pe, segment, offset, source);
        }
        bump(&self.counts.puts);
        let to = self.heap_at(pe, offset, source.len())?;
        // SAFETY: `source` is readable; `heap_at` checked the range lies in `pe`'s heap.
        unsafe { self.device.write(to, source.as_ptr(), source.len()) }
            .map_err(|e| self.failed("put", pe, e))
    }

    fn get(
        &self,
        ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        dest: &mut [u8],
    ) -> Result<(), TransportError> {
        if segment != Segment::Heap {
            return self.host.get(ctx, pe, segment, offset, dest);
        }
        bump(&self.counts.gets);
        let from = self.heap_at(pe, offset, dest.len())?;
        // SAFETY: `dest` is writable; `heap_at` checked the range lies in `pe`'s heap.
        unsafe { self.device.read(dest.as_mut_ptr(), from, dest.len()) }
            .map_err(|e| self.failed("get", pe, e))
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
        if segment != Segment::Heap {
            // SAFETY: the caller's contract is this one's.
            return unsafe { self.host.put_nbi(ctx, pe, segment, offset, source, len) };
        }
        bump(&self.counts.nbi);
        // Completed at once: the copy returns when the bytes are there.
        let to = self.heap_at(pe, offset, len)?;
        // SAFETY: the caller keeps `source` readable for `len` bytes.
        unsafe { self.device.write(to, source, len) }.map_err(|e| self.failed("put", pe, e))
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
        if segment != Segment::Heap {
            // SAFETY: the caller's contract is this one's.
            return unsafe { self.host.get_nbi(ctx, pe, segment, offset, dest, len) };
        }
        bump(&self.counts.nbi);
        let from = self.heap_at(pe, offset, len)?;
        // SAFETY: the caller keeps `dest` writable for `len` bytes.
        unsafe { self.device.read(dest, from, len) }.map_err(|e| self.failed("get", pe, e))
    }

    fn amo(
        &self,
        ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        op: AmoOp,
        size: usize,
        value: u64,
        compare: u64,
    ) -> Result<u64, TransportError> {
        if segment != Segment::Heap {
            return self
                .host
                .amo(ctx, pe, segment, offset, op, size, value, compare);
        }
        bump(&self.counts.amos);
        let at = self.heap_at(pe, offset, size)?;
        if at % size != 0 || (size != 4 && size != 8) {
            return Err(TransportError::BadArgument {
                arg: "offset",
                value: offset as i64,
            });
        }
        self.locked(pe, offset, || {
            let mut old = [0u8; 8];
            // SAFETY: `old` holds 8 bytes, `size` of them are read from the checked range
            // (little-endian: the low bytes of the word).
            unsafe { self.device.read(old.as_mut_ptr(), at, size) }
                .map_err(|e| self.failed("atomic read", pe, e))?;
            let old = u64::from_le_bytes(old);
            if let Some(new) = apply(op, old, value, compare, size) {
                let bytes = new.to_le_bytes();
                // SAFETY: as above, for the write.
                unsafe { self.device.write(at, bytes.as_ptr(), size) }
                    .map_err(|e| self.failed("atomic write", pe, e))?;
            }
            Ok(if op == AmoOp::Set { 0 } else { old })
        })
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
        let reach: Vec<bool> = self.heap_bases.iter().map(|&b| b != 0).collect();
        self.counts.log(self.device.memory_name(), &reach);
        Ok(())
    }

    fn detail(&self) -> String {
        "device copies for heaps, mappings for static data and control words".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "Device memory" that is host memory, copied with counts: the transport's logic without ACL.
    #[derive(Debug, Default)]
    struct Plain;

    impl DeviceMemory for Plain {
        unsafe fn write(&self, to: usize, src: *const u8, len: usize) -> crate::error::Result<()> {
            // SAFETY: the caller's contract.
            unsafe { std::ptr::copy(src, to as *mut u8, len) };
            Ok(())
        }
        unsafe fn read(&self, dest: *mut u8, from: usize, len: usize) -> crate::error::Result<()> {
            // SAFETY: the caller's contract.
            unsafe { std::ptr::copy(from as *const u8, dest, len) };
            Ok(())
        }
        fn memory_name(&self) -> &'static str {
            "plain"
        }
    }

    #[test]
    fn heap_words_move_by_the_device_and_amos_apply_under_the_lock() {
        let mut heap = vec![0u64; 16];
        let mut ctl = vec![0u8; control::SIZE];
        let hb = heap.as_mut_ptr() as usize;
        let cb = ctl.as_mut_ptr() as usize;
        let mut t = DeviceCopy::new(
            Box::new(Plain),
            &[hb, hb + 64],
            &[],
            &[cb, cb],
            Duration::from_secs(5),
        );
        for s in [Segment::Heap, Segment::Control] {
            let len = if s == Segment::Heap {
                64
            } else {
                control::SIZE
            };
            let key = t.register(s, 0, len).unwrap();
            t.attach(s, &[key.clone(), key]).unwrap();
        }
        t.put(Ctx(0), 1, Segment::Heap, 8, &5u64.to_le_bytes())
            .unwrap();
        assert_eq!(heap[9], 5);
        let old = t
            .amo(Ctx(0), 1, Segment::Heap, 8, AmoOp::FetchAdd, 8, 3, 0)
            .unwrap();
        assert_eq!((old, heap[9]), (5, 8));
        let found = t
            .amo(Ctx(0), 1, Segment::Heap, 8, AmoOp::CompareSwap, 8, 1, 7)
            .unwrap();
        assert_eq!((found, heap[9]), (8, 8), "no swap when the compare differs");
        let old = t
            .amo(Ctx(0), 0, Segment::Heap, 4, AmoOp::FetchXor, 4, u64::MAX, 0)
            .unwrap();
        assert_eq!(
            (old, heap[0]),
            (0, 0xffff_ffff_0000_0000),
            "4-byte word only"
        );
        let mut out = [0u8; 8];
        t.get(Ctx(0), 1, Segment::Heap, 8, &mut out).unwrap();
        assert_eq!(u64::from_le_bytes(out), 8);
        let e = t.put(Ctx(0), 1, Segment::Heap, 60, &[0; 8]).unwrap_err();
        assert!(
            e.to_string().contains("outside PE 1's heap of 64 bytes"),
            "{e}"
        );
        assert!(t.put(Ctx(0), 2, Segment::Heap, 0, &[0]).is_err());
        assert!(ctl.iter().all(|&b| b == 0), "every lock released");
    }

    #[test]
    fn a_lock_held_too_long_is_a_timeout_naming_the_word() {
        let mut heap = vec![0u64; 2];
        let mut ctl = vec![0u8; control::SIZE];
        let hb = heap.as_mut_ptr() as usize;
        ctl[control::DEVICE_LOCKS] = 1;
        let cb = ctl.as_mut_ptr() as usize;
        let mut t = DeviceCopy::new(
            Box::new(Plain),
            &[hb],
            &[],
            &[cb],
            Duration::from_millis(50),
        );
        let key = t.register(Segment::Heap, 0, 16).unwrap();
        t.attach(Segment::Heap, &[key]).unwrap();
        let e = t
            .amo(Ctx(0), 0, Segment::Heap, 0, AmoOp::FetchAdd, 8, 1, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("atomic lock of PE 0's heap word 0"), "{e}");
    }
}
