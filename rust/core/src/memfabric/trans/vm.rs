//! Copies between this process and another process of this node by the kernel's
//! cross-process copy (`process_vm_writev`, `process_vm_readv`): one copy, no mapping, a
//! batch in as few system calls as the kernel's iovec limit allows (1024 pieces a call).
//!
//! A peer is named by its process id, checked against the start time it published (so a
//! process id taken again by another process is never written), and held by a pidfd where
//! the kernel has them, polled before a copy at most every 2 ms: a process that ended is
//! seen within that interval (the kernel hands its id out again only after going round the
//! other free ids).

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::clock::coarse_clock_ns;

/// Most pieces the kernel takes in one call (`IOV_MAX`).
const IOV_MAX: usize = 1024;

/// Why a cross-process copy failed.
#[derive(Debug)]
pub enum VmError {
    /// The kernel refuses this process access to the peer's memory (ptrace policy: Yama's
    /// `ptrace_scope`, a container's seccomp or capabilities): another path is needed.
    Denied(std::io::Error),
    /// The peer's process ended (or its id names another process now).
    Gone(String),
    /// The copy failed otherwise (the peer's range is not mapped, say).
    Failed(String),
}

/// The start time of process `pid` (field 22 of `/proc/<pid>/stat`, clock ticks since boot).
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces: fields after it follow its last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// How often, at most, a copy polls the peer's pidfd (nanoseconds of the coarse monotonic
/// clock): a process that ended is seen within this interval and a clock tick, and its id is
/// not handed to another process in that time.
const POLL_INTERVAL_NS: u64 = 2_000_000;

/// A peer process of this node.
pub struct Process {
    pid: u32,
    /// Readable once the process ended; `None` where the kernel has no pidfds.
    pidfd: Option<OwnedFd>,
    /// When the pidfd was last seen not readable (coarse clock, ns).
    alive_at: AtomicU64,
}

impl Process {
    /// The process `pid` that started at `start` (see [`start_time`]).
    pub fn open(pid: u32, start: u64) -> Result<Process, VmError> {
        // SAFETY: pidfd_open takes a process id and flags and returns a new descriptor.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        // SAFETY: a descriptor pidfd_open just returned, owned from here.
        let pidfd = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) });
        if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
            return Err(VmError::Gone(format!("process {pid} has ended")));
        }
        // Checked after the pidfd is held: the process it names cannot be replaced since.
        if start_time(pid) != Some(start) {
            return Err(VmError::Gone(format!(
                "process {pid} has ended (its id names another process now)"
            )));
        }
        Ok(Process {
            pid,
            pidfd,
            alive_at: AtomicU64::new(0),
        })
    }

    /// Whether the process has ended (its pidfd is readable), polled at most every
    /// [`POLL_INTERVAL_NS`].
    fn ended(&self) -> bool {
        let Some(fd) = &self.pidfd else {
            return false;
        };
        let now = coarse_clock_ns();
        if now.saturating_sub(self.alive_at.load(Ordering::Relaxed)) < POLL_INTERVAL_NS {
            return false;
        }
        let mut fds = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
        let ended = matches!(rustix::event::poll(&mut fds, Some(&rustix::event::Timespec::default())), Ok(n) if n > 0)
            && !fds[0].revents().is_empty();
        if !ended {
            self.alive_at.store(now, Ordering::Relaxed);
        }
        ended
    }

    /// Copies each `(local, remote, len)` piece: to the peer (`write`) or from it. The
    /// remote ranges are the caller's to have checked against what the peer registered.
    pub fn copy(&self, write: bool, pieces: &[(usize, usize, usize)]) -> Result<(), VmError> {
        if self.ended() {
            return Err(VmError::Gone(format!("process {} has ended", self.pid)));
        }
        let mut local: Vec<libc::iovec> = Vec::with_capacity(pieces.len().min(IOV_MAX));
        let mut remote: Vec<libc::iovec> = Vec::with_capacity(pieces.len().min(IOV_MAX));
        // The next byte to copy: piece `i`, `done` bytes into it.
        let (mut i, mut done) = (0usize, 0usize);
        while i < pieces.len() {
            local.clear();
            remote.clear();
            let mut want = 0usize;
            for (j, &(l, r, len)) in pieces[i..].iter().take(IOV_MAX).enumerate() {
                let skip = if j == 0 { done } else { 0 };
                local.push(libc::iovec {
                    iov_base: (l + skip) as *mut libc::c_void,
                    iov_len: len - skip,
                });
                remote.push(libc::iovec {
                    iov_base: (r + skip) as *mut libc::c_void,
                    iov_len: len - skip,
                });
                want += len - skip;
            }
            // SAFETY: the local pieces are the caller's buffers (readable for a write,
            // writable for a read); the kernel checks the remote ones in the peer.
            let n = unsafe {
                if write {
                    libc::process_vm_writev(
                        self.pid as libc::pid_t,
                        local.as_ptr(),
                        local.len() as libc::c_ulong,
                        remote.as_ptr(),
                        remote.len() as libc::c_ulong,
                        0,
                    )
                } else {
                    libc::process_vm_readv(
                        self.pid as libc::pid_t,
                        local.as_ptr(),
                        local.len() as libc::c_ulong,
                        remote.as_ptr(),
                        remote.len() as libc::c_ulong,
                        0,
                    )
                }
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                return Err(match e.raw_os_error() {
                    Some(libc::EPERM) => VmError::Denied(e),
                    Some(libc::ESRCH) => VmError::Gone(format!("process {} has ended", self.pid)),
                    _ => VmError::Failed(format!(
                        "{} process {}: {e}",
                        if write { "writing to" } else { "reading from" },
                        self.pid
                    )),
                });
            }
            let mut n = n as usize;
            if n == 0 && want > 0 {
                return Err(VmError::Failed(format!(
                    "{} process {}: nothing copied (its range is not mapped)",
                    if write { "writing to" } else { "reading from" },
                    self.pid
                )));
            }
            // Advance past what was copied (a short count stops at a piece that failed: the
            // next call starts there and reports it).
            while n > 0 && i < pieces.len() {
                let left = pieces[i].2 - done;
                if n >= left {
                    n -= left;
                    i += 1;
                    done = 0;
                } else {
                    done += n;
                    n = 0;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_pieces_within_this_process() {
        let me = Process::open(std::process::id(), start_time(std::process::id()).unwrap());
        let Ok(me) = me else { return };
        let src: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let mut dst = vec![0u8; 5000];
        let pieces: Vec<(usize, usize, usize)> = (0..5)
            .map(|k| {
                (
                    src.as_ptr() as usize + k * 1000,
                    dst.as_mut_ptr() as usize + k * 1000,
                    1000,
                )
            })
            .collect();
        match me.copy(true, &pieces) {
            Ok(()) => assert_eq!(src, dst),
            Err(VmError::Denied(_)) => {}
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn a_start_time_that_differs_is_another_process() {
        let me = std::process::id();
        let start = start_time(me).unwrap();
        assert!(matches!(
            Process::open(me, start + 1),
            Err(VmError::Gone(_))
        ));
    }
}
