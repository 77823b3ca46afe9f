//! A group's memory: registrations published under the group, endpoints to members made on
//! demand from their published addresses, members' remote keys looked up once and cached, and
//! withdrawals that every member confirms before the memory is unregistered.
//!
//! A withdrawal ([`Group::unregister`], and every registration at [`Group::leave`]) removes
//! the registration's key from the store, then adds one to the group's `withdrawn` counter.
//! Each member's withdrawals thread watches that counter; when it moves, the thread drops the
//! member's whole cache of remote keys (later operations look them up again, and find the
//! withdrawn one absent), completes what the member has in flight on each endpoint, and
//! writes the counter's value under its `seen/<rank>` key. The withdrawing member waits until
//! every member alive has written a value at least its own, or is gone; then it unregisters.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use shmem_store::{BootstrapError, Client};

use super::{addr_key, decode_addr, lock, Group, GroupError, Held, Inner, Peer, Waited, SLICE};
use crate::dynamic::node::SharedMemory;
use crate::dynamic::{Endpoint, Registration};
use crate::transport::TransportError;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Member `rank`'s confirmation of the withdrawals it has seen.
pub(super) fn seen_key(prefix: &str, rank: u32) -> String {
    format!("{prefix}seen/{rank}")
}

/// The count of the group's withdrawals.
fn withdrawn_key(prefix: &str) -> String {
    format!("{prefix}withdrawn")
}

/// Member `rank`'s remote key of its registration `name`.
fn mem_key(prefix: &str, rank: u32, name: &str) -> String {
    format!("{prefix}mem/{rank}/{name}")
}

fn counter(v: &[u8]) -> i64 {
    <[u8; 8]>::try_from(v).map_or(0, i64::from_le_bytes)
}

/// The withdrawals thread (see the module's documentation), on its own connection `watcher`,
/// until `stop`.
pub(super) fn watch_withdrawals(inner: &Inner, watcher: &Client, stop: &AtomicBool) {
    let key = withdrawn_key(&inner.prefix);
    let mine = seen_key(&inner.prefix, inner.rank);
    let mut last: Option<Vec<u8>> = None;
    while !stop.load(Ordering::SeqCst) {
        match watcher.watch(&key, last.as_deref(), SLICE) {
            Ok(Some(now)) => {
                inner.drop_keys();
                if let Err(e) = watcher.set(&mine, &now) {
                    if !stop.load(Ordering::SeqCst) {
                        tracing::warn!(
                            "group '{}': member {} could not confirm withdrawals: {e}",
                            inner.name,
                            inner.rank
                        );
                    }
                }
                last = Some(now);
            }
            Ok(None) => last = None,
            Err(BootstrapError::Timeout { .. }) => {}
            Err(e) => {
                // The store is gone or the connection broke: the member's own threads report
                // it (`MemberEvent::Lost`); this one waits to be stopped.
                if !stop.load(Ordering::SeqCst) {
                    tracing::debug!("group '{}': withdrawals thread: {e}", inner.name);
                    std::thread::sleep(SLICE);
                }
            }
        }
    }
}

impl Inner {
    /// Drops every cached remote key, then completes what is in flight on every endpoint
    /// (operations issued with a dropped key included: each is issued under the cache's lock).
    fn drop_keys(&self) {
        {
            let mut keys = self.keys.write().unwrap_or_else(|e| e.into_inner());
            keys.keys.clear();
            keys.generation += 1;
            self.changes.fetch_add(1, Ordering::Release);
        }
        let eps: Vec<(u32, Endpoint)> = lock(&self.peers).iter().map(|(r, p)| (*r, p.ep)).collect();
        for (rank, ep) in eps {
            if let Err(e) = self.worker.flush(ep) {
                tracing::debug!("group '{}': flush to rank {rank}: {e}", self.name);
            }
        }
    }

    /// The id of the member holding `rank` now: as this group knows, else as the store says.
    fn holder(&self, op: &'static str, rank: u32) -> Result<Option<String>, GroupError> {
        if let Some(id) = lock(&self.view).members.get(&rank) {
            return Ok(Some(id.clone()));
        }
        let view = self
            .client
            .group_watch(&self.name, u64::MAX, Duration::ZERO)
            .map_err(self.store_err(op))?;
        Ok(view
            .members
            .into_iter()
            .find(|(r, _)| *r == rank)
            .map(|(_, id)| id))
    }

    /// The endpoint to the member holding `rank` (made from its published address the first
    /// time) and that member's id.
    fn endpoint(&self, op: &'static str, rank: u32) -> Result<(String, Endpoint), GroupError> {
        if let Some(p) = lock(&self.peers).get(&rank) {
            return Ok((p.member.clone(), p.ep));
        }
        let key = addr_key(&self.prefix, rank);
        let deadline = Instant::now() + self.timeout;
        let value = match self.client.watch(&key, None, Duration::ZERO) {
            Ok(Some(v)) => v,
            Ok(None) | Err(BootstrapError::Timeout { .. }) => {
                // A member that has just joined publishes its address right after.
                if self.holder(op, rank)?.is_none() {
                    return Err(self.no_member(op, rank));
                }
                let mut checks = 0u32;
                let waited = self.wait_key(op, &key, None, deadline, || {
                    checks += 1;
                    checks.is_multiple_of(10) && matches!(self.holder(op, rank), Ok(None))
                })?;
                match waited {
                    Waited::Now(Some(v)) => v,
                    Waited::Now(None) | Waited::GaveUp => return Err(self.no_member(op, rank)),
                    Waited::Deadline => {
                        return Err(GroupError::Timeout {
                            op: format!("{op}: the address of rank {rank}"),
                            group: self.name.clone(),
                            after: self.timeout,
                            missing: vec![rank],
                            down: Vec::new(),
                        })
                    }
                }
            }
            Err(e) => return Err(self.store_err(op)(e)),
        };
        let (id, address) = decode_addr(&value).ok_or_else(|| {
            self.invalid(
                op,
                "rank",
                &rank.to_string(),
                "its published address does not parse",
            )
        })?;
        if let Some(e) = self.gone_error(op, rank, &id) {
            return Err(e);
        }
        let ep = {
            let mut peers = lock(&self.peers);
            if let Some(p) = peers.get(&rank) {
                return Ok((p.member.clone(), p.ep));
            }
            let ep = self
                .worker
                .connect(&address)
                .map_err(|source| self.transport_err(op, rank, source))?;
            peers.insert(
                rank,
                Peer {
                    member: id.clone(),
                    ep,
                },
            );
            ep
        };
        // Gone while connecting: the events thread may have looked before the endpoint was in.
        if let Some(e) = self.gone_error(op, rank, &id) {
            let stale = {
                let mut peers = lock(&self.peers);
                match peers.get(&rank) {
                    Some(p) if p.ep == ep => peers.remove(&rank),
                    _ => None,
                }
            };
            if let Some(p) = stale {
                let _ = self.worker.disconnect_gone(p.ep);
            }
            return Err(e);
        }
        Ok((id, ep))
    }

    /// No member holds `rank` now: [`GroupError::Gone`] naming the last member that held it
    /// when this group saw one go, else [`GroupError::NoMember`].
    fn no_member(&self, op: &'static str, rank: u32) -> GroupError {
        let last = lock(&self.view)
            .gone
            .iter()
            .rev()
            .find(|(r, _, _)| *r == rank)
            .map(|(_, m, why)| (m.clone(), why.clone()));
        match last {
            Some((member, why)) => GroupError::Gone {
                op,
                group: self.name.clone(),
                rank,
                member,
                why,
            },
            None => GroupError::NoMember {
                op,
                group: self.name.clone(),
                rank,
            },
        }
    }

    fn transport_err(&self, op: &'static str, rank: u32, source: TransportError) -> GroupError {
        GroupError::Transport {
            op,
            group: self.name.clone(),
            rank,
            source: Box::new(source),
        }
    }

    /// A transport's failure of `op` to member (`rank`, `id`): [`GroupError::Gone`] when the
    /// member is gone by now.
    fn op_err(&self, op: &'static str, rank: u32, id: &str, source: TransportError) -> GroupError {
        self.gone_error(op, rank, id)
            .unwrap_or_else(|| self.transport_err(op, rank, source))
    }

    /// Runs `f` with the endpoint to `rank` and its remote key of registration `name`, under
    /// the key cache's lock (a withdrawal waits for it).
    fn with_key<R>(
        &self,
        op: &'static str,
        rank: u32,
        name: &str,
        f: impl FnOnce(Endpoint, &[u8]) -> Result<R, TransportError>,
    ) -> Result<R, GroupError> {
        {
            // The common case, without allocating: the key is cached and its member is the
            // one connected.
            let keys = self.keys.read().unwrap_or_else(|e| e.into_inner());
            if let Some((m, key)) = keys.keys.get(&rank).and_then(|k| k.get(name)) {
                let ep = lock(&self.peers)
                    .get(&rank)
                    .filter(|p| p.member == *m)
                    .map(|p| p.ep);
                if let Some(ep) = ep {
                    return f(ep, key).map_err(|e| self.op_err(op, rank, m, e));
                }
            }
        }
        let (id, ep) = self.endpoint(op, rank)?;
        let deadline = Instant::now() + self.timeout;
        loop {
            let generation = {
                let keys = self.keys.read().unwrap_or_else(|e| e.into_inner());
                match keys.keys.get(&rank).and_then(|k| k.get(name)) {
                    Some((m, key)) if *m == id => {
                        return f(ep, key).map_err(|e| self.op_err(op, rank, &id, e));
                    }
                    _ => keys.generation,
                }
            };
            let key =
                match self
                    .client
                    .watch(&mem_key(&self.prefix, rank, name), None, Duration::ZERO)
                {
                    Ok(Some(k)) => k,
                    Ok(None) | Err(BootstrapError::Timeout { .. }) => {
                        return Err(self.gone_error(op, rank, &id).unwrap_or_else(|| {
                            GroupError::NoRegistration {
                                op,
                                group: self.name.clone(),
                                rank,
                                member: id.clone(),
                                name: name.into(),
                            }
                        }))
                    }
                    Err(e) => return Err(self.store_err(op)(e)),
                };
            let mut keys = self.keys.write().unwrap_or_else(|e| e.into_inner());
            // A key looked up across a withdrawal may be the withdrawn one: look again.
            if keys.generation == generation {
                keys.keys
                    .entry(rank)
                    .or_default()
                    .insert(name.to_string(), (id.clone(), key));
            } else if Instant::now() >= deadline {
                return Err(GroupError::Timeout {
                    op: format!("{op}: the key '{name}' of rank {rank}"),
                    group: self.name.clone(),
                    after: self.timeout,
                    missing: Vec::new(),
                    down: Vec::new(),
                });
            }
        }
    }

    /// Withdraws this member's registrations `names` (see the module's documentation): returns
    /// once every member alive confirmed it, or fails naming those that did not in time.
    fn withdraw(&self, op: &'static str, names: &[String]) -> Result<(), GroupError> {
        let deadline = Instant::now() + self.timeout;
        for name in names {
            self.client
                .delete(&mem_key(&self.prefix, self.rank, name))
                .map_err(self.store_err(op))?;
        }
        let count = self
            .client
            .add(&withdrawn_key(&self.prefix), 1)
            .map_err(self.store_err(op))?;
        let members = self
            .client
            .group_watch(&self.name, u64::MAX, Duration::ZERO)
            .map_err(self.store_err(op))?
            .members;
        let (mut missing, mut down) = (Vec::new(), Vec::new());
        for (rank, id) in members {
            let key = seen_key(&self.prefix, rank);
            let mut seen: Option<Vec<u8>> = None;
            loop {
                match self.wait_key(op, &key, seen.as_deref(), deadline, || {
                    self.gone_error(op, rank, &id).is_some()
                })? {
                    Waited::Now(Some(v)) if counter(&v) >= count => break,
                    Waited::Now(now) => seen = now,
                    Waited::GaveUp => {
                        down.push(rank);
                        break;
                    }
                    Waited::Deadline => {
                        missing.push(rank);
                        break;
                    }
                }
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(GroupError::Timeout {
                op: format!("{op}: the confirmations of the withdrawal of {names:?}"),
                group: self.name.clone(),
                after: self.timeout,
                missing,
                down,
            })
        }
    }
}

impl Group {
    fn transport(&self, op: &'static str, source: TransportError) -> GroupError {
        self.inner.transport_err(op, self.inner.rank, source)
    }

    /// Runs `f` on the address of `[offset, offset + len)` of this member's own registration
    /// `name`, under the registrations' lock (a withdrawal waits for it): a member reaches its
    /// own memory without its worker.
    fn with_own<R>(
        &self,
        op: &'static str,
        name: &str,
        offset: u64,
        len: usize,
        f: impl FnOnce(*mut u8) -> R,
    ) -> Result<R, GroupError> {
        let inner = &self.inner;
        let regs = lock(&inner.regs);
        let reg = &regs
            .get(name)
            .ok_or_else(|| GroupError::NoRegistration {
                op,
                group: inner.name.clone(),
                rank: inner.rank,
                member: inner.id.clone(),
                name: name.into(),
            })?
            .reg;
        match offset.checked_add(len as u64) {
            Some(end) if end <= reg.len as u64 => Ok(f((reg.base + offset as usize) as *mut u8)),
            _ => Err(inner.invalid(
                op,
                "offset",
                &offset.to_string(),
                &format!(
                    "bytes [{offset}, {offset}+{len}) are outside registration '{name}' of {} \
                     bytes",
                    reg.len
                ),
            )),
        }
    }

    /// Registers `len` bytes at `base` under `name` (not empty, no '/', unique among this
    /// member's registrations) and publishes the remote key under the group: members reach it
    /// as (this member's rank, `name`, offset). This is *private* memory: every member reaches
    /// it through the network (UCX), members of this node included; memory they should map
    /// is registered with [`Group::register_fd`] or made by [`Group::alloc`].
    ///
    /// # Safety
    /// The range must be valid for reads and writes, by members too, until
    /// [`Group::unregister`] of `name` returned `Ok`, or the group is left or dropped.
    pub unsafe fn register(&self, name: &str, base: *mut u8, len: usize) -> Result<(), GroupError> {
        self.publish("register", name, None, |w| {
            // SAFETY: the caller's promise is the worker's.
            unsafe { w.register(base, len) }
        })
    }

    /// Registers `len` bytes at `base` under `name`, like [`Group::register`], memory that is
    /// a shared mapping (`MAP_SHARED`) of `fd` from `fd_offset` (a memfd, say): *shareable*
    /// memory. With the default worker, members of this node map the file themselves (the
    /// descriptor passes over this member's node socket) and their puts and gets are copies;
    /// members of other nodes reach it through the network (UCX).
    ///
    /// # Safety
    /// As [`Group::register`]; and `[base, base+len)` maps `fd` from `fd_offset`, and the file
    /// keeps at least `fd_offset + len` bytes while registered (a member touching its mapping
    /// past the file's end faults).
    pub unsafe fn register_fd(
        &self,
        name: &str,
        fd: BorrowedFd<'_>,
        fd_offset: u64,
        base: *mut u8,
        len: usize,
    ) -> Result<(), GroupError> {
        self.publish("register_fd", name, None, |w| {
            // SAFETY: the caller's promise is the worker's.
            unsafe { w.register_fd(fd, fd_offset, base, len) }
        })
    }

    /// Allocates `len` bytes of shareable memory (zero-filled: an anonymous memfd mapped
    /// shared), registers it under `name` with [`Group::register_fd`] and returns its first
    /// byte. The group owns it: it stays valid until [`Group::unregister`] of `name` returned
    /// `Ok` or the group is left or dropped, which free it. Members of this node map it,
    /// members of other nodes reach it through the network (UCX); this process reads and
    /// writes it directly (members may write it meanwhile: use volatile or atomic accesses).
    pub fn alloc(&self, name: &str, len: usize) -> Result<*mut u8, GroupError> {
        let op = "alloc";
        let mem = SharedMemory::new(len).map_err(|e| self.transport(op, e))?;
        let (base, fd) = (mem.as_ptr(), mem.fd().as_raw_fd());
        // SAFETY: `mem` maps its memfd whole from offset 0 and keeps its length; `publish`
        // holds it (so the descriptor is open during the call) and keeps it with the
        // registration until that is unregistered.
        self.publish(op, name, Some(mem), |w| unsafe {
            w.register_fd(BorrowedFd::borrow_raw(fd), 0, base, len)
        })?;
        Ok(base)
    }

    /// Registers with `register` and publishes the key under `name` (see [`Group::register`]),
    /// keeping `mem` with the registration.
    fn publish(
        &self,
        op: &'static str,
        name: &str,
        mem: Option<SharedMemory>,
        register: impl FnOnce(
            &dyn crate::dynamic::DynamicWorker,
        ) -> Result<(Registration, Vec<u8>), TransportError>,
    ) -> Result<(), GroupError> {
        if name.is_empty() || name.contains('/') {
            return Err(self.inner.invalid(
                op,
                "name",
                name,
                "a registration's name is not empty and has no '/'",
            ));
        }
        let mut regs = lock(&self.inner.regs);
        if regs.contains_key(name) {
            return Err(self.inner.invalid(
                op,
                "name",
                name,
                "this member has a registration of that name",
            ));
        }
        let (reg, key) = register(&*self.inner.worker).map_err(|e| self.transport(op, e))?;
        let k = mem_key(&self.inner.prefix, self.inner.rank, name);
        let member = self
            .member
            .as_ref()
            .expect("a group holds its member until it ends");
        let published = self
            .inner
            .client
            .set(&k, &key)
            .and_then(|()| member.own(&k));
        if let Err(e) = published {
            let _ = self.inner.client.delete(&k);
            let _ = self.inner.worker.unregister(reg);
            return Err(self.inner.store_err(op)(e));
        }
        regs.insert(name.into(), Held { reg, mem });
        Ok(())
    }

    /// Withdraws the registration `name`: its key leaves the store, every member alive
    /// confirms that it no longer uses it (see the module's documentation), then the memory is
    /// unregistered and may be reused ([`Group::alloc`]'s is freed). Members' later operations
    /// on it fail with [`GroupError::NoRegistration`]. When a member alive does not confirm
    /// within the bound, fails naming it and keeps the memory registered (until the group
    /// ends).
    pub fn unregister(&self, name: &str) -> Result<(), GroupError> {
        let op = "unregister";
        if !lock(&self.inner.regs).contains_key(name) {
            return Err(self.inner.invalid(
                op,
                "name",
                name,
                "this member has no registration of that name",
            ));
        }
        self.inner.withdraw(op, &[name.to_string()])?;
        let held = lock(&self.inner.regs).remove(name);
        match held {
            // Memory the group allocated goes once unregistered.
            Some(Held { reg, mem }) => {
                let done = self.inner.worker.unregister(reg);
                drop(mem);
                done.map_err(|e| self.transport(op, e))
            }
            None => Ok(()),
        }
    }

    /// Withdraws every registration (at leave).
    pub(super) fn withdraw_all(&self) -> Result<(), GroupError> {
        let names: Vec<String> = lock(&self.inner.regs).keys().cloned().collect();
        if names.is_empty() {
            return Ok(());
        }
        self.inner.withdraw("leave", &names)
    }

    /// Writes `src` at `offset` of registration `name` of the member holding `rank` (an
    /// endpoint to it is made the first time; this member's own memory is written directly);
    /// returns when `src` may be reused. The data is visible there after [`Group::flush`].
    pub fn put(&self, rank: u32, name: &str, offset: u64, src: &[u8]) -> Result<(), GroupError> {
        if rank == self.inner.rank {
            // SAFETY: the range lies in the registration, valid for writes by the register's
            // promise; `src` is a live slice of this process, not inside it (it is borrowed).
            return self.with_own("put", name, offset, src.len(), |at| unsafe {
                std::ptr::copy(src.as_ptr(), at, src.len())
            });
        }
        let w = &self.inner.worker;
        self.inner
            .with_key("put", rank, name, |ep, key| w.put(ep, key, offset, src))
    }

    /// Reads `dst.len()` bytes at `offset` of registration `name` of the member holding
    /// `rank`; returns when they landed.
    pub fn get(
        &self,
        rank: u32,
        name: &str,
        offset: u64,
        dst: &mut [u8],
    ) -> Result<(), GroupError> {
        if rank == self.inner.rank {
            let len = dst.len();
            // SAFETY: the range lies in the registration, valid for reads by the register's
            // promise; `dst` is a live, exclusive slice.
            return self.with_own("get", name, offset, len, |at| unsafe {
                std::ptr::copy(at, dst.as_mut_ptr(), len)
            });
        }
        let w = &self.inner.worker;
        self.inner
            .with_key("get", rank, name, |ep, key| w.get(ep, key, offset, dst))
    }

    /// Starts a put of `len` bytes from `src`; complete after [`Group::flush`] of `rank`.
    ///
    /// # Safety
    /// `src` must stay valid and unchanged until that flush returns.
    pub unsafe fn put_nb(
        &self,
        rank: u32,
        name: &str,
        offset: u64,
        src: *const u8,
        len: usize,
    ) -> Result<(), GroupError> {
        if rank == self.inner.rank {
            // SAFETY: as in `put`; the caller's promise keeps `src` valid.
            return self.with_own("put_nb", name, offset, len, |at| unsafe {
                std::ptr::copy(src, at, len)
            });
        }
        let w = &self.inner.worker;
        self.inner.with_key("put_nb", rank, name, |ep, key| {
            // SAFETY: the caller's promise.
            unsafe { w.put_nb(ep, key, offset, src, len) }
        })
    }

    /// Starts a get of `len` bytes into `dst`; landed after [`Group::flush`] of `rank`.
    ///
    /// # Safety
    /// `dst` must stay valid, and untouched by this process, until that flush returns.
    pub unsafe fn get_nb(
        &self,
        rank: u32,
        name: &str,
        offset: u64,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), GroupError> {
        if rank == self.inner.rank {
            // SAFETY: as in `get`; the caller's promise keeps `dst` valid.
            return self.with_own("get_nb", name, offset, len, |at| unsafe {
                std::ptr::copy(at, dst, len)
            });
        }
        let w = &self.inner.worker;
        self.inner.with_key("get_nb", rank, name, |ep, key| {
            // SAFETY: the caller's promise.
            unsafe { w.get_nb(ep, key, offset, dst, len) }
        })
    }

    /// The file behind registration `name` of the member holding `rank`, when this member's
    /// worker reaches it by mapping it (the member is on this node and registered shareable
    /// memory, [`Group::register_fd`] or [`Group::alloc`]): a descriptor of its own, the
    /// registration's offset in the file and its length, for the caller to map where it
    /// chooses (memfabric's Share Memory window maps each same-node member's slot at a fixed
    /// address). `Ok(None)`: that memory is reached through the network only. The caller's
    /// mapping outlives the registration and the member: it is the caller's to stop using it
    /// once the member withdraws it or is gone.
    pub fn shared_file(
        &self,
        rank: u32,
        name: &str,
    ) -> Result<Option<(std::os::fd::OwnedFd, u64, u64)>, GroupError> {
        let w = &self.inner.worker;
        self.inner
            .with_key("shared_file", rank, name, |ep, key| w.shared_file(ep, key))
    }

    /// Runs `f` with the range (base and length in the owner's process) of registration
    /// `name` of the member holding `rank`, while it is published and this member's worker
    /// reaches that member (an endpoint is made the first time), under the key cache's lock:
    /// a withdrawal of the registration waits for `f`. For a caller that moves the data by
    /// other means (memfabric's transfer engine copies a same-node member's private memory
    /// with `process_vm_writev`): the key's publication is the authority that the memory is
    /// still exposed. Fails as a put would: [`GroupError::NoRegistration`] once withdrawn,
    /// [`GroupError::Gone`] or [`GroupError::NoMember`] once the member is gone.
    pub(crate) fn with_registration<R>(
        &self,
        rank: u32,
        name: &str,
        f: impl FnOnce(u64, u64) -> R,
    ) -> Result<R, GroupError> {
        let op = "with_registration";
        self.inner.with_key(op, rank, name, |_, key| {
            let (h, _) = crate::dynamic::KeyHeader::decode(key)
                .map_err(|why| crate::dynamic::bad_key(op, &rank.to_string(), key, why))?;
            Ok(f(h.base, h.len))
        })
    }

    /// Completes every operation issued to the member holding `rank`, or fails (it is gone,
    /// the worker's timeout).
    pub fn flush(&self, rank: u32) -> Result<(), GroupError> {
        let op = "flush";
        if rank == self.inner.rank {
            // Operations on this member's own memory complete when issued.
            return Ok(());
        }
        let (id, ep) = self.inner.endpoint(op, rank)?;
        self.inner
            .worker
            .flush(ep)
            .map_err(|e| self.inner.op_err(op, rank, &id, e))
    }
}
