//! Dynamic transport: workers whose endpoints are made on demand, for groups whose members come
//! and go while the others work. Beside the SHMEM job's static transport (`super::Transport`:
//! every PE connected at start-up, fixed segments, operations by PE number), which it does not
//! change, a [`DynamicWorker`] knows no PE numbering:
//!
//! - a worker has an address ([`DynamicWorker::address`]), bytes that the group layer publishes
//!   (under its store) for others to find it;
//! - [`DynamicWorker::connect`] makes an [`Endpoint`] from a peer's published address, when the
//!   peer is first needed; [`DynamicWorker::disconnect`] ends it when the member leaves or is
//!   reported down: what is still in flight to it fails, bounded by the worker's timeout
//!   ([`DynamicWorker::disconnect_gone`], for a peer known to be gone, waits for nothing);
//! - [`DynamicWorker::register`] registers local memory while the process runs and returns its
//!   remote key bytes (to publish); [`DynamicWorker::register_fd`] registers memory that maps a
//!   file (a memfd), which peers on this node may then map themselves;
//!   [`DynamicWorker::unregister`] withdraws either;
//! - [`DynamicWorker::put`] and [`DynamicWorker::get`] address a peer's memory by (endpoint,
//!   remote key, offset in the registration); their non-blocking forms complete at
//!   [`DynamicWorker::flush`] of the endpoint. A remote key is unpacked once per endpoint and
//!   cached there until the endpoint ends;
//! - dropping the worker releases its endpoints, registrations and library handles.
//!
//! Every failure is a [`TransportError`] naming the operation, the peer (as the endpoint names
//! it) and, where one was given, the key ([`key_name`]).
//!
//! Remote keys: every implementation's key starts with the same header ([`KeyHeader`]: the
//! registering worker's id, the registration's id, base and length in its process), followed
//! by the implementation's own bytes (UCX's packed rkey). The remote address of an offset is the
//! base plus the offset, checked against the length before anything is sent.
//!
//! Implementations: [`ucx`] (UCP endpoints from a peer's worker address, over the loader of
//! `super::ucx::ffi`) and [`loopback`], the test implementation between workers of one process,
//! so that CI proves the API without UCX. [`node::NodeWorker`] wraps either: members on one node
//! map each other's shareable memory, the memfd descriptors passed over a node-local Unix socket
//! that each worker opens itself, and reach everything else through the wrapped worker (over the
//! loopback, node-local processes thus reach each other's shareable memory without UCX).

pub mod loopback;
pub mod node;
pub mod ucx;

#[cfg(test)]
mod node_tests;
#[cfg(test)]
mod tests;

use super::TransportError;
use std::os::fd::{BorrowedFd, OwnedFd};

/// A connection to one peer's worker, made by [`DynamicWorker::connect`] and valid until
/// [`DynamicWorker::disconnect`] or the worker's drop. Its number is the worker's own; it means
/// nothing to another worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Endpoint(pub u64);

/// Local memory registered by [`DynamicWorker::register`]; handed back to
/// [`DynamicWorker::unregister`] (it is not `Clone`: one unregistration per registration).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Registration {
    /// The registration's id in its worker (also in its key).
    pub id: u64,
    /// The registered range's base in this process.
    pub base: usize,
    /// Its length in bytes.
    pub len: usize,
}

/// A worker of a dynamic transport: see the module's documentation.
pub trait DynamicWorker: Send + Sync {
    /// The implementation's name (`ucx`, `loopback`).
    fn name(&self) -> &'static str;
    /// This worker's address: the bytes a peer passes to [`DynamicWorker::connect`].
    fn address(&self) -> Vec<u8>;
    /// An endpoint to the worker whose address is `peer`.
    fn connect(&self, peer: &[u8]) -> Result<Endpoint, TransportError>;
    /// The peer as `ep`'s errors name it.
    fn peer_name(&self, ep: Endpoint) -> Option<String>;
    /// Registers `len` bytes at `base` for peers' puts and gets; returns the registration and
    /// its remote key bytes. This worker's own puts from and gets into a registered range may
    /// also go faster (UCX takes it as registered memory), so a caller may register a buffer
    /// it only copies from and into, and keep its key to itself.
    ///
    /// # Safety
    /// The range must be valid for reads and writes, by peers too, until it is unregistered or
    /// the worker is dropped.
    unsafe fn register(
        &self,
        base: *mut u8,
        len: usize,
    ) -> Result<(Registration, Vec<u8>), TransportError>;
    /// Registers `len` bytes at `base` like [`DynamicWorker::register`], memory that maps
    /// `fd` from `fd_offset` (shared): a worker that can, lets peers on this node map the file
    /// themselves ([`node`]); the others register the range as they would any memory (the
    /// default).
    ///
    /// # Safety
    /// As [`DynamicWorker::register`]; and `[base, base+len)` is a `MAP_SHARED` mapping of `fd`
    /// from `fd_offset`, which holds at least `fd_offset + len` bytes while registered (a file
    /// shrunk under a peer's mapping faults the peer).
    unsafe fn register_fd(
        &self,
        fd: BorrowedFd<'_>,
        fd_offset: u64,
        base: *mut u8,
        len: usize,
    ) -> Result<(Registration, Vec<u8>), TransportError> {
        let _ = (fd, fd_offset);
        // SAFETY: the caller's contract, which includes register's.
        unsafe { self.register(base, len) }
    }
    /// The file behind the peer's registration `key`, for a caller that maps it itself at an
    /// address of its choosing (memfabric's Share Memory window): a descriptor of its own, the
    /// registration's offset in the file and its length. `Ok(None)` when this worker does not
    /// reach that memory by mapping it (a peer of another node, private memory, a worker that
    /// maps nothing: the default). The caller's mapping outlives the registration: it is the
    /// caller's to stop using the memory once the peer withdraws it.
    fn shared_file(
        &self,
        ep: Endpoint,
        key: &[u8],
    ) -> Result<Option<(OwnedFd, u64, u64)>, TransportError> {
        let _ = (ep, key);
        Ok(None)
    }
    /// Withdraws a registration: peers' operations on its key fail from now on.
    fn unregister(&self, reg: Registration) -> Result<(), TransportError>;
    /// Writes `src` at `offset` of the peer's registration `key`; returns when `src` may be
    /// reused. The data is visible at the peer after [`DynamicWorker::flush`].
    fn put(&self, ep: Endpoint, key: &[u8], offset: u64, src: &[u8]) -> Result<(), TransportError>;
    /// Reads `dst.len()` bytes at `offset` of the peer's registration `key`; returns when they
    /// landed.
    fn get(
        &self,
        ep: Endpoint,
        key: &[u8],
        offset: u64,
        dst: &mut [u8],
    ) -> Result<(), TransportError>;
    /// Starts a put of `len` bytes from `src`; complete (source reusable, data visible) after
    /// [`DynamicWorker::flush`] of `ep` returned `Ok`.
    ///
    /// # Safety
    /// `src` must stay valid and unchanged until that flush returns (or the endpoint is
    /// disconnected).
    unsafe fn put_nb(
        &self,
        ep: Endpoint,
        key: &[u8],
        offset: u64,
        src: *const u8,
        len: usize,
    ) -> Result<(), TransportError>;
    /// Starts a get of `len` bytes into `dst`; landed after [`DynamicWorker::flush`] of `ep`
    /// returned `Ok`.
    ///
    /// # Safety
    /// `dst` must stay valid, and untouched by this process, until that flush returns (or the
    /// endpoint is disconnected).
    unsafe fn get_nb(
        &self,
        ep: Endpoint,
        key: &[u8],
        offset: u64,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), TransportError>;
    /// Completes every operation issued on `ep`, or fails (the peer is gone, the timeout).
    fn flush(&self, ep: Endpoint) -> Result<(), TransportError>;
    /// Ends `ep`: its cached keys are released, later operations on it fail with
    /// [`TransportError::Disconnected`]. Returns within the worker's timeout, a dead peer
    /// included.
    fn disconnect(&self, ep: Endpoint) -> Result<(), TransportError>;
    /// Ends `ep` like [`DynamicWorker::disconnect`], for a peer known to be gone (the member
    /// left or was reported down): nothing waits for the peer, and what is still in flight to
    /// it fails at once. An implementation without such a close disconnects (the default).
    fn disconnect_gone(&self, ep: Endpoint) -> Result<(), TransportError> {
        self.disconnect(ep)
    }
}

/// Magic that opens every dynamic remote key.
const KEY_MAGIC: &[u8; 4] = b"SHdk";
/// Bytes of [`KeyHeader`] in a key.
pub const KEY_HEADER_LEN: usize = 4 + 8 * 4;

/// The part of a remote key every implementation shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyHeader {
    /// The registering worker's id (its process and worker, [`worker_id`]).
    pub worker: u64,
    /// The registration's id in that worker.
    pub id: u64,
    /// The registration's base in the registering process.
    pub base: u64,
    /// Its length.
    pub len: u64,
}

impl KeyHeader {
    /// The key bytes: this header, then `rest` (the implementation's own).
    pub fn encode(&self, rest: &[u8]) -> Vec<u8> {
        let mut v = Vec::with_capacity(KEY_HEADER_LEN + rest.len());
        v.extend_from_slice(KEY_MAGIC);
        for x in [self.worker, self.id, self.base, self.len] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(rest);
        v
    }

    /// The header of `key` and the implementation's bytes after it.
    pub fn decode(key: &[u8]) -> Result<(KeyHeader, &[u8]), String> {
        if key.len() < KEY_HEADER_LEN || &key[..4] != KEY_MAGIC {
            return Err(format!(
                "not a dynamic remote key ({} bytes, expected at least {KEY_HEADER_LEN} opening with {:?})",
                key.len(),
                std::str::from_utf8(KEY_MAGIC).unwrap_or_default()
            ));
        }
        let word = |i: usize| {
            let at = 4 + 8 * i;
            u64::from_le_bytes(key[at..at + 8].try_into().expect("8 bytes"))
        };
        Ok((
            KeyHeader {
                worker: word(0),
                id: word(1),
                base: word(2),
                len: word(3),
            },
            &key[KEY_HEADER_LEN..],
        ))
    }

    /// The remote address of [offset, offset+len), if the range lies inside the registration.
    pub fn address_of(&self, offset: u64, len: usize) -> Result<u64, String> {
        match offset.checked_add(len as u64) {
            Some(end) if end <= self.len => Ok(self.base + offset),
            _ => Err(format!(
                "bytes [{offset}, {offset}+{len}) are outside its registration of {} bytes",
                self.len
            )),
        }
    }
}

/// How errors name a key: its registration and worker, or its first bytes when it does not
/// parse.
pub fn key_name(key: &[u8]) -> String {
    match KeyHeader::decode(key) {
        Ok((h, _)) => format!("#{} of worker {:016x}", h.id, h.worker),
        Err(_) => format!("{:02x?}", &key[..key.len().min(8)]),
    }
}

/// A new worker id, unique on this node while the process lives: the process id in the high
/// 32 bits, a counter of the process's workers in the low ones.
pub fn worker_id() -> u64 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    (u64::from(std::process::id()) << 32) | u64::from(NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The error for `key` refused by `op` to `peer`.
pub(crate) fn bad_key(op: &'static str, peer: &str, key: &[u8], why: String) -> TransportError {
    TransportError::BadKey {
        op,
        peer: peer.to_string(),
        key: key_name(key),
        why,
    }
}
