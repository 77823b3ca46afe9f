//! The UCX dynamic worker: the [`DynamicWorker`] API over UCP, loaded at run time by
//! `crate::transport::ucx::ffi` like the SHMEM job's UCX transport (whose context and worker
//! set-up it shares), but with endpoints made on demand and no PE numbering.
//!
//! - A worker owns one UCP context (features RMA, AMO32, AMO64, WAKEUP) and one worker. Its address is
//!   its worker id (8 bytes, little-endian; errors name the peer by it) then UCP's worker
//!   address.
//! - [`DynamicWorker::connect`] makes an endpoint (`ucp_ep_create` from the peer's worker
//!   address) with UCP's error mode PEER and an error handler that records the failure on the
//!   endpoint, so a peer's death fails the requests to it ([`TransportError::PeerGone`]) where
//!   UCX would otherwise abort the process. (UCX 1.13 leaves its shared-memory transports out of
//!   such endpoints: members on one node map each other's memory through
//!   [`super::node`] instead.)
//! - [`DynamicWorker::register`] is `ucp_mem_map` of existing memory and `ucp_rkey_pack`; a peer
//!   unpacks a key (`ucp_ep_rkey_unpack`) on its first use on an endpoint and keeps it in that
//!   endpoint's cache until the endpoint ends. A member unpublishes a key, and its peers stop
//!   using it, before it unregisters: UCP cannot tell a peer that a key went away.
//! - A put whose source, or a get whose destination, lies in one of this worker's own
//!   registrations passes UCP that registration's memory handle (`UCP_OP_ATTR_FIELD_MEMH`), so
//!   a zero-copy (RDMA) lane uses it as it is instead of registering the buffer or looking it
//!   up in UCP's registration cache. Over TCP, UCX 1.13 runs puts and gets as active messages
//!   (`rma_am` lanes: the data is copied through its segments either way) and the handle changes
//!   nothing measured. memfabric's Big Memory registers the buffers given to
//!   `smem_bm_register_user_mem` this way.
//! - A blocking put returns when its source may be reused, a get when its data landed; the
//!   non-blocking forms release their requests at once and complete at the endpoint's flush
//!   (`ucp_ep_flush_nbx`). Every wait progresses the worker and gives up after the worker's
//!   timeout ([`TransportError::Deadline`]).
//! - Threads: one lock serializes every UCP call on the worker, as in the static transport (the
//!   worker is asked for UCP's thread mode MULTI, which UCX grants only where it was built with
//!   `--enable-mt`; the serialized mode it falls back to allows any thread, one at a time). A
//!   wait holds the lock for one step at a time (check its request, progress the worker) and
//!   releases it between steps, so while one thread waits for a peer that is slow or gone, the
//!   other threads' operations, to that peer or another, go on; whoever progresses the worker
//!   completes everybody's requests.
//! - [`DynamicWorker::disconnect`] takes the endpoint out of the worker at once (later
//!   operations on it fail with [`TransportError::Disconnected`]), flushes it and closes it
//!   (`ucp_ep_close_nbx`), by force when the peer failed or the flush did not complete; each
//!   step is bounded by the timeout. [`DynamicWorker::disconnect_gone`], for a member that left
//!   or was reported down, closes by force without a flush (what is in flight to it fails at
//!   once). The endpoint's keys are destroyed once its close completed.
//! - A progress thread of the worker progresses it while no call did for a nap, so a member that
//!   computes (or sleeps) still answers its peers' wire-up and, over TCP, their puts and gets.
//!   The context has UCP's WAKEUP feature: once the progress has moved nothing for 200 µs (the
//!   thread yields between steps meanwhile), the thread arms the worker and waits on its event
//!   descriptor (`ucp_worker_arm`, `ucp_worker_get_efd`), so a peer's put, get or flush is
//!   served as soon as it arrives (a blocking 4 KiB copy to a member of another node is then a
//!   round trip, not the thread's next nap away: a nap of 20 µs lasts at least 70 µs with the
//!   kernel's timer slack). The 200 µs keep the thread awake through the segments of a large
//!   transfer and between back-to-back ones: over TCP every segment that reaches a sleeping
//!   thread costs a wakeup (an interrupt to its CPU), and a peer's 1 MiB put that woke the
//!   thread for each of its segments ran at 1.3 GB/s where 2-4 GB/s go when it stays awake
//!   (between two network namespaces on one 2-CPU VM). Where UCX gives no descriptor it naps
//!   (20 µs to 1 ms), the static transport's loop (`crate::transport::ucx::spawn_progress`).
//!   While calls are in `UcxWorker::wait` (each progresses the worker itself) the thread
//!   stands by, parked until the last of them leaves (`crate::transport::ucx::Standby`):
//!   naps beside a waiting call were a thousand wakeups a second on its CPU.
//! - UCX 1.13 keeps the TCP connection of a closed endpoint until one of its two workers ends:
//!   a worker that connects to the same peers again and again holds one more connection per
//!   endpoint made (measured by the 100-cycle test); a member's leave ends its worker, and so
//!   its connections.
//! - Drop closes the endpoints by force, unmaps the registrations, destroys the worker and the
//!   context.

use super::{bad_key, worker_id, DynamicWorker, Endpoint, KeyHeader, Registration};
use crate::transport::ucx::ffi::{self, Api, Handle, RequestParam, StatusPtr};
use crate::transport::ucx::{
    endpoint_failed, load_api, open_worker, spawn_progress, Pace, ProgressThread, Standby, Stepped,
};
use crate::transport::TransportError;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// An endpoint and what it cached.
struct Ep {
    handle: Handle,
    /// The peer's worker id.
    peer: u64,
    /// 0 while healthy, else the status UCP's error handler got ([`endpoint_failed`]); shared
    /// with the waits on the endpoint's requests, which may outlive its place in the state.
    failed: Arc<AtomicI32>,
    /// Unpacked remote keys, by the peer's registration id.
    rkeys: HashMap<u64, Handle>,
}

/// A registration of this worker: its memory handle and range.
struct Reg {
    memh: Handle,
    base: usize,
    len: usize,
}

/// The UCP handles, behind the lock.
struct State {
    context: Handle,
    worker: Handle,
    eps: HashMap<u64, Ep>,
    regs: HashMap<u64, Reg>,
    next: u64,
}

impl State {
    /// The memory handle of a registration holding `len` bytes at `local`, if one does.
    fn local_memh(&self, local: usize, len: usize) -> Option<Handle> {
        let end = local.checked_add(len)?;
        self.regs
            .values()
            .find(|r| r.base <= local && end <= r.base + r.len)
            .map(|r| r.memh)
    }
}

// SAFETY: the handles are UCP's, used only under the worker's lock (one thread at a time),
// which every thread mode of a worker allows.
unsafe impl Send for State {}

/// What a wait is for: the operation, its UCP call, the endpoint (`None` once it was taken out
/// of the state, by disconnect) and its peer and failure word.
struct Waiting<'a> {
    op: &'static str,
    call: &'static str,
    ep: Option<Endpoint>,
    peer: u64,
    failed: &'a AtomicI32,
}

/// A UCX dynamic worker.
pub struct UcxWorker {
    api: &'static Api,
    id: u64,
    timeout: Duration,
    address: Vec<u8>,
    state: Arc<Mutex<State>>,
    /// When a call last progressed the worker ([`crate::clock::node_clock_ns`]): the progress
    /// thread steps in only when nobody did for a nap.
    last_progress: Arc<AtomicU64>,
    /// The calls in [`UcxWorker::wait`]: the progress thread stands by meanwhile.
    standby: Arc<Standby>,
    progress: Option<ProgressThread>,
}

impl std::fmt::Debug for UcxWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UcxWorker")
            .field("id", &format_args!("{:016x}", self.id))
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

fn peer_label(id: u64) -> String {
    format!("ucx worker {id:016x}")
}

impl UcxWorker {
    /// Loads UCP and makes a worker whose waits give up after `timeout`.
    /// [`TransportError::NotLoaded`] where UCX is not installed.
    pub fn open(timeout: Duration) -> Result<UcxWorker, TransportError> {
        let api = load_api()?;
        let opened = open_worker(api, true)?;
        let (context, worker, ucp_address) = (opened.context, opened.worker, opened.address);
        let id = worker_id();
        let mut address = id.to_le_bytes().to_vec();
        address.extend_from_slice(&ucp_address);
        let state = Arc::new(Mutex::new(State {
            context,
            worker,
            eps: HashMap::new(),
            regs: HashMap::new(),
            next: 1,
        }));
        let mut w = UcxWorker {
            api,
            id,
            timeout,
            address,
            state,
            last_progress: Arc::new(AtomicU64::new(0)),
            standby: Arc::default(),
            progress: None,
        };
        w.progress = Some(w.start_progress(opened.efd)?);
        Ok(w)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the progress thread: it waits on the worker's event descriptor `efd` where UCX
    /// gave one (a peer's operation wakes it at once), else naps ([`spawn_progress`]).
    fn start_progress(
        &self,
        efd: Option<std::os::fd::RawFd>,
    ) -> Result<ProgressThread, TransportError> {
        let api = self.api;
        let state = Arc::clone(&self.state);
        let last = Arc::clone(&self.last_progress);
        spawn_progress(
            "shmem-ucx-dyn",
            "the dynamic UCX worker's progress thread",
            efd,
            Arc::clone(&self.standby),
            move |nap, may_arm| {
                // A call that waits progresses the worker itself: the thread stays out of its
                // way and steps in when nobody did for a nap.
                let recent = crate::clock::node_clock_ns()
                    .saturating_sub(last.load(Ordering::Relaxed))
                    < nap.as_nanos() as u64;
                let st = match state.try_lock() {
                    Ok(st) if !recent => st,
                    _ => return Stepped::Idle,
                };
                // SAFETY: the worker lives until the drop, which stops this thread first;
                // the lock is held.
                if unsafe { (api.worker_progress)(st.worker) } > 0 {
                    return Stepped::Moved;
                }
                if efd.is_none() {
                    return Stepped::Idle;
                }
                if !may_arm {
                    return Stepped::Quiet;
                }
                // SAFETY: as above; the worker was made with the wakeup feature (it has `efd`).
                match unsafe { (api.worker_arm)(st.worker) } {
                    ffi::UCS_OK => Stepped::Armed,
                    // Events arrived since the progress: progress again.
                    ffi::UCS_ERR_BUSY => Stepped::Moved,
                    _ => Stepped::Idle,
                }
            },
        )
    }

    /// The error for a request of `w` that ended with `status`.
    fn failure(&self, w: &Waiting<'_>, status: ffi::Status) -> TransportError {
        let recorded = w.failed.load(Ordering::Acquire);
        if recorded != 0 || ffi::is_peer_failure(status) {
            let s = if recorded != 0 { recorded } else { status };
            TransportError::PeerGone {
                op: w.op,
                peer: peer_label(w.peer),
                why: self.api.describe(s),
            }
        } else {
            TransportError::Library {
                call: format!("{} to {} ({})", w.op, peer_label(w.peer), w.call),
                why: self.api.describe(status),
            }
        }
    }

    /// Waits for what a `*_nbx` call returned, up to the timeout; the request is freed either
    /// way. Each step holds the lock only to check the request and progress the worker once,
    /// so other threads' calls go on between steps. A request that failed because its
    /// endpoint was disconnected meanwhile (by another thread) reports
    /// [`TransportError::Disconnected`].
    fn wait(&self, p: StatusPtr, w: &Waiting<'_>) -> Result<(), TransportError> {
        if p.is_null() {
            return Ok(());
        }
        if ffi::ptr_is_err(p) {
            return Err(self.failure(w, ffi::ptr_status(p)));
        }
        let _waiting = self.standby.enter();
        let done = self.wait_steps(p, w);
        // The progress thread stood by meanwhile; once the standby ends it steps in only when
        // nobody progressed the worker for a nap from now.
        self.last_progress
            .store(crate::clock::node_clock_ns(), Ordering::Relaxed);
        done
    }

    /// [`UcxWorker::wait`]'s loop, for a request in flight.
    fn wait_steps(&self, p: StatusPtr, w: &Waiting<'_>) -> Result<(), TransportError> {
        let start = Instant::now();
        let mut pace = Pace::default();
        loop {
            let moved = {
                let st = self.lock();
                // SAFETY: `p` is a live request of this worker; the lock is held.
                let s = unsafe { (self.api.request_check_status)(p) };
                if s != ffi::UCS_INPROGRESS {
                    // SAFETY: the completed request, freed once.
                    unsafe { (self.api.request_free)(p) };
                    let gone = w.ep.is_some_and(|ep| !st.eps.contains_key(&ep.0));
                    drop(st);
                    return match s {
                        ffi::UCS_OK => Ok(()),
                        _ if gone => Err(TransportError::Disconnected {
                            op: w.op,
                            peer: peer_label(w.peer),
                        }),
                        _ => Err(self.failure(w, s)),
                    };
                }
                // SAFETY: the worker is live; the lock is held.
                unsafe { (self.api.worker_progress)(st.worker) }
            };
            if !pace.step(moved) {
                continue;
            }
            if start.elapsed() > self.timeout {
                let _st = self.lock();
                // SAFETY: still in flight (or completed since the last check): UCP releases it
                // when it completes; the lock is held.
                unsafe { (self.api.request_free)(p) };
                return Err(TransportError::Deadline {
                    op: w.op,
                    peer: peer_label(w.peer),
                    after: self.timeout,
                });
            }
            pace.rest();
        }
    }

    /// The live endpoint `ep` (not failed), or the error that says why not.
    fn endpoint<'a>(
        &self,
        st: &'a mut State,
        op: &'static str,
        ep: Endpoint,
    ) -> Result<&'a mut Ep, TransportError> {
        let e = st
            .eps
            .get_mut(&ep.0)
            .ok_or_else(|| TransportError::Disconnected {
                op,
                peer: format!("endpoint {}", ep.0),
            })?;
        let s = e.failed.load(Ordering::Acquire);
        if s != 0 {
            return Err(TransportError::PeerGone {
                op,
                peer: peer_label(e.peer),
                why: self.api.describe(s),
            });
        }
        Ok(e)
    }

    /// Issues a put (`get`: false) or get of `len` bytes at `local`, at `offset` of `key` on
    /// `ep`; `blocking`: waits for it (without the lock between steps), else releases the
    /// request.
    ///
    /// # Safety
    /// `local` is valid for `len` bytes (reads for a put, writes for a get) until the wait
    /// returns, or, not blocking, until the endpoint's flush.
    #[allow(clippy::too_many_arguments)]
    unsafe fn rma(
        &self,
        op: &'static str,
        ep: Endpoint,
        key: &[u8],
        offset: u64,
        local: *mut u8,
        len: usize,
        blocking: bool,
    ) -> Result<(), TransportError> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let memh = st.local_memh(local as usize, len);
        let e = self.endpoint(st, op, ep)?;
        let peer = peer_label(e.peer);
        let (h, packed) = KeyHeader::decode(key).map_err(|why| bad_key(op, &peer, key, why))?;
        if h.worker != e.peer {
            return Err(bad_key(
                op,
                &peer,
                key,
                format!("the key was registered by worker {:016x}", h.worker),
            ));
        }
        let raddr = h
            .address_of(offset, len)
            .map_err(|why| bad_key(op, &peer, key, why))?;
        if len == 0 {
            return Ok(());
        }
        let rkey = match e.rkeys.get(&h.id) {
            Some(&r) => r,
            None => {
                let mut r: Handle = std::ptr::null_mut();
                // SAFETY: a live endpoint; `packed` is the peer's ucp_rkey_pack output (UCP
                // validates it and fails rather than read past it).
                let s =
                    unsafe { (self.api.ep_rkey_unpack)(e.handle, packed.as_ptr().cast(), &mut r) };
                if s != ffi::UCS_OK {
                    return Err(bad_key(
                        op,
                        &peer,
                        key,
                        format!("ucp_ep_rkey_unpack: {}", self.api.describe(s)),
                    ));
                }
                e.rkeys.insert(h.id, r);
                r
            }
        };
        let mut param = RequestParam::zeroed();
        if let Some(m) = memh {
            param.op_attr_mask = ffi::OP_ATTR_FIELD_MEMH;
            param.memh = m;
        }
        let (p, call) = if op == "get" {
            // SAFETY: a live endpoint and rkey; `local` is the caller's (see the contract).
            let p = unsafe {
                (self.api.get_nbx)(e.handle, local.cast::<c_void>(), len, raddr, rkey, &param)
            };
            (p, "ucp_get_nbx")
        } else {
            // SAFETY: as above.
            let p = unsafe {
                (self.api.put_nbx)(
                    e.handle,
                    local.cast_const().cast(),
                    len,
                    raddr,
                    rkey,
                    &param,
                )
            };
            (p, "ucp_put_nbx")
        };
        let failed = Arc::clone(&e.failed);
        let w = Waiting {
            op,
            call,
            ep: Some(ep),
            peer: e.peer,
            failed: &failed,
        };
        if ffi::ptr_is_err(p) {
            return Err(self.failure(&w, ffi::ptr_status(p)));
        }
        if !blocking {
            if !p.is_null() {
                // SAFETY: a live request; UCP releases it when it completes; the lock is held.
                unsafe { (self.api.request_free)(p) };
            }
            return Ok(());
        }
        drop(guard);
        self.wait(p, &w)
    }

    /// Closes `e` (already out of the state): by force when `force` or it failed, else
    /// flushing first (then by force if that flush fails), each wait bounded by the timeout;
    /// then destroys its keys. A close still in flight (timed out) may still call the error
    /// handler with the failure word and use the keys: both are then left allocated.
    fn close(&self, e: Ep, force: bool) -> Result<(), TransportError> {
        let mut w = Waiting {
            op: "disconnect",
            call: "ucp_ep_flush_nbx",
            ep: None,
            peer: e.peer,
            failed: &e.failed,
        };
        let mut force = force || e.failed.load(Ordering::Acquire) != 0;
        let mut first = Ok(());
        if !force {
            let param = RequestParam::zeroed();
            let p = {
                let _st = self.lock();
                // SAFETY: a live endpoint; `param` asks nothing; the lock is held.
                unsafe { (self.api.ep_flush_nbx)(e.handle, &param) }
            };
            first = self.wait(p, &w);
            force = first.is_err();
        }
        let mut param = RequestParam::zeroed();
        param.op_attr_mask = ffi::OP_ATTR_FIELD_FLAGS;
        param.flags = if force { ffi::EP_CLOSE_FLAG_FORCE } else { 0 };
        let p = {
            let _st = self.lock();
            // SAFETY: a live endpoint, closed once (taken out of the state); the lock is held.
            unsafe { (self.api.ep_close_nbx)(e.handle, &param) }
        };
        w.call = "ucp_ep_close_nbx";
        let closed = self.wait(p, &w);
        if matches!(closed, Err(TransportError::Deadline { .. })) {
            // The close is still in flight and may yet call the handler with this word.
            std::mem::forget(Arc::clone(&e.failed));
        } else {
            let _st = self.lock();
            for r in e.rkeys.into_values() {
                // SAFETY: an rkey unpacked on this endpoint, whose requests ended with its
                // close; destroyed once; the lock is held.
                unsafe { (self.api.rkey_destroy)(r) };
            }
        }
        // A failed peer's close is expected to report the failure: the endpoint is gone.
        match (first, closed) {
            (Err(e), _) if !matches!(e, TransportError::PeerGone { .. }) => Err(e),
            (_, Err(e @ TransportError::Deadline { .. })) => Err(e),
            _ => Ok(()),
        }
    }

    /// Takes `ep` out of the state (later operations on it fail with
    /// [`TransportError::Disconnected`]) and closes it ([`UcxWorker::close`]).
    fn end(&self, ep: Endpoint, force: bool) -> Result<(), TransportError> {
        let e = self
            .lock()
            .eps
            .remove(&ep.0)
            .ok_or_else(|| TransportError::Disconnected {
                op: "disconnect",
                peer: format!("endpoint {}", ep.0),
            })?;
        self.close(e, force)
    }
}

impl DynamicWorker for UcxWorker {
    fn name(&self) -> &'static str {
        "ucx"
    }

    fn address(&self) -> Vec<u8> {
        self.address.clone()
    }

    fn connect(&self, peer: &[u8]) -> Result<Endpoint, TransportError> {
        if peer.len() <= 8 {
            return Err(TransportError::BadWorkerData {
                peer: "a peer".into(),
                what: "ucx worker address",
                why: format!(
                    "{} bytes, expected a worker id and UCP's address",
                    peer.len()
                ),
            });
        }
        let peer_id = u64::from_le_bytes(peer[..8].try_into().expect("8 bytes"));
        let mut st = self.lock();
        let failed = Arc::new(AtomicI32::new(0));
        let mut params = ffi::EpParams::zeroed();
        params.field_mask = ffi::EP_PARAM_FIELD_REMOTE_ADDRESS
            | ffi::EP_PARAM_FIELD_ERR_HANDLING_MODE
            | ffi::EP_PARAM_FIELD_ERR_HANDLER;
        params.address = peer[8..].as_ptr().cast();
        params.err_mode = ffi::ERR_HANDLING_MODE_PEER;
        params.err_handler_cb = Some(endpoint_failed);
        params.err_handler_arg = Arc::as_ptr(&failed).cast_mut().cast();
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: a live worker; `params` points at the peer's UCP address (read during the
        // call) and at the failure word, kept until the endpoint's close completed.
        let s = unsafe { (self.api.ep_create)(st.worker, &params, &mut handle) };
        if s != ffi::UCS_OK {
            return Err(TransportError::Library {
                call: format!("connect to {} (ucp_ep_create)", peer_label(peer_id)),
                why: crate::transport::ucx::ep_create_failure(self.api, s),
            });
        }
        let id = st.next;
        st.next += 1;
        st.eps.insert(
            id,
            Ep {
                handle,
                peer: peer_id,
                failed,
                rkeys: HashMap::new(),
            },
        );
        Ok(Endpoint(id))
    }

    fn peer_name(&self, ep: Endpoint) -> Option<String> {
        self.lock().eps.get(&ep.0).map(|e| peer_label(e.peer))
    }

    unsafe fn register(
        &self,
        base: *mut u8,
        len: usize,
    ) -> Result<(Registration, Vec<u8>), TransportError> {
        if len == 0 {
            return Err(TransportError::BadArgument {
                arg: "len",
                value: 0,
            });
        }
        let mut st = self.lock();
        let mut params = ffi::MemMapParams::zeroed();
        params.field_mask = ffi::MEM_MAP_PARAM_FIELD_ADDRESS | ffi::MEM_MAP_PARAM_FIELD_LENGTH;
        params.address = base.cast();
        params.length = len;
        let mut memh: Handle = std::ptr::null_mut();
        // SAFETY: a live context; the range exists (the caller's contract).
        let s = unsafe { (self.api.mem_map)(st.context, &params, &mut memh) };
        if s != ffi::UCS_OK {
            return Err(TransportError::Library {
                call: format!("register {len} bytes at {base:p} (ucp_mem_map)"),
                why: self.api.describe(s),
            });
        }
        let mut buf: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: a live context and registration; both out-params written on success.
        let s = unsafe { (self.api.rkey_pack)(st.context, memh, &mut buf, &mut size) };
        if s != ffi::UCS_OK {
            // SAFETY: the registration made above, unused.
            unsafe { (self.api.mem_unmap)(st.context, memh) };
            return Err(TransportError::Library {
                call: format!("register {len} bytes at {base:p} (ucp_rkey_pack)"),
                why: self.api.describe(s),
            });
        }
        // SAFETY: UCP returned `size` bytes at `buf`, released right after the copy.
        let packed = unsafe {
            let v = std::slice::from_raw_parts(buf as *const u8, size).to_vec();
            (self.api.rkey_buffer_release)(buf);
            v
        };
        let id = st.next;
        st.next += 1;
        st.regs.insert(
            id,
            Reg {
                memh,
                base: base as usize,
                len,
            },
        );
        let key = KeyHeader {
            worker: self.id,
            id,
            base: base as u64,
            len: len as u64,
        }
        .encode(&packed);
        Ok((
            Registration {
                id,
                base: base as usize,
                len,
            },
            key,
        ))
    }

    fn unregister(&self, reg: Registration) -> Result<(), TransportError> {
        let mut st = self.lock();
        let r = st.regs.remove(&reg.id).ok_or(TransportError::BadArgument {
            arg: "registration",
            value: reg.id as i64,
        })?;
        // SAFETY: a registration of this context, unmapped once.
        let s = unsafe { (self.api.mem_unmap)(st.context, r.memh) };
        if s != ffi::UCS_OK {
            return Err(TransportError::Library {
                call: format!("unregister #{} (ucp_mem_unmap)", reg.id),
                why: self.api.describe(s),
            });
        }
        Ok(())
    }

    fn put(&self, ep: Endpoint, key: &[u8], offset: u64, src: &[u8]) -> Result<(), TransportError> {
        // SAFETY: `src` is read until the wait returns, within the borrow.
        unsafe {
            self.rma(
                "put",
                ep,
                key,
                offset,
                src.as_ptr().cast_mut(),
                src.len(),
                true,
            )
        }
    }

    fn get(
        &self,
        ep: Endpoint,
        key: &[u8],
        offset: u64,
        dst: &mut [u8],
    ) -> Result<(), TransportError> {
        // SAFETY: `dst` is written until the wait returns, within the borrow.
        unsafe { self.rma("get", ep, key, offset, dst.as_mut_ptr(), dst.len(), true) }
    }

    unsafe fn put_nb(
        &self,
        ep: Endpoint,
        key: &[u8],
        offset: u64,
        src: *const u8,
        len: usize,
    ) -> Result<(), TransportError> {
        // SAFETY: the caller's contract.
        unsafe { self.rma("put", ep, key, offset, src.cast_mut(), len, false) }
    }

    unsafe fn get_nb(
        &self,
        ep: Endpoint,
        key: &[u8],
        offset: u64,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), TransportError> {
        // SAFETY: the caller's contract.
        unsafe { self.rma("get", ep, key, offset, dst, len, false) }
    }

    fn flush(&self, ep: Endpoint) -> Result<(), TransportError> {
        let mut guard = self.lock();
        let e = self.endpoint(&mut guard, "flush", ep)?;
        let (peer, failed) = (e.peer, Arc::clone(&e.failed));
        let param = RequestParam::zeroed();
        // SAFETY: a live endpoint; `param` asks nothing; the lock is held.
        let p = unsafe { (self.api.ep_flush_nbx)(e.handle, &param) };
        drop(guard);
        self.wait(
            p,
            &Waiting {
                op: "flush",
                call: "ucp_ep_flush_nbx",
                ep: Some(ep),
                peer,
                failed: &failed,
            },
        )
    }

    fn disconnect(&self, ep: Endpoint) -> Result<(), TransportError> {
        self.end(ep, false)
    }

    fn disconnect_gone(&self, ep: Endpoint) -> Result<(), TransportError> {
        self.end(ep, true)
    }
}

impl Drop for UcxWorker {
    fn drop(&mut self) {
        if let Some(thread) = self.progress.take() {
            thread.stop("dynamic ucx worker");
        }
        let eps: Vec<Ep> = self.lock().eps.drain().map(|(_, e)| e).collect();
        for e in eps {
            if let Err(err) = self.close(e, true) {
                tracing::debug!("dynamic ucx worker: {err}");
            }
        }
        let api = self.api;
        let mut st = self.lock();
        let regs: Vec<Handle> = st.regs.drain().map(|(_, r)| r.memh).collect();
        for memh in regs {
            // SAFETY: a registration of this context, unmapped once.
            unsafe { (api.mem_unmap)(st.context, memh) };
        }
        // SAFETY: no endpoint, rkey or request of ours is left; the context outlives the worker.
        unsafe {
            (api.worker_destroy)(st.worker);
            (api.cleanup)(st.context);
        }
    }
}
