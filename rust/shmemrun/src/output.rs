//! `--tag-output`: relays every PE's stdout and stderr, line by line, prefixed `[pe R] `.
//!
//! Owns the read ends of the PEs' output pipes and one thread that polls them all. Must never
//! block a PE on a reader that went away (a failed write to our own stdout only drops output)
//! and never split a line between PEs: each line is written whole, under the stream's lock.

use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};

use rustix::event::{poll, PollFd, PollFlags};
use rustix::io::Errno;

/// A line longer than this is written out in pieces (each with the prefix), so that a PE
/// writing without newlines cannot grow our memory without bound.
const MAX_LINE: usize = 64 * 1024;

/// One pipe to relay.
pub struct Source {
    fd: OwnedFd,
    prefix: Vec<u8>,
    to_stderr: bool,
    pending: Vec<u8>,
}

impl Source {
    /// The read end of PE `rank`'s stdout (or stderr when `to_stderr`).
    pub fn new(rank: u32, fd: OwnedFd, to_stderr: bool) -> Source {
        Source {
            fd,
            prefix: format!("[pe {rank}] ").into_bytes(),
            to_stderr,
            pending: Vec::new(),
        }
    }

    /// Writes every complete line in `pending` (all of it at EOF, with a newline added).
    fn flush_lines(&mut self, eof: bool) {
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(pos) = self.pending[start..].iter().position(|&b| b == b'\n') {
            out.extend_from_slice(&self.prefix);
            out.extend_from_slice(&self.pending[start..start + pos + 1]);
            start += pos + 1;
        }
        let rest = self.pending.len() - start;
        if rest > 0 && (eof || rest >= MAX_LINE) {
            out.extend_from_slice(&self.prefix);
            out.extend_from_slice(&self.pending[start..]);
            out.push(b'\n');
            start = self.pending.len();
        }
        self.pending.drain(..start);
        if !out.is_empty() {
            // Our own stdout/stderr may be closed (`| head`); dropping output is all we can do.
            let _ = if self.to_stderr {
                write_all_locked(&mut io::stderr().lock(), &out)
            } else {
                write_all_locked(&mut io::stdout().lock(), &out)
            };
        }
    }
}

fn write_all_locked(w: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    w.write_all(bytes)?;
    w.flush()
}

/// Starts the relay thread over `sources`; calls `done` once every pipe has reached EOF.
pub fn spawn_relay(
    mut sources: Vec<Source>,
    done: impl FnOnce() + Send + 'static,
) -> io::Result<()> {
    std::thread::Builder::new()
        .name("tag-output".into())
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            while !sources.is_empty() {
                let mut ready = Vec::new();
                {
                    let mut fds: Vec<PollFd<'_>> = sources
                        .iter()
                        .map(|s| PollFd::new(&s.fd, PollFlags::IN))
                        .collect();
                    match poll(&mut fds, None) {
                        Ok(_) => {}
                        Err(Errno::INTR) => continue,
                        Err(e) => {
                            eprintln!("shmemrun: --tag-output: poll failed: {e}");
                            break;
                        }
                    }
                    for (i, fd) in fds.iter().enumerate() {
                        if !fd.revents().is_empty() {
                            ready.push(i);
                        }
                    }
                }
                // Back to front, so that removing a finished source keeps the other indices.
                for &i in ready.iter().rev() {
                    let source = &mut sources[i];
                    match rustix::io::read(source.fd.as_fd(), &mut buf[..]) {
                        Ok(n) if n > 0 => {
                            source.pending.extend_from_slice(&buf[..n]);
                            source.flush_lines(false);
                        }
                        Err(Errno::INTR | Errno::AGAIN) => {}
                        // EOF, or a pipe error that no retry fixes: this source is done.
                        Ok(_) | Err(_) => {
                            source.flush_lines(true);
                            sources.swap_remove(i);
                        }
                    }
                }
            }
            done();
        })
        .map(drop)
}
