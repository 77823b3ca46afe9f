//! The in-place move of the executable's writable data into a memfd mapped shared at the same
//! addresses, and the fork handlers (`pthread_atfork`) that give a forked child a private copy of
//! that range again, taken at the fork.
//!
//! The move runs only from the library constructor, before user threads exist. The fork handlers
//! run inside fork (the child's in a child of a threaded process), so they never allocate, lock
//! or log: only async-signal-safe system calls on plain atomics set once the move is done.

use super::elf::Range;
use crate::error::{Error, Result};
use crate::mapping;
use rustix::fd::{AsRawFd, OwnedFd};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

// What the fork handlers read: plain atomics, set once the move is done (CHILD_LEN last).
static CHILD_START: AtomicUsize = AtomicUsize::new(0);
static CHILD_LEN: AtomicUsize = AtomicUsize::new(0);
static CHILD_FD: AtomicI32 = AtomicI32::new(-1);
/// Set in a forked child once its copy is private: its static data is no longer the memfd.
static FORKED: AtomicBool = AtomicBool::new(false);

/// Whether this process is a child forked from a PE after the move: its copy of the range is
/// private since the fork, so it is no longer the memfd.
pub(super) fn in_forked_child() -> bool {
    FORKED.load(Ordering::Acquire)
}

/// Copies `range` into a new memfd and maps the memfd over it, shared, at the same address.
/// Registers the fork handlers first, so no fork can see the range shared without them.
pub(super) fn move_to_memfd(range: Range, page: usize) -> Result<OwnedFd> {
    static REGISTERED: AtomicBool = AtomicBool::new(false);
    if !REGISTERED.swap(true, Ordering::AcqRel) {
        // SAFETY: registers handlers that only use async-signal-safe system calls.
        let rc = unsafe {
            libc::pthread_atfork(
                Some(before_fork),
                Some(after_fork_in_parent),
                Some(after_fork_in_child),
            )
        };
        if rc != 0 {
            return Err(Error::os(
                "pthread_atfork (needed to make a fork safe)",
                std::io::Error::from_raw_os_error(rc),
            ));
        }
    }
    let fd = mapping::memfd("shmem-static-data", range.len)?;
    // SAFETY: the range is the executable's loaded writable data segment, mapped readable for
    // the life of the process; nothing writes it meanwhile (constructor: no other thread runs
    // user code yet), so a shared byte view of it races with nothing.
    let live = unsafe { std::slice::from_raw_parts(range.start as *const u8, range.len) };
    let untouched = untouched_zero_pages(range, page);
    copy_nonzero_pages(&fd, live, page, |i| {
        untouched.get(i).copied().unwrap_or(false)
    })
    .map_err(|e| Error::os("copying static data to a memfd", e))?;
    // SAFETY: replaces the executable's data pages by the memfd holding the same bytes; the
    // addresses, protection and contents stay the same, so every pointer into them stays valid.
    let mapped = unsafe {
        rustix::mm::mmap(
            range.start as *mut c_void,
            range.len,
            rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
            rustix::mm::MapFlags::SHARED | rustix::mm::MapFlags::FIXED,
            &fd,
            0,
        )
    };
    if let Err(e) = mapped {
        restore(range, &fd);
        return Err(Error::os(
            format!("mapping static data shared at {:#x}", range.start),
            e,
        ));
    }
    CHILD_START.store(range.start, Ordering::Release);
    CHILD_FD.store(fd.as_raw_fd(), Ordering::Release);
    CHILD_LEN.store(range.len, Ordering::Release);
    Ok(fd)
}

/// For each page of `range`, whether it is known to be zero without reading it: a page of the
/// zero-filled part that is neither present nor swapped out (`/proc/self/pagemap` bits 63 and
/// 62) was never touched. Reading such pages would map the zero page once per page, slow for a
/// `.bss` of gigabytes. (mincore would not do: it calls a swapped-out page absent.) Empty, so
/// every page is read, when pagemap cannot be read.
fn untouched_zero_pages(range: Range, page: usize) -> Vec<bool> {
    use std::os::unix::fs::FileExt;
    const PRESENT_OR_SWAPPED: u64 = 3 << 62;
    let Ok(pagemap) = std::fs::File::open("/proc/self/pagemap") else {
        return Vec::new();
    };
    let mut entries = vec![0u8; range.len / page * 8];
    if pagemap
        .read_exact_at(&mut entries, (range.start / page * 8) as u64)
        .is_err()
    {
        return Vec::new();
    }
    let first = range.zero_fill_at / page;
    entries
        .chunks_exact(8)
        .enumerate()
        .map(|(i, e)| {
            let entry = <[u8; 8]>::try_from(e).map_or(u64::MAX, u64::from_ne_bytes);
            i >= first && entry & PRESENT_OR_SWAPPED == 0
        })
        .collect()
}

/// Writes the pages of `live` that hold a non-zero byte into `fd` at their offsets; all-zero
/// pages stay holes (a large `.bss` costs no memory until used). `known_zero(i)` says page `i`
/// is zero without reading it.
fn copy_nonzero_pages(
    fd: &OwnedFd,
    live: &[u8],
    page: usize,
    known_zero: impl Fn(usize) -> bool,
) -> std::io::Result<()> {
    let has_data = |i: usize| {
        let at = i * page;
        !known_zero(i)
            && live[at..(at + page).min(live.len())]
                .iter()
                .any(|b| *b != 0)
    };
    let pages = live.len().div_ceil(page);
    let mut i = 0;
    while i < pages {
        if !has_data(i) {
            i += 1;
            continue;
        }
        let first = i;
        while i < pages && has_data(i) {
            i += 1;
        }
        let end = (i * page).min(live.len());
        let mut done = first * page;
        while done < end {
            match rustix::io::pwrite(fd, &live[done..end], done as u64)? {
                0 => return Err(std::io::ErrorKind::WriteZero.into()),
                n => done += n,
            }
        }
    }
    Ok(())
}

/// After a failed `MAP_FIXED` (which may have unmapped the range): puts private memory with the
/// saved bytes back at the same place. If even that fails the process cannot go on.
fn restore(range: Range, fd: &OwnedFd) {
    // SAFETY: the range is the executable's data segment, which we are putting back.
    let back = unsafe {
        rustix::mm::mmap_anonymous(
            range.start as *mut c_void,
            range.len,
            rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
            rustix::mm::MapFlags::PRIVATE | rustix::mm::MapFlags::FIXED,
        )
    };
    let restored = back.is_ok_and(|_| {
        // SAFETY: the range was just mapped private and writable; nothing else runs.
        let buf = unsafe { std::slice::from_raw_parts_mut(range.start as *mut u8, range.len) };
        let mut done = 0;
        while done < buf.len() {
            match rustix::io::pread(fd, &mut buf[done..], done as u64) {
                Ok(0) | Err(_) => return false,
                Ok(n) => done += n,
            }
        }
        true
    });
    if !restored {
        die(b"shmem: could not restore the program's global variables after a failed move\n");
    }
}

/// Writes `msg` to stderr and aborts; for the states no process can go on from.
fn die(msg: &[u8]) -> ! {
    // SAFETY: write(2) and abort are async-signal-safe and take plain buffers.
    unsafe {
        let _ = libc::write(2, msg.as_ptr() as *const c_void, msg.len());
        libc::abort()
    }
}

// The fork handlers. The copy must be taken before the fork: once fork returns, the parent
// runs on and writes its globals (Python releases locks there, for one), and a copy taken in
// the child afterwards would see those writes. So the prepare handler snapshots the range into
// private memory, which the child inherits and moves over the range, and the parent drops.
// glibc runs prepare, fork and the parent or child handlers under one lock when threads exist,
// so one snapshot slot is enough. Only async-signal-safe system calls; no allocation, lock or
// log. (Handlers do not run for vfork, posix_spawn or _Fork, whose children either share the
// parent's memory anyway or must not touch it.)

/// A private anonymous mapping of `len` bytes holding a copy of the range, or null.
///
/// # Safety
/// `start..start+len` must be the moved range and `fd` its memfd.
unsafe fn private_copy(fd: i32, start: usize, len: usize) -> *mut c_void {
    // SAFETY: a fresh private anonymous mapping at a kernel-chosen address overlaps nothing.
    let copy = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if copy == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    // SAFETY: `copy` is a fresh mapping of `len` bytes and the range is mapped readable (the
    // function's contract).
    unsafe { copy_data_extents(fd, start as *const u8, copy as *mut u8, len) };
    copy
}

/// Address of the snapshot the prepare handler took for the fork in progress (0 for none).
static SNAPSHOT: AtomicUsize = AtomicUsize::new(0);

/// `pthread_atfork` prepare handler: snapshots the range for the child.
unsafe extern "C" fn before_fork() {
    let len = CHILD_LEN.load(Ordering::Acquire);
    if len == 0 {
        return;
    }
    let (start, fd) = (
        CHILD_START.load(Ordering::Acquire),
        CHILD_FD.load(Ordering::Acquire),
    );
    // SAFETY: CHILD_* describe the moved range and its memfd once CHILD_LEN is set.
    let copy = unsafe { private_copy(fd, start, len) };
    SNAPSHOT.store(copy as usize, Ordering::Release);
}

/// `pthread_atfork` parent handler: drops the snapshot (the child has its own).
unsafe extern "C" fn after_fork_in_parent() {
    let copy = SNAPSHOT.swap(0, Ordering::AcqRel);
    if copy != 0 {
        // SAFETY: `copy` is the snapshot mapping of CHILD_LEN bytes made by before_fork, used by
        // nobody in this process.
        unsafe { libc::munmap(copy as *mut c_void, CHILD_LEN.load(Ordering::Acquire)) };
    }
}

/// `pthread_atfork` child handler: moves the snapshot over the shared range, so the child's
/// memory is what the parent had at the fork and its writes stay its own.
unsafe extern "C" fn after_fork_in_child() {
    let len = CHILD_LEN.swap(0, Ordering::AcqRel);
    if len == 0 {
        return;
    }
    FORKED.store(true, Ordering::Release);
    let start = CHILD_START.load(Ordering::Acquire);
    let mut copy = SNAPSHOT.swap(0, Ordering::AcqRel) as *mut c_void;
    if copy.is_null() {
        // The prepare handler found no memory; a late copy is still better than sharing.
        // SAFETY: as in before_fork.
        copy = unsafe { private_copy(CHILD_FD.load(Ordering::Acquire), start, len) };
    }
    if copy.is_null() {
        die(b"shmem: fork: no memory for the child's private copy of the global variables\n");
    }
    // SAFETY: moves the private copy over the shared range (same length and protection);
    // MREMAP_FIXED replaces the old mapping in one step, and only this thread exists here.
    let moved = unsafe {
        libc::mremap(
            copy,
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            start as *mut c_void,
        )
    };
    if moved == libc::MAP_FAILED {
        die(b"shmem: fork: could not give the child a private copy of the global variables\n");
    }
}

/// Copies the data extents of the memfd behind `src` (holes are zero pages the fresh `dst`
/// already has), or everything when the file system cannot say where data is.
///
/// # Safety
/// `src` and `dst` must be valid for `len` bytes, not overlapping; async-signal-safe.
unsafe fn copy_data_extents(fd: i32, src: *const u8, dst: *mut u8, len: usize) {
    let mut off: usize = 0;
    while off < len {
        // SAFETY: lseek has no memory preconditions; the shared file offset is never used.
        let data = unsafe { libc::lseek(fd, off as libc::off_t, libc::SEEK_DATA) };
        if data < 0 {
            // SAFETY: errno is thread-local and readable at any time.
            if unsafe { *libc::__errno_location() } == libc::ENXIO {
                return; // only holes from here on
            }
            // SAFETY: both ranges are valid for [off, len) (the function's contract).
            unsafe { std::ptr::copy_nonoverlapping(src.add(off), dst.add(off), len - off) };
            return;
        }
        let data = (data as usize).min(len);
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, data as libc::off_t, libc::SEEK_HOLE) };
        let hole = if hole < 0 {
            len
        } else {
            (hole as usize).min(len)
        };
        // SAFETY: [data, hole) lies inside [0, len), valid for both pointers.
        unsafe { std::ptr::copy_nonoverlapping(src.add(data), dst.add(data), hole - data) };
        off = hole.max(data + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::Mapping;

    const PAGE: usize = 4096;

    /// Offsets of the data extents of `fd` (SEEK_DATA/SEEK_HOLE), as (start, end) pairs.
    fn extents(fd: &OwnedFd, len: usize) -> Vec<(usize, usize)> {
        use rustix::fs::{seek, SeekFrom};
        let mut out = Vec::new();
        let mut off = 0u64;
        while (off as usize) < len {
            let Ok(data) = seek(fd, SeekFrom::Data(off)) else {
                break;
            };
            let hole = seek(fd, SeekFrom::Hole(data)).unwrap();
            out.push((data as usize, hole as usize));
            off = hole;
        }
        out
    }

    #[test]
    fn copy_writes_only_pages_with_data_and_the_child_copy_reads_them_back() {
        let pages = 8;
        let mut live = vec![0u8; pages * PAGE];
        live[PAGE + 5] = 1; // page 1
        live[2 * PAGE] = 2; // page 2
        live[5 * PAGE + PAGE - 1] = 3; // page 5, said to be known zero: skipped
        live[7 * PAGE] = 4; // page 7
        let fd = mapping::memfd("test", live.len()).unwrap();
        copy_nonzero_pages(&fd, &live, PAGE, |i| i == 5).unwrap();
        assert_eq!(
            extents(&fd, live.len()),
            vec![(PAGE, 3 * PAGE), (7 * PAGE, 8 * PAGE)]
        );
        let map = Mapping::map_shared(&fd, live.len()).unwrap();
        let mut copy = vec![0u8; live.len()];
        // SAFETY: both buffers are valid for live.len() bytes and distinct.
        unsafe {
            copy_data_extents(
                fd.as_raw_fd(),
                map.addr() as *const u8,
                copy.as_mut_ptr(),
                live.len(),
            )
        };
        live[5 * PAGE + PAGE - 1] = 0;
        assert!(copy == live);
    }

    #[test]
    fn untouched_pages_of_the_zero_fill_part_are_known_zero() {
        let len = 8 * PAGE;
        // SAFETY: a fresh private anonymous mapping overlaps nothing; unmapped below.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE,
            )
        }
        .unwrap();
        // SAFETY: pages 2 and 5 lie inside the mapping made above.
        unsafe {
            std::ptr::write_volatile((p as *mut u8).add(2 * PAGE), 1);
            std::ptr::write_volatile((p as *mut u8).add(5 * PAGE + 9), 1);
        }
        let all = untouched_zero_pages(
            Range {
                start: p as usize,
                len,
                zero_fill_at: 0,
            },
            PAGE,
        );
        let want = [true, true, false, true, true, false, true, true];
        assert_eq!(all, want);
        let tail = untouched_zero_pages(
            Range {
                start: p as usize,
                len,
                zero_fill_at: 4 * PAGE,
            },
            PAGE,
        );
        assert_eq!(tail, [false, false, false, false, true, false, true, true]);
        // SAFETY: unmaps the mapping made above, no longer used.
        unsafe { rustix::mm::munmap(p, len) }.unwrap();
    }
}
