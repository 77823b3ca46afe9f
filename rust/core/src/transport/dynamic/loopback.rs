//! The loopback dynamic worker: the [`DynamicWorker`] API between workers of one process, so
//! that tests prove the group layer's use of it (connect on demand, registrations coming and
//! going, a peer leaving or dropped) without UCX. A put or get copies under the target
//! registration table's lock, so an unregistration or a drop never races a copy; non-blocking
//! operations complete at once (a flush only checks that the peer is still there).
//!
//! A worker's address is `dynloop:`, the process id and the worker id; connecting to a worker
//! of another process is refused (members of different processes on one node map each other's
//! memory through [`super::node`] instead).

use super::{bad_key, worker_id, DynamicWorker, Endpoint, KeyHeader, Registration};
use crate::transport::TransportError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// The prefix of a loopback worker's address.
const ADDRESS_PREFIX: &[u8] = b"dynloop:";

/// What peers reach of a worker: its registrations (id → base, length).
#[derive(Debug, Default)]
struct Shared {
    regs: Mutex<HashMap<u64, (usize, usize)>>,
}

/// The process's live loopback workers, by id.
fn workers() -> MutexGuard<'static, HashMap<u64, Weak<Shared>>> {
    static WORKERS: OnceLock<Mutex<HashMap<u64, Weak<Shared>>>> = OnceLock::new();
    WORKERS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An endpoint: the peer's id and its table while it lives.
#[derive(Debug)]
struct Peer {
    id: u64,
    shared: Weak<Shared>,
}

/// A loopback dynamic worker.
#[derive(Debug)]
pub struct LoopbackWorker {
    id: u64,
    shared: Arc<Shared>,
    eps: Mutex<HashMap<u64, Peer>>,
    next: Mutex<u64>,
}

impl Default for LoopbackWorker {
    fn default() -> Self {
        Self::new()
    }
}

impl LoopbackWorker {
    /// A new worker, reachable by the process's other loopback workers.
    pub fn new() -> LoopbackWorker {
        let id = worker_id();
        let shared = Arc::new(Shared::default());
        workers().insert(id, Arc::downgrade(&shared));
        LoopbackWorker {
            id,
            shared,
            eps: Mutex::new(HashMap::new()),
            next: Mutex::new(1),
        }
    }

    fn next_id(&self) -> u64 {
        let mut n = lock(&self.next);
        *n += 1;
        *n - 1
    }

    /// Runs `f` on the peer's registration `key` covers, range checked, under the peer's lock.
    fn with_target<R>(
        &self,
        op: &'static str,
        ep: Endpoint,
        key: &[u8],
        offset: u64,
        len: usize,
        f: impl FnOnce(usize) -> R,
    ) -> Result<R, TransportError> {
        let (peer_id, shared) = {
            let eps = lock(&self.eps);
            let p = eps.get(&ep.0).ok_or_else(|| TransportError::Disconnected {
                op,
                peer: format!("endpoint {}", ep.0),
            })?;
            (p.id, p.shared.upgrade())
        };
        let peer = peer_label(peer_id);
        let shared = shared.ok_or_else(|| TransportError::PeerGone {
            op,
            peer: peer.clone(),
            why: "its worker was dropped".into(),
        })?;
        let (h, _) = KeyHeader::decode(key).map_err(|why| bad_key(op, &peer, key, why))?;
        if h.worker != peer_id {
            return Err(bad_key(
                op,
                &peer,
                key,
                format!("the key was registered by worker {:016x}", h.worker),
            ));
        }
        let addr = h
            .address_of(offset, len)
            .map_err(|why| bad_key(op, &peer, key, why))?;
        let regs = lock(&shared.regs);
        match regs.get(&h.id) {
            Some(&(base, rlen)) if base as u64 == h.base && rlen as u64 == h.len => {
                Ok(f(addr as usize))
            }
            _ => Err(bad_key(op, &peer, key, "the peer unregistered it".into())),
        }
    }
}

fn peer_label(id: u64) -> String {
    format!("loopback worker {id:016x}")
}

impl DynamicWorker for LoopbackWorker {
    fn name(&self) -> &'static str {
        "loopback"
    }

    fn address(&self) -> Vec<u8> {
        let mut a = ADDRESS_PREFIX.to_vec();
        a.extend_from_slice(&self.id.to_le_bytes());
        a
    }

    fn connect(&self, peer: &[u8]) -> Result<Endpoint, TransportError> {
        let bad = |why: String| TransportError::BadWorkerData {
            peer: "a peer".into(),
            what: "loopback worker address",
            why,
        };
        let rest = peer
            .strip_prefix(ADDRESS_PREFIX)
            .filter(|r| r.len() == 8)
            .ok_or_else(|| bad(format!("{} bytes not of the form dynloop:<id>", peer.len())))?;
        let id = u64::from_le_bytes(rest.try_into().expect("8 bytes"));
        if id >> 32 != u64::from(std::process::id()) {
            return Err(bad(format!(
                "worker {id:016x} belongs to process {}, not this one",
                id >> 32
            )));
        }
        let shared = workers()
            .get(&id)
            .cloned()
            .filter(|w| w.strong_count() > 0)
            .ok_or_else(|| TransportError::PeerGone {
                op: "connect",
                peer: peer_label(id),
                why: "no such worker in this process".into(),
            })?;
        let ep = self.next_id();
        lock(&self.eps).insert(ep, Peer { id, shared });
        Ok(Endpoint(ep))
    }

    fn peer_name(&self, ep: Endpoint) -> Option<String> {
        lock(&self.eps).get(&ep.0).map(|p| peer_label(p.id))
    }

    unsafe fn register(
        &self,
        base: *mut u8,
        len: usize,
    ) -> Result<(Registration, Vec<u8>), TransportError> {
        let id = self.next_id();
        lock(&self.shared.regs).insert(id, (base as usize, len));
        let key = KeyHeader {
            worker: self.id,
            id,
            base: base as u64,
            len: len as u64,
        }
        .encode(&[]);
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
        match lock(&self.shared.regs).remove(&reg.id) {
            Some(_) => Ok(()),
            None => Err(TransportError::BadArgument {
                arg: "registration",
                value: reg.id as i64,
            }),
        }
    }

    fn put(&self, ep: Endpoint, key: &[u8], offset: u64, src: &[u8]) -> Result<(), TransportError> {
        // SAFETY: `src` is a live slice, read during the call only.
        unsafe { self.put_nb(ep, key, offset, src.as_ptr(), src.len()) }
    }

    fn get(
        &self,
        ep: Endpoint,
        key: &[u8],
        offset: u64,
        dst: &mut [u8],
    ) -> Result<(), TransportError> {
        // SAFETY: `dst` is a live, exclusively borrowed slice, written during the call only.
        unsafe { self.get_nb(ep, key, offset, dst.as_mut_ptr(), dst.len()) }
    }

    unsafe fn put_nb(
        &self,
        ep: Endpoint,
        key: &[u8],
        offset: u64,
        src: *const u8,
        len: usize,
    ) -> Result<(), TransportError> {
        self.with_target("put", ep, key, offset, len, |to| {
            // SAFETY: `to..to+len` lies in a live registration (checked under its lock, held
            // during the copy), which its owner promised valid; `src` is the caller's.
            unsafe { std::ptr::copy(src, to as *mut u8, len) }
        })
    }

    unsafe fn get_nb(
        &self,
        ep: Endpoint,
        key: &[u8],
        offset: u64,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), TransportError> {
        self.with_target("get", ep, key, offset, len, |from| {
            // SAFETY: as in put_nb, the other way.
            unsafe { std::ptr::copy(from as *const u8, dst, len) }
        })
    }

    fn flush(&self, ep: Endpoint) -> Result<(), TransportError> {
        let eps = lock(&self.eps);
        let p = eps.get(&ep.0).ok_or_else(|| TransportError::Disconnected {
            op: "flush",
            peer: format!("endpoint {}", ep.0),
        })?;
        if p.shared.strong_count() == 0 {
            return Err(TransportError::PeerGone {
                op: "flush",
                peer: peer_label(p.id),
                why: "its worker was dropped".into(),
            });
        }
        Ok(())
    }

    fn disconnect(&self, ep: Endpoint) -> Result<(), TransportError> {
        match lock(&self.eps).remove(&ep.0) {
            Some(_) => Ok(()),
            None => Err(TransportError::Disconnected {
                op: "disconnect",
                peer: format!("endpoint {}", ep.0),
            }),
        }
    }
}

impl Drop for LoopbackWorker {
    fn drop(&mut self) {
        workers().remove(&self.id);
        // Peers holding a copy in progress keep the table until it ends; then it goes.
        lock(&self.shared.regs).clear();
    }
}
