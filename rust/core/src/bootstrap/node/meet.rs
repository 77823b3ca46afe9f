//! Bootstrap for launchers other than `shmemrun` (Open MPI `mpirun`, MPICH/Hydra, Slurm,
//! torchrun, or explicit attributes): PE 0 hosts the job's store in its own process, on
//! threads, and every PE (PE 0 too, over a socket pair) is its client exactly as under
//! `shmemrun`. PEs meet at an abstract Unix socket named after the user and the job, so nothing
//! is left in any file system, even after `kill -9`; or, when the user gives an address
//! (`SHMEM_BOOTSTRAP_ADDR`), at a TCP port, TLS by default, with descriptors going through
//! each node's own `rendezvous` store; such a job may span nodes.
//!
//! Owns that socket, the acceptor (only processes of this user get in: SO_PEERCRED), the job
//! page (one shared word through which PE 0 tells every PE why the job ended), PE 0's thread
//! that ends the job when a PE fails or calls `shmem_global_exit` (and, in a job across nodes,
//! its watch on the PEs' heartbeats, which ends the job when a node goes silent), and the
//! watcher in every other PE that ends that PE when PE 0's store goes away. So a failure ends
//! every PE whatever the launcher does about failed processes. Must never let a PE wait for a peer that is gone,
//! and never cut a PE's goodbye short: PE 0 keeps the store up until every PE has said it.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags};
use rustix::io::{fcntl_dupfd_cloexec, Errno};
use rustix::net::sockopt::socket_peercred;

use crate::bootstrap::bits::hex;
use crate::bootstrap::launcher::launch::NodeLocal;
use crate::bootstrap::node::locality::{self, NodeMap};
use crate::bootstrap::node::rendezvous::{self, NodeStore};
use crate::bootstrap::store::addr::StoreAddr;
use crate::bootstrap::store::tls::Trust;
use crate::bootstrap::store::{liveness, Client, Server, StoreEvent, TcpDial};
use crate::error::{Error, LaunchError, Result};
use crate::mapping::{self, Mapping};

/// Longest abstract socket name (`sun_path` less its leading NUL).
const MAX_NAME: usize = 107;
/// Store key of the job page's descriptor.
const JOB_PAGE_KEY: &str = "node/job-page";
const JOB_PAGE_LEN: usize = 4096;
/// Offset in the job page of the word saying why the job ended (0 while it runs).
const END_WORD: usize = 0;
const END_SET: u64 = 1 << 63;
const END_GLOBAL_EXIT: u64 = 1 << 62;
/// With [`END_GLOBAL_EXIT`]: the library stopped the job after an error.
const END_AFTER_ERROR: u64 = 1 << 61;
/// Without [`END_GLOBAL_EXIT`]: PE 0 found a node silent (its heartbeats stopped).
const END_UNREACHABLE: u64 = 1 << 60;
const END_PE_MASK: u64 = (1 << 29) - 1;
/// Longest nap between attempts to reach PE 0's socket (PE 0 may start last).
const LONGEST_CONNECT_NAP: Duration = Duration::from_millis(50);
/// Stack of the job's helper threads: they wait on a channel, a socket or `accept`.
const THREAD_STACK: usize = 128 * 1024;

/// Why the job ended, as PE 0 records it in the job page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// PE `pe` called `shmem_global_exit(status)`, or (`after_error`) the library stopped the
    /// job there after an error it reported.
    GlobalExit {
        pe: u32,
        status: i32,
        after_error: bool,
    },
    /// PE `pe` left without `shmem_finalize`: it exited, died, or broke the store protocol.
    Lost { pe: u32 },
    /// The heartbeats of a node's PEs stopped: the node is cut off (PE 0's log names it).
    Unreachable,
}

impl Ending {
    fn encode(self) -> u64 {
        match self {
            Ending::GlobalExit {
                pe,
                status,
                after_error,
            } => {
                END_SET
                    | END_GLOBAL_EXIT
                    | if after_error { END_AFTER_ERROR } else { 0 }
                    | (u64::from(pe) & END_PE_MASK) << 32
                    | status as u32 as u64
            }
            Ending::Lost { pe } => END_SET | (u64::from(pe) & END_PE_MASK) << 32,
            Ending::Unreachable => END_SET | END_UNREACHABLE,
        }
    }

    fn decode(word: u64) -> Option<Ending> {
        if word & END_SET == 0 {
            return None;
        }
        let pe = ((word >> 32) & END_PE_MASK) as u32;
        Some(if word & END_GLOBAL_EXIT != 0 {
            Ending::GlobalExit {
                pe,
                status: word as u32 as i32,
                after_error: word & END_AFTER_ERROR != 0,
            }
        } else if word & END_UNREACHABLE != 0 {
            Ending::Unreachable
        } else {
            Ending::Lost { pe }
        })
    }

    /// The line PE `me` logs as it ends the job for this.
    fn told_by(self, me: u32) -> String {
        match self {
            // This PE's own connection closed while it runs: it is on its way out (its
            // program exits, or the interpreter tears the library down) without having
            // finalized. It is not gone, and says so as itself.
            Ending::Lost { pe } if pe == me => {
                "this PE is exiting without shmem_finalize; ending the job (the other PEs exit \
                 with status 1)"
                    .into()
            }
            _ => format!("{self}; ending the job"),
        }
    }

    /// Exit status of every PE the job's end reaches.
    fn status(self) -> i32 {
        match self {
            Ending::GlobalExit { status, .. } => status,
            Ending::Lost { .. } | Ending::Unreachable => 1,
        }
    }
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::GlobalExit {
                pe,
                status,
                after_error: false,
            } => write!(f, "PE {pe} called shmem_global_exit({status})"),
            Ending::GlobalExit {
                pe,
                status,
                after_error: true,
            } => write!(
                f,
                "PE {pe} stopped the job after an error (status {status})"
            ),
            Ending::Lost { pe } => write!(f, "PE {pe} exited without shmem_finalize or died"),
            Ending::Unreachable => write!(
                f,
                "a node of the job is unreachable (PE 0's log names it and its PEs)"
            ),
        }
    }
}

/// This PE's part in a node-local job.
#[derive(Debug)]
pub(crate) struct NodeJob {
    shared: Arc<Shared>,
    /// Every PE's node, when the PEs met over TCP (at an abstract socket they share one).
    nodes: Option<NodeMap>,
    /// PE 0: the store it hosts, whose held-back refusal summary is written at finalize.
    store: Option<Server>,
}

/// What this PE's threads share about the job.
#[derive(Debug)]
struct Shared {
    my_pe: u32,
    /// The job page, mapped by every PE of PE 0's node (a PE of another node holds a page of
    /// its own that nobody writes: descriptors do not cross nodes).
    page: Mapping,
    /// Whether `page` is PE 0's, so that it says how the job ended.
    page_shared: bool,
    /// Set before this PE's goodbye: from then on PE 0's store closing is the normal end.
    finalizing: AtomicBool,
    /// PE 0: which PEs are done with the store.
    progress: Mutex<Progress>,
    changed: Condvar,
}

#[derive(Debug)]
struct Progress {
    /// Indexed by PE: its goodbye was answered, or its connection closed.
    done: Vec<bool>,
    /// PE 0 finished: every PE said goodbye, the job's end is no longer watched.
    finished: bool,
}

impl Shared {
    fn new(plan: &NodeLocal, page: Mapping) -> Shared {
        Shared {
            my_pe: plan.my_pe,
            page,
            page_shared: true,
            finalizing: AtomicBool::new(false),
            progress: Mutex::new(Progress {
                done: vec![false; plan.n_pes as usize],
                finished: false,
            }),
            changed: Condvar::new(),
        }
    }

    fn progress(&self) -> MutexGuard<'_, Progress> {
        // Panics abort the process (panic = "abort"); the state is plain flags.
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that `pe` is done with the store; returns whether PE 0 has finished.
    fn mark_done(&self, pe: u32) -> bool {
        let mut p = self.progress();
        if let Some(done) = p.done.get_mut(pe as usize) {
            *done = true;
        }
        self.changed.notify_all();
        p.finished
    }

    /// Ends this PE, and so the job, for `ending`; the first ending recorded wins.
    fn end_job(&self, ending: Ending) -> ! {
        self.end_job_saying(ending, None)
    }

    /// [`Shared::end_job`], saying `said` (without "; ending the job") if `ending` is the
    /// first recorded.
    fn end_job_saying(&self, ending: Ending, said: Option<&str>) -> ! {
        let word = self.page.atomic_u64(END_WORD);
        let (ending, first) =
            match word.compare_exchange(0, ending.encode(), Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => (ending, true),
                Err(first) => (Ending::decode(first).unwrap_or(ending), false),
            };
        let line = match said.filter(|_| first) {
            Some(said) => format!("{said}; ending the job"),
            None => ending.told_by(self.my_pe),
        };
        match ending {
            Ending::GlobalExit { status: 0, .. } => tracing::info!("{line}"),
            _ => tracing::error!("{line}"),
        }
        crate::bootstrap::ending::end_process(ending.status())
    }
}

/// `shmem-<uid>-<launcher>-<job id>`, or a hash in place of a job id too long for the name.
fn socket_name(uid: u32, tag: &str, job_id: &str) -> Vec<u8> {
    let name = format!("shmem-{uid}-{tag}-{job_id}");
    if name.len() <= MAX_NAME {
        return name.into_bytes();
    }
    // FNV-1a: the same on every PE (unlike std's seeded hashers).
    let hash = job_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("shmem-{uid}-{tag}-h{hash:016x}").into_bytes()
}

/// The socket name as messages show it (`@` for the abstract namespace, as `ss` does).
fn shown(name: &[u8]) -> String {
    format!("@{}", String::from_utf8_lossy(name))
}

/// Where the PEs of a job without `shmemrun` meet PE 0's store.
#[derive(Debug)]
pub(crate) enum Meeting {
    /// An abstract Unix socket named after the user and the job id (one node).
    Abstract,
    /// A TCP address, with what both ends trust.
    Tcp {
        /// Where PE 0 listens (and the others dial).
        addr: StoreAddr,
        /// TLS settings of both ends.
        trust: Trust,
    },
}

/// How a PE dials a TCP store: plain, or TLS as `trust` says (the store's certificate naming
/// the address dialled, or pinned by a unique id). A job with a secret says it in HELLO.
pub(crate) fn dial(addr: &StoreAddr, trust: &Trust, job: &str) -> Result<TcpDial> {
    let tls = trust
        .client_config()
        .map_err(|source| Error::Tls {
            what: format!("TLS of the store at {addr}"),
            source,
        })?
        .map(|config| (config, addr.server_name()));
    Ok(TcpDial {
        addr: addr.clone(),
        tls,
        job: trust.secret().map_or_else(|| job.to_string(), |s| hex(s)),
    })
}

/// Joins the job `plan` describes: PE 0 opens the job's store and serves it; the others reach
/// it, retrying until `timeout` since PE 0 may start last. Returns this PE's store client.
///
/// In a job across nodes, PE 0 also watches the heartbeats of the PEs (shmem-store's
/// `liveness`) and ends the job when a node goes silent for `heartbeat`.
pub(crate) fn join(
    plan: &NodeLocal,
    meeting: &Meeting,
    timeout: Duration,
    heartbeat: Duration,
) -> Result<(Client, NodeJob)> {
    if let Meeting::Tcp { addr, trust } = meeting {
        return if plan.my_pe == 0 {
            host_tcp(plan, addr, trust, timeout, heartbeat)
        } else {
            guest_tcp(plan, addr, trust, timeout)
        };
    }
    let uid = rustix::process::geteuid().as_raw();
    let name = socket_name(uid, plan.tag, &plan.job_id);
    let addr = SocketAddr::from_abstract_name(&name)
        .map_err(|e| Error::os(format!("socket name {}", shown(&name)), e))?;
    if plan.my_pe == 0 {
        host(plan, &name, &addr, uid, timeout)
    } else {
        guest(plan, &name, &addr, timeout)
    }
}

fn host(
    plan: &NodeLocal,
    name: &[u8],
    addr: &SocketAddr,
    uid: u32,
    timeout: Duration,
) -> Result<(Client, NodeJob)> {
    let listener = UnixListener::bind_addr(addr).map_err(|e| {
        if e.kind() == io::ErrorKind::AddrInUse {
            Error::Launch(LaunchError::JobIdInUse {
                socket: shown(name),
                job_id: plan.job_id.clone(),
                launcher: plan.launcher,
            })
        } else {
            Error::os(format!("opening the job's store at {}", shown(name)), e)
        }
    })?;
    let (server, events) = Server::new(plan.n_pes);
    let server = Arc::new(server);
    let (mine, theirs) =
        UnixStream::pair().map_err(|e| Error::os("socket pair to PE 0's own store", e))?;
    server
        .serve_unix(0, theirs)
        .map_err(|e| Error::os("serving PE 0's own store connection", e))?;
    let acceptor = Arc::clone(&server);
    spawn("shmem-accept", move || {
        accept_loop(&listener, &acceptor, uid)
    })?;
    let client = Client::connect_inherited(mine.into(), 0, plan.n_pes, timeout)?;
    let fd = mapping::memfd("shmem-job", JOB_PAGE_LEN)?;
    client.put_fd(JOB_PAGE_KEY, fd.as_fd())?;
    let shared = Arc::new(Shared::new(plan, Mapping::map_shared(&fd, JOB_PAGE_LEN)?));
    let watched = Arc::clone(&shared);
    let store = Server::clone(&server);
    spawn("shmem-job", move || {
        // Keeps the server (and with it the job's state) alive as long as events can come.
        let _server = server;
        watch_events(events, &watched);
    })?;
    Ok((
        client,
        NodeJob {
            shared,
            nodes: None,
            store: Some(store),
        },
    ))
}

/// PE 0 of a TCP job: listens at `addr` (or on the listener `trust` holds, bound by
/// `shmem_get_uniqueid`), serves its own connection over a socket pair, and opens its node's
/// descriptor store.
fn host_tcp(
    plan: &NodeLocal,
    addr: &StoreAddr,
    trust: &Trust,
    timeout: Duration,
    heartbeat: Duration,
) -> Result<(Client, NodeJob)> {
    let tls = trust.server_config().map_err(|source| Error::Tls {
        what: format!("TLS of the store at {addr}"),
        source,
    })?;
    let listener = match trust.bound_listener() {
        Some(l) => l.map_err(|e| Error::os("the unique id's listening socket", e))?,
        None => addr
            .bind()
            .map_err(|source| Error::Launch(LaunchError::StoreNotOpened { source }))?,
    };
    let bound = listener
        .local_addr()
        .map_err(|e| Error::os("the store's address", e))?;
    let (server, events) = match trust.secret() {
        Some(secret) => Server::for_secret(plan.n_pes, &hex(secret)),
        None => Server::for_job(plan.n_pes, &plan.job_id),
    };
    server
        .serve_tcp(listener, tls)
        .map_err(|e| Error::os("starting the store's TCP acceptor", e))?;
    tracing::info!(
        "PE 0 serves the job's store at {} ({})",
        crate::bootstrap::store::addr::url(bound.ip(), bound.port()),
        if trust.uses_tls() {
            "TLS 1.3"
        } else {
            "plain TCP"
        }
    );
    let (mine, theirs) =
        UnixStream::pair().map_err(|e| Error::os("socket pair to PE 0's own store", e))?;
    server
        .serve_unix(0, theirs)
        .map_err(|e| Error::os("serving PE 0's own store connection", e))?;
    let client = Client::connect_inherited(mine.into(), 0, plan.n_pes, timeout)?;
    let nodes = match locality::share(&client, timeout) {
        (_, Ok(nodes)) => nodes,
        (seen, Err(e)) => {
            // The others that got this far fail too: keep the store up until they have left.
            wait_for_departures(&events, &seen, timeout);
            return Err(e);
        }
    };
    // PE 0's own link carries descriptors, but the others' do not: every PE uses its node's
    // descriptor store, PE 0 too (it hosts the one of its node).
    rendezvous::attach(&client, &NodeStore::of(&nodes.numbers(), 0), timeout)?;
    let fd = mapping::memfd("shmem-job", JOB_PAGE_LEN)?;
    client.put_fd(JOB_PAGE_KEY, fd.as_fd())?;
    let shared = Arc::new(Shared::new(plan, Mapping::map_shared(&fd, JOB_PAGE_LEN)?));
    if nodes.numbers().iter().any(|&n| n != 0) {
        let watched = Arc::clone(&shared);
        liveness::watch(&server, heartbeat, move |line| {
            watched.end_job_saying(Ending::Unreachable, Some(&line))
        })
        .map_err(|e| Error::os("starting thread shmem-liveness", e))?;
    }
    let watched = Arc::clone(&shared);
    let store = server.clone();
    spawn("shmem-job", move || {
        let _server = server;
        watch_events(events, &watched);
    })?;
    Ok((
        client,
        NodeJob {
            shared,
            nodes: Some(nodes),
            store: Some(store),
        },
    ))
}

/// Another PE of a TCP job: dials PE 0's store (retrying until `timeout`), attaches the
/// descriptor store, maps the job page and watches the connection.
fn guest_tcp(
    plan: &NodeLocal,
    addr: &StoreAddr,
    trust: &Trust,
    timeout: Duration,
) -> Result<(Client, NodeJob)> {
    let dial = dial(addr, trust, &plan.job_id)?;
    let client = Client::connect_tcp(&dial, plan.my_pe, plan.n_pes, timeout)?;
    let watched = client
        .watch_socket()
        .map_err(|e| Error::os("duplicating the store connection", e))?;
    let nodes = locality::share(&client, timeout).1?;
    rendezvous::attach(
        &client,
        &NodeStore::of(&nodes.numbers(), plan.my_pe),
        timeout,
    )?;
    finish_guest(plan, client, watched, Some(nodes), timeout)
}

fn guest(
    plan: &NodeLocal,
    name: &[u8],
    addr: &SocketAddr,
    timeout: Duration,
) -> Result<(Client, NodeJob)> {
    let stream = connect(plan, name, addr, timeout)?;
    // The watcher's own handle on the connection: it outlives the client if need be.
    let watched = fcntl_dupfd_cloexec(&stream, 0)
        .map_err(|e| Error::os("duplicating the store connection", e))?;
    let client = Client::connect_inherited(stream.into(), plan.my_pe, plan.n_pes, timeout)?;
    finish_guest(plan, client, watched, None, timeout)
}

/// Maps the job page and starts the watcher of PE 0's store.
fn finish_guest(
    plan: &NodeLocal,
    client: Client,
    watched: OwnedFd,
    nodes: Option<NodeMap>,
    timeout: Duration,
) -> Result<(Client, NodeJob)> {
    let with_pe0 = nodes.as_ref().is_none_or(|map| {
        let numbers = map.numbers();
        numbers[plan.my_pe as usize] == numbers[0]
    });
    let fd = if with_pe0 {
        let fd = (client.get_fd(JOB_PAGE_KEY, timeout))
            .map_err(|e| e.unpublished(0, "the job page (its record of how the job ends)"))?;
        let len = mapping::file_len(fd.as_fd())?;
        if len != JOB_PAGE_LEN {
            return Err(Error::Launch(LaunchError::ForeignBuild {
                what: format!("the job page from PE 0's store is {len} bytes, not {JOB_PAGE_LEN}"),
                who: "PE 0",
            }));
        }
        fd
    } else {
        mapping::memfd("shmem-job", JOB_PAGE_LEN)?
    };
    let shared = Arc::new(Shared {
        page_shared: with_pe0,
        ..Shared::new(plan, Mapping::map_shared(&fd, JOB_PAGE_LEN)?)
    });
    let watcher = Arc::clone(&shared);
    spawn("shmem-job", move || watch_store(&watched, &watcher))?;
    Ok((
        client,
        NodeJob {
            shared,
            nodes,
            store: None,
        },
    ))
}

/// Connects to PE 0's socket, retrying while nobody listens there yet.
fn connect(
    plan: &NodeLocal,
    name: &[u8],
    addr: &SocketAddr,
    timeout: Duration,
) -> Result<UnixStream> {
    let deadline = Instant::now() + timeout;
    let mut nap = Duration::from_millis(1);
    loop {
        match UnixStream::connect_addr(addr) {
            Ok(stream) => return Ok(stream),
            // Not listening yet (refused), or its backlog is full (would block).
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionRefused
                        | io::ErrorKind::NotFound
                        | io::ErrorKind::WouldBlock
                ) => {}
            Err(e) => {
                return Err(Error::os(
                    format!("connecting to the job's store at {}", shown(name)),
                    e,
                ))
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::Timeout {
                step: format!("PE 0 did not open the job's store at {}", shown(name)),
                after: timeout,
                bound: format!(
                    "{}; {} job id {}",
                    crate::env::INIT_TIMEOUT,
                    plan.launcher,
                    plan.job_id
                ),
                why: ": PE 0 did not start, failed, or runs on another node".into(),
            });
        }
        std::thread::sleep(nap.min(left));
        nap = (nap * 2).min(LONGEST_CONNECT_NAP);
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<()> {
    std::thread::Builder::new()
        .name(name.into())
        .stack_size(THREAD_STACK)
        .spawn(f)
        .map(drop)
        .map_err(|e| Error::os(format!("starting thread {name}"), e))
}

/// Serves every connection of this user's processes; refuses (and logs) the rest. Runs as
/// long as the process, so that a stray connection is refused instead of left hanging.
pub(crate) fn accept_loop(listener: &UnixListener, server: &Server, uid: u32) {
    loop {
        match listener.accept() {
            Ok((stream, _)) => match admit(&stream, uid) {
                Ok(()) => {
                    if let Err(e) = server.serve_accepted(stream) {
                        tracing::warn!("store: cannot serve a new connection: {e}");
                    }
                }
                Err(why) => tracing::warn!("store: refused a connection: {why}"),
            },
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                ) => {}
            Err(e) => {
                tracing::error!("store: stopped accepting connections: {e}");
                return;
            }
        }
    }
}

/// Lets in only processes running as this job's user: every process on the node can reach an
/// abstract socket, but all PEs of a job run as one user.
pub(crate) fn admit(stream: &UnixStream, uid: u32) -> std::result::Result<(), Refused> {
    let cred = socket_peercred(stream).map_err(Refused::NoCredentials)?;
    same_user(cred.uid.as_raw(), uid).map_err(|e| match e {
        Refused::OtherUser { peer, mine, .. } => Refused::OtherUser {
            pid: Some(cred.pid.as_raw_nonzero().get()),
            peer,
            mine,
        },
        e => e,
    })
}

fn same_user(peer: u32, mine: u32) -> std::result::Result<(), Refused> {
    if peer == mine {
        Ok(())
    } else {
        Err(Refused::OtherUser {
            pid: None,
            peer,
            mine,
        })
    }
}

/// Why a connection to PE 0's node-local store was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    /// The peer's credentials could not be read.
    #[error("cannot read the peer's credentials (SO_PEERCRED): {0}")]
    NoCredentials(rustix::io::Errno),
    /// The peer runs as another user.
    #[error(
        "{}uid {peer} is not this job's user (uid {mine})",
        .pid.map_or_else(String::new, |p| format!("pid {p}: "))
    )]
    OtherUser {
        /// The peer's process, once known.
        pid: Option<i32>,
        /// The peer's user.
        peer: u32,
        /// The job's.
        mine: u32,
    },
}

/// PE 0: ends the job on the first PE that fails or calls `shmem_global_exit`; counts goodbyes.
fn watch_events(events: Receiver<StoreEvent>, shared: &Shared) {
    for event in events {
        match event {
            StoreEvent::Abort {
                rank,
                status,
                after_error,
            } => shared.end_job(Ending::GlobalExit {
                pe: rank,
                status,
                after_error,
            }),
            StoreEvent::Goodbye { rank }
            | StoreEvent::Disconnected {
                rank,
                said_goodbye: true,
            } => {
                shared.mark_done(rank);
            }
            StoreEvent::Disconnected {
                rank,
                said_goodbye: false,
            } => {
                if !shared.mark_done(rank) {
                    shared.end_job(Ending::Lost { pe: rank });
                }
            }
            // Logged by the server; the connection's Disconnected follows.
            StoreEvent::ProtocolError { .. } => {}
        }
    }
}

/// PE 0 of a job that failed at start: waits until each PE of `pes` has said goodbye or gone,
/// at most `timeout`, so that PE 0's exit cuts none of their last replies short.
fn wait_for_departures(events: &Receiver<StoreEvent>, pes: &[u32], timeout: Duration) {
    let deadline = Instant::now() + timeout;
    let mut gone = vec![true; pes.iter().max().map_or(0, |&m| m as usize + 1)];
    for &pe in pes.iter().filter(|&&pe| pe != 0) {
        gone[pe as usize] = false;
    }
    while !gone.iter().all(|&g| g) {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(event) = events.recv_timeout(left) else {
            return;
        };
        match event {
            StoreEvent::Goodbye { rank } | StoreEvent::Disconnected { rank, .. } => {
                if let Some(g) = gone.get_mut(rank as usize) {
                    *g = true;
                }
            }
            StoreEvent::Abort { .. } | StoreEvent::ProtocolError { .. } => {}
        }
    }
}

/// Other PEs: waits for PE 0's store to close, then, unless this PE is finalizing, ends this
/// PE the way PE 0 ended the job (or with status 1 if PE 0 itself is gone).
fn watch_store(sock: &OwnedFd, shared: &Shared) {
    loop {
        // RDHUP alone: data arriving for the client's calls never wakes this thread.
        let mut fds = [PollFd::new(sock, PollFlags::RDHUP)];
        match poll(&mut fds, None) {
            Ok(_) if !fds[0].revents().is_empty() => break,
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => {
                tracing::warn!("cannot watch the store connection: {e}");
                return;
            }
        }
    }
    if shared.finalizing.load(Ordering::SeqCst) {
        return;
    }
    match Ending::decode(shared.page.atomic_u64(END_WORD).load(Ordering::SeqCst)) {
        Some(ending) => {
            tracing::debug!("PE 0 ended the job: {ending}");
            crate::bootstrap::ending::end_process(ending.status())
        }
        None if !shared.page_shared => {
            tracing::error!(
                "the job's store closed: PE 0, on another node, ended the job (its log says \
                 why) or died; ending this PE"
            );
            crate::bootstrap::ending::end_process(1)
        }
        None => {
            tracing::error!(
                "lost the job's store: PE 0 exited without shmem_finalize or died; ending this PE"
            );
            crate::bootstrap::ending::end_process(1)
        }
    }
}

impl NodeJob {
    /// Every PE's node, when the PEs met over TCP; `None`: they share this node.
    pub(crate) fn nodes(&self) -> Option<&NodeMap> {
        self.nodes.as_ref()
    }

    /// Whether this PE hosts the job's store (PE 0).
    pub fn hosts_store(&self) -> bool {
        self.shared.my_pe == 0
    }

    /// Call before this PE's goodbye: PE 0's store closing is then the normal end of the job.
    pub fn finalizing(&self) {
        self.shared.finalizing.store(true, Ordering::SeqCst);
    }

    /// PE 0, after its own goodbye: keeps the store up until every PE has said goodbye or
    /// gone, at most `timeout`, so that PE 0's exit cuts no goodbye short. Other PEs return at
    /// once.
    pub fn wait_for_goodbyes(&self, timeout: Duration) -> Result<()> {
        if !self.hosts_store() {
            return Ok(());
        }
        let deadline = Instant::now() + timeout;
        let mut p = self.shared.progress();
        while !p.done.iter().all(|&d| d) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let missing: Vec<String> = (p.done.iter().enumerate())
                    .filter(|(_, &d)| !d)
                    .map(|(pe, _)| pe.to_string())
                    .collect();
                return Err(Error::Timeout {
                    step: format!(
                        "shmem_finalize: PE 0 did not get the goodbye of PE {} to the job's store",
                        missing.join(", ")
                    ),
                    after: timeout,
                    bound: crate::env::INIT_TIMEOUT.into(),
                    why: String::new(),
                });
            }
            p = self
                .shared
                .changed
                .wait_timeout(p, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        p.finished = true;
        if let Some(store) = &self.store {
            store.close();
        }
        Ok(())
    }

    /// PE 0, after its own goodbye at a failed start: keeps the store up until each of `pes`
    /// has said goodbye or gone, at most `timeout`, so that they can read what they need to
    /// report their own error. Other PEs return at once.
    pub fn wait_for_goodbyes_of(&self, pes: &[u32], timeout: Duration) {
        if !self.hosts_store() {
            return;
        }
        let deadline = Instant::now() + timeout;
        let mut p = self.shared.progress();
        while !pes
            .iter()
            .all(|&pe| p.done.get(pe as usize).copied().unwrap_or(true))
        {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            p = self
                .shared
                .changed
                .wait_timeout(p, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        p.finished = true;
    }

    /// PE 0's own `shmem_global_exit` (or, `after_error`, the library's stop after an error
    /// there): ends the job at once (there is no one to tell first).
    pub fn global_exit(&self, status: i32, after_error: bool) -> ! {
        self.shared.end_job(Ending::GlobalExit {
            pe: self.shared.my_pe,
            status,
            after_error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(30);

    #[test]
    fn endings_round_trip() {
        for e in [
            Ending::GlobalExit {
                pe: 0,
                status: 0,
                after_error: false,
            },
            Ending::GlobalExit {
                pe: 7,
                status: -3,
                after_error: false,
            },
            Ending::GlobalExit {
                pe: 1 << 20,
                status: i32::MAX,
                after_error: true,
            },
            Ending::GlobalExit {
                pe: (1 << 29) - 1,
                status: 1,
                after_error: true,
            },
            Ending::Lost { pe: 0 },
            Ending::Lost { pe: 4095 },
            Ending::Unreachable,
        ] {
            assert_eq!(Ending::decode(e.encode()), Some(e));
        }
        assert_eq!(Ending::decode(0), None);
        assert_eq!(Ending::Lost { pe: 2 }.status(), 1);
        assert_eq!(
            Ending::Lost { pe: 2 }.to_string(),
            "PE 2 exited without shmem_finalize or died"
        );
        let exit = |after_error| Ending::GlobalExit {
            pe: 3,
            status: 1,
            after_error,
        };
        assert_eq!(exit(false).to_string(), "PE 3 called shmem_global_exit(1)");
        assert_eq!(
            Ending::Lost { pe: 2 }.told_by(0),
            "PE 2 exited without shmem_finalize or died; ending the job"
        );
        // A PE never reports itself as gone.
        let own = Ending::Lost { pe: 0 }.told_by(0);
        assert!(!own.contains("PE 0"), "{own}");
        assert_eq!(
            own,
            "this PE is exiting without shmem_finalize; ending the job (the other PEs exit with \
             status 1)"
        );
        assert_eq!(
            exit(true).to_string(),
            "PE 3 stopped the job after an error (status 1)"
        );
    }

    #[test]
    fn socket_names_fit_and_differ() {
        assert_eq!(socket_name(1000, "slurm", "17.0"), b"shmem-1000-slurm-17.0");
        let long = "x".repeat(200);
        let a = socket_name(0, "torch", &long);
        let b = socket_name(0, "torch", &format!("{long}y"));
        assert!(a.len() <= MAX_NAME && b.len() <= MAX_NAME);
        assert_ne!(a, b);
        assert_eq!(a, socket_name(0, "torch", &long));
        assert_ne!(socket_name(0, "ompi", "1"), socket_name(1, "ompi", "1"));
    }

    #[test]
    fn only_the_same_user_is_admitted() {
        assert!(same_user(1000, 1000).is_ok());
        let why = same_user(65534, 1000).unwrap_err().to_string();
        assert!(
            why.contains("uid 65534") && why.contains("uid 1000"),
            "{why}"
        );
        // A real connection from this process passes the check.
        let (a, _b) = UnixStream::pair().unwrap();
        admit(&a, rustix::process::geteuid().as_raw()).unwrap();
        let other = rustix::process::geteuid().as_raw().wrapping_add(1);
        assert!(admit(&a, other)
            .unwrap_err()
            .to_string()
            .contains("is not this job's user"));
    }

    /// A process running as another user cannot join: needs root to make one (skipped
    /// otherwise, the check itself being covered above).
    #[test]
    fn stray_uid_is_refused() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: only root can start a process under another uid");
            return;
        }
        let name = format!("shmem-test-stray-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixListener::bind_addr(&addr).unwrap();
        // SAFETY: the child makes only async-signal-safe system calls before _exit.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            // SAFETY: raw system calls in the forked child; the address outlives them.
            unsafe {
                let nobody = 65534;
                if libc::syscall(libc::SYS_setgid, nobody) != 0
                    || libc::syscall(libc::SYS_setuid, nobody) != 0
                {
                    libc::_exit(2);
                }
                let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
                let mut sa: libc::sockaddr_un = std::mem::zeroed();
                sa.sun_family = libc::AF_UNIX as libc::sa_family_t;
                for (i, b) in name.bytes().enumerate() {
                    sa.sun_path[i + 1] = b as libc::c_char;
                }
                let len = std::mem::size_of::<libc::sa_family_t>() + 1 + name.len();
                let ok = libc::connect(fd, &sa as *const _ as *const libc::sockaddr, len as u32);
                libc::_exit(if ok == 0 { 0 } else { 3 });
            }
        }
        let (stream, _) = listener.accept().unwrap();
        let mut status = 0;
        // SAFETY: waits for our own child.
        unsafe { libc::waitpid(child, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child {status}"
        );
        let why = admit(&stream, rustix::process::geteuid().as_raw())
            .unwrap_err()
            .to_string();
        assert!(why.contains("uid 65534 is not this job's user"), "{why}");
        assert!(why.contains(&format!("pid {child}")), "{why}");
    }

    #[test]
    fn pes_meet_at_pe0s_store() {
        let plan = |pe| NodeLocal {
            launcher: "test",
            tag: "test",
            my_pe: pe,
            n_pes: 3,
            job_id: format!("meet-{}", std::process::id()),
            kvs: None,
            store: None,
        };
        // Guests first: they wait for PE 0 to open the store.
        let guests: Vec<_> = (1..3)
            .map(|pe| {
                let p = plan(pe);
                std::thread::spawn(move || join(&p, &Meeting::Abstract, T, T).unwrap())
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20));
        let (c0, job0) = join(&plan(0), &Meeting::Abstract, T, T).unwrap();
        let mut joined: Vec<_> = guests.into_iter().map(|g| g.join().unwrap()).collect();
        c0.set("from0", b"hi").unwrap();
        for (c, _) in &joined {
            assert_eq!(c.get("from0", T).unwrap(), b"hi");
        }
        // A second job with the same id cannot open its store.
        let err = join(&plan(0), &Meeting::Abstract, T, T)
            .unwrap_err()
            .to_string();
        assert!(err.contains("same id"), "{err}");
        // Every PE says goodbye; PE 0 sees them all.
        for (c, job) in &joined {
            job.finalizing();
            c.goodbye().unwrap();
        }
        job0.finalizing();
        c0.goodbye().unwrap();
        job0.wait_for_goodbyes(T).unwrap();
        joined.clear();
    }

    #[test]
    fn unreachable_pe0_times_out_with_a_clear_error() {
        let plan = NodeLocal {
            launcher: "test",
            tag: "test",
            my_pe: 1,
            n_pes: 2,
            job_id: format!("nobody-{}", std::process::id()),
            kvs: None,
            store: None,
        };
        let err = join(&plan, &Meeting::Abstract, Duration::from_millis(100), T)
            .unwrap_err()
            .to_string();
        assert!(err.contains("PE 0 did not open the job's store"), "{err}");
    }
}
