//! Shared-memory files and their mappings: the only place the runtime creates, sizes and maps
//! memory or views mapped bytes as atomics. Every unsafe block here says why it is sound.
//! Nothing here decides layout (`heap` does) or which memory a segment lives in (`device`
//! does; its host device is built on these files).

use crate::error::{Error, Result};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{fstat, ftruncate, memfd_create, MemfdFlags};
use rustix::mm::{mmap, munmap, MapFlags, ProtFlags};
use std::ffi::c_void;
use std::sync::atomic::AtomicU64;

/// Creates an anonymous shared-memory file of `len` bytes (zero-filled, no name in any
/// file system, gone when the last descriptor and mapping are).
pub fn memfd(name: &str, len: usize) -> Result<OwnedFd> {
    let fd = memfd_create(name, MemfdFlags::CLOEXEC)
        .map_err(|e| Error::os(format!("memfd_create({name})"), e))?;
    ftruncate(&fd, len as u64)
        .map_err(|e| Error::os(format!("ftruncate({name}, {len} bytes)"), e))?;
    Ok(fd)
}

/// The system's page size in bytes (4096 if it cannot be read).
pub fn page_size() -> u64 {
    // SAFETY: sysconf reads a constant of the system.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

/// Size in bytes of the file behind `fd`.
pub fn file_len(fd: BorrowedFd<'_>) -> Result<usize> {
    let st = fstat(fd).map_err(|e| Error::os("fstat of a peer's heap", e))?;
    Ok(st.st_size as usize)
}

/// A read-write shared mapping of a whole file; unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: *mut c_void,
    len: usize,
}

// SAFETY: the mapping is plain shared memory; concurrent access from several threads is what
// the library's memory model is about, and the pointer itself is never mutated after creation.
unsafe impl Send for Mapping {}
// SAFETY: as above; `&Mapping` hands out only addresses.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` shared and read-write at an address the kernel picks.
    pub fn map_shared(fd: impl AsFd, len: usize) -> Result<Mapping> {
        Self::map_shared_at(fd, 0, len)
            .map_err(|e| Error::os(format!("mmap of {len} bytes of shared heap"), e))
    }

    /// Maps `len` bytes of `fd` from `offset` (a multiple of the page size) shared and
    /// read-write, at an address the kernel picks; on failure, the system's error (the caller
    /// says what was mapped).
    pub fn map_shared_at(fd: impl AsFd, offset: u64, len: usize) -> rustix::io::Result<Mapping> {
        // SAFETY: a fresh mapping at a kernel-chosen address cannot overlap any Rust object;
        // the memory is only reached through raw addresses handed out by this type.
        let ptr = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                fd.as_fd(),
                offset,
            )
        }?;
        Ok(Mapping { ptr, len })
    }

    /// Maps `len` bytes of `fd` like [`Mapping::map_shared`], at an address `a` such that
    /// `a + skew` is a multiple of `align` (a power of two). Reserves `len + align` bytes of
    /// address space without access, maps the file over the aligned part and releases the rest.
    pub fn map_shared_aligned(
        fd: impl AsFd,
        len: usize,
        align: usize,
        skew: usize,
    ) -> Result<Mapping> {
        debug_assert!(align.is_power_of_two() && align >= 4096);
        let span = len.checked_add(align).ok_or_else(|| {
            Error::os(
                "reserving heap address space",
                std::io::ErrorKind::OutOfMemory,
            )
        })?;
        // SAFETY: a fresh inaccessible reservation at a kernel-chosen address overlaps nothing.
        let base = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                span,
                ProtFlags::empty(),
                MapFlags::PRIVATE | MapFlags::NORESERVE,
            )
        }
        .map_err(|e| Error::os(format!("reserving {span} bytes of address space"), e))?;
        let start = base as usize;
        let aligned = ((start + skew + align - 1) & !(align - 1)) - skew;
        let aligned = if aligned < start {
            aligned + align
        } else {
            aligned
        };
        // SAFETY: [aligned, aligned+len) lies inside the reservation made above, which this
        // function owns, so replacing it with MAP_FIXED clobbers nothing else.
        let mapped = unsafe {
            mmap(
                aligned as *mut c_void,
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED | MapFlags::FIXED,
                fd.as_fd(),
                0,
            )
        };
        let head = aligned - start;
        let tail_start = aligned + len;
        let tail = start + span - tail_start;
        // SAFETY: the head and tail are the unused ends of our own reservation.
        unsafe {
            if head > 0 {
                let _ = munmap(base, head);
            }
            if tail > 0 {
                let _ = munmap(tail_start as *mut c_void, tail);
            }
        }
        let ptr = match mapped {
            Ok(ptr) => ptr,
            Err(e) => {
                // SAFETY: the middle of the reservation is still ours and still mapped.
                let _ = unsafe { munmap(aligned as *mut c_void, len) };
                return Err(Error::os(format!("mmap of {len} bytes of shared heap"), e));
            }
        };
        Ok(Mapping { ptr, len })
    }

    /// First byte of the mapping.
    pub fn addr(&self) -> usize {
        self.ptr as usize
    }

    /// Length of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Fills `len` bytes at `offset` with `byte`.
    pub fn fill(&self, offset: usize, byte: u8, len: usize) {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len));
        // SAFETY: the range lies inside the live, writable mapping (checked above).
        unsafe { std::ptr::write_bytes((self.ptr as *mut u8).add(offset), byte, len) }
    }

    /// The 8-byte word at `offset` as an atomic.
    ///
    /// Panics if the word does not lie inside the mapping or is misaligned.
    pub fn atomic_u64(&self, offset: usize) -> &AtomicU64 {
        assert!(
            offset.is_multiple_of(8) && offset + 8 <= self.len,
            "atomic_u64 offset {offset}"
        );
        // SAFETY: the word is inside the live mapping (checked above), 8-byte aligned (the
        // mapping is page-aligned), and shared memory is only ever accessed atomically at
        // these control-word offsets, so an AtomicU64 view is valid for the borrow of self.
        unsafe { &*((self.ptr as *const u8).add(offset) as *const AtomicU64) }
    }

    /// Copies `len` bytes from `src` to `dst`, both offsets inside this mapping.
    pub fn copy_within(&self, src: usize, dst: usize, len: usize) {
        assert!(src.checked_add(len).is_some_and(|end| end <= self.len));
        assert!(dst.checked_add(len).is_some_and(|end| end <= self.len));
        let base = self.ptr as *mut u8;
        // SAFETY: both ranges lie inside the live, writable mapping (checked above);
        // `copy` allows overlap.
        unsafe { std::ptr::copy(base.add(src), base.add(dst), len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from a successful mmap and are unmapped exactly once.
        if let Err(e) = unsafe { munmap(self.ptr, self.len) } {
            tracing::warn!("munmap of {} bytes failed: {e}", self.len);
        }
    }
}

/// A range of address space reserved without access, which its owner fills with shared
/// mappings of files at chosen offsets (memfabric's Share Memory window: one slot per rank,
/// [`Reservation::map_file`] over the slots this process reaches). The whole range is
/// unmapped on drop, the files' mappings included.
#[derive(Debug)]
pub struct Reservation {
    ptr: *mut c_void,
    len: usize,
}

// SAFETY: as for `Mapping`: the range is plain memory reached through raw addresses, and the
// pointer is never mutated after creation.
unsafe impl Send for Reservation {}
// SAFETY: as above.
unsafe impl Sync for Reservation {}

impl Reservation {
    /// Reserves `len` bytes (a multiple of the page size) of address space without access,
    /// at an address the kernel picks.
    pub fn new(len: usize) -> Result<Reservation> {
        // SAFETY: a fresh inaccessible reservation at a kernel-chosen address overlaps nothing.
        let ptr = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                len,
                ProtFlags::empty(),
                MapFlags::PRIVATE | MapFlags::NORESERVE,
            )
        }
        .map_err(|e| Error::os(format!("reserving {len} bytes of address space"), e))?;
        Ok(Reservation { ptr, len })
    }

    /// First byte of the range.
    pub fn addr(&self) -> usize {
        self.ptr as usize
    }

    /// Maps `len` bytes of `fd` from `fd_offset` (both multiples of the page size) shared and
    /// read-write at `offset` of the range, replacing what was there.
    pub fn map_file(
        &self,
        offset: usize,
        fd: impl AsFd,
        fd_offset: u64,
        len: usize,
    ) -> rustix::io::Result<()> {
        assert!(
            offset.checked_add(len).is_some_and(|end| end <= self.len),
            "map_file: [{offset}, {offset}+{len}) is outside a reservation of {} bytes",
            self.len
        );
        // SAFETY: [offset, offset+len) lies inside the reservation (checked above), which
        // this value owns, so MAP_FIXED replaces nothing but its own pages.
        unsafe {
            mmap(
                (self.ptr as *mut u8).add(offset) as *mut c_void,
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED | MapFlags::FIXED,
                fd.as_fd(),
                fd_offset,
            )
        }?;
        Ok(())
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from a successful mmap; the files mapped inside it go with it.
        if let Err(e) = unsafe { munmap(self.ptr, self.len) } {
            tracing::warn!("munmap of a reservation of {} bytes failed: {e}", self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn two_mappings_of_one_memfd_share_bytes() {
        let fd = memfd("test", 1 << 16).unwrap();
        assert_eq!(file_len(fd.as_fd()).unwrap(), 1 << 16);
        let a = Mapping::map_shared(&fd, 1 << 16).unwrap();
        let b = Mapping::map_shared(&fd, 1 << 16).unwrap();
        assert_ne!(a.addr(), b.addr());
        a.atomic_u64(64).store(0xdead_beef, Ordering::Release);
        assert_eq!(b.atomic_u64(64).load(Ordering::Acquire), 0xdead_beef);
        b.fill(64, 0, 8);
        assert_eq!(a.atomic_u64(64).load(Ordering::Acquire), 0);
    }

    #[test]
    fn aligned_mapping_honours_alignment_and_skew() {
        let fd = memfd("test", 1 << 16).unwrap();
        for (align, skew) in [(1usize << 21, 0usize), (1 << 30, 4096), (1 << 22, 1 << 16)] {
            let m = Mapping::map_shared_aligned(&fd, 1 << 16, align, skew).unwrap();
            assert_eq!((m.addr() + skew) % align, 0, "align {align} skew {skew}");
            m.atomic_u64(0).store(7, Ordering::Relaxed);
            let plain = Mapping::map_shared(&fd, 1 << 16).unwrap();
            assert_eq!(plain.atomic_u64(0).load(Ordering::Relaxed), 7);
        }
    }
    #[test]
    fn a_reservation_holds_files_at_fixed_offsets() {
        // SAFETY: sysconf reads a constant of the system.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let r = Reservation::new(4 * page).unwrap();
        let fd = memfd("test", page).unwrap();
        r.map_file(2 * page, &fd, 0, page).unwrap();
        let plain = Mapping::map_shared(&fd, page).unwrap();
        // SAFETY: the third page of the reservation maps the file (above).
        unsafe { *((r.addr() + 2 * page) as *mut u64) = 9 };
        assert_eq!(plain.atomic_u64(0).load(Ordering::Relaxed), 9);
    }
}
