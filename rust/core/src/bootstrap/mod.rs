//! Bootstrap: how the PEs of a job find each other at start-up, and the few collective steps
//! they take through the job's control store until they finish.
//!
//! `join` reads who started this process, meets the other PEs and returns one
//! `Bootstrap`: rank and size, which PEs share this node, allgather, barrier, the exchange of
//! node-local descriptors among the PEs of this node, abort and goodbye. The runtime uses only that object. Its parts,
//! one folder each:
//! - `launcher/`: which launcher started the process and what its environment says (`launch`),
//!   the launchers' key-value services (`kvs`, `pmi1`, `pmix`), explicit attributes (`attrs`)
//!   and unique ids ([`uniqueid`]);
//! - `node/`: where each PE runs (`locality`), PE 0's store for launchers other than
//!   `shmemrun` (`meet`), the descriptor store of each node of a TCP job (`rendezvous`);
//! - `store`: the key-value store itself, from the `shmem-store` crate: protocol ([`wire`]),
//!   [`Server`], [`Client`], the streams under them, addresses ([`addr`]) and trust ([`tls`]);
//!   `gather`: the start-up allgathers built on it that name a PE the store refused.
//! - `watch`: under `shmemrun`, the end of this PE (and the job's process group) when the
//!   launcher is gone; `heartbeat`: in a job across nodes, this PE's heartbeat to the store
//!   and its end when the store stops answering (its node is cut off);
//! - single files beside them: the failures before the store is met (`error`, composed into the
//!   runtime's error), the bounds on blocking steps (`Timeouts`), random bits for secrets
//!   (`bits`), and `ending`: the end of the process that the runtime installs, through which
//!   the watchers here (`watch`, and `meet`'s watch of PE 0's store) end this PE, so that only
//!   the runtime ends a job.
//!
//! Must never be used on the data path (puts, gets, atomics, data-path waits): every call here
//! is a round trip to the store. Every blocking step has a timeout, and errors name the
//! operation and the key.

pub(crate) mod bits;
pub(crate) mod ending;
pub(crate) mod error;
mod gather;
mod heartbeat;
mod launcher;
pub(crate) mod node;
pub(crate) mod store;
mod timeouts;
mod watch;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::env::{self, Config};
use crate::error::{Error, LaunchError, Result};
use heartbeat::Heartbeat;
use launcher::attrs::{self, Job};
use launcher::kvs::{self, Choice, FromKvs};
use launcher::launch::{self, Launch};
use node::locality::{self, NodeMap};
use node::meet::{self, Meeting, NodeJob};
use node::rendezvous::NodeStore;
use store::tls::Trust;
use watch::LauncherWatch;

pub(crate) use launcher::attrs::Job as JobAttrs;
pub(crate) use launcher::attrs::Meet;
pub(crate) use launcher::launch::rank_hint;
pub use launcher::uniqueid;
pub use launcher::NotLoaded;
pub use store::{addr, tls, wire};
pub use store::{
    BootstrapError, Client, PeerStatus, Server, StoreEvent, TcpDial, EXTRA_TCP_CONNECTIONS,
    FRAME_BUDGET, VALUE_BUDGET,
};
pub(crate) use timeouts::Timeouts;

/// How this PE learns which job it is part of.
pub(crate) enum Joining {
    /// From the launcher's environment (`shmem_init`).
    Environment,
    /// From explicit attributes (`shmem_init_attr`, the unique-id form); every PE checks that
    /// all were given the same job.
    Attributes(Job),
}

/// Which PEs share a node: a node number per PE (numbered in order of their lowest PE), the
/// PEs of this PE's node in order, and this PE's place among them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Nodes {
    node_of: Vec<u32>,
    local: Vec<usize>,
    local_rank: usize,
    /// Each node as messages show it, by node number; empty when the PEs met on one node
    /// without exchanging identities.
    described: Vec<String>,
}

impl Nodes {
    /// The map for PE `me` from every PE's node number.
    fn new(node_of: Vec<u32>, me: usize) -> Nodes {
        let local: Vec<usize> = (0..node_of.len())
            .filter(|&pe| node_of[pe] == node_of[me])
            .collect();
        let local_rank = local.iter().position(|&pe| pe == me).unwrap_or(0);
        Nodes {
            node_of,
            local,
            local_rank,
            described: Vec::new(),
        }
    }

    /// Every PE of a job on one node (a job that meets at a Unix socket cannot span more).
    fn one(n_pes: usize, me: usize) -> Nodes {
        Nodes::new(vec![0; n_pes], me)
    }

    fn from_map(map: &NodeMap, me: usize) -> Nodes {
        Nodes {
            described: map.described(),
            ..Nodes::new(map.numbers(), me)
        }
    }

    /// The node number of PE `pe`.
    pub(crate) fn node_of(&self, pe: usize) -> u32 {
        self.node_of[pe]
    }

    /// The PEs on this PE's node, in increasing order (this PE included).
    pub(crate) fn local_pes(&self) -> &[usize] {
        &self.local
    }

    /// This PE's index in [`Nodes::local_pes`].
    pub(crate) fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// Whether PE `pe` runs on this PE's node.
    pub(crate) fn is_local(&self, pe: usize) -> bool {
        self.node_of[pe] == self.node_of[self.local[self.local_rank]]
    }

    /// How many nodes the job spans.
    pub(crate) fn count(&self) -> usize {
        self.node_of.iter().max().map_or(1, |&n| n as usize + 1)
    }

    /// `SHMEM_TEAM_SHARED` for this PE as (start, stride, size) over world PEs: the PEs of
    /// this node when they are an arithmetic progression (always, when PEs are placed in
    /// blocks or round-robin). Otherwise the node's PEs are split into progressions, the
    /// largest first (ties: the lowest start, then the smallest stride), and this PE's team is
    /// the part holding it: every PE of the node computes the same split, so the members of a
    /// part agree on their team.
    pub(crate) fn shared_team(&self) -> (usize, usize, usize) {
        let me = self.local[self.local_rank];
        let mut left: Vec<usize> = self.local.clone();
        loop {
            let best = largest_progression(&left);
            let (start, stride, size) = best;
            let members = |pe: usize| {
                pe >= start && (pe - start).is_multiple_of(stride) && {
                    let k = (pe - start) / stride;
                    k < size
                }
            };
            if members(me) || left.is_empty() {
                return best;
            }
            left.retain(|&pe| !members(pe));
        }
    }

    /// PE `pe`'s node as messages show it: `node N`, with its host, boot id and network
    /// namespace when the PEs exchanged them.
    pub(crate) fn describe(&self, pe: usize) -> String {
        let node = self.node_of[pe];
        match self.described.get(node as usize) {
            Some(shown) => format!("node {node}, {shown}"),
            None => format!("node {node}"),
        }
    }
}

/// The largest arithmetic progression of PEs inside `pes` (sorted, distinct) as (start, stride,
/// size): ties go to the lowest start, then the smallest stride; a single PE has stride 1.
fn largest_progression(pes: &[usize]) -> (usize, usize, usize) {
    let Some(&first) = pes.first() else {
        return (0, 1, 0);
    };
    let mut best = (first, 1, 1);
    for (i, &start) in pes.iter().enumerate() {
        for &next in &pes[i + 1..] {
            let stride = next - start;
            let mut size = 2;
            while pes.binary_search(&(start + size * stride)).is_ok() {
                size += 1;
            }
            if size > best.2 {
                best = (start, stride, size);
            }
        }
    }
    best
}

/// This PE's membership in a started job: who it is, who shares its node, and the store it
/// reaches the others through. Made by [`join`].
#[derive(Debug)]
pub(crate) struct Bootstrap {
    /// Under `shmemrun`: the watch that ends this PE when the launcher is gone. First, so
    /// that it is disarmed before the store connection below closes.
    launcher: Option<LauncherWatch>,
    rank: usize,
    size: usize,
    nodes: Nodes,
    /// Connection to the job's store (`shmemrun`'s, or PE 0's under other launchers); `None`
    /// for a 1-PE job started without a launcher.
    store: Option<Arc<Client>>,
    /// The store as messages name it: who serves it, and where.
    store_name: String,
    /// Under launchers other than `shmemrun`: this PE's part in the node-local job.
    node: Option<NodeJob>,
    /// In a job across nodes, from the end of start-up: this PE's heartbeat to the store.
    heartbeat: OnceLock<Heartbeat>,
}

impl Bootstrap {
    /// A 1-PE job without a launcher: no store, no node-local job.
    pub(crate) fn alone() -> Bootstrap {
        Bootstrap {
            rank: 0,
            size: 1,
            nodes: Nodes::one(1, 0),
            store: None,
            store_name: String::new(),
            node: None,
            launcher: None,
            heartbeat: OnceLock::new(),
        }
    }

    /// This PE's number.
    pub(crate) fn rank(&self) -> usize {
        self.rank
    }

    /// The number of PEs in the job.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Which PEs share a node.
    pub(crate) fn nodes(&self) -> &Nodes {
        &self.nodes
    }

    /// Every PE's `data` indexed by PE (this PE's own included), one GATHER at the store per
    /// PE: O(N) per PE. Collective; blocks up to `timeout`.
    pub(crate) fn allgather(
        &self,
        data: &[u8],
        timeout: Duration,
    ) -> std::result::Result<Vec<Vec<u8>>, BootstrapError> {
        match &self.store {
            Some(s) => s.allgather(data, timeout),
            None => Ok(vec![data.to_vec()]),
        }
    }

    /// Waits up to `timeout` until every PE has called it as often. Collective.
    pub(crate) fn barrier(&self, timeout: Duration) -> std::result::Result<(), BootstrapError> {
        match &self.store {
            Some(s) => s.barrier(timeout),
            None => Ok(()),
        }
    }

    /// The node-local descriptors published under `prefix` by the PEs of this node (its own
    /// `fd` included), as duplicates indexed by PE, in one round trip once all are there;
    /// `None` for the PEs of other nodes, whose descriptors cannot reach this one. Collective
    /// over the job (each node exchanges through its own descriptor store, keyed by local
    /// rank). Blocks up to `timeout`.
    pub(crate) fn exchange_fds(
        &self,
        prefix: &str,
        fd: BorrowedFd<'_>,
        timeout: Duration,
    ) -> std::result::Result<Vec<Option<OwnedFd>>, BootstrapError> {
        let mut all: Vec<Option<OwnedFd>> = (0..self.size).map(|_| None).collect();
        let Some(store) = &self.store else {
            let own = fd
                .try_clone_to_owned()
                .map_err(|source| BootstrapError::Io {
                    op: "put_fd",
                    source,
                })?;
            all[self.rank] = Some(own);
            return Ok(all);
        };
        let local = self.nodes.local_pes();
        store.put_fd(&format!("{prefix}{}", self.nodes.local_rank()), fd.as_fd())?;
        let fds = (store.gather_fds(prefix, local.len() as u32, timeout)).map_err(|e| match e {
            // The store counts in local ranks; the message names the PE.
            BootstrapError::Absent { op, rank, after } => BootstrapError::Absent {
                op,
                rank: local.get(rank as usize).map_or(rank, |&pe| pe as u32),
                after,
            },
            e => e,
        })?;
        for (&pe, fd) in local.iter().zip(fds) {
            all[pe] = Some(fd);
        }
        Ok(all)
    }

    /// Ends the whole job with `status` (`after_error`: the library stops it after an error
    /// it reported, not the program's `shmem_global_exit`): PE 0 hosting the store ends every
    /// other PE, any other PE asks the store's host to. Returns; the caller exits.
    pub(crate) fn abort(&self, status: i32, after_error: bool) {
        if let Some(node) = self.node.as_ref().filter(|n| n.hosts_store()) {
            node.global_exit(status, after_error);
        }
        if let Some(store) = &self.store {
            store.abort(status, after_error);
        }
    }

    /// Start-up is over: every PE has reached the store, so the TLS key material this process
    /// held for it is wiped.
    pub(crate) fn started(&self) {
        tls::wipe_key_material();
    }

    /// In a job across nodes, at the end of start-up: starts this PE's heartbeat, with
    /// `heartbeat` (`SHMEM_HEARTBEAT_TIMEOUT`) as the silence after which a node is taken for
    /// cut off. Nothing in a job on one node.
    pub(crate) fn start_heartbeat(&self, heartbeat: Duration) -> Result<()> {
        let Some(store) = self.store.as_ref().filter(|_| self.nodes.count() > 1) else {
            return Ok(());
        };
        let names = heartbeat::Names {
            node: self.nodes.describe(self.rank),
            store: self.store_name.clone(),
        };
        let beat = Heartbeat::start(
            Arc::clone(store),
            self.rank as u32,
            self.size as u32,
            heartbeat,
            names,
        )?;
        let _ = self.heartbeat.set(beat);
        Ok(())
    }

    /// Stops this PE's heartbeat and leaves the liveness group before this PE leaves the
    /// store: a program may go on long after `shmem_finalize`, its connection open.
    fn stop_heartbeat(&self) {
        if let Some(beat) = self.heartbeat.get() {
            beat.stop();
            if let Some(store) = &self.store {
                // A connection that fails here fails the goodbye next, which says so.
                let _ = store.group_leave(store::liveness::GROUP);
            }
        }
    }

    /// Leaves the job at finalize: says goodbye to the store; PE 0 hosting the store then
    /// waits up to `timeout` for every other PE's goodbye. Then closes what the unique ids
    /// this process made still held.
    pub(crate) fn goodbye(&self, timeout: Duration) -> Result<()> {
        if let Some(node) = &self.node {
            node.finalizing();
        }
        if let Some(launcher) = &self.launcher {
            launcher.leaving();
        }
        self.stop_heartbeat();
        if let Some(store) = &self.store {
            store.goodbye()?;
        }
        if let Some(node) = &self.node {
            node.wait_for_goodbyes(timeout)?;
        }
        uniqueid::release_all();
        Ok(())
    }

    /// Leaves a job whose start failed on this PE without ending it for the others: says
    /// goodbye and, as PE 0 hosting the store, waits for the goodbyes of the PEs in `seen`.
    fn leave(&self, seen: &[u32], timeout: Duration) {
        if let Some(node) = &self.node {
            node.finalizing();
        }
        if let Some(launcher) = &self.launcher {
            launcher.leaving();
        }
        self.stop_heartbeat();
        if let Some(store) = &self.store {
            let _ = store.goodbye();
        }
        if let Some(node) = &self.node {
            node.wait_for_goodbyes_of(seen, timeout);
        }
    }
}

/// Joins the job this process belongs to, as `how` says, and returns this PE's membership:
/// picks the launcher (`shmemrun`, PMI-1, PMIx, torchrun-style variables, attributes, unique
/// ids), the meeting place (the launcher's store, PE 0's at a node-local socket or on TCP),
/// what TCP trusts (TLS) and the key-value service that carries what PEs must agree on first.
/// Every wait is bounded by `timeouts.init`.
pub(crate) fn join(config: &Config, how: Joining, timeouts: Timeouts) -> Result<Bootstrap> {
    let (launch, trust, job) = match how {
        Joining::Environment => {
            let launch = launch::detect(launch::Hints {
                job_id: config.job_id.as_deref(),
                store: config.bootstrap_addr.as_deref(),
                kvs: Choice::from_word(config.bootstrap_kvs),
                pmix_lib: config.pmix_lib.as_deref(),
                port_range: config.port_range,
            })?;
            (launch, None, None)
        }
        Joining::Attributes(job) => {
            let (launch, trust) = attrs::launch(&job, config.tls_disable)?;
            (launch, trust, Some(job))
        }
    };
    let (rank, size) = (launch.my_pe() as usize, launch.n_pes() as usize);
    shmem_base::log::set_pe(rank as i32);
    let bootstrap = match (meet_job(config, launch, trust, timeouts.init), &job) {
        (Ok(b), _) => b,
        (Err(e), Some(job)) => return Err(attrs::refused_join(job, e)),
        (Err(e), None) => return Err(e),
    };
    debug_assert_eq!((bootstrap.rank, bootstrap.size), (rank, size));
    if let (Some(job), Some(client)) = (&job, &bootstrap.store) {
        let (seen, checked) = attrs::check(client, job, timeouts.init);
        if let Err(e) = checked {
            // Logged here, before leaving: once this PE has left, PE 0 may end at any time.
            tracing::error!("{}: {e}", job.call);
            bootstrap.leave(&seen, timeouts.control);
            return Err(e.logged());
        }
    }
    Ok(bootstrap)
}

/// What a TCP store's ends trust: off (`SHMEM_TLS_DISABLE=1` or the C API said so, with a
/// warning), the job's CA from `bundle` (`shmemrun`), or the user's certificates; with none of
/// these, a clear refusal.
fn trust_for(
    config: &Config,
    addr: &addr::StoreAddr,
    bundle: Option<OwnedFd>,
    my_pe: u32,
    launcher_serves: bool,
) -> Result<Trust> {
    // Said once per job: by the store's host (shmemrun says it itself).
    let host = my_pe == 0 && !launcher_serves;
    if tls::off_by_choice(config.tls_disable, addr, host) {
        return Ok(Trust::Off);
    }
    let user = tls::user_settings();
    if let Some(fd) = bundle {
        let bytes = read_sealed(&fd)?;
        return tls::identity_from_bundle(&bytes)
            .map(Trust::JobCa)
            .map_err(|source| Error::Tls {
                what: "the job's TLS bundle from shmemrun".into(),
                source,
            });
    }
    if let Some(u) = user.filter(|u| u.enabled == Some(true)) {
        return tls::load_user_identity(&u.info, u.key_pem.as_deref(), u.key_password.as_deref())
            .map(Trust::User)
            .map_err(|source| Error::Tls {
                what: "TLS certificates of the job's store".into(),
                source,
            });
    }
    Err(Error::Launch(LaunchError::NoCertificates {
        addr: addr.clone(),
    }))
}

/// The whole content of the memfd `shmemrun` handed over, read at offset 0 (the file offset is
/// shared with the launcher and every other PE).
fn read_sealed(fd: &OwnedFd) -> Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::from(fd.try_clone().map_err(|e| Error::os(env::RUN_TLS_FD, e))?);
    let len = file
        .metadata()
        .map_err(|e| Error::os(env::RUN_TLS_FD, e))?
        .len();
    if len > 1 << 20 {
        return Err(Error::BadEnv {
            name: env::RUN_TLS_FD,
            value: format!("a descriptor of {len} bytes"),
            reason: "not the job's TLS bundle".into(),
        });
    }
    let mut bytes = vec![0u8; len as usize];
    file.read_exact_at(&mut bytes, 0)
        .map_err(|e| Error::os("reading SHMEM_RUN_TLS_FD", e))?;
    Ok(bytes)
}

/// Meets the other PEs of the job `launch` describes: connects to the store (or hosts it, as
/// PE 0 under other launchers) and learns which PEs share this node.
fn meet_job(
    config: &Config,
    launch: Launch,
    trust: Option<Trust>,
    timeout: Duration,
) -> Result<Bootstrap> {
    let (rank, size) = (launch.my_pe() as usize, launch.n_pes() as usize);
    let joined = |store: Option<Client>, store_name: String, node, nodes| Bootstrap {
        rank,
        size,
        nodes,
        store: store.map(Arc::new),
        store_name,
        node,
        launcher: None,
        heartbeat: OnceLock::new(),
    };
    // Started as soon as the connection is up, so that a launcher killed during the rest of
    // start-up is noticed too.
    let watched = |client: &Client| {
        client
            .watch_socket()
            .map_err(|e| Error::os("duplicating the store connection", e))
            .and_then(LauncherWatch::start)
    };
    Ok(match launch {
        Launch::Alone => Bootstrap::alone(),
        Launch::Shmemrun {
            my_pe,
            n_pes,
            socket,
        } => {
            let client = Client::connect_inherited(socket, my_pe, n_pes, timeout)?;
            let launcher = watched(&client)?;
            Bootstrap {
                launcher: Some(launcher),
                ..joined(
                    Some(client),
                    "shmemrun's store".into(),
                    None,
                    Nodes::one(size, rank),
                )
            }
        }
        Launch::ShmemrunTcp {
            my_pe,
            n_pes,
            store,
            tls_bundle,
            job_id,
        } => {
            let trust = match trust {
                Some(t) => t,
                None => trust_for(config, &store, tls_bundle, my_pe, true)?,
            };
            let dial = meet::dial(&store, &trust, &job_id)?;
            let client = Client::connect_tcp(&dial, my_pe, n_pes, timeout)?;
            let launcher = watched(&client)?;
            let map = locality::share(&client, timeout).1?;
            let node_store = NodeStore::of(&map.numbers(), my_pe);
            node::rendezvous::attach(&client, &node_store, timeout)?;
            Bootstrap {
                launcher: Some(launcher),
                ..joined(
                    Some(client),
                    format!("shmemrun's store at {store}"),
                    None,
                    Nodes::from_map(&map, rank),
                )
            }
        }
        Launch::NodeLocal(mut plan) => {
            let mut trust = trust;
            let pmix_lib = config.pmix_lib.as_deref();
            match plan.kvs.take() {
                // A job across nodes: PE 0's TCP store, its address and pinned certificate
                // through the service, as a unique id.
                Some(FromKvs::Store(service)) => {
                    let me = (plan.my_pe, plan.n_pes);
                    let id = kvs::through(&service, pmix_lib, me, timeout, |kvs| {
                        kvs::share_store(kvs, plan.my_pe, config.port_range, timeout)
                    })?;
                    trust = Some(attrs::pinned(
                        "shmem_init",
                        plan.my_pe,
                        &id,
                        config.tls_disable,
                    )?);
                    plan.store = Some(id.store_addr());
                    plan.job_id = id.tag();
                }
                // One node: only the job id through the service.
                Some(FromKvs::JobId(service)) => {
                    let me = (plan.my_pe, plan.n_pes);
                    plan.job_id = kvs::through(&service, pmix_lib, me, timeout, |kvs| {
                        kvs::share_job_id(kvs, plan.my_pe, timeout)
                    })?;
                }
                None => {}
            }
            let meeting = match &plan.store {
                None => Meeting::Abstract,
                Some(addr) => {
                    let trust = match trust {
                        Some(t) => t,
                        None => trust_for(config, addr, None, plan.my_pe, false)?,
                    };
                    Meeting::Tcp {
                        addr: addr.clone(),
                        trust,
                    }
                }
            };
            let (client, job) = meet::join(&plan, &meeting, timeout, config.heartbeat_timeout)?;
            let nodes = match job.nodes() {
                Some(map) => Nodes::from_map(map, rank),
                None => Nodes::one(size, rank),
            };
            let store_name = match &meeting {
                Meeting::Tcp { addr, .. } => {
                    format!("PE 0's store at {addr} (on {})", nodes.describe(0))
                }
                Meeting::Abstract => "PE 0's store".into(),
            };
            joined(Some(client), store_name, Some(job), nodes)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_map_lists_the_local_pes_in_order() {
        let nodes = Nodes::new(vec![0, 1, 0, 1, 2], 3);
        assert_eq!(nodes.local_pes(), &[1, 3]);
        assert_eq!(nodes.local_rank(), 1);
        assert_eq!(nodes.node_of(4), 2);
        assert_eq!(nodes.count(), 3);
        assert!(nodes.is_local(1) && !nodes.is_local(0) && !nodes.is_local(4));
        assert_eq!(nodes.describe(4), "node 2");
        let one = Nodes::one(3, 2);
        assert_eq!(one.local_pes(), &[0, 1, 2]);
        assert_eq!(one.local_rank(), 2);
        assert_eq!(one.count(), 1);
        assert!(one.is_local(0));
    }

    #[test]
    fn the_shared_team_is_the_node_or_its_largest_progression() {
        // Blocks, round-robin and a node alone: the whole node.
        assert_eq!(Nodes::new(vec![0, 0, 1, 1], 3).shared_team(), (2, 1, 2));
        assert_eq!(Nodes::new(vec![0, 1, 0, 1, 2], 1).shared_team(), (1, 2, 2));
        assert_eq!(Nodes::new(vec![0, 1, 0, 1, 2], 4).shared_team(), (4, 1, 1));
        assert_eq!(Nodes::one(5, 3).shared_team(), (0, 1, 5));
        // Node 0 holds 0, 1, 2, 4, 6: the largest progression is 0, 2, 4, 6; PE 1 is left alone.
        let node_of = vec![0, 0, 0, 1, 0, 1, 0];
        for pe in [0, 2, 4, 6] {
            assert_eq!(Nodes::new(node_of.clone(), pe).shared_team(), (0, 2, 4));
        }
        assert_eq!(Nodes::new(node_of.clone(), 1).shared_team(), (1, 1, 1));
        assert_eq!(Nodes::new(node_of, 5).shared_team(), (3, 2, 2));
        // Ties: 0, 1 before 0, 3 and 1, 3; then 3 alone.
        let node_of = vec![0, 0, 1, 0];
        assert_eq!(Nodes::new(node_of.clone(), 1).shared_team(), (0, 1, 2));
        assert_eq!(Nodes::new(node_of, 3).shared_team(), (3, 1, 1));
    }

    /// Four PEs on two nodes (0, 1 | 2, 3) of one job's store, each node with its own
    /// descriptor store: every PE gets its node's descriptors, at their PEs, and none of the
    /// other node's, though both nodes publish under the same prefix and local ranks.
    #[test]
    fn descriptors_are_exchanged_per_node() {
        use std::os::unix::net::UnixStream;
        const T: Duration = Duration::from_secs(30);
        let node_of = vec![0, 0, 1, 1];
        let (server, _events) = Server::new(4);
        let ends: Vec<UnixStream> = (0..4)
            .map(|pe| {
                let (mine, theirs) = UnixStream::pair().unwrap();
                server.serve_unix(pe, theirs).unwrap();
                mine
            })
            .collect();
        let pes: Vec<_> = (ends.into_iter().enumerate())
            .map(|(pe, end)| {
                let node_of = node_of.clone();
                std::thread::spawn(move || {
                    let client = Client::connect_inherited(end.into(), pe as u32, 4, T).unwrap();
                    let store = NodeStore::of(&node_of, pe as u32);
                    node::rendezvous::attach(&client, &store, T).unwrap();
                    let me = Bootstrap {
                        rank: pe,
                        size: 4,
                        nodes: Nodes::new(node_of, pe),
                        store: Some(Arc::new(client)),
                        store_name: String::new(),
                        node: None,
                        launcher: None,
                        heartbeat: OnceLock::new(),
                    };
                    let fd = crate::mapping::memfd("bootstrap-test", 4096).unwrap();
                    rustix::io::write(&fd, &[pe as u8]).unwrap();
                    let fds = me.exchange_fds("t/", fd.as_fd(), T).unwrap();
                    let got: Vec<Option<u8>> = (fds.iter())
                        .map(|fd| {
                            fd.as_ref().map(|fd| {
                                let mut byte = [0u8];
                                rustix::io::pread(fd, &mut byte, 0).unwrap();
                                byte[0]
                            })
                        })
                        .collect();
                    me.barrier(T).unwrap();
                    got
                })
            })
            .collect();
        let got: Vec<_> = pes.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(got[0], vec![Some(0), Some(1), None, None]);
        assert_eq!(got[1], got[0]);
        assert_eq!(got[2], vec![None, None, Some(2), Some(3)]);
        assert_eq!(got[3], got[2]);
    }

    #[test]
    fn a_pe_alone_gathers_and_exchanges_its_own() {
        let alone = Bootstrap::alone();
        assert_eq!(
            alone.allgather(b"x", Duration::ZERO).unwrap(),
            vec![b"x".to_vec()]
        );
        alone.barrier(Duration::ZERO).unwrap();
        let fd = crate::mapping::memfd("bootstrap-test", 4096).unwrap();
        let fds = alone
            .exchange_fds("t/", fd.as_fd(), Duration::ZERO)
            .unwrap();
        assert_eq!(fds.len(), 1);
        assert!(fds[0].is_some());
    }
}
