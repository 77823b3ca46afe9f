//! Store server: the host's side of the control store (run by `shmemrun`, or by PE 0 itself
//! under other launchers: `node`).
//!
//! Owns the key-value state of one job (values, counters, passed descriptors) and one thread
//! per PE connection that answers its requests in order, over Unix sockets, TCP or TLS
//! (`link`). It reports what its host must act on (ABORT, BYE, disconnects, protocol errors)
//! as [`StoreEvent`]s and never acts on them itself. Must never block on one connection on
//! behalf of another: a stuck or hostile client only ever holds up its own thread, every read
//! of a started frame and every send has a timeout, no lock is held across socket I/O.
//!
//! What strangers and insiders can take is bounded. A connection from a listening socket must
//! join the job (TLS handshake and HELLO together) within one deadline, and sends nothing
//! larger than a HELLO before it has; connections that have not joined have a budget of their
//! own, so that they never take the places of PEs (the oldest is evicted for a newer one, or
//! the newer one is refused as "store full" and its PE tries again). The bytes of frames held
//! across all connections are budgeted ([`FRAME_BUDGET`]), and so are the values stored
//! ([`VALUE_BUDGET`]). A TCP connection that is not part of the job (no valid certificate,
//! plain TCP to a TLS store, bad frames, another job's HELLO) is refused and logged, a burst
//! of them summarised, and never becomes a [`StoreEvent`].
//!
//! Its parts: `admission` (who may take a connection, the join deadline, the frame budget, the
//! refusal log), `state` (entries within the value budget, waits for keys), `connection` (the
//! loop of each connection's thread) and `dispatch` (the answer to each request). This file
//! holds the [`Server`] its host sees and the state every connection shares.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::link::Link;

mod admission;
mod connection;
mod dispatch;
mod groups;
mod state;

pub use admission::{EXTRA_TCP_CONNECTIONS, FRAME_BUDGET};
pub use dispatch::refused_key;
pub use groups::{CONNECTION_ENDED, MAX_GROUP_SIZE, MAX_MEMBER_ID_LEN, MAX_OWNED_KEYS};
pub use state::VALUE_BUDGET;

use admission::{FrameBudget, RefusalLog, Ticket};
use connection::Connection;
use state::State;

/// Longest a started frame may take to arrive in full, and a reply to be taken by the peer.
/// Idle time between frames is unlimited (a PE may compute for hours between store calls).
const IO_STALL_LIMIT: Duration = Duration::from_secs(30);

/// Stack of a connection thread: it only parses frames and touches a hash map.
const CONNECTION_STACK: usize = 256 * 1024;

/// Something the launcher must know about, sent on the channel [`Server::new`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreEvent {
    /// PE `rank` asked for a global exit with `status` (`shmem_global_exit`, or the library
    /// after an error).
    Abort {
        /// The PE.
        rank: u32,
        /// Exit status it asked for.
        status: i32,
        /// The library stopped the job after an error it reported on that PE.
        after_error: bool,
    },
    /// PE `rank` sent its goodbye (finalize) and the reply has left; its later EOF is a clean
    /// exit.
    Goodbye {
        /// The PE.
        rank: u32,
    },
    /// PE `rank`'s connection ended (sent once per served connection, last of its events).
    Disconnected {
        /// The PE.
        rank: u32,
        /// Whether it had said goodbye first.
        said_goodbye: bool,
    },
    /// PE `rank` broke the protocol; its connection is closed right after.
    ProtocolError {
        /// The PE.
        rank: u32,
        /// What it did wrong.
        message: String,
    },
}

/// What the store knows about one PE's connection, at the moment it is asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PeerStatus {
    /// The PE completed HELLO (it called `shmem_init`).
    pub connected: bool,
    /// The PE sent BYE (it called `shmem_finalize`).
    pub said_goodbye: bool,
    /// The status of the PE's ABORT, if it sent one.
    pub abort_status: Option<i32>,
    /// That ABORT came from the library after an error, not from `shmem_global_exit`.
    pub abort_after_error: bool,
    /// The connection has ended (EOF, error or protocol violation) and nothing more will come.
    pub closed: bool,
}

/// The launcher's store: serves each PE's socket on its own thread. Cloning gives another
/// handle on the same store.
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
    events: Sender<StoreEvent>,
    n_pes: u32,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("n_pes", &self.n_pes)
            .finish_non_exhaustive()
    }
}

/// State every connection thread shares.
struct Shared {
    state: Mutex<State>,
    /// Job id a HELLO must carry ("" accepts any).
    job: String,
    /// The job id is a secret (a unique id's): a connection from the listening socket joins
    /// only with exactly it, compared in constant time, and no refusal shows it.
    secret: bool,
    /// TCP connections open now (their threads), joined or not.
    tcp_open: AtomicUsize,
    /// TCP connections that have not joined the job yet, oldest first.
    joining: Mutex<VecDeque<Arc<Ticket>>>,
    /// Bytes of frames being read and decoded, across connections.
    budget: FrameBudget,
    /// Refusal lines, rate-limited.
    refusals: Arc<RefusalLog>,
    /// Requests answered so far, across connections: what start-up costs the store.
    requests: AtomicUsize,
    /// Number of the next connection (ids of group memberships).
    next_conn: AtomicU64,
    /// Clients without a PE's place ([`crate::wire::NO_RANK`]) the store takes at once: 0 for a
    /// job's store, [`Server::open`]'s limit for a store of groups.
    open_clients: usize,
    /// Such clients connected now.
    open_now: AtomicUsize,
}

impl Server {
    /// Creates the store of an `n_pes` job, and the channel its events arrive on.
    pub fn new(n_pes: u32) -> (Server, Receiver<StoreEvent>) {
        Server::for_job(n_pes, "")
    }

    /// As [`Server::new`], for job `job`: a HELLO naming another job is refused (so that PEs
    /// trying the ports of a range find their own job's store).
    pub fn for_job(n_pes: u32, job: &str) -> (Server, Receiver<StoreEvent>) {
        Server::with_admission(n_pes, job, false, 0)
    }

    /// As [`Server::new`], for a job whose PEs prove membership with `secret` (a unique id's,
    /// as hex): a connection from a listening socket whose HELLO does not carry exactly it is
    /// refused and logged, without the secret. PE 0's own connection ([`Server::serve_unix`])
    /// needs none.
    pub fn for_secret(n_pes: u32, secret: &str) -> (Server, Receiver<StoreEvent>) {
        Server::with_admission(n_pes, secret, true, 0)
    }

    /// Creates a store that serves no job of PEs but clients that come and go: processes that
    /// share its keys and its groups (`Client::connect_open`). It takes at most
    /// `max_clients` of them at once; over TCP, anyone who reaches its port may connect
    /// unless it is served with TLS, which admits holders of its certificates only. Its
    /// events channel reports nothing about such clients.
    pub fn open(job: &str, max_clients: usize) -> Server {
        Server::with_admission(0, job, false, max_clients).0
    }

    fn with_admission(
        n_pes: u32,
        job: &str,
        secret: bool,
        open_clients: usize,
    ) -> (Server, Receiver<StoreEvent>) {
        let (events, rx) = mpsc::channel();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                entries: HashMap::new(),
                held: 0,
                waiters: HashMap::new(),
                wakeups: 0,
                peers: vec![None; n_pes as usize],
                holders: vec![None; n_pes as usize],
                groups: HashMap::new(),
                group_seq: 0,
            }),
            job: job.to_string(),
            secret,
            tcp_open: AtomicUsize::new(0),
            joining: Mutex::new(VecDeque::new()),
            budget: FrameBudget::default(),
            refusals: Arc::default(),
            requests: AtomicUsize::new(0),
            next_conn: AtomicU64::new(1),
            open_clients,
            open_now: AtomicUsize::new(0),
        });
        (
            Server {
                shared,
                events,
                n_pes,
            },
            rx,
        )
    }

    /// Serves one PE's inherited socket on its own thread.
    ///
    /// Fails if `rank` is out of range or already served, or if the socket or thread cannot be
    /// set up.
    pub fn serve_unix(&self, rank: u32, stream: UnixStream) -> io::Result<()> {
        if rank >= self.n_pes {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("rank {rank} out of range for a {}-PE job", self.n_pes),
            ));
        }
        let link = Link::Unix(stream);
        link.set_timeouts(Some(IO_STALL_LIMIT), Some(IO_STALL_LIMIT))?;
        {
            let mut state = self.shared.lock();
            let slot = &mut state.peers[rank as usize];
            if slot.is_some() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("rank {rank} is already served"),
                ));
            }
            *slot = Some(PeerStatus::default());
        }
        let spawned = self.spawn(rank, true, link, "its inherited socket".into(), None);
        if let Err(e) = spawned {
            self.shared.lock().peers[rank as usize] = None;
            return Err(e);
        }
        Ok(())
    }

    /// Serves a connection accepted on the job's listening socket, on its own thread; the
    /// caller has already checked who is at the other end (`node`'s SO_PEERCRED check).
    ///
    /// The PE is the one its HELLO names. A HELLO naming a rank out of range, a rank already
    /// served or another job size is refused and the connection closed; so is a connection
    /// that sends no HELLO within the stall limit. Such connections never joined the job: they
    /// are logged and produce no [`StoreEvent`].
    pub fn serve_accepted(&self, stream: UnixStream) -> io::Result<()> {
        let link = Link::Unix(stream);
        link.set_timeouts(Some(IO_STALL_LIMIT), Some(IO_STALL_LIMIT))?;
        let join_by = Instant::now() + IO_STALL_LIMIT;
        self.spawn(
            u32::MAX,
            false,
            link,
            "a node-local socket".into(),
            Some(join_by),
        )
    }

    /// Serves every connection to `listener` (TLS 1.3 with `tls`, else plain TCP), each on its
    /// own thread, for as long as the process runs. A connection joins the job as the PE its
    /// HELLO names, once its TLS handshake (client certificate included) passed, both within
    /// one deadline. At most `n_pes` + [`EXTRA_TCP_CONNECTIONS`] connections that have not
    /// joined are held at once (see there).
    pub fn serve_tcp(
        &self,
        listener: TcpListener,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> io::Result<()> {
        let server = self.clone();
        std::thread::Builder::new()
            .name("shmem-store-accept".into())
            .stack_size(CONNECTION_STACK)
            .spawn(move || server.accept_tcp(&listener, tls))
            .map(drop)
    }
}

impl Server {
    /// A connection to serve; one that is not `claimed` must join by `join_by`.
    fn connection(
        &self,
        rank: u32,
        claimed: bool,
        link: Link,
        peer: String,
        join_by: Option<Instant>,
    ) -> Connection {
        Connection {
            id: self.shared.next_conn.fetch_add(1, Ordering::Relaxed),
            groups: Vec::new(),
            open: false,
            shared: Arc::clone(&self.shared),
            events: self.events.clone(),
            n_pes: self.n_pes,
            rank,
            claimed,
            join_by,
            ticket: None,
            link,
            peer,
            fds: Vec::new(),
            hello: false,
            goodbye: false,
        }
    }

    fn spawn(
        &self,
        rank: u32,
        claimed: bool,
        link: Link,
        peer: String,
        join_by: Option<Instant>,
    ) -> io::Result<()> {
        let conn = self.connection(rank, claimed, link, peer, join_by);
        let name = if claimed {
            format!("shmem-store-{rank}")
        } else {
            "shmem-store".into()
        };
        std::thread::Builder::new()
            .name(name)
            .stack_size(CONNECTION_STACK)
            .spawn(move || conn.run())
            .map(drop)
    }

    /// What the store knows about PE `rank` right now (`None` if that rank is not served).
    ///
    /// A BYE has been recorded before its reply leaves, and an ABORT before its event is sent,
    /// so after [`PeerStatus::closed`] this is the PE's final word.
    pub fn peer_status(&self, rank: u32) -> Option<PeerStatus> {
        let state = self.shared.lock();
        state.peers.get(rank as usize).copied().flatten()
    }

    /// Requests answered so far across every connection (HELLOs included): what the job's
    /// control traffic costs the store.
    pub fn requests_served(&self) -> usize {
        self.shared.requests.load(Ordering::Relaxed)
    }

    /// Times a connection thread waiting for a key woke up so far: with one wake-up list per
    /// key, about one per key waited for, however many other keys are written meanwhile.
    pub fn wakeups(&self) -> usize {
        self.shared.lock().wakeups
    }

    /// Keys the store holds now, and the bytes they are charged: what its memory holds.
    pub fn entries(&self) -> (usize, usize) {
        let state = self.shared.lock();
        (state.entries.len(), state.held)
    }

    /// Groups the store knows now (a group is forgotten when its last member goes), and the
    /// connection threads waiting for a key or a group's events.
    pub fn groups(&self) -> (usize, usize) {
        let state = self.shared.lock();
        (state.groups.len(), state.waiters.len())
    }

    /// GROUP_WATCH from the store's own host: waits until `group` has events after `after`
    /// or `timeout` passes, and returns its view then; members silent past their bound are
    /// reported down meanwhile.
    pub fn watch_group(
        &self,
        group: &str,
        after: u64,
        timeout: Duration,
    ) -> crate::wire::GroupView {
        self.shared.watch_group(group, after, timeout, None)
    }

    /// How long each member of `group` has been silent now (rank, id, silence), silence
    /// counting from its last request (zero for a PE whose request the store is answering).
    pub fn silences(&self, group: &str) -> Vec<(u32, String, Duration)> {
        self.shared.silences(group)
    }

    /// Size of the job this store serves.
    pub fn n_pes(&self) -> u32 {
        self.n_pes
    }

    /// To be called by the store's host when it is about to end: writes what the store's log
    /// holds back, the summary of the connections refused since the last one (written every
    /// few seconds otherwise, which a host ending sooner would cut off). The store itself goes
    /// on serving until the host ends.
    pub fn close(&self) {
        self.shared.refusals.flush();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking connection thread aborts the process (panic = "abort"), so a poisoned
        // lock can only come from a test; the state is still consistent then.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update_peer(&self, rank: u32, f: impl FnOnce(&mut PeerStatus)) {
        let mut state = self.lock();
        if let Some(Some(peer)) = state.peers.get_mut(rank as usize) {
            f(peer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::{BootstrapError, Client};

    use std::os::fd::OwnedFd;

    pub(super) const T: Duration = Duration::from_secs(30);

    /// A server with `n` served ranks; returns the PE ends of the sockets.
    pub(super) fn job(n: u32) -> (Server, Receiver<StoreEvent>, Vec<OwnedFd>) {
        let (server, events) = Server::new(n);
        let mut ends = Vec::new();
        for rank in 0..n {
            let (ours, theirs) = UnixStream::pair().unwrap();
            server.serve_unix(rank, ours).unwrap();
            ends.push(OwnedFd::from(theirs));
        }
        (server, events, ends)
    }

    pub(super) fn next_event(events: &Receiver<StoreEvent>) -> StoreEvent {
        events.recv_timeout(T).expect("an event")
    }

    /// Events until (and including) `rank`'s Disconnected.
    pub(super) fn events_until_disconnect(
        events: &Receiver<StoreEvent>,
        rank: u32,
    ) -> Vec<StoreEvent> {
        let mut seen = Vec::new();
        loop {
            let ev = next_event(events);
            let done = matches!(ev, StoreEvent::Disconnected { rank: r, .. } if r == rank);
            seen.push(ev);
            if done {
                return seen;
            }
        }
    }

    #[test]
    pub(super) fn abort_and_disconnect_events() {
        let (server, events, mut ends) = job(2);
        let quitter = Client::connect_inherited(ends.pop().unwrap(), 1, 2, T).unwrap();
        let aborter = Client::connect_inherited(ends.pop().unwrap(), 0, 2, T).unwrap();
        aborter.abort(7, false);
        assert_eq!(
            next_event(&events),
            StoreEvent::Abort {
                rank: 0,
                status: 7,
                after_error: false
            }
        );
        assert_eq!(server.peer_status(0).unwrap().abort_status, Some(7));
        drop(quitter);
        assert_eq!(
            next_event(&events),
            StoreEvent::Disconnected {
                rank: 1,
                said_goodbye: false
            }
        );
        let st = server.peer_status(1).unwrap();
        assert!(st.connected && !st.said_goodbye && st.closed);
        assert!(server.peer_status(5).is_none());
    }

    #[test]
    pub(super) fn never_connected_pe_is_not_marked_connected() {
        let (server, events, mut ends) = job(1);
        drop(ends.pop());
        assert_eq!(
            next_event(&events),
            StoreEvent::Disconnected {
                rank: 0,
                said_goodbye: false
            }
        );
        let st = server.peer_status(0).unwrap();
        assert!(!st.connected && st.closed);
    }

    #[test]
    pub(super) fn accepted_connections_join_as_their_hello_says() {
        let (server, events) = Server::new(3);
        let accept = |server: &Server| {
            let (ours, theirs) = UnixStream::pair().unwrap();
            server.serve_accepted(ours).unwrap();
            OwnedFd::from(theirs)
        };
        let two = Client::connect_inherited(accept(&server), 2, 3, T).unwrap();
        let zero = Client::connect_inherited(accept(&server), 0, 3, T).unwrap();
        // A rank already taken, and a job of another size, are refused.
        let err = Client::connect_inherited(accept(&server), 2, 3, T).unwrap_err();
        assert!(
            err.to_string().contains(
                "PE 2's place in this job is taken: a connection from a \
                 node-local socket said HELLO as PE 2 first"
            ),
            "{err}"
        );
        let err = Client::connect_inherited(accept(&server), 1, 4, T).unwrap_err();
        assert!(
            matches!(err, BootstrapError::SizeMismatch { store: 3, ours: 4 }),
            "{err}"
        );
        // A connection that leaves before HELLO never joined.
        drop(accept(&server));
        assert!(server.peer_status(1).is_none());
        let st = server.peer_status(2).unwrap();
        assert!(st.connected && !st.closed);
        two.set("k", b"v").unwrap();
        assert_eq!(zero.get("k", T).unwrap(), b"v");
        two.goodbye().unwrap();
        drop(two);
        // Refused and stray connections sent nothing: PE 2's goodbye comes first.
        assert_eq!(next_event(&events), StoreEvent::Goodbye { rank: 2 });
        assert_eq!(
            next_event(&events),
            StoreEvent::Disconnected {
                rank: 2,
                said_goodbye: true
            }
        );
        drop(zero);
        assert_eq!(
            next_event(&events),
            StoreEvent::Disconnected {
                rank: 0,
                said_goodbye: false
            }
        );
    }

    #[test]
    pub(super) fn serve_unix_checks_rank() {
        let (server, _events) = Server::new(1);
        let (a, _b) = UnixStream::pair().unwrap();
        assert_eq!(
            server.serve_unix(1, a).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        let (a, _b) = UnixStream::pair().unwrap();
        server.serve_unix(0, a).unwrap();
        let (a, _b) = UnixStream::pair().unwrap();
        assert_eq!(
            server.serve_unix(0, a).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
    }
}
