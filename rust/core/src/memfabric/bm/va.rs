//! Where Big Memory pools live in a process's address space: one reservation of
//! `world * max` bytes per pool (no access), taken first-fit from a fixed range, so that
//! processes creating the same pools in the same order get the same bases (memfabric's
//! users pass raw pool addresses between ranks); this rank's segment is then mapped over its
//! place in it.
//!
//! The range is [`VA_START`]..[`VA_END`] (16 TiB from 32 TiB): above where Linux places heaps
//! and below position-independent executables and the top-down mmap area on x86-64 and
//! 48-bit aarch64, and apart from the NPU's device window (`[0x1000_0000_0000,
//! 0x1800_0000_0000)`) that memfabric's AUTO copies classify. If the place a pool's base
//! falls on is already mapped in this process (by something else), the create fails naming
//! the range rather than choosing another base, which would break the equality of bases
//! across ranks.

use super::BmError;
use std::sync::Mutex;

/// First address of the pools' range.
pub const VA_START: usize = 0x2000_0000_0000;
/// One past the last address of the pools' range.
pub const VA_END: usize = 0x3000_0000_0000;
/// Alignment of every pool's base.
pub const VA_ALIGN: usize = 2 << 20;

/// The pools' places taken in this process: (start, length), sorted by start.
static TAKEN: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// First fit of `len` bytes (a multiple of [`VA_ALIGN`]) in `[VA_START, VA_END)` around the
/// places in `taken` (sorted by start).
pub fn first_fit(taken: &[(usize, usize)], len: usize) -> Option<usize> {
    let mut at = VA_START;
    for &(start, l) in taken {
        if start >= at && start - at >= len {
            break;
        }
        at = at.max(start + l);
    }
    (at.checked_add(len)? <= VA_END).then_some(at)
}

/// A pool's reservation: returned to the range and unmapped on drop.
#[derive(Debug)]
pub struct Reservation {
    pub base: usize,
    pub len: usize,
}

impl Reservation {
    /// Reserves `len` bytes (no access, no backing) at the first fit of the range.
    pub fn take(len: usize) -> Result<Reservation, BmError> {
        let len = len.div_ceil(VA_ALIGN) * VA_ALIGN;
        let mut taken = TAKEN.lock().unwrap_or_else(|e| e.into_inner());
        let base = first_fit(&taken, len).ok_or_else(|| {
            BmError::error(format!(
                "no room for a pool of {len} bytes in the pools' address range [{VA_START:#x}, \
                 {VA_END:#x}) ({} pools there)",
                taken.len()
            ))
        })?;
        // SAFETY: MAP_FIXED_NOREPLACE maps nothing over an existing mapping; the range is
        // fresh, inaccessible memory that no Rust object refers to.
        let got = unsafe {
            libc::mmap(
                base as *mut libc::c_void,
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE
                    | libc::MAP_ANONYMOUS
                    | libc::MAP_NORESERVE
                    | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if got == libc::MAP_FAILED || got as usize != base {
            let e = std::io::Error::last_os_error();
            if got != libc::MAP_FAILED {
                // An old kernel took the flag as a hint and mapped elsewhere.
                // SAFETY: the mapping just made, not referred to by anything.
                unsafe { libc::munmap(got, len) };
            }
            return Err(BmError::error(format!(
                "cannot reserve the pool's address range [{base:#x}, {:#x}): {e} (something \
                 else of this process is mapped there; pools need the same base on every rank)",
                base + len
            )));
        }
        let i = taken.partition_point(|&(s, _)| s < base);
        taken.insert(i, (base, len));
        Ok(Reservation { base, len })
    }

    /// Maps `len` bytes of `fd` (from offset 0) shared and read-write at `at`, inside the
    /// reservation, replacing its inaccessible pages there.
    pub fn map_fd(
        &self,
        at: usize,
        len: usize,
        fd: std::os::fd::BorrowedFd<'_>,
    ) -> Result<(), BmError> {
        self.map_fd_at(at, len, fd, 0)
    }

    /// Maps `len` bytes of `fd` from `fd_offset` (a multiple of the page size) shared and
    /// read-write at `at` (a page), inside the reservation, replacing what was mapped there.
    pub fn map_fd_at(
        &self,
        at: usize,
        len: usize,
        fd: std::os::fd::BorrowedFd<'_>,
        fd_offset: u64,
    ) -> Result<(), BmError> {
        assert!(at >= self.base && at + len <= self.base + self.len);
        use std::os::fd::AsRawFd;
        let offset = libc::off_t::try_from(fd_offset).map_err(|_| {
            BmError::error(format!("cannot map offset {fd_offset} of a segment's file"))
        })?;
        // SAFETY: [at, at+len) lies in this reservation, which only this object hands out;
        // MAP_FIXED replaces what was mapped there with the file's pages.
        let got = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                fd.as_raw_fd(),
                offset,
            )
        };
        if got == libc::MAP_FAILED {
            return Err(BmError::error(format!(
                "cannot map the segment's {len} bytes at {at:#x}: {}",
                std::io::Error::last_os_error()
            )));
        }
        advise_huge_pages(at, len);
        Ok(())
    }

    /// Makes `[at, at+len)` of the reservation inaccessible again (no backing), dropping what
    /// was mapped there; the caller makes sure nothing uses that range meanwhile.
    pub fn release(&self, at: usize, len: usize) {
        assert!(at >= self.base && at + len <= self.base + self.len);
        // SAFETY: the range lies in this reservation; MAP_FIXED replaces its mapping with
        // inaccessible anonymous pages, so the place stays reserved.
        let got = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if got == libc::MAP_FAILED {
            // Left mapped: the file's pages stay valid, only held longer.
            tracing::warn!(
                "cannot release [{at:#x}, {:#x}) of a pool's range: {}",
                at + len,
                std::io::Error::last_os_error()
            );
        }
    }
}

/// Asks for transparent huge pages on a segment's mapping `[at, at+len)`, before anything
/// touches it: the pages a touch allocates are then 2 MiB where the kernel allows huge pages
/// in shared memory (`/sys/kernel/mm/transparent_hugepage/shmem_enabled` is `advise`, or
/// `always`, which needs no advice) and the mapping's place and file offset line up on 2 MiB.
/// A transfer's receiver writes the segment a TLB entry per 2 MiB then, not per 4 KiB: in a
/// virtual machine, where a TLB miss walks two page tables, UCX's unpack of a peer's put into
/// the segment took a third less CPU per byte. Advice only: where the kernel says no (the
/// setting `never`, Debian's default; no THP in the kernel), the pages stay 4 KiB.
fn advise_huge_pages(at: usize, len: usize) {
    if len < VA_ALIGN {
        return;
    }
    // SAFETY: [at, at+len) is a mapping of this reservation, just made; the advice changes how
    // the kernel backs it, not its contents.
    if unsafe { libc::madvise(at as *mut libc::c_void, len, libc::MADV_HUGEPAGE) } != 0 {
        tracing::debug!(
            "madvise(MADV_HUGEPAGE) on a segment's {len} bytes at {at:#x}: {} (4 KiB pages)",
            std::io::Error::last_os_error()
        );
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // SAFETY: the reservation (and what was mapped over it) is this object's; nothing
        // reaches it after the pool is destroyed.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
        let mut taken = TAKEN.lock().unwrap_or_else(|e| e.into_inner());
        taken.retain(|&(s, _)| s != self.base);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_is_deterministic_and_reuses_holes() {
        let g = 1usize << 30;
        assert_eq!(first_fit(&[], g), Some(VA_START));
        let taken = [(VA_START, g), (VA_START + 3 * g, g)];
        assert_eq!(first_fit(&taken, g), Some(VA_START + g));
        assert_eq!(first_fit(&taken, 2 * g), Some(VA_START + g));
        assert_eq!(first_fit(&taken, 3 * g), Some(VA_START + 4 * g));
        assert_eq!(first_fit(&[], VA_END - VA_START), Some(VA_START));
        assert_eq!(first_fit(&[], VA_END - VA_START + VA_ALIGN), None);
    }

    /// The smaps entry of the mapping that starts at `at`: its lines after the header.
    fn smaps_of(at: usize) -> Vec<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let head = format!("{at:x}-");
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head));
        assert!(lines.next().is_some(), "no mapping at {at:#x} in smaps");
        // A mapping's lines are "Name: value"; the next mapping's header starts "start-end".
        let header = |l: &str| {
            l.split_whitespace()
                .next()
                .is_some_and(|t| t.contains('-') && !t.ends_with(':'))
        };
        lines
            .take_while(|l| !header(l))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn a_mapped_segment_asks_for_huge_pages_and_shares_its_file() {
        let len = 4 * VA_ALIGN;
        let r = Reservation::take(2 * len).unwrap();
        let fd = crate::mapping::memfd("va-test", len).unwrap();
        use std::os::fd::AsFd;
        r.map_fd(r.base, len, fd.as_fd()).unwrap();
        r.map_fd(r.base + len, len, fd.as_fd()).unwrap();
        let flags = smaps_of(r.base)
            .into_iter()
            .find(|l| l.starts_with("VmFlags:"))
            .expect("a VmFlags line");
        // "hg": MADV_HUGEPAGE (on any kernel built with THP, whatever shmem_enabled says).
        assert!(
            flags.split_whitespace().any(|f| f == "hg"),
            "segment not advised: {flags}"
        );
        // The two places are one file: a write through one reads back through the other.
        for i in (0..len).step_by(4096) {
            // SAFETY: both ranges are mapped read-write over the file's `len` bytes.
            unsafe { *((r.base + i) as *mut u64) = (i as u64) ^ 0x5a5a };
        }
        for i in (0..len).step_by(4096) {
            // SAFETY: as above.
            let v = unsafe { *((r.base + len + i) as *const u64) };
            assert_eq!(v, (i as u64) ^ 0x5a5a, "offset {i}");
        }
        r.release(r.base, len);
        r.release(r.base + len, len);
    }
}
