//! The UCX transport: reaches PEs whose memory is not mapped here (those on other nodes) through
//! UCX's UCP API, loaded at run time from `libucp.so.0` ([`ffi`]), and serves every AMO of a job
//! that uses it (the atomicity rule of [`super`]). UCX picks its own wires (shared memory, TCP,
//! InfiniBand) from its own variables (`UCX_TLS`, `UCX_NET_DEVICES`); this module never chooses
//! them. It sets one thing where the environment does not: UCX's TCP segments, 256 KiB each way
//! ([`UCX_DEFAULTS`]; `UCX_TCP_TX_SEG_SIZE` or `UCX_TCP_RX_SEG_SIZE` in the environment keeps
//! UCX's own values, and so does a `UCX_TLS` without TCP), because with UCX's 8 KiB a put or get
//! of a MiB over TCP crosses in 128 segments, each one progressed by the peer's worker, and runs
//! at a fraction of the wire (the dynamic worker's contexts, `open_worker`, take it too).
//!
//! Per PE: one UCP context (features RMA, AMO32, AMO64), one worker, one endpoint to every PE of
//! the job (this one too: AMOs to every PE go through UCX), and each registered segment
//! (`ucp_mem_map` of the memory that exists, no allocation) with its packed remote key. A
//! segment's key bytes carry its base and length on the sending PE, then UCP's packed rkey: the
//! remote address of an offset is that base plus the offset, checked against that length.
//!
//! Threads: one lock of ours serializes every call on the worker. The facade may be called from
//! several threads (`SHMEM_THREAD_MULTIPLE`), and UCX's own thread safety
//! (`UCS_THREAD_MODE_MULTI`) exists only where UCX was built with `--enable-mt`, so the lock of
//! ours makes every build behave the same. The worker is still asked for `UCS_THREAD_MODE_MULTI`
//! (UCX falls back to a serialized worker where it was built without): UCX's own thread then
//! handles its connection events under the worker's lock, and over TCP with 4 PEs reaching each
//! other a serialized worker left about one job in 50 with a request that never completed
//! (0 in 100 with a multi-thread worker). A blocking call holds our lock while it progresses the
//! worker; [`Transport::progress`] only tries it (a thread that holds it is progressing the
//! worker already).
//!
//! Contexts: every shmem context shares the PE's worker and endpoints. Quiet on one context
//! flushes the worker and so completes the other contexts' operations too, which OpenSHMEM
//! allows; a worker per context would make each context pay for its own endpoints to every PE
//! and its own progress, for isolation no test or program of ours can observe.
//!
//! Completion: a blocking put returns when its source may be reused (UCX copied or sent it: a
//! short put costs no round trip), and is visible at the target after quiet, ordered by fence,
//! as OpenSHMEM's put is (the table's contract); a blocking get returns when the data has landed,
//! an AMO when its result is here. Non-blocking puts and gets are issued and their requests
//! released at once. Quiet (`ucp_worker_flush_nbx`) completes everything, and costs nothing when
//! no put or non-blocking call was issued since the last one (a PE that reaches only mapped
//! peers, or only fetches, pays for no flush). Every wait
//! progresses the worker and gives up after the control timeout with an error naming the
//! operation and the PE. Finalize flushes and closes the endpoints; the worker, and the
//! progress thread, end when the transport is dropped, after the runtime's closing barrier, so a
//! peer still closing its endpoint to this PE finds the worker there. Progress happens in those
//! waits, in [`Transport::progress`] (which the
//! library calls from every wait loop), and in a progress thread of ours that progresses the
//! worker when nobody else does, napping 20 µs to 1 ms: a PE that computes without calling the
//! library still answers its peers' wire-up and, where UCX does RMA and atomics in software
//! (TCP), their puts, gets and AMOs.
//!
//! A peer's death: endpoints to PEs of other nodes use UCP's error mode PEER with an error
//! handler that records the failure per PE, so a dead peer fails the requests to it (and the
//! flushes) with [`TransportError::PeerFailed`] naming it, where UCX would otherwise abort this
//! process. UCX's own log lines go through the library's log ([`route_ucx_log`]).
//!
//! It counts the calls it serves and logs the counts at debug level when the job ends, so a test
//! can prove the calls went through UCX.

pub mod ffi;

use super::{bump, AmoOp, Counts, Ctx, Segment, Transport, TransportError, SEGMENTS};
use ffi::{Api, Handle, RequestParam, StatusPtr};
use std::ffi::{c_void, CStr};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The Debian package that provides `libucp.so.0`.
const PACKAGE: &str = "libucx0";

/// Bytes in front of UCP's packed rkey in a segment's key: the base and the length, little-endian.
const KEY_HEADER: usize = 16;

/// A peer's segment as its key describes it.
#[derive(Debug)]
struct Remote {
    /// The segment's base in the peer's process.
    base: u64,
    /// Its length.
    len: u64,
    /// UCP's unpacked rkey (null when the segment is empty).
    rkey: Handle,
}

/// The UCP handles, behind the lock.
#[derive(Debug)]
struct State {
    context: Handle,
    worker: Handle,
    /// Per PE, once connected.
    eps: Vec<Handle>,
    /// This PE's registrations, per segment (null: not registered).
    memh: [Handle; SEGMENTS],
    /// Per segment, per PE, once attached.
    remotes: [Vec<Remote>; SEGMENTS],
    /// Everything released (finalize ran).
    closed: bool,
}

// SAFETY: the handles are UCP's, used only under the transport's lock: one thread at a time
// calls UCP with them, which every thread mode of a worker allows.
unsafe impl Send for State {}

/// The UCX transport of one PE.
pub struct Ucx {
    api: &'static Api,
    my_pe: usize,
    /// Per PE: whether this transport reaches it (the others are mapped).
    reach: Vec<bool>,
    /// Per PE: whether it is on another node. Only those endpoints are made with error mode
    /// PEER: UCX 1.13 then leaves out its shared-memory and self transports (they cannot tell
    /// a peer's failure, and a peer of this node fails with it anyway), so on this node the
    /// mode would move every AMO of the job onto TCP over loopback.
    remote: Vec<bool>,
    /// Bound on every wait.
    timeout: Duration,
    /// This PE's worker address.
    address: Vec<u8>,
    state: Arc<Mutex<State>>,
    /// A put or non-blocking call was issued since the last flush: quiet has work to do. Read
    /// without the lock, so that a quiet with nothing to complete (after puts to mapped peers
    /// only) costs one load; written under it.
    pending: AtomicBool,
    /// When a call of this PE last progressed the worker ([`crate::clock::node_clock_ns`]).
    last_progress: Arc<AtomicU64>,
    /// The calls waiting on the worker: the progress thread stands by meanwhile.
    standby: Arc<Standby>,
    /// Per PE: 0 while its endpoint is healthy, else the status UCP's error handler got when
    /// the endpoint failed ([`endpoint_failed`] writes it; each endpoint's handler argument
    /// points at its PE's entry, so the slice never moves while the worker lives).
    failed: Box<[AtomicI32]>,
    /// The progress thread's stop flag and handle, from connect to finalize.
    progress_thread: Mutex<Option<ProgressThread>>,
    counts: Counts,
}

impl std::fmt::Debug for Ucx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ucx")
            .field("my_pe", &self.my_pe)
            .field("reach", &self.reach)
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

/// What a finished wait says.
type Waited = Result<(), TransportError>;

impl Ucx {
    /// Loads UCP and makes this PE's context and worker, for a job of `reach.len()` PEs in
    /// which this transport reaches the PEs `reach` marks and `remote` marks the PEs of other
    /// nodes; every wait gives up after `timeout`.
    pub fn open(
        my_pe: usize,
        reach: Vec<bool>,
        remote: Vec<bool>,
        timeout: Duration,
    ) -> Result<Ucx, TransportError> {
        let api = load_api()?;
        let Opened {
            context,
            worker,
            address,
            ..
        } = open_worker(api, false)?;
        let n_pes = reach.len();
        Ok(Ucx {
            api,
            my_pe,
            reach,
            remote,
            timeout,
            address,
            state: Arc::new(Mutex::new(State {
                context,
                worker,
                eps: Vec::with_capacity(n_pes),
                memh: [std::ptr::null_mut(); SEGMENTS],
                remotes: [Vec::new(), Vec::new(), Vec::new()],
                closed: false,
            })),
            pending: AtomicBool::new(false),
            failed: (0..n_pes).map(|_| AtomicI32::new(0)).collect(),
            last_progress: Arc::new(AtomicU64::new(0)),
            standby: Arc::default(),
            progress_thread: Mutex::new(None),
            counts: Counts::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic under the lock leaves the handles as valid as before it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn fail(&self, call: String, status: ffi::Status) -> TransportError {
        TransportError::Library {
            call,
            why: self.api.describe(status),
        }
    }

    /// The error for a request to `pe` (`None`: to the whole worker) that ended with `status`:
    /// [`TransportError::PeerFailed`] when that PE's endpoint (any endpoint, for the worker)
    /// failed, so that the job's end can name the PE that is gone.
    fn failure(&self, pe: Option<usize>, call: String, status: ffi::Status) -> TransportError {
        let failed = |k: usize| {
            let s = self.failed.get(k).map_or(0, |f| f.load(Ordering::Acquire));
            (s != 0).then_some((k, s))
        };
        let lost = match pe {
            // A request UCP failed for its peer's loss before the endpoint's handler ran.
            Some(k) if ffi::is_peer_failure(status) => failed(k).or(Some((k, status))),
            Some(k) => failed(k),
            None => (0..self.failed.len()).find_map(failed),
        };
        match lost {
            Some((pe, s)) => TransportError::PeerFailed {
                pe,
                why: self.api.describe(s),
            },
            None => self.fail(call, status),
        }
    }

    /// Waits for what a `*_nbx` call returned: done at once (null), failed, or a request to
    /// progress the worker for until it completes or the timeout passes. The request is freed
    /// either way (UCP releases one still in flight when it completes).
    /// `pe` is the PE the request is about (`None`: the whole worker), `what` the UCP call.
    fn wait(
        &self,
        st: &State,
        p: StatusPtr,
        pe: Option<usize>,
        what: impl Fn() -> String,
    ) -> Waited {
        if p.is_null() {
            return Ok(());
        }
        if ffi::ptr_is_err(p) {
            return Err(self.failure(pe, what(), ffi::ptr_status(p)));
        }
        let _waiting = self.standby.enter();
        let start = Instant::now();
        let mut pace = Pace::default();
        loop {
            // SAFETY: `p` is a live request of this worker (not an error, not null).
            let s = unsafe { (self.api.request_check_status)(p) };
            if s != ffi::UCS_INPROGRESS {
                // SAFETY: the completed request, freed once.
                unsafe { (self.api.request_free)(p) };
                return if s == ffi::UCS_OK {
                    Ok(())
                } else {
                    Err(self.failure(pe, what(), s))
                };
            }
            // SAFETY: the worker is live while the state is open; the lock is held.
            let moved = unsafe { (self.api.worker_progress)(st.worker) };
            if !pace.step(moved) {
                continue;
            }
            if start.elapsed() > self.timeout {
                // SAFETY: still in flight: UCP releases it when it completes.
                unsafe { (self.api.request_free)(p) };
                return Err(TransportError::TimedOut {
                    what: what(),
                    after: self.timeout,
                });
            }
            pace.rest();
        }
    }

    /// The endpoint, remote address and rkey of [offset, offset+len) of `segment` on `pe`.
    fn remote(
        &self,
        st: &State,
        pe: usize,
        segment: Segment,
        offset: u64,
        len: usize,
    ) -> Result<(Handle, u64, Handle), TransportError> {
        if st.closed || pe >= st.eps.len() {
            return Err(TransportError::Unreachable {
                transport: "ucx",
                pe,
            });
        }
        let r = st.remotes[segment as usize]
            .get(pe)
            .ok_or(TransportError::Unsupported {
                transport: "ucx",
                what: "reach a segment that was not registered",
            })?;
        let fits = offset
            .checked_add(len as u64)
            .is_some_and(|end| end <= r.len);
        if !fits || (r.rkey.is_null() && len > 0) {
            return Err(TransportError::OutOfRange {
                pe,
                segment,
                offset,
                len,
                size: r.len as usize,
            });
        }
        Ok((st.eps[pe], r.base + offset, r.rkey))
    }

    /// Ends the data path: destroys the peers' rkeys and closes the endpoints (`force`: without
    /// flushing them, when a flush already failed or finalize never ran). The worker stays, so
    /// the peers' own closes can still reach it; [`Ucx::release_all`] ends it.
    fn close_endpoints(&self, st: &mut State, force: bool) -> Waited {
        let api = self.api;
        for remotes in st.remotes.iter_mut() {
            for r in remotes.drain(..) {
                if !r.rkey.is_null() {
                    // SAFETY: an rkey unpacked by attach, destroyed once, after the flush.
                    unsafe { (api.rkey_destroy)(r.rkey) };
                }
            }
        }
        let mut first_error = Ok(());
        let eps = std::mem::take(&mut st.eps);
        for (pe, ep) in eps.into_iter().enumerate() {
            let mut param = RequestParam::zeroed();
            param.op_attr_mask = ffi::OP_ATTR_FIELD_FLAGS;
            // A failed endpoint can only be closed by force (UCP's rule for error mode PEER).
            let dead = self.failed[pe].load(Ordering::Acquire) != 0;
            param.flags = if force || dead {
                ffi::EP_CLOSE_FLAG_FORCE
            } else {
                0
            };
            // SAFETY: a live endpoint of this worker, closed once (taken out of the state).
            let p = unsafe { (api.ep_close_nbx)(ep, &param) };
            let r = self.wait(st, p, Some(pe), || {
                format!("closing the endpoint to PE {pe} (ucp_ep_close_nbx)")
            });
            if first_error.is_ok() {
                first_error = r;
            }
        }
        first_error
    }

    /// Releases what is left, in reverse order of creation: the registrations, the worker, the
    /// context. Once.
    fn release_all(&self, st: &mut State) {
        if st.closed {
            return;
        }
        st.closed = true;
        let api = self.api;
        for memh in st.memh.iter_mut() {
            if !memh.is_null() {
                // SAFETY: a registration of this context, unmapped once; no rkey of it is
                // in use any more.
                unsafe { (api.mem_unmap)(st.context, *memh) };
                *memh = std::ptr::null_mut();
            }
        }
        // SAFETY: no endpoint, rkey or request of the worker is left; the context outlives it.
        unsafe {
            (api.worker_destroy)(st.worker);
            (api.cleanup)(st.context);
        }
    }

    /// Starts the thread that progresses the worker while no call of this PE does: a PE that
    /// computes without calling the library still answers its peers' wire-up and, over wires
    /// where UCX does RMA and atomics in software (TCP), their puts, gets and AMOs. It naps
    /// from [`NAP_MIN`] after it moved something up to [`NAP_MAX`] when idle, and only tries
    /// the lock (a thread that holds it is progressing the worker already).
    fn start_progress_thread(&self) -> Result<(), TransportError> {
        let api = self.api;
        let state = Arc::clone(&self.state);
        let last = Arc::clone(&self.last_progress);
        let handle = spawn_progress(
            "shmem-ucx",
            "the UCX progress thread",
            None,
            Arc::clone(&self.standby),
            move |nap, _| {
                // A PE that waits in the library progresses the worker itself: the thread stays out
                // of its way and steps in when nobody did for a nap.
                let recent = crate::clock::node_clock_ns()
                    .saturating_sub(last.load(Ordering::Relaxed))
                    < nap.as_nanos() as u64;
                let moved = match state.try_lock() {
                    // SAFETY: the worker is live while the state is open; the lock is held.
                    Ok(st) if !st.closed && !recent => unsafe { (api.worker_progress)(st.worker) },
                    _ => 0,
                };
                if moved > 0 {
                    super::moved();
                    Stepped::Moved
                } else {
                    Stepped::Idle
                }
            },
        )?;
        *self
            .progress_thread
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(handle);
        Ok(())
    }

    /// Stops the progress thread, if it runs, and waits for it (it naps at most [`NAP_MAX`]).
    fn stop_progress_thread(&self) {
        let taken = self
            .progress_thread
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(thread) = taken {
            thread.stop("ucx transport");
        }
    }

    fn flush_worker(&self, st: &State, what: &str) -> Waited {
        let param = RequestParam::zeroed();
        // SAFETY: the worker is live (callers checked `closed`); `param` asks nothing.
        let p = unsafe { (self.api.worker_flush_nbx)(st.worker, &param) };
        self.wait(st, p, None, || {
            format!("{what} (flushing PE {}'s worker)", self.my_pe)
        })
    }
}

/// A progress thread's shortest nap, after it moved something.
const NAP_MIN: Duration = Duration::from_micros(20);
/// Its longest nap, when idle.
const NAP_MAX: Duration = Duration::from_millis(1);
/// How long a progress thread with an event descriptor keeps stepping after its last step that
/// moved something before it arms the worker and sleeps.
const SPIN: Duration = Duration::from_micros(200);
/// The longest a progress thread stands by while calls wait ([`Standby`]) before it looks again.
const STANDBY_MAX: Duration = Duration::from_millis(100);

/// The calls waiting on a worker, each progressing it step after step until its request
/// completes: while there is one, the worker's progress thread does not step. It sleeps its
/// nap; if a call still waits then (a long wait: a flush of a stream), it parks until the last
/// call leaves and wakes it, instead of waking every nap to find the worker progressed. A short
/// wait (a blocking 4 KiB copy is one round trip) thus never costs its caller a wakeup of the
/// thread, and the thread sleeps no longer than before once the calls are gone. Beside a
/// stream of 64 MiB copies between two network namespaces of a 2-CPU VM (a flush of many per
/// wait), the naps were a thousand wakeups a second on the waiting call's CPU: 108 ms of the
/// thread's CPU time in 2 s and 2088 preemptions of the caller; standing by, 38 ms and 1215
/// (the stream's rate and a blocking 4 KiB copy's latency unchanged, within the VM's noise).
pub(crate) struct Standby {
    waiting: AtomicUsize,
    parked: AtomicBool,
    thread: std::sync::OnceLock<std::thread::Thread>,
    /// The longest one stand-by lasts before the thread looks again.
    bound: Duration,
}

impl Default for Standby {
    fn default() -> Self {
        Self::bounded(STANDBY_MAX)
    }
}

impl Standby {
    /// A standby whose thread looks again after `bound` at the latest.
    pub(crate) fn bounded(bound: Duration) -> Self {
        Standby {
            waiting: AtomicUsize::new(0),
            parked: AtomicBool::new(false),
            thread: std::sync::OnceLock::new(),
            bound,
        }
    }

    /// Counts a waiting call until the guard drops.
    pub(crate) fn enter(&self) -> Waiting<'_> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        Waiting(self)
    }

    /// Holds the calling progress thread while calls wait: a `nap`, then, if one still waits,
    /// parked (at most the bound); whether any waited.
    fn stand_by(&self, nap: Duration) -> bool {
        if self.waiting.load(Ordering::SeqCst) == 0 {
            return false;
        }
        std::thread::sleep(nap);
        if self.waiting.load(Ordering::SeqCst) == 0 {
            return true;
        }
        self.parked.store(true, Ordering::SeqCst);
        // Rechecked after `parked` is set: a call that left in between either is seen gone
        // here or sees `parked` and unparks (a token the park below then takes at once).
        if self.waiting.load(Ordering::SeqCst) > 0 {
            std::thread::park_timeout(self.bound);
        }
        self.parked.store(false, Ordering::SeqCst);
        true
    }
}

/// A call's place in [`Standby`]: the last to leave wakes a parked progress thread (one that
/// only sleeps its nap is left to it).
pub(crate) struct Waiting<'a>(&'a Standby);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let s = self.0;
        if s.waiting.fetch_sub(1, Ordering::SeqCst) == 1 && s.parked.load(Ordering::SeqCst) {
            if let Some(t) = s.thread.get() {
                t.unpark();
            }
        }
    }
}

/// The pace of a wait's progress steps, shared by the SHMEM job's transport and the dynamic
/// worker: after a step that moved something the next follows at once; of the steps that moved
/// nothing, 63 in 64 follow after a spin hint, and every 64th is a check of the wait's deadline
/// and a rest ([`Pace::rest`]).
#[derive(Default)]
pub(crate) struct Pace {
    /// Steps in a row that moved nothing.
    idle: u32,
}

impl Pace {
    /// Counts a step that moved `moved`; true when the wait should check its deadline, then
    /// rest.
    pub(crate) fn step(&mut self, moved: u32) -> bool {
        if moved > 0 {
            self.idle = 0;
            return false;
        }
        self.idle += 1;
        if !self.idle.is_multiple_of(64) {
            std::hint::spin_loop();
            return false;
        }
        true
    }

    /// Yields the core, or after 4096 idle steps in a row sleeps 20 µs: with more processes
    /// than cores, the peer that must answer may need this core.
    pub(crate) fn rest(&self) {
        if self.idle > 1 << 12 {
            std::thread::sleep(Duration::from_micros(20));
        } else {
            std::thread::yield_now();
        }
    }
}

/// A thread that progresses a worker while no call does ([`spawn_progress`]), until stopped.
pub(crate) struct ProgressThread {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl ProgressThread {
    /// Stops the thread and waits for it (it naps at most [`NAP_MAX`]; one standing by is
    /// woken); `owner` names it in the debug line of a thread that panicked.
    pub(crate) fn stop(self, owner: &str) {
        self.stop.store(true, Ordering::Release);
        self.handle.thread().unpark();
        if self.handle.join().is_err() {
            tracing::debug!("{owner}: the progress thread panicked");
        }
    }
}

/// What a progress thread's step did ([`spawn_progress`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stepped {
    /// The worker's progress moved something.
    Moved,
    /// It moved nothing and the worker is armed: its event descriptor wakes the thread.
    Armed,
    /// Nothing progressed (nothing to do, or another thread is progressing the worker).
    Idle,
    /// It moved nothing and did not arm the worker (the step was told not to): the thread
    /// yields and steps again.
    Quiet,
}

/// Starts the thread `name` that calls `step` (given its current nap) until stopped. Without an
/// event descriptor (`efd`), it naps [`NAP_MIN`] after a step that moved something, doubling
/// up to [`NAP_MAX`] while idle. With one, a step that moved something is followed by the next
/// at once; for [`SPIN`] after it, `step` is told not to arm the worker (its second argument is
/// false) and the thread yields between steps that moved nothing ([`Stepped::Quiet`]); after
/// a step that armed the worker the thread waits on the descriptor (up to
/// [`NAP_MAX`]): a peer's put or get wakes it as soon as it arrives, where a nap (at least the
/// kernel's timer slack, 50 µs, over 20 µs) would add its length to every round trip through
/// this worker. While calls wait on the worker (`standby`), the thread does not step: it stands
/// by ([`Standby`]). `what` names the thread in the error of a failed start. The SHMEM job's
/// transport and the dynamic worker run theirs through here.
pub(crate) fn spawn_progress(
    name: &str,
    what: &str,
    efd: Option<std::os::fd::RawFd>,
    standby: Arc<Standby>,
    mut step: impl FnMut(Duration, bool) -> Stepped + Send + 'static,
) -> Result<ProgressThread, TransportError> {
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    let handle = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let _ = standby.thread.set(std::thread::current());
            let mut nap = NAP_MIN;
            let mut moved_at: Option<Instant> = None;
            while !stopped.load(Ordering::Acquire) {
                if standby.stand_by(nap) {
                    moved_at = None;
                    continue;
                }
                let may_arm = moved_at.is_none_or(|t| t.elapsed() >= SPIN);
                match (step(nap, may_arm), efd) {
                    (Stepped::Moved, Some(_)) => {
                        nap = NAP_MIN;
                        moved_at = Some(Instant::now());
                    }
                    (Stepped::Quiet, _) => std::thread::yield_now(),
                    (Stepped::Moved, None) => {
                        nap = NAP_MIN;
                        std::thread::sleep(nap);
                    }
                    (Stepped::Armed, Some(fd)) => {
                        nap = NAP_MIN;
                        let mut p = libc::pollfd {
                            fd,
                            events: libc::POLLIN,
                            revents: 0,
                        };
                        // SAFETY: one pollfd, live for the call; the descriptor is the worker's,
                        // open until the worker is destroyed, after this thread is stopped.
                        unsafe { libc::poll(&mut p, 1, NAP_MAX.as_millis() as libc::c_int) };
                    }
                    (Stepped::Armed | Stepped::Idle, _) => {
                        moved_at = None;
                        nap = (nap * 2).min(NAP_MAX);
                        std::thread::sleep(nap);
                    }
                }
            }
        })
        .map_err(|e| TransportError::Library {
            call: format!("starting {what}"),
            why: e.to_string(),
        })?;
    Ok(ProgressThread { stop, handle })
}

/// Why `ucp_ep_create` failed with `status`, for an error message: UCX's words, and for an
/// unreachable peer what to check (UCX picks its devices once, when the worker is made).
pub(crate) fn ep_create_failure(api: &Api, status: ffi::Status) -> String {
    let why = api.describe(status);
    if ffi::is_unreachable(status) {
        format!("{why}{EP_UNREACHABLE_HINT}")
    } else {
        why
    }
}

/// What [`ep_create_failure`] adds for an unreachable peer.
pub(crate) const EP_UNREACHABLE_HINT: &str = " (no transport of this process reaches that peer: \
    UCX_TLS and UCX_NET_DEVICES must leave both sides a transport and a network they share, and \
    UCX lists its devices once, when the process starts its worker: an interface that came up or \
    got its address later is not used)";

/// UCP's API, loaded once per process, with UCX's log routed through the library's.
pub(crate) fn load_api() -> Result<&'static Api, TransportError> {
    let api = ffi::api().map_err(|e| TransportError::NotLoaded {
        library: e.library,
        why: e.why,
        package: PACKAGE,
    })?;
    route_ucx_log(api);
    Ok(api)
}

/// UCX settings this library applies where the environment does not set them: the variable,
/// the name `ucp_config_modify` takes (UCT's, without the transport's prefix) and the value.
/// UCX's TCP transport sends and receives in segments of 8 KiB (64 KiB received) by default, so
/// its puts and gets of a MiB and more, which the peer's worker must progress segment by
/// segment, run at a fraction of what the wire carries; 256 KiB segments keep a large transfer
/// to a few segments. The two go together (UCX refuses a receive segment smaller than the send
/// one): where the environment sets either, neither is applied.
pub const UCX_DEFAULTS: [(&str, &str, &str); 2] = [
    ("UCX_TCP_TX_SEG_SIZE", "TX_SEG_SIZE", "256k"),
    ("UCX_TCP_RX_SEG_SIZE", "RX_SEG_SIZE", "256k"),
];

/// Whether UCX's TCP transport may be used under `UCX_TLS` = `tls` (`None`: unset, every
/// transport): a list naming `tcp` or `all`, or a `^` list not naming `tcp`.
pub(crate) fn tls_has_tcp(tls: Option<&str>) -> bool {
    let Some(tls) = tls else { return true };
    match tls.trim().strip_prefix('^') {
        Some(excluded) => !excluded.split(',').any(|t| t.trim() == "tcp"),
        None => tls.split(',').any(|t| matches!(t.trim(), "tcp" | "all")),
    }
}

/// Applies [`UCX_DEFAULTS`] to `config` (from `ucp_config_read`) unless the environment sets
/// one of them or `UCX_TLS` leaves TCP out (UCX warns of a setting no transport took).
fn apply_defaults(api: &'static Api, config: Handle) {
    if UCX_DEFAULTS
        .iter()
        .any(|(var, _, _)| std::env::var_os(var).is_some())
        || !tls_has_tcp(std::env::var("UCX_TLS").ok().as_deref())
    {
        return;
    }
    for (var, name, value) in UCX_DEFAULTS {
        let (n, v) = (std::ffi::CString::new(name), std::ffi::CString::new(value));
        let (Ok(n), Ok(v)) = (n, v) else { continue };
        // SAFETY: `config` is live (ucp_config_read); both strings are NUL-terminated and read
        // during the call only.
        let s = unsafe { (api.config_modify)(config, n.as_ptr(), v.as_ptr()) };
        if s != ffi::UCS_OK {
            tracing::debug!(
                "ucx: ucp_config_modify({name}, {value}) for {var}: {}; UCX's default stays",
                api.describe(s)
            );
        }
    }
}

/// A UCP worker as [`open_worker`] made it.
pub(crate) struct Opened {
    pub context: Handle,
    pub worker: Handle,
    /// The worker's address.
    pub address: Vec<u8>,
    /// The worker's event descriptor (`wakeup` asked for, and UCX gave one).
    pub efd: Option<std::os::fd::RawFd>,
}

/// A UCP context (features RMA, AMO32, AMO64, and WAKEUP when `wakeup`) and its worker (thread
/// mode MULTI where UCX grants it), with [`UCX_DEFAULTS`] where the environment does not set
/// them. With `wakeup`, the worker's event descriptor, which a progress thread waits on
/// ([`spawn_progress`]); a context without one is made where UCX refuses the feature.
pub(crate) fn open_worker(api: &'static Api, wakeup: bool) -> Result<Opened, TransportError> {
    let opened = open_worker_with(api, wakeup);
    match opened {
        Err(e) if wakeup => {
            tracing::debug!("ucx: a worker with wakeup: {e}; making one without");
            open_worker_with(api, false)
        }
        r => r,
    }
}

fn open_worker_with(api: &'static Api, wakeup: bool) -> Result<Opened, TransportError> {
    let fail = |call: &str, status: ffi::Status| TransportError::Library {
        call: call.to_string(),
        why: api.describe(status),
    };
    let mut config: Handle = std::ptr::null_mut();
    // SAFETY: null prefix and file: UCX's default (`UCX_` variables); `config` is written
    // on success only.
    let s = unsafe { (api.config_read)(std::ptr::null(), std::ptr::null(), &mut config) };
    if s != ffi::UCS_OK {
        return Err(fail("ucp_config_read", s));
    }
    apply_defaults(api, config);
    let mut params = ffi::Params::zeroed();
    params.field_mask = ffi::PARAM_FIELD_FEATURES;
    params.features = ffi::FEATURE_RMA | ffi::FEATURE_AMO32 | ffi::FEATURE_AMO64;
    if wakeup {
        params.features |= ffi::FEATURE_WAKEUP;
    }
    let mut context: Handle = std::ptr::null_mut();
    // SAFETY: `params` is a valid ucp_params_t whose mask names the fields set; `config`
    // came from ucp_config_read and is released right after, as UCP allows.
    let s = unsafe {
        let s = (api.init_version)(
            ffi::API_MAJOR,
            ffi::API_MINOR,
            &params,
            config,
            &mut context,
        );
        (api.config_release)(config);
        s
    };
    if s != ffi::UCS_OK {
        return Err(fail("ucp_init", s));
    }
    let mut wparams = ffi::WorkerParams::zeroed();
    wparams.field_mask = ffi::WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = ffi::THREAD_MODE_MULTI;
    let mut worker: Handle = std::ptr::null_mut();
    // SAFETY: `context` is live; `wparams` is a valid ucp_worker_params_t.
    let s = unsafe { (api.worker_create)(context, &wparams, &mut worker) };
    if s != ffi::UCS_OK {
        // SAFETY: the context made above, used by nothing else.
        unsafe { (api.cleanup)(context) };
        return Err(fail("ucp_worker_create", s));
    }
    let mut addr: Handle = std::ptr::null_mut();
    let mut addr_len = 0usize;
    // SAFETY: `worker` is live; both out-params are written on success.
    let s = unsafe { (api.worker_get_address)(worker, &mut addr, &mut addr_len) };
    if s != ffi::UCS_OK {
        // SAFETY: the worker and context made above, released in reverse order.
        unsafe {
            (api.worker_destroy)(worker);
            (api.cleanup)(context);
        }
        return Err(fail("ucp_worker_get_address", s));
    }
    // SAFETY: UCP returned `addr_len` bytes at `addr`, released right after the copy.
    let address = unsafe {
        let bytes = std::slice::from_raw_parts(addr as *const u8, addr_len).to_vec();
        (api.worker_release_address)(worker, addr);
        bytes
    };
    let mut efd: std::ffi::c_int = -1;
    // SAFETY: `worker` is live; `efd` is written on success.
    let efd =
        (wakeup && unsafe { (api.worker_get_efd)(worker, &mut efd) } == ffi::UCS_OK).then_some(efd);
    Ok(Opened {
        context,
        worker,
        address,
        efd,
    })
}

impl Transport for Ucx {
    fn name(&self) -> &'static str {
        "ucx"
    }

    fn c_name(&self) -> &'static CStr {
        c"ucx"
    }

    fn can_reach(&self, pe: usize) -> bool {
        self.reach.get(pe).copied().unwrap_or(false)
    }

    fn address(&self) -> Vec<u8> {
        self.address.clone()
    }

    fn connect(&mut self, addresses: &[Vec<u8>]) -> Result<(), TransportError> {
        let api = self.api;
        let mut st = self.lock();
        for (pe, a) in addresses.iter().enumerate() {
            if a.is_empty() {
                return Err(TransportError::BadPeerData {
                    pe,
                    what: "address",
                    why: "it is empty (is the same transport chosen on every PE?)".into(),
                });
            }
            let mut params = ffi::EpParams::zeroed();
            params.field_mask = ffi::EP_PARAM_FIELD_REMOTE_ADDRESS;
            params.address = a.as_ptr().cast();
            if self.remote.get(pe).copied().unwrap_or(false) {
                // A peer's death must fail the requests to it, not abort this process inside
                // UCX (its default for a failure on an endpoint without error handling).
                params.field_mask |=
                    ffi::EP_PARAM_FIELD_ERR_HANDLING_MODE | ffi::EP_PARAM_FIELD_ERR_HANDLER;
                params.err_mode = ffi::ERR_HANDLING_MODE_PEER;
                params.err_handler_cb = Some(endpoint_failed);
                params.err_handler_arg = (&self.failed[pe] as *const AtomicI32).cast_mut().cast();
            }
            let mut ep: Handle = std::ptr::null_mut();
            // SAFETY: the worker is live; `params` points at the peer's worker address, which
            // UCP reads during the call only, and at this PE's entry of `failed`, which lives
            // as long as the transport, longer than the worker; `ep` is written on success.
            let s = unsafe { (api.ep_create)(st.worker, &params, &mut ep) };
            if s != ffi::UCS_OK {
                return Err(TransportError::Library {
                    call: format!("ucp_ep_create to PE {pe}"),
                    why: ep_create_failure(api, s),
                });
            }
            st.eps.push(ep);
        }
        drop(st);
        self.start_progress_thread()
    }

    fn register(
        &mut self,
        segment: Segment,
        base: usize,
        len: usize,
    ) -> Result<Vec<u8>, TransportError> {
        let api = self.api;
        let mut st = self.lock();
        let mut key = Vec::with_capacity(KEY_HEADER + 256);
        key.extend_from_slice(&(base as u64).to_le_bytes());
        key.extend_from_slice(&(len as u64).to_le_bytes());
        if len == 0 {
            return Ok(key);
        }
        let mut params = ffi::MemMapParams::zeroed();
        params.field_mask = ffi::MEM_MAP_PARAM_FIELD_ADDRESS | ffi::MEM_MAP_PARAM_FIELD_LENGTH;
        params.address = base as *mut c_void;
        params.length = len;
        let mut memh: Handle = std::ptr::null_mut();
        // SAFETY: [base, base+len) is this PE's segment, mapped for the life of the job (longer
        // than this registration, which close() undoes); `memh` is written on success.
        let s = unsafe { (api.mem_map)(st.context, &params, &mut memh) };
        if s != ffi::UCS_OK {
            return Err(TransportError::Library {
                call: format!("ucp_mem_map of PE {}'s {}", self.my_pe, segment.name()),
                why: api.describe(s),
            });
        }
        st.memh[segment as usize] = memh;
        let mut packed: *mut c_void = std::ptr::null_mut();
        let mut packed_len = 0usize;
        // SAFETY: `memh` was just made by this context; both out-params are written on
        // success.
        let s = unsafe { (api.rkey_pack)(st.context, memh, &mut packed, &mut packed_len) };
        if s != ffi::UCS_OK {
            return Err(TransportError::Library {
                call: format!("ucp_rkey_pack of PE {}'s {}", self.my_pe, segment.name()),
                why: api.describe(s),
            });
        }
        // SAFETY: UCP packed `packed_len` bytes at `packed`, released right after the copy.
        unsafe {
            key.extend_from_slice(std::slice::from_raw_parts(packed as *const u8, packed_len));
            (api.rkey_buffer_release)(packed);
        }
        Ok(key)
    }

    fn attach(&mut self, segment: Segment, keys: &[Vec<u8>]) -> Result<(), TransportError> {
        let api = self.api;
        let mut st = self.lock();
        let mut remotes = Vec::with_capacity(keys.len());
        for (pe, k) in keys.iter().enumerate() {
            let bad = |why: String| TransportError::BadPeerData {
                pe,
                what: "remote key",
                why,
            };
            let word = |at: usize| -> Option<u64> {
                k.get(at..at + 8)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    .map(u64::from_le_bytes)
            };
            let (Some(base), Some(len)) = (word(0), word(8)) else {
                return Err(bad(format!(
                    "{} bytes, expected at least {KEY_HEADER}",
                    k.len()
                )));
            };
            let packed = &k[KEY_HEADER..];
            if len > 0 && packed.is_empty() {
                return Err(bad(format!("its {} has no UCX key", segment.name())));
            }
            let ep = *st.eps.get(pe).ok_or(TransportError::Unreachable {
                transport: "ucx",
                pe,
            })?;
            let mut rkey: Handle = std::ptr::null_mut();
            if len > 0 {
                // SAFETY: `ep` is this worker's endpoint to `pe`, `packed` the bytes PE `pe`'s
                // ucp_rkey_pack made (read during the call only); `rkey` is written on success.
                let s = unsafe { (api.ep_rkey_unpack)(ep, packed.as_ptr().cast(), &mut rkey) };
                if s != ffi::UCS_OK {
                    for r in remotes.drain(..) {
                        let r: Remote = r;
                        if !r.rkey.is_null() {
                            // SAFETY: an rkey unpacked above, destroyed once.
                            unsafe { (api.rkey_destroy)(r.rkey) };
                        }
                    }
                    return Err(TransportError::Library {
                        call: format!("ucp_ep_rkey_unpack of PE {pe}'s {}", segment.name()),
                        why: api.describe(s),
                    });
                }
            }
            remotes.push(Remote { base, len, rkey });
        }
        st.remotes[segment as usize] = remotes;
        Ok(())
    }

    fn put(
        &self,
        ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        source: &[u8],
    ) -> Result<(), TransportError> {
        bump(&self.counts.puts);
        let st = self.lock();
        let (ep, addr, rkey) = self.remote(&st, pe, segment, offset, source.len())?;
        if source.is_empty() {
            return Ok(());
        }
        let param = RequestParam::zeroed();
        // SAFETY: `ep` and `rkey` are live and belong together (attach); `source` is readable
        // for its length until the wait below returns.
        let p = unsafe {
            (self.api.put_nbx)(ep, source.as_ptr().cast(), source.len(), addr, rkey, &param)
        };
        // Locally complete on return (the source may be reused: UCX copied it out or sent
        // it); remotely visible after quiet, ordered by fence, as OpenSHMEM's put is. The
        // runtime's flags leave quiet nothing to do: their peer waits for them.
        if ctx != Ctx::RUNTIME {
            self.pending.store(true, Ordering::Release);
        }
        self.wait(&st, p, Some(pe), || "ucp_put_nbx".into())
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
        let st = self.lock();
        let (ep, addr, rkey) = self.remote(&st, pe, segment, offset, dest.len())?;
        if dest.is_empty() {
            return Ok(());
        }
        let param = RequestParam::zeroed();
        // SAFETY: `ep` and `rkey` are live and belong together; `dest` is writable for its
        // length until the wait returns (on a timeout the job ends before it is read).
        let p = unsafe {
            (self.api.get_nbx)(ep, dest.as_mut_ptr().cast(), dest.len(), addr, rkey, &param)
        };
        self.wait(&st, p, Some(pe), || "ucp_get_nbx".into())
    }

    unsafe fn put_nbi(
        &self,
        _ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        source: *const u8,
        len: usize,
    ) -> Result<(), TransportError> {
        bump(&self.counts.nbi);
        let st = self.lock();
        let (ep, addr, rkey) = self.remote(&st, pe, segment, offset, len)?;
        if len == 0 {
            return Ok(());
        }
        self.pending.store(true, Ordering::Release);
        let param = RequestParam::zeroed();
        // SAFETY: `ep` and `rkey` are live and belong together; the caller keeps `source`
        // readable for `len` bytes until quiet, which flushes this worker.
        let p = unsafe { (self.api.put_nbx)(ep, source.cast(), len, addr, rkey, &param) };
        self.release(p, pe, || "ucp_put_nbx".into())
    }

    unsafe fn get_nbi(
        &self,
        _ctx: Ctx,
        pe: usize,
        segment: Segment,
        offset: u64,
        dest: *mut u8,
        len: usize,
    ) -> Result<(), TransportError> {
        bump(&self.counts.nbi);
        let st = self.lock();
        let (ep, addr, rkey) = self.remote(&st, pe, segment, offset, len)?;
        if len == 0 {
            return Ok(());
        }
        self.pending.store(true, Ordering::Release);
        let param = RequestParam::zeroed();
        // SAFETY: `ep` and `rkey` are live and belong together; the caller keeps `dest`
        // writable for `len` bytes, unread, until quiet, which flushes this worker.
        let p = unsafe { (self.api.get_nbx)(ep, dest.cast(), len, addr, rkey, &param) };
        self.release(p, pe, || "ucp_get_nbx".into())
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
        if !offset.is_multiple_of(size as u64) {
            return Err(TransportError::BadArgument {
                arg: "offset",
                value: offset as i64,
            });
        }
        let st = self.lock();
        let (ep, addr, rkey) = self.remote(&st, pe, segment, offset, size)?;
        let mask = if size == 4 {
            u64::from(u32::MAX)
        } else {
            u64::MAX
        };
        let one = |opcode: u32, operand: u64, reply: u64| -> Result<u64, TransportError> {
            self.atomic(&st, (ep, addr, rkey), pe, op, size, opcode, operand, reply)
                .map(|old| old & mask)
        };
        let logical = |f: fn(u64, u64) -> u64| -> Result<u64, TransportError> {
            // UCX 1.13.1 gets fetching AND, OR and XOR wrong on one node (on its self
            // transport a fetch-or of 3 on 40 returns 40 and leaves 40, a fetch-xor stores 0;
            // the non-fetching forms are right), while fetch-add and compare-and-swap are
            // right everywhere: so these three are a compare-and-swap loop, atomic with every
            // other UCX atomic on the word.
            let mut old = one(ffi::ATOMIC_OP_ADD, 0, 0)?;
            loop {
                let seen = one(ffi::ATOMIC_OP_CSWAP, old, f(old, value) & mask)?;
                if seen == old {
                    return Ok(old);
                }
                old = seen;
            }
        };
        match op {
            AmoOp::Fetch => one(ffi::ATOMIC_OP_ADD, 0, 0),
            // A set is a swap whose old value is dropped.
            AmoOp::Set => one(ffi::ATOMIC_OP_SWAP, value, 0).map(|_| 0),
            AmoOp::Swap => one(ffi::ATOMIC_OP_SWAP, value, 0),
            // CSWAP compares with the operand and stores the reply buffer's value.
            AmoOp::CompareSwap => one(ffi::ATOMIC_OP_CSWAP, compare, value),
            AmoOp::FetchAdd => one(ffi::ATOMIC_OP_ADD, value, 0),
            AmoOp::FetchAnd => logical(|a, b| a & b),
            AmoOp::FetchOr => logical(|a, b| a | b),
            AmoOp::FetchXor => logical(|a, b| a ^ b),
        }
    }

    fn fence(&self, _ctx: Ctx) -> Result<(), TransportError> {
        bump(&self.counts.fences);
        let st = self.lock();
        if st.closed {
            return Ok(());
        }
        // SAFETY: the worker is live; the lock is held.
        let s = unsafe { (self.api.worker_fence)(st.worker) };
        if s != ffi::UCS_OK {
            return Err(self.fail("ucp_worker_fence".into(), s));
        }
        Ok(())
    }

    fn quiet(&self, _ctx: Ctx) -> Result<(), TransportError> {
        bump(&self.counts.quiets);
        // Nothing issued since the last flush (blocking gets and AMOs complete where they are
        // called): nothing to complete, and a PE that only reaches mapped peers pays nothing.
        // A call issued by another thread after this load is not this quiet's to complete.
        if !self.pending.load(Ordering::Acquire) {
            return Ok(());
        }
        let st = self.lock();
        if st.closed {
            return Ok(());
        }
        self.pending.store(false, Ordering::Relaxed);
        let flushed = self.flush_worker(&st, "quiet");
        if flushed.is_err() {
            self.pending.store(true, Ordering::Release);
        }
        flushed
    }

    fn progress(&self) -> Result<(), TransportError> {
        bump(&self.counts.progress);
        // A thread holding the lock is progressing the worker already.
        let Ok(st) = self.state.try_lock() else {
            return Ok(());
        };
        if !st.closed {
            // SAFETY: the worker is live; the lock is held.
            let moved = unsafe { (self.api.worker_progress)(st.worker) };
            self.last_progress
                .store(crate::clock::node_clock_ns(), Ordering::Relaxed);
            if moved > 0 {
                super::moved();
            }
        }
        Ok(())
    }

    fn finalize(&self) -> Result<(), TransportError> {
        // The worker and the progress thread stay until the transport is dropped, after the
        // runtime's closing barrier: a peer still closing its endpoint to this PE needs them.
        let mut st = self.lock();
        if st.closed || st.eps.is_empty() {
            return Ok(());
        }
        let flushed = self.flush_worker(&st, "finalize");
        let closed = self.close_endpoints(&mut st, flushed.is_err());
        drop(st);
        self.counts.log("ucx", &self.reach);
        flushed.and(closed)
    }

    fn detail(&self) -> String {
        match std::env::var("UCX_TLS") {
            Ok(tls) if !tls.is_empty() => format!("UCX_TLS={tls}"),
            _ => "UCX's choice of transports".into(),
        }
    }
}

impl Ucx {
    /// One fetching UCP atomic `opcode` on `target` (endpoint, remote address, rkey) of `size`
    /// bytes: `operand` is its buffer, `reply` the reply buffer's input (CSWAP's new value).
    /// Returns the old value (in the low `size` bytes).
    #[allow(clippy::too_many_arguments)]
    fn atomic(
        &self,
        st: &State,
        target: (Handle, u64, Handle),
        pe: usize,
        op: AmoOp,
        size: usize,
        opcode: u32,
        operand: u64,
        reply: u64,
    ) -> Result<u64, TransportError> {
        let (ep, addr, rkey) = target;
        // The element's bytes are the low bytes of each word (little-endian), as the table
        // passes them.
        let operand = operand.to_le_bytes();
        let mut reply = reply.to_le_bytes();
        let mut param = RequestParam::zeroed();
        param.op_attr_mask = ffi::OP_ATTR_FIELD_DATATYPE | ffi::OP_ATTR_FIELD_REPLY_BUFFER;
        param.datatype = ffi::dt_contig(size);
        param.reply_buffer = reply.as_mut_ptr().cast();
        // SAFETY: `ep` and `rkey` are live and belong together; `operand` and `reply` hold
        // `size` (4 or 8) bytes and live until the wait returns.
        let p = unsafe {
            (self.api.atomic_op_nbx)(ep, opcode, operand.as_ptr().cast(), 1, addr, rkey, &param)
        };
        self.wait(st, p, Some(pe), || format!("ucp_atomic_op_nbx ({op:?})"))?;
        Ok(u64::from_le_bytes(reply))
    }

    /// Lets a non-blocking operation run on its own: its request, if any, is released now and
    /// completed by the next flush.
    fn release(&self, p: StatusPtr, pe: usize, what: impl Fn() -> String) -> Waited {
        if p.is_null() {
            return Ok(());
        }
        if ffi::ptr_is_err(p) {
            return Err(self.failure(Some(pe), what(), ffi::ptr_status(p)));
        }
        // SAFETY: a live request; UCP releases it when it completes.
        unsafe { (self.api.request_free)(p) };
        Ok(())
    }
}

/// UCP's error handler of every endpoint (`arg`: its PE's entry of [`Ucx::failed`], or a dynamic
/// worker's endpoint's failure word): records the failure, which the requests to that PE then
/// report as [`TransportError::PeerFailed`] (a dynamic worker's as `PeerGone`). Called
/// by UCP while the worker is progressed (by us, under the transport's lock, or by UCX's own
/// thread): it only stores, atomically.
pub(crate) unsafe extern "C" fn endpoint_failed(
    arg: *mut c_void,
    _ep: Handle,
    status: ffi::Status,
) {
    // SAFETY: `arg` is the address of the endpoint's failure word: an entry of a live
    // transport's `failed` (connect), or a dynamic worker's endpoint's, kept until the
    // endpoint's close completed (or never freed), so it outlives every call for the endpoint.
    let failed = unsafe { &*(arg as *const AtomicI32) };
    // UCP never fails with UCS_OK; a nonzero status keeps "failed" distinct from "healthy".
    failed.store(
        if status == ffi::UCS_OK { -1 } else { status },
        Ordering::Release,
    );
}

/// Routes UCX's own log lines (UCS's log, whose default handler prints `[...] UCX ERROR ...`
/// to stderr) through this library's log, once per process. UCX's errors and warnings are
/// about failures the library reports itself, as the failed call or the lost peer they cause
/// (a peer's death makes UCX log it on every endpoint that reached it), so they are detail:
/// debug lines. A fatal error stays an error (UCX aborts right after it).
fn route_ucx_log(api: &'static Api) {
    static ROUTED: std::sync::Once = std::sync::Once::new();
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        // `ffi::LogFunc`'s `va_list` is a pointer only on these.
        return;
    }
    if let Some(push) = api.log_push_handler {
        // SAFETY: UCS keeps the handler for the process's life; `ucx_log_line` lives as long.
        ROUTED.call_once(|| unsafe { push(ucx_log_line) });
    }
}

/// UCS's log handler of [`route_ucx_log`].
unsafe extern "C" fn ucx_log_line(
    file: *const std::ffi::c_char,
    line: std::ffi::c_uint,
    _function: *const std::ffi::c_char,
    level: std::ffi::c_int,
    _comp: *const c_void,
    format: *const std::ffi::c_char,
    ap: *mut c_void,
) -> std::ffi::c_int {
    if level > ffi::LOG_LEVEL_WARN || format.is_null() {
        // UCX's diagnostics, info, debug and trace, shown only when UCX_LOG_LEVEL asks for
        // them: that asker reads UCX's own format.
        return ffi::LOG_FUNC_RC_CONTINUE;
    }
    let mut buf = [0u8; 512];
    // SAFETY: `format` and `ap` are the printf pair UCS handed over, used once; vsnprintf
    // writes at most `buf.len()` bytes, NUL included.
    let n = unsafe { ffi::vsnprintf(buf.as_mut_ptr().cast(), buf.len(), format, ap) };
    let len = usize::try_from(n).unwrap_or(0).min(buf.len() - 1);
    let text = String::from_utf8_lossy(&buf[..len]);
    let file = if file.is_null() {
        std::borrow::Cow::Borrowed("?")
    } else {
        // SAFETY: UCS passes its `__FILE__`: static and NUL-terminated.
        unsafe { CStr::from_ptr(file) }.to_string_lossy()
    };
    let file = file.rsplit('/').next().unwrap_or_default();
    if level == ffi::LOG_LEVEL_FATAL {
        tracing::error!("UCX: {file}:{line}: {text}");
    } else {
        tracing::debug!("UCX: {file}:{line}: {text}");
    }
    ffi::LOG_FUNC_RC_STOP
}

impl Drop for Ucx {
    fn drop(&mut self) {
        self.stop_progress_thread();
        let mut st = self.lock();
        if let Err(e) = self.close_endpoints(&mut st, true) {
            tracing::debug!("ucx transport: {e}");
        }
        self.release_all(&mut st);
    }
}

#[cfg(test)]
mod tests;
