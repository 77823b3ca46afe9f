//! Under `shmemrun`: ends this PE, and the processes of the job's process group, as soon as the
//! launcher is gone.
//!
//! `shmemrun` arms `PR_SET_PDEATHSIG` in the processes it starts, but that reaches only its
//! own children: a PE started through a wrapper script (a shell that does not `exec`) or a
//! process a PE forked would outlive a killed launcher, spinning in a barrier for ever. The
//! store connection is the launcher's own descriptor: only `shmemrun` holds its far end, so
//! it closes when `shmemrun` ends, whatever sits between it and this PE.
//!
//! Also [`Stoppable`], the thread that sleeps in `poll` until stopped, which this watch and the
//! heartbeat (`heartbeat`) run on.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rustix::event::{eventfd, poll, EventfdFlags, PollFd, PollFlags};
use rustix::io::Errno;
use rustix::process::{getpgrp, kill_process_group, Signal};

use crate::error::{Error, Result};

/// The watcher's stack: it only polls and logs.
const STACK: usize = 64 * 1024;

/// A thread of the bootstrap that sleeps in `poll` and can be stopped at once: it polls the
/// eventfd it is handed beside what it watches, and finds the flag set when woken. Stopping
/// it (or dropping it) ends the thread before the caller goes on, so that finalize leaves no
/// thread of the library behind.
#[derive(Debug)]
pub(crate) struct Stoppable {
    stopping: Arc<AtomicBool>,
    wake: Arc<OwnedFd>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Stoppable {
    /// Starts thread `name` running `f(wake, stopping)`.
    pub(crate) fn spawn(
        name: &str,
        f: impl FnOnce(&OwnedFd, &AtomicBool) + Send + 'static,
    ) -> Result<Stoppable> {
        let stopping = Arc::new(AtomicBool::new(false));
        let wake = Arc::new(
            eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
                .map_err(|e| Error::os(format!("making the eventfd of thread {name}"), e))?,
        );
        let (flag, woken) = (Arc::clone(&stopping), Arc::clone(&wake));
        let thread = std::thread::Builder::new()
            .name(name.into())
            .stack_size(STACK)
            .spawn(move || f(&woken, &flag))
            .map_err(|e| Error::os(format!("starting thread {name}"), e))?;
        Ok(Stoppable {
            stopping,
            wake,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Sets the flag and wakes the thread; it has ended when this returns.
    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        let _ = rustix::io::write(&*self.wake, &1u64.to_ne_bytes());
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        // The threads never call this themselves (they only end the process), so this cannot
        // wait for its own thread.
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

impl Drop for Stoppable {
    fn drop(&mut self) {
        self.stop();
    }
}

/// This PE's watch on its launcher. Dropping it disarms the watch: the connection is then
/// expected to close (this PE leaves a job it failed to join).
#[derive(Debug)]
pub(crate) struct LauncherWatch {
    /// Stopped before this PE's goodbye: from then on `shmemrun` may close the connection.
    thread: Stoppable,
}

impl LauncherWatch {
    /// Starts watching `socket` (a duplicate of the store connection to `shmemrun`).
    pub(crate) fn start(socket: OwnedFd) -> Result<LauncherWatch> {
        let thread = Stoppable::spawn("shmem-launcher", move |wake, leaving| {
            watch(&socket, wake, leaving)
        })?;
        Ok(LauncherWatch { thread })
    }

    /// Call before this PE's goodbye, or when it leaves a job that failed to start: the watch
    /// stops, and its thread has ended when this returns.
    pub(crate) fn leaving(&self) {
        self.thread.stop();
    }
}

fn watch(socket: &OwnedFd, wake: &OwnedFd, leaving: &AtomicBool) {
    loop {
        // RDHUP alone: the replies to this PE's own calls never wake this thread.
        let mut fds = [
            PollFd::new(socket, PollFlags::RDHUP),
            PollFd::new(wake, PollFlags::IN),
        ];
        match poll(&mut fds, None) {
            Ok(_) if !fds[1].revents().is_empty() => return,
            Ok(_) if !fds[0].revents().is_empty() => break,
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => {
                tracing::warn!("cannot watch the connection to shmemrun: {e}");
                return;
            }
        }
    }
    if leaving.load(Ordering::SeqCst) {
        return;
    }
    tracing::error!(
        "lost shmemrun: the launcher's store connection closed (shmemrun was killed or \
         died); ending this PE and the processes it started"
    );
    let _ = std::io::Write::flush(&mut std::io::stderr());
    // shmemrun starts every PE in one process group of the job's own, and whatever runs
    // between it and the PE (a wrapper script), or was started by a PE, stays in it: taking
    // the group down leaves nothing of the job behind, even where this PE is not the first to
    // notice.
    let _ = kill_process_group(getpgrp(), Signal::KILL);
    crate::bootstrap::ending::end_process(1)
}
