//! Groups whose members come and go, as one API: a [`Group`] is this process's membership of a
//! named group of a store ([`shmem_store::Member`]: a rank, a heartbeat, the group's events,
//! membership changes one at a time) joined to a worker of the dynamic transport
//! ([`crate::dynamic::DynamicWorker`]: endpoints on demand, registrations made while the
//! process runs). The memfabric and torch layers build on it.
//!
//! What a group guarantees:
//!
//! - **Ranks.** A member holds one rank in `0..size` while it is a member: the one it asked
//!   for, or the store's pick (the lowest free rank at or after the group's moving cursor; a
//!   rank freed by a member that left or went down is handed out again). A member is named by
//!   its rank and its id together: a newcomer may take a rank a gone member held.
//! - **Addresses and keys.** Each member publishes its worker's address, and the remote key of
//!   each memory it registers ([`Group::register`], [`Group::register_fd`], [`Group::alloc`]),
//!   under the group's keys in the store, as keys it owns: the store drops them when the
//!   member leaves or is reported down.
//! - **Which memory moves how** (with the default worker, [`default_worker`]: a
//!   [`NodeWorker`] over UCX). Members of one node (same boot, network namespace and user)
//!   reach each other's *shareable* memory, [`Group::alloc`]'s and [`Group::register_fd`]'s
//!   (shared mappings of a file), by mapping it: the descriptor passes once over the owner's
//!   node socket, then a put or get is a range check and a copy. Everything else goes through
//!   the network (UCX, TCP where it has nothing faster): *private* memory
//!   ([`Group::register`]) whoever reaches it, and any memory of a member of another node.
//!   Where UCX does not load, the default worker has no network: shareable memory of this
//!   node's members is still reached, the rest fails naming UCX as what is missing
//!   ([`crate::TransportError::NeedsUcx`]).
//! - **Endpoints.** An endpoint to a member is made from its published address when a call
//!   first addresses it, and kept. When a member leaves or is reported down, a thread of the
//!   group tears its endpoint down by force (nothing waits for a gone peer) and forgets its
//!   keys, without the application calling anything; later calls to it fail with
//!   [`GroupError::Gone`] naming the group, its rank and its id. Every operation is bounded: by the worker's timeout (the transport) and by
//!   [`GroupOptions::timeout`] (waits on the store).
//! - **Withdrawals.** [`Group::unregister`] removes the key from the store, then waits until
//!   every member alive has confirmed that it dropped the key from its cache and completed
//!   what it had in flight (a thread of each member does so when told, through the store);
//!   only then is the memory unregistered. From then on no peer reaches it: their later
//!   operations fail with [`GroupError::NoRegistration`].
//! - **Events.** The application reads the group's events (members joined, left, down; this
//!   member's connection lost) with [`Group::next_event`], after the group's own bookkeeping
//!   for them is done. [`Group::changes`] counts, in one atomic word, what may stale a caller's
//!   own view of the others' memory (a member gone, once its event is queued; a withdrawal,
//!   before this member confirms it): a hot path checks it with one load.
//! - **Collectives.** [`Group::barrier`] and [`Group::allgather`] run through the store (small
//!   data: each member's contribution is one value of the store), in rounds numbered across the
//!   group. A round's members are the group's members when its first caller began it; each
//!   member takes part in the rounds in order, so members must call collectives in the same
//!   order. A member that went down or left during a round is not waited for and is named in
//!   the result ([`Gathered::gone`]); a member still alive that did not take part within the
//!   bound fails the call for the others with [`GroupError::Timeout`] naming it. A newcomer
//!   takes part from the first round begun after it joined, so its first collective matches
//!   the first the others begin after its join.
//!
//! Keys under `shmem/group-api/<group>/` are the group's: `addr/<rank>` (a member's id and its
//! worker's address), `mem/<rank>/<name>` (remote keys), `withdrawn` and `seen/<rank>` (the
//! withdrawals and their confirmations), `app/<key>` ([`Group::set`], [`Group::watch`]) and
//! `c/...` (the collectives' rounds).

mod collective;
mod error;
mod memory;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use shmem_store::group::EventQueue;
use shmem_store::{BootstrapError, Client, Member};

pub use collective::Gathered;
pub use error::GroupError;
pub use shmem_store::{MemberEvent, TcpDial};

use crate::dynamic::node::{NodeWorker, SharedMemory};
use crate::dynamic::ucx::UcxWorker;
use crate::dynamic::{DynamicWorker, Endpoint, Registration};
use crate::idmap::IdMap;
use crate::transport::TransportError;

/// Most events a group keeps for its application; older ones are dropped (and counted, see
/// [`Group::dropped_events`]) when it does not read them.
pub const GROUP_EVENT_QUEUE: usize = 1024;

/// Members gone (left or down) a group remembers, to name them in errors.
const GONE_KEPT: usize = 4096;

/// Longest single wait on the store: between two, a waiting call looks for members gone and
/// lets other calls of the group use its connection.
const SLICE: Duration = Duration::from_millis(100);

/// Stack of a group's threads: they parse frames and keep a few values.
const THREAD_STACK: usize = 256 * 1024;

/// How a process joins a group ([`Group::join`]).
#[derive(Clone)]
pub struct GroupOptions {
    /// The membership's options: size, rank (or `None`: the store's pick), heartbeat, loss
    /// bound, control timeout. Its `info` is replaced by the worker's address.
    pub member: shmem_store::GroupOptions,
    /// How long to retry the connections to the store (default 60 s).
    pub connect_timeout: Duration,
    /// Bound of every wait on the store: a collective's round, a withdrawal's confirmations,
    /// the lookup of a newcomer's address or key; also the timeout of the worker made when
    /// none is given (default 60 s).
    pub timeout: Duration,
    /// The worker to use; `None`: one of the group's own, [`default_worker`] (the node path
    /// over UCX, or over the loopback where UCX does not load).
    pub worker: Option<Arc<dyn DynamicWorker>>,
}

impl GroupOptions {
    /// Options for a group of `size` with the defaults.
    pub fn new(size: u32) -> GroupOptions {
        GroupOptions {
            member: shmem_store::GroupOptions::new(size),
            connect_timeout: Duration::from_secs(60),
            timeout: Duration::from_secs(60),
            worker: None,
        }
    }
}

impl std::fmt::Debug for GroupOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupOptions")
            .field("member", &self.member)
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("worker", &self.worker.as_ref().map(|w| w.name()))
            .finish()
    }
}

/// The members as this process's group knows them, from its join and the events since.
#[derive(Default)]
struct View {
    /// Members alive, as rank to id.
    members: BTreeMap<u32, String>,
    /// Members gone, as (rank, id, what became of them), newest last.
    gone: VecDeque<(u32, String, String)>,
}

impl View {
    /// What became of member (`rank`, `id`), if it is gone.
    fn gone(&self, rank: u32, id: &str) -> Option<&str> {
        self.gone
            .iter()
            .rev()
            .find(|(r, m, _)| *r == rank && m == id)
            .map(|(_, _, why)| why.as_str())
    }
}

/// An endpoint to a member.
struct Peer {
    member: String,
    ep: Endpoint,
}

/// Remote keys looked up, by rank and registration name (the member that registered each, its
/// key), and a count of their invalidations.
#[derive(Default)]
struct KeyCache {
    keys: IdMap<u32, IdMap<String, (String, Vec<u8>)>>,
    generation: u64,
}

/// The worker a group makes when [`GroupOptions::worker`] is `None`, its operations bounded
/// by `timeout`: a [`NodeWorker`] (members of this node map each other's shareable memory)
/// over a [`UcxWorker`] of its own (everything else). Where UCX's `libucp.so.0` does not load,
/// a node worker without UCX ([`NodeWorker::without_ucx`]): shareable memory of members of
/// this node is still reached; private memory of another process, and members of other
/// nodes, fail with [`TransportError::NeedsUcx`], which names the loader's error and the
/// package to install. Any other failure of UCX is returned.
pub fn default_worker(timeout: Duration) -> Result<Arc<dyn DynamicWorker>, TransportError> {
    match UcxWorker::open(timeout) {
        Ok(ucx) => Ok(Arc::new(NodeWorker::new(Box::new(ucx), timeout)?)),
        Err(e @ TransportError::NotLoaded { .. }) => {
            tracing::info!(
                "group API: {e}; members reach only the shareable memory of this node's members"
            );
            Ok(Arc::new(NodeWorker::without_ucx(e.to_string(), timeout)?))
        }
        Err(e) => Err(e),
    }
}

/// A registration of this member, and the memory behind it when the group allocated it
/// ([`Group::alloc`]): freed once the registration is withdrawn.
struct Held {
    reg: Registration,
    mem: Option<SharedMemory>,
}

/// What a group's calls and threads share.
struct Inner {
    name: String,
    rank: u32,
    id: String,
    /// `shmem/group-api/<group>/`.
    prefix: String,
    timeout: Duration,
    worker: Arc<dyn DynamicWorker>,
    /// The group's connection for its calls (keys, collectives, the application's keys).
    client: Client,
    view: Mutex<View>,
    peers: Mutex<IdMap<u32, Peer>>,
    keys: RwLock<KeyCache>,
    regs: Mutex<HashMap<String, Held>>,
    events: EventQueue<MemberEvent>,
    /// Counts the times what this member knows of the others' memory may have gone stale: a
    /// member gone (moved once its event is queued), a withdrawal seen (moved before this
    /// member confirms it). [`Group::changes`].
    changes: AtomicU64,
    /// The next collective round this member takes part in; held while one runs.
    round: Mutex<u64>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Inner {
    fn store_err(&self, op: &'static str) -> impl FnOnce(BootstrapError) -> GroupError + '_ {
        move |source| GroupError::Store {
            op,
            group: self.name.clone(),
            source: Box::new(source),
        }
    }

    fn invalid(&self, op: &'static str, arg: &'static str, value: &str, why: &str) -> GroupError {
        GroupError::InvalidArgument {
            op,
            group: self.name.clone(),
            arg,
            value: value.into(),
            why: why.into(),
        }
    }

    /// The group's bookkeeping for one event of its member, then the event to the application.
    fn on_event(&self, event: MemberEvent) {
        match &event {
            MemberEvent::Joined { rank, member } => {
                let mut view = lock(&self.view);
                view.members.insert(*rank, member.clone());
                // A member may come back with its id, and may get its rank back.
                view.gone.retain(|(r, m, _)| !(r == rank && m == member));
            }
            MemberEvent::Left { rank, member } => {
                self.forget(*rank, member, "left the group".into());
            }
            MemberEvent::Down {
                rank,
                member,
                reason,
            } => {
                self.forget(*rank, member, format!("is down: {reason}"));
            }
            MemberEvent::Changed(_) | MemberEvent::Lost(_) => {}
        }
        let gone = matches!(
            event,
            MemberEvent::Left { .. } | MemberEvent::Down { .. } | MemberEvent::Lost(_)
        );
        self.events.push(event);
        if gone {
            // After the push: whoever sees the count move finds the event queued.
            self.changes.fetch_add(1, Ordering::Release);
        }
    }

    /// Member (`rank`, `id`) is gone: its endpoint is torn down, its keys forgotten.
    fn forget(&self, rank: u32, id: &str, why: String) {
        {
            let mut view = lock(&self.view);
            if view.members.get(&rank).is_some_and(|m| m == id) {
                view.members.remove(&rank);
            }
            if view.gone.len() == GONE_KEPT {
                view.gone.pop_front();
            }
            view.gone.push_back((rank, id.to_string(), why));
        }
        let peer = {
            let mut peers = lock(&self.peers);
            match peers.get(&rank) {
                Some(p) if p.member == id => peers.remove(&rank),
                _ => None,
            }
        };
        if let Some(p) = peer {
            if let Err(e) = self.worker.disconnect_gone(p.ep) {
                tracing::debug!(
                    "group '{}': disconnecting from rank {rank} ('{id}'): {e}",
                    self.name
                );
            }
        }
        let mut keys = self.keys.write().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = keys.keys.get_mut(&rank) {
            k.retain(|_, (m, _)| m != id);
        }
        keys.generation += 1;
    }

    /// The error for a call to member (`rank`, `id`) when it is gone, if it is. A member
    /// gone may have joined again with its id and rank before this group read that event: the
    /// store, asked then, says whether it is a member now.
    fn gone_error(&self, op: &'static str, rank: u32, id: &str) -> Option<GroupError> {
        let why = lock(&self.view).gone(rank, id)?.to_string();
        let back = self
            .client
            .group_watch(&self.name, u64::MAX, Duration::ZERO)
            .is_ok_and(|v| v.members.iter().any(|(r, m)| *r == rank && m == id));
        if back {
            lock(&self.view)
                .gone
                .retain(|(r, m, _)| !(*r == rank && m == id));
            return None;
        }
        Some(GroupError::Gone {
            op,
            group: self.name.clone(),
            rank,
            member: id.into(),
            why,
        })
    }

    /// Waits until `deadline`, in slices, until `key` holds something other than `seen`.
    /// Between slices the group's connection is free for other calls, and `give_up` is asked
    /// whether to stop waiting.
    fn wait_key(
        &self,
        op: &'static str,
        key: &str,
        seen: Option<&[u8]>,
        deadline: Instant,
        mut give_up: impl FnMut() -> bool,
    ) -> Result<Waited, GroupError> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.client.watch(key, seen, left.min(SLICE)) {
                Ok(now) => return Ok(Waited::Now(now)),
                Err(BootstrapError::Timeout { .. }) => {}
                Err(e) => return Err(self.store_err(op)(e)),
            }
            if give_up() {
                return Ok(Waited::GaveUp);
            }
            if Instant::now() >= deadline {
                return Ok(Waited::Deadline);
            }
        }
    }
}

/// How a wait on a key of the store ended ([`Inner::wait_key`]).
enum Waited {
    /// The key holds this now (`None`: it was removed).
    Now(Option<Vec<u8>>),
    /// The caller stopped waiting.
    GaveUp,
    /// The deadline passed.
    Deadline,
}

/// This process's membership of a group, with its worker (see the module's documentation).
pub struct Group {
    inner: Arc<Inner>,
    member: Option<Arc<Member>>,
    /// The events thread (it holds the member), then the withdrawals thread.
    threads: Vec<(Arc<AtomicBool>, JoinHandle<()>)>,
    watcher: Arc<Client>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("name", &self.inner.name)
            .field("rank", &self.inner.rank)
            .field("id", &self.inner.id)
            .field("worker", &self.inner.worker.name())
            .finish_non_exhaustive()
    }
}

/// The group's key of member `rank`'s address.
fn addr_key(prefix: &str, rank: u32) -> String {
    format!("{prefix}addr/{rank}")
}

/// A member's id and address as one value: the id's length (4 bytes, little-endian), the id,
/// the address.
fn encode_addr(id: &str, address: &[u8]) -> Vec<u8> {
    let mut v = (id.len() as u32).to_le_bytes().to_vec();
    v.extend_from_slice(id.as_bytes());
    v.extend_from_slice(address);
    v
}

fn decode_addr(v: &[u8]) -> Option<(String, Vec<u8>)> {
    let n = u32::from_le_bytes(v.get(..4)?.try_into().ok()?) as usize;
    let id = std::str::from_utf8(v.get(4..4 + n)?).ok()?;
    Some((id.to_string(), v[4 + n..].to_vec()))
}

impl Group {
    /// Joins `name`, a group of the store `dial` names, as `id` (unique in the group: its
    /// `ip:port`, say): makes (or takes, [`GroupOptions::worker`]) the worker, joins the
    /// group's membership (its change runs with every member), publishes the worker's address
    /// and starts the group's two threads (its events, and the withdrawals of peers' keys).
    /// Fails naming the group when the store refuses the member, the worker cannot be made
    /// ([`default_worker`]), or a bound passes.
    pub fn join(
        dial: &TcpDial,
        name: &str,
        id: &str,
        options: GroupOptions,
    ) -> Result<Group, GroupError> {
        let op = "join";
        let refuse = |arg: &'static str, value: &str, why: &str| GroupError::InvalidArgument {
            op,
            group: name.into(),
            arg,
            value: value.into(),
            why: why.into(),
        };
        if name.is_empty() || name.contains('/') {
            return Err(refuse(
                "name",
                name,
                "a group's name is not empty and has no '/'",
            ));
        }
        if id.is_empty() {
            return Err(refuse("id", id, "a member's id is not empty"));
        }
        let store = |source| GroupError::Store {
            op,
            group: name.into(),
            source: Box::new(source),
        };
        let worker: Arc<dyn DynamicWorker> = match options.worker {
            Some(w) => w,
            None => default_worker(options.timeout).map_err(|source| GroupError::Transport {
                op,
                group: name.into(),
                rank: options.member.rank.unwrap_or(u32::MAX),
                source: Box::new(source),
            })?,
        };
        let client = Client::connect_open(dial, options.connect_timeout).map_err(store)?;
        let watcher = Arc::new(Client::connect_open(dial, options.connect_timeout).map_err(store)?);
        let prefix = format!("shmem/group-api/{name}/");
        // Read before joining: see `collective`.
        let head = collective::head(&client, &prefix).map_err(store)?;
        let mut member_options = options.member.clone();
        member_options.info = worker.address();
        let member = Arc::new(
            Member::join(dial, name, id, &member_options, options.connect_timeout)
                .map_err(store)?,
        );
        let rank = member.rank();
        let inner = Arc::new(Inner {
            name: name.into(),
            rank,
            id: id.into(),
            prefix,
            timeout: options.timeout,
            worker,
            client,
            view: Mutex::new(View::default()),
            peers: Mutex::new(IdMap::default()),
            keys: RwLock::new(KeyCache::default()),
            regs: Mutex::new(HashMap::new()),
            events: EventQueue::new(GROUP_EVENT_QUEUE),
            changes: AtomicU64::new(0),
            round: Mutex::new(head),
        });
        let mut group = Group {
            inner: Arc::clone(&inner),
            member: Some(Arc::clone(&member)),
            threads: Vec::new(),
            watcher: Arc::clone(&watcher),
        };
        {
            let members = member.members().map_err(store)?;
            lock(&inner.view).members.extend(members);
        }
        let key = addr_key(&inner.prefix, rank);
        inner
            .client
            .set(&key, &encode_addr(id, &inner.worker.address()))
            .map_err(store)?;
        member.own(&key).map_err(store)?;
        member
            .own(&memory::seen_key(&inner.prefix, rank))
            .map_err(store)?;
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .stack_size(THREAD_STACK)
                .spawn(f)
                .map_err(|e| GroupError::Store {
                    op,
                    group: inner.name.clone(),
                    source: Box::new(BootstrapError::Io {
                        op: "start the group's threads",
                        source: e,
                    }),
                })
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (i, m, s) = (Arc::clone(&inner), member, Arc::clone(&stop));
        let t = spawn(
            "shmem-group-api",
            Box::new(move || {
                while !s.load(Ordering::SeqCst) {
                    if let Some(e) = m.next_event(SLICE) {
                        i.on_event(e);
                    }
                }
            }),
        )?;
        group.threads.push((stop, t));
        let stop = Arc::new(AtomicBool::new(false));
        let (i, w, s) = (Arc::clone(&inner), watcher, Arc::clone(&stop));
        let t = spawn(
            "shmem-group-keys",
            Box::new(move || memory::watch_withdrawals(&i, &w, &s)),
        )?;
        group.threads.push((stop, t));
        Ok(group)
    }

    /// This member's rank.
    pub fn rank(&self) -> u32 {
        self.inner.rank
    }

    /// This member's id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The group's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The group's worker.
    pub fn worker(&self) -> &Arc<dyn DynamicWorker> {
        &self.inner.worker
    }

    /// The group's members now, as (rank, id), by rank, as the store has them.
    pub fn members(&self) -> Result<Vec<(u32, String)>, GroupError> {
        let member = self
            .member
            .as_ref()
            .expect("a group holds its member until it ends");
        member.members().map_err(self.inner.store_err("members"))
    }

    /// Waits up to `timeout` for the group's next event; `None` at the timeout. By the time
    /// an event is read, the group has done its own part for it (a member gone: its endpoint
    /// is torn down, its keys forgotten).
    pub fn next_event(&self, timeout: Duration) -> Option<MemberEvent> {
        self.inner.events.next(timeout)
    }

    /// A count that moves whenever what this member knows of the others' memory may have gone
    /// stale: a member left or went down (or the store was lost), once the group did its part
    /// and queued the event; a withdrawal of a registration, before this member confirms it
    /// (so before the withdrawing member unregisters). A caller keeping something of its own
    /// per member (a mapping of a member's memory, say) checks it again when the count moved:
    /// reading it is one atomic load.
    pub fn changes(&self) -> u64 {
        self.inner.changes.load(Ordering::Acquire)
    }

    /// Events dropped because the application did not read them ([`GROUP_EVENT_QUEUE`]).
    pub fn dropped_events(&self) -> u64 {
        self.inner.events.dropped()
    }

    fn app_key(&self, op: &'static str, key: &str) -> Result<String, GroupError> {
        if key.is_empty() {
            return Err(self.inner.invalid(op, "key", key, "a key is not empty"));
        }
        Ok(format!("{}app/{key}", self.inner.prefix))
    }

    /// Stores `value` under the group's `key` (the application's keys, beside the group's
    /// own). It stays when this member leaves.
    pub fn set(&self, key: &str, value: &[u8]) -> Result<(), GroupError> {
        let k = self.app_key("set", key)?;
        self.inner
            .client
            .set(&k, value)
            .map_err(self.inner.store_err("set"))
    }

    /// Removes the group's `key`.
    pub fn delete(&self, key: &str) -> Result<(), GroupError> {
        let k = self.app_key("delete", key)?;
        self.inner
            .client
            .delete(&k)
            .map_err(self.inner.store_err("delete"))
    }

    /// Waits up to `timeout` until the group's `key` holds something other than `seen`
    /// (`None`: until it exists); returns what it holds then (`None`: it was removed). At the
    /// bound, [`GroupError::Store`] holding the store's timeout naming the key. Other calls of
    /// the group go on meanwhile.
    pub fn watch(
        &self,
        key: &str,
        seen: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<Option<Vec<u8>>, GroupError> {
        let op = "watch";
        let k = self.app_key(op, key)?;
        let deadline = Instant::now() + timeout;
        match self.inner.wait_key(op, &k, seen, deadline, || false)? {
            Waited::Now(now) => Ok(now),
            Waited::GaveUp | Waited::Deadline => {
                Err(self.inner.store_err(op)(BootstrapError::Timeout {
                    op,
                    key: k,
                    after: timeout,
                }))
            }
        }
    }

    /// Leaves the group: withdraws this member's registrations (each confirmed by the members,
    /// [`Group::unregister`]), makes the leave's membership change, then stops the group's
    /// threads, tears its endpoints down and closes its connections. The worker is dropped
    /// unless the application holds it too. Each step is bounded; when one fails (a member
    /// alive did not confirm a withdrawal in time, the store did not answer), the others still
    /// run and the first error is returned: the memory is unregistered all the same, so with a
    /// worker the application keeps, it should not reuse memory a member named there may
    /// still address.
    pub fn leave(mut self) -> Result<(), GroupError> {
        let withdrawn = self.withdraw_all();
        self.stop_events();
        let member = self
            .member
            .take()
            .expect("a group holds its member until it ends");
        let member =
            Arc::try_unwrap(member).expect("the events thread held the member's other handle");
        let left = member
            .leave()
            .map(drop)
            .map_err(self.inner.store_err("leave"));
        self.end();
        withdrawn.and(left)
    }

    /// Stops the events thread (the only other holder of the member).
    fn stop_events(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        let (stop, t) = self.threads.remove(0);
        stop.store(true, Ordering::SeqCst);
        let _ = t.join();
    }

    /// Stops what is left: the withdrawals thread, the endpoints, the registrations and the
    /// memory the group allocated.
    fn end(&mut self) {
        for (stop, _) in &self.threads {
            stop.store(true, Ordering::SeqCst);
        }
        self.watcher.shutdown();
        for (_, t) in self.threads.drain(..) {
            let _ = t.join();
        }
        let peers: Vec<Peer> = lock(&self.inner.peers).drain().map(|(_, p)| p).collect();
        for p in peers {
            let _ = self.inner.worker.disconnect(p.ep);
        }
        let regs: Vec<Held> = lock(&self.inner.regs).drain().map(|(_, r)| r).collect();
        for r in regs {
            let _ = self.inner.worker.unregister(r.reg);
            drop(r.mem);
        }
        self.inner.client.shutdown();
    }
}

impl Drop for Group {
    /// Ends the membership without leaving (the others see this member down, as if its
    /// process died), stops the group's threads, tears its endpoints down, unregisters its
    /// memory and frees what it allocated.
    fn drop(&mut self) {
        if self.member.is_some() {
            self.stop_events();
            self.member = None;
            self.end();
        }
    }
}
