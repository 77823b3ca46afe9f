//! In a job across nodes: this PE's heartbeat to the job's store, and its end when the store
//! stops answering (this node is cut off from the store's).
//!
//! A thread of its own sends one short request every third of the bound
//! (`SHMEM_HEARTBEAT_TIMEOUT`) and sleeps in `poll` between them, so that a PE that computes
//! for hours without calling the library is heard all the same, and nothing is added to the
//! library's calls. The PE is a member of the store's liveness group (shmem-store's
//! `liveness`): the store's host ends the job on every node it reaches when a node goes silent.
//! The PEs of that node learn it here: no answer for the bound and half a heartbeat interval
//! since the last one (the store's host goes first) ends this PE, saying which store it lost.
//! While another call of this PE is in flight on the connection, the store hears the PE
//! through it and no heartbeat is sent. A connection that closes is left to the other watchers
//! (`watch`, `meet`), which know why it closed.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::io::Errno;

use super::watch::Stoppable;
use crate::bootstrap::store::liveness::{self, GROUP};
use crate::bootstrap::store::{BootstrapError, Client};
use crate::error::Result;

/// What the heartbeat says when it ends this PE.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    /// This PE's node, as messages show it.
    pub(crate) node: String,
    /// The store and who serves it (`shmemrun's store at tcp://...`).
    pub(crate) store: String,
}

/// This PE's heartbeat. Stopping it (or dropping it) ends the thread before this PE leaves.
#[derive(Debug)]
pub(crate) struct Heartbeat {
    thread: Stoppable,
}

impl Heartbeat {
    /// Joins the liveness group as PE `pe` of `n_pes` with silence bound `bound`, then starts
    /// the heartbeat.
    pub(crate) fn start(
        client: Arc<Client>,
        pe: u32,
        n_pes: u32,
        bound: Duration,
        names: Names,
    ) -> Result<Heartbeat> {
        let member = liveness::member_id(pe, &names.node);
        client.group_join(GROUP, &member, n_pes, Some(pe), bound, false)?;
        let thread = Stoppable::spawn("shmem-heartbeat", move |wake, stopping| {
            beat(&client, pe, bound, &names, wake, stopping)
        })?;
        Ok(Heartbeat { thread })
    }

    /// Call before this PE's goodbye: the heartbeat stops, and its thread has ended when this
    /// returns.
    pub(crate) fn stop(&self) {
        self.thread.stop();
    }
}

/// Sleeps `nap` unless woken; returns whether it was woken.
fn sleep(wake: &OwnedFd, nap: Duration) -> bool {
    let until = Instant::now() + nap;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let timeout = Timespec::try_from(left).unwrap_or(Timespec {
            tv_sec: i64::MAX,
            tv_nsec: 0,
        });
        let mut fds = [PollFd::new(wake, PollFlags::IN)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(_) if !fds[0].revents().is_empty() => return true,
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => {
                tracing::warn!("the heartbeat cannot wait: {e}");
                return true;
            }
        }
    }
}

fn beat(
    client: &Client,
    pe: u32,
    bound: Duration,
    names: &Names,
    wake: &OwnedFd,
    stopping: &AtomicBool,
) {
    let key = liveness::beat_key(pe);
    // Counted from each heartbeat's sending, so that this thread's own delays (a loaded
    // machine) never count against the store: one interval after the last answer, then this.
    let within = liveness::self_bound(bound).saturating_sub(liveness::interval(bound));
    loop {
        if sleep(wake, liveness::interval(bound)) || stopping.load(Ordering::SeqCst) {
            return;
        }
        match client.heartbeat(&key, within) {
            // Answered, or another call is in flight: the store hears this PE either way.
            Ok(_) => {}
            Err(BootstrapError::Timeout { .. }) if !stopping.load(Ordering::SeqCst) => break,
            // Closed or broken: the watcher of the connection says why and ends this PE.
            Err(e) => {
                tracing::debug!("heartbeat stopped: {e}");
                return;
            }
        }
    }
    tracing::error!(
        "lost the others: {} did not answer this PE's heartbeats for {} s ({} and half a \
         heartbeat interval); this PE's node ({}) is cut off from it; ending this PE",
        names.store,
        liveness::self_bound(bound).as_secs_f64(),
        shmem_base::env::HEARTBEAT_TIMEOUT,
        names.node
    );
    let _ = std::io::Write::flush(&mut std::io::stderr());
    crate::bootstrap::ending::end_process(1)
}
