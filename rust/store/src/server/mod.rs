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

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use subtle::ConstantTimeEq;

use crate::link::{self, HandshakeError, Link, Speaks};
use crate::wire::{
    self, Reply, Request, WireError, MAX_FRAME_LEN, MAX_HELLO_FRAME_LEN, MAX_VALUE_LEN,
    PROTOCOL_VERSION, STORE_FULL,
};

/// Longest a started frame may take to arrive in full, and a reply to be taken by the peer.
/// Idle time between frames is unlimited (a PE may compute for hours between store calls).
const IO_STALL_LIMIT: Duration = Duration::from_secs(30);

/// Stack of a connection thread: it only parses frames and touches a hash map.
const CONNECTION_STACK: usize = 256 * 1024;

/// TCP connections that have not joined the job (no HELLO accepted yet: PEs on their way in,
/// strays) held at once beyond one per PE. When that many are held, a new connection evicts
/// the oldest of them if it has waited at least [`JOIN_GRACE`], else it is refused as "store
/// full" (a PE then tries again). Connections that joined are not counted here.
pub const EXTRA_TCP_CONNECTIONS: usize = 32;

/// How long a connection that has not joined is safe from eviction: time enough for a PE's
/// TLS handshake and HELLO.
const JOIN_GRACE: Duration = Duration::from_secs(1);

/// Deadline for a TCP connection to join the job: TLS handshake and HELLO together, however
/// its bytes are spread. Tests shorten it.
#[cfg(test)]
const TCP_JOIN_LIMIT: Duration = Duration::from_secs(3);
#[cfg(not(test))]
const TCP_JOIN_LIMIT: Duration = IO_STALL_LIMIT;

/// Bytes of frames the store holds at once across all its connections. A frame is charged
/// twice its length while it is read and decoded (the frame, then its decoded copy); one that
/// does not fit waits for room, up to [`IO_STALL_LIMIT`], then is refused. Replies are sent
/// from where values are kept, a bounded chunk at a time, and are not charged.
pub const FRAME_BUDGET: usize = 4 * MAX_FRAME_LEN;

/// Bytes of values the store keeps at once, keys and [`ENTRY_OVERHEAD`] included: the job's
/// own traffic (identities, addresses, layouts, rounds of barriers and allgathers, deleted
/// once done) is a small fraction of it even for thousands of PEs. A write that would pass it
/// is answered with an error, and nothing is stored.
pub const VALUE_BUDGET: usize = 8 * MAX_VALUE_LEN;

/// What one stored entry is charged beyond its key and value: its map slot and allocations.
const ENTRY_OVERHEAD: usize = 64;

/// About how many bytes one send of a VALUES reply carries.
const SEND_CHUNK: usize = 64 * 1024;

/// Refusals of a burst logged one by one; later ones are counted and summarised.
const REFUSALS_LOGGED: u32 = 5;

/// Period of the summary of refusals not logged one by one; a burst ends after a period
/// without refusals.
const REFUSAL_SUMMARY_PERIOD: Duration = Duration::from_secs(5);

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
}

/// A TCP connection that has not joined the job yet, as the acceptor sees it.
struct Ticket {
    /// When it was accepted.
    since: Instant,
    /// Another descriptor of its socket, to shut the connection down when it is evicted.
    sock: OwnedFd,
    /// It was evicted to make room for a newer connection.
    evicted: AtomicBool,
}

/// The budget of [`FRAME_BUDGET`] bytes.
#[derive(Default)]
struct FrameBudget {
    used: Mutex<usize>,
    freed: Condvar,
}

/// Bytes taken from a [`FrameBudget`], given back on drop.
struct Reservation<'a> {
    budget: &'a FrameBudget,
    bytes: usize,
}

impl FrameBudget {
    /// Takes `bytes`, waiting for room until `until`; `None` if there was none by then.
    fn reserve(&self, bytes: usize, until: Instant) -> Option<Reservation<'_>> {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        while *used + bytes > FRAME_BUDGET {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            used = (self.freed.wait_timeout(used, left))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *used += bytes;
        Some(Reservation {
            budget: self,
            bytes,
        })
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut used = self.budget.used.lock().unwrap_or_else(|e| e.into_inner());
        *used -= self.bytes;
        drop(used);
        self.budget.freed.notify_all();
    }
}

/// Store key under which the store records why it refused PE `rank`'s HELLO (another job
/// size, or its place taken by another connection), for the PEs waiting for that PE at
/// start-up.
pub fn refused_key(rank: u32) -> String {
    format!("shmem/refused/{rank}")
}

/// Writes refusal lines: the first [`REFUSALS_LOGGED`] of a burst one by one, then a summary
/// of how many more there were every [`REFUSAL_SUMMARY_PERIOD`], so that a flood of strays
/// cannot flood the log.
#[derive(Default)]
struct RefusalLog {
    state: Mutex<RefusalState>,
}

#[derive(Default)]
struct RefusalState {
    /// Refusals logged one by one in this burst.
    logged: u32,
    /// Refusals counted since the last summary.
    counted: u64,
    /// When the last refusal came.
    last: Option<Instant>,
    /// A summary thread is running.
    summarising: bool,
}

impl RefusalLog {
    /// Logs (or counts) the refusal of the connection from `peer`, for `why`.
    fn refused(self: &Arc<Self>, peer: &str, why: &str) {
        let now = Instant::now();
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let quiet = st
            .last
            .map_or(true, |t| now.duration_since(t) >= REFUSAL_SUMMARY_PERIOD);
        if quiet && !st.summarising {
            st.logged = 0;
        }
        st.last = Some(now);
        if st.logged < REFUSALS_LOGGED {
            st.logged += 1;
            drop(st);
            tracing::warn!("store: refused a connection from {peer}: {why}");
            return;
        }
        st.counted += 1;
        if st.summarising {
            return;
        }
        let log = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("shmem-store-refusals".into())
            .stack_size(CONNECTION_STACK)
            .spawn(move || log.summarise());
        if spawned.is_ok() {
            st.summarising = true;
        } else {
            st.counted -= 1;
            drop(st);
            tracing::warn!("store: refused a connection from {peer}: {why}");
        }
    }

    /// Writes the summary of the refusals counted since the last one, now: the store is
    /// closing, and its host would end before the summary's period does.
    fn flush(&self) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let counted = std::mem::take(&mut st.counted);
        drop(st);
        if counted > 0 {
            tracing::warn!(
                "store: {counted} more connections refused before the store closed (the first \
                 {REFUSALS_LOGGED} of a burst are logged one by one)"
            );
        }
    }

    /// Writes a summary every period while refusals keep coming; ends after a quiet one.
    fn summarise(&self) {
        loop {
            std::thread::sleep(REFUSAL_SUMMARY_PERIOD);
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let counted = std::mem::take(&mut st.counted);
            if counted == 0 {
                st.summarising = false;
                st.logged = 0;
                return;
            }
            drop(st);
            tracing::warn!(
                "store: {counted} more connections refused in the last {} s (the first \
                 {REFUSALS_LOGGED} of a burst are logged one by one)",
                REFUSAL_SUMMARY_PERIOD.as_secs()
            );
        }
    }
}

/// Key-value state of the job. Finished barrier and allgather rounds are removed by the
/// clients (DELETE_PREFIX).
struct State {
    entries: HashMap<String, Entry>,
    /// Who waits for which absent key: a write wakes only that key's waiters, so a start-up
    /// where N PEs each write once while N wait costs O(N) wake-ups, not N x N.
    waiters: HashMap<String, KeyWaiters>,
    /// Times a waiting connection thread woke up, for any reason: what waiting costs.
    wakeups: usize,
    /// Bytes `entries` is charged ([`State::charge`]), within [`VALUE_BUDGET`] for what PEs
    /// write.
    held: usize,
    /// Indexed by rank; `None` until [`Server::serve_unix`] is called for that rank, or a
    /// connection from [`Server::serve_accepted`] says HELLO as that rank.
    peers: Vec<Option<PeerStatus>>,
    /// Who holds each rank's place (indexed by rank, as `peers`), to name it to a later HELLO
    /// for the same rank: that PE then knows whom to look for.
    holders: Vec<Option<String>>,
}

/// The connection threads waiting for one key, and the condition variable they wait on
/// (always with [`Shared::state`]'s lock).
struct KeyWaiters {
    written: Arc<Condvar>,
    count: usize,
}

impl State {
    /// What keeping `entry` under a key of `key_len` bytes is charged.
    fn charge(key_len: usize, entry: &Entry) -> usize {
        let value = match entry {
            Entry::Bytes(v) => v.len(),
            Entry::Fd(_) => 0,
        };
        ENTRY_OVERHEAD + key_len + value
    }

    /// Stores `entry` under `key` and wakes the threads waiting for that key, and no other.
    /// Returns the entry it replaced. Does not look at [`VALUE_BUDGET`]: PEs' writes are
    /// checked by [`State::check_room`] first, the store's own notes are small.
    fn put(&mut self, key: String, entry: Entry) -> Option<Entry> {
        if let Some(waiters) = self.waiters.get(&key) {
            waiters.written.notify_all();
        }
        self.held += Self::charge(key.len(), &entry);
        let key_len = key.len();
        let old = self.entries.insert(key, entry);
        if let Some(old) = &old {
            self.held -= Self::charge(key_len, old);
        }
        old
    }

    /// Whether `value_len` bytes under `key` fit [`VALUE_BUDGET`], counting the room the
    /// value it replaces gives back; else the error to answer with.
    fn check_room(&self, op: &str, key: &str, value_len: usize) -> Result<(), String> {
        let freed = self
            .entries
            .get(key)
            .map_or(0, |old| Self::charge(key.len(), old));
        let wanted = ENTRY_OVERHEAD + key.len() + value_len;
        if self.held - freed + wanted <= VALUE_BUDGET {
            return Ok(());
        }
        Err(format!(
            "{op} of a {value_len}-byte value under '{key}' does not fit: the store holds \
             {} bytes of keys and values, at most {VALUE_BUDGET} (delete keys no longer needed)",
            self.held
        ))
    }

    /// Removes `key`; returns its entry.
    fn remove(&mut self, key: &str) -> Option<Entry> {
        let old = self.entries.remove(key)?;
        self.held -= Self::charge(key.len(), &old);
        Some(old)
    }

    /// Removes every key starting with `prefix`; returns how many.
    fn remove_prefix(&mut self, prefix: &str) -> usize {
        let (mut count, mut bytes) = (0, 0);
        self.entries.retain(|k, e| {
            let keep = !k.starts_with(prefix);
            if !keep {
                count += 1;
                bytes += Self::charge(k.len(), e);
            }
            keep
        });
        self.held -= bytes;
        count
    }

    /// Registers one waiter for `key`; returns what to wait on. Pair with [`State::unwait`].
    fn wait_on(&mut self, key: &str) -> Arc<Condvar> {
        let waiters = self
            .waiters
            .entry(key.to_string())
            .or_insert_with(|| KeyWaiters {
                written: Arc::new(Condvar::new()),
                count: 0,
            });
        waiters.count += 1;
        Arc::clone(&waiters.written)
    }

    /// Withdraws one waiter for `key` registered by [`State::wait_on`].
    fn unwait(&mut self, key: &str) {
        if let Some(waiters) = self.waiters.get_mut(key) {
            waiters.count -= 1;
            if waiters.count == 0 {
                self.waiters.remove(key);
            }
        }
    }
}

/// One stored value. Shared so that a reply can be sent after the lock is released.
#[derive(Clone)]
enum Entry {
    Bytes(Arc<[u8]>),
    Fd(Arc<OwnedFd>),
}

impl Server {
    /// Creates the store of an `n_pes` job, and the channel its events arrive on.
    pub fn new(n_pes: u32) -> (Server, Receiver<StoreEvent>) {
        Server::for_job(n_pes, "")
    }

    /// As [`Server::new`], for job `job`: a HELLO naming another job is refused (so that PEs
    /// trying the ports of a range find their own job's store).
    pub fn for_job(n_pes: u32, job: &str) -> (Server, Receiver<StoreEvent>) {
        Server::with_admission(n_pes, job, false)
    }

    /// As [`Server::new`], for a job whose PEs prove membership with `secret` (a unique id's,
    /// as hex): a connection from a listening socket whose HELLO does not carry exactly it is
    /// refused and logged, without the secret. PE 0's own connection ([`Server::serve_unix`])
    /// needs none.
    pub fn for_secret(n_pes: u32, secret: &str) -> (Server, Receiver<StoreEvent>) {
        Server::with_admission(n_pes, secret, true)
    }

    fn with_admission(n_pes: u32, job: &str, secret: bool) -> (Server, Receiver<StoreEvent>) {
        let (events, rx) = mpsc::channel();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                entries: HashMap::new(),
                held: 0,
                waiters: HashMap::new(),
                wakeups: 0,
                peers: vec![None; n_pes as usize],
                holders: vec![None; n_pes as usize],
            }),
            job: job.to_string(),
            secret,
            tcp_open: AtomicUsize::new(0),
            joining: Mutex::new(VecDeque::new()),
            budget: FrameBudget::default(),
            refusals: Arc::default(),
            requests: AtomicUsize::new(0),
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

    fn accept_tcp(&self, listener: &TcpListener, tls: Option<Arc<rustls::ServerConfig>>) {
        let joining_limit = self.n_pes as usize + EXTRA_TCP_CONNECTIONS;
        // Joining, joined (at most one per PE), and evicted ones on their way out.
        let open_limit = 2 * joining_limit;
        loop {
            let (sock, peer) = match listener.accept() {
                Ok(accepted) => accepted,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    continue
                }
                Err(e) => {
                    tracing::error!("store: stopped accepting TCP connections: {e}");
                    return;
                }
            };
            let peer = peer.to_string();
            let accepted = Instant::now();
            let open = self.shared.tcp_open.load(Ordering::SeqCst);
            if open >= open_limit {
                let why = format!(
                    "{STORE_FULL}: {open} connections are open (the job has {} PEs)",
                    self.n_pes
                );
                self.refuse_at_once(sock, &peer, &why);
                continue;
            }
            let ticket = match self.admit(&sock, accepted, joining_limit) {
                Ok(ticket) => ticket,
                Err(why) => {
                    self.refuse_at_once(sock, &peer, &why);
                    continue;
                }
            };
            self.shared.tcp_open.fetch_add(1, Ordering::SeqCst);
            let server = self.clone();
            let tls = tls.clone();
            let thread_ticket = Arc::clone(&ticket);
            let thread_peer = peer.clone();
            let spawned = std::thread::Builder::new()
                .name("shmem-store-tcp".into())
                .stack_size(CONNECTION_STACK)
                .spawn(move || {
                    let (ticket, peer) = (thread_ticket, thread_peer);
                    let join_by = accepted + TCP_JOIN_LIMIT;
                    match server.join_tcp(sock, tls, &peer, join_by) {
                        Ok(link) => server
                            .connection(u32::MAX, false, link, peer, Some(join_by))
                            .with_ticket(Arc::clone(&ticket))
                            .run(),
                        Err(why) => {
                            let why = server.shared.why_dropped(&ticket, why.into());
                            server.shared.refusals.refused(&peer, &why);
                        }
                    }
                    server.shared.leave(&ticket);
                    server.shared.tcp_open.fetch_sub(1, Ordering::SeqCst);
                });
            if let Err(e) = spawned {
                self.shared.leave(&ticket);
                self.shared.tcp_open.fetch_sub(1, Ordering::SeqCst);
                let why = format!("cannot start its thread: {e}");
                self.shared.refusals.refused(&peer, &why);
            }
        }
    }

    /// Takes a place among the connections that have not joined for `sock`, accepted at `now`,
    /// evicting the oldest if all `limit` places are held and it has had its grace; else says
    /// why not.
    fn admit(&self, sock: &TcpStream, now: Instant, limit: usize) -> Result<Arc<Ticket>, String> {
        let dup = sock
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| format!("socket setup: {e}"))?;
        let mut joining = self
            .shared
            .joining
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if joining.len() >= limit {
            let waited = joining
                .front()
                .map_or(Duration::MAX, |t| now.saturating_duration_since(t.since));
            if waited < JOIN_GRACE {
                return Err(format!(
                    "{STORE_FULL}: {limit} connections are joining the job already (the job \
                     has {} PEs); the oldest has waited {} ms of its {} ms",
                    self.n_pes,
                    waited.as_millis(),
                    JOIN_GRACE.as_millis()
                ));
            }
            if let Some(oldest) = joining.pop_front() {
                oldest.evicted.store(true, Ordering::SeqCst);
                // Wakes its thread, which then leaves.
                let _ = rustix::net::shutdown(&oldest.sock, rustix::net::Shutdown::Both);
            }
        }
        let ticket = Arc::new(Ticket {
            since: now,
            sock: dup,
            evicted: AtomicBool::new(false),
        });
        joining.push_back(Arc::clone(&ticket));
        Ok(ticket)
    }

    /// Refuses `sock` on the acceptor's thread: a plain ERROR frame saying `why` (a TLS client
    /// reads it too), without waiting for anything.
    fn refuse_at_once(&self, sock: TcpStream, peer: &str, why: &str) {
        use std::io::{Read, Write};
        self.shared.refusals.refused(peer, why);
        let Ok(frame) = Reply::Error(format!("refused: {why}")).encode() else {
            return;
        };
        if sock.set_nonblocking(true).is_err() {
            return;
        }
        let mut sock = sock;
        let _ = sock.write(&frame);
        let _ = sock.shutdown(std::net::Shutdown::Write);
        // What the peer sent already is read, so that closing does not reset the connection
        // (which may destroy the frame before the peer reads it).
        let mut sink = [0u8; 4096];
        for _ in 0..16 {
            if !matches!(sock.read(&mut sink), Ok(1..)) {
                break;
            }
        }
    }

    /// Sets up an accepted TCP connection: timeouts, what the peer speaks, the TLS handshake,
    /// all by `deadline`.
    fn join_tcp(
        &self,
        sock: TcpStream,
        tls: Option<Arc<rustls::ServerConfig>>,
        peer: &str,
        deadline: Instant,
    ) -> Result<Link, Refusal> {
        let setup = |e: io::Error| format!("socket setup: {e}");
        link::prepare_tcp(&sock).map_err(setup)?;
        let plain = Link::Tcp(sock);
        plain
            .set_timeouts(Some(TCP_JOIN_LIMIT), Some(TCP_JOIN_LIMIT))
            .map_err(setup)?;
        let Link::Tcp(sock) = plain else {
            unreachable!("built as Link::Tcp just above")
        };
        let prefix = link::peek_prefix(&sock, deadline).map_err(|e| match e.kind() {
            io::ErrorKind::TimedOut => {
                format!("it sent nothing within {} s", TCP_JOIN_LIMIT.as_secs())
            }
            _ => format!("nothing readable: {e}"),
        })?;
        let speaks = link::classify(&prefix);
        let link = match (&tls, speaks) {
            (Some(_), Speaks::Plain) => {
                let why = "it speaks plain TCP, but this store requires TLS (set \
                SHMEM_TLS_DISABLE=1 for every PE and the store alike, or for none)";
                refuse_plainly(sock, why);
                return Err(why.into());
            }
            (None, Speaks::Tls) => {
                let why = "it speaks TLS, but this store runs without TLS (SHMEM_TLS_DISABLE=1 \
                           where the store runs)";
                // A plain ERROR frame: the TLS client recognises a plain peer by it.
                refuse_plainly(sock, why);
                return Err(why.into());
            }
            (None, _) => Link::Tcp(sock),
            (Some(config), _) => {
                let conn = rustls::ServerConnection::new(Arc::clone(config))
                    .map_err(|e| format!("TLS setup: {e}"))?;
                link::handshake(sock, conn, deadline).map_err(|e| match e {
                    HandshakeError::Tls(e) => format!("TLS handshake failed: {e}"),
                    HandshakeError::TimedOut => format!(
                        "its TLS handshake did not complete within {} s",
                        TCP_JOIN_LIMIT.as_secs()
                    ),
                    other => other.to_string(),
                })?
            }
        };
        link.set_timeouts(Some(IO_STALL_LIMIT), Some(IO_STALL_LIMIT))
            .map_err(|e| format!("socket setup: {e}"))?;
        tracing::debug!("store: {} connection from {peer}", link.kind());
        Ok(link)
    }

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

/// Sends a plain ERROR frame and closes without resetting the connection: the peer's unread
/// bytes are drained first (a close with unread data sends a reset, which may destroy the
/// frame before the peer reads it).
fn refuse_plainly(sock: TcpStream, why: &str) {
    use std::io::Read;
    if let Ok(frame) = Reply::Error(format!("refused: {why}")).encode() {
        let link = Link::Tcp(sock);
        let _ = link.send_frame(&frame, None);
        let Link::Tcp(mut sock) = link else {
            return;
        };
        let _ = sock.shutdown(std::net::Shutdown::Write);
        let _ = sock.set_read_timeout(Some(Duration::from_secs(1)));
        let mut sink = [0u8; 4096];
        let mut left = 1 << 20;
        while left > 0 {
            match sock.read(&mut sink) {
                Ok(0) | Err(_) => break,
                Ok(n) => left -= n.min(left),
            }
        }
    }
}

impl Shared {
    /// Gives up `ticket`'s place among the connections that have not joined (it joined, or
    /// its connection ended).
    fn leave(&self, ticket: &Arc<Ticket>) {
        let mut joining = self.joining.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = joining.iter().position(|t| Arc::ptr_eq(t, ticket)) {
            joining.remove(at);
        }
    }

    /// Why a connection that did not join was dropped: `why`, unless it was evicted.
    fn why_dropped(&self, ticket: &Ticket, why: String) -> String {
        if !ticket.evicted.load(Ordering::SeqCst) {
            return why;
        }
        format!(
            "evicted after {:.1} s without joining the job, to make room for a newer \
             connection (at most {} connections that have not joined are held)",
            ticket.since.elapsed().as_secs_f64(),
            self.joining_limit()
        )
    }

    fn joining_limit(&self) -> usize {
        self.lock().peers.len() + EXTRA_TCP_CONNECTIONS
    }

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

    fn insert(&self, key: String, entry: Entry) {
        let old = self.lock().put(key, entry);
        drop(old);
    }

    /// Waits until the keys `prefix0` .. `prefix{count-1}` all exist or `timeout` passes (an
    /// unrepresentable deadline waits forever). Returns their entries in index order, or the
    /// indices still absent at the timeout. It waits only for the first key not seen yet and
    /// is woken only by writes of that key, so a whole wait costs `count` lookups and about
    /// `count` wake-ups: a gather by every PE of a job is O(N) work for each. A key seen and
    /// later removed still counts as seen.
    fn wait_for_all(
        &self,
        prefix: &str,
        count: u32,
        timeout: Duration,
    ) -> std::result::Result<Vec<Entry>, Vec<u32>> {
        let deadline = Instant::now().checked_add(timeout);
        let mut got = Vec::with_capacity(count as usize);
        let mut key = String::with_capacity(prefix.len() + 10);
        let mut state = self.lock();
        loop {
            while got.len() < count as usize {
                key.clear();
                key.push_str(prefix);
                key.push_str(&got.len().to_string());
                match state.entries.get(&key) {
                    Some(entry) => got.push(entry.clone()),
                    None => break,
                }
            }
            if got.len() == count as usize {
                return Ok(got);
            }
            let in_time;
            (state, in_time) = Self::wait_key(state, &key, deadline);
            if !in_time {
                let missing = (got.len() as u32..count)
                    .filter(|i| !state.entries.contains_key(&format!("{prefix}{i}")))
                    .collect();
                return Err(missing);
            }
        }
    }

    /// Waits until `key` exists or `timeout` passes (an unrepresentable deadline waits forever).
    fn wait_for(&self, key: &str, timeout: Duration) -> Option<Entry> {
        let deadline = Instant::now().checked_add(timeout);
        let mut state = self.lock();
        loop {
            if let Some(entry) = state.entries.get(key) {
                return Some(entry.clone());
            }
            let in_time;
            (state, in_time) = Self::wait_key(state, key, deadline);
            if !in_time {
                return None;
            }
        }
    }

    /// Sleeps, with the state's lock released meanwhile, until `key` is written or `deadline`
    /// passes (`None`: never); a write of any other key does not wake it. Returns the lock
    /// again and whether the deadline had not passed on entry (the caller looks again either
    /// way: a wake-up may be spurious, and the key may have come as time ran out).
    fn wait_key<'a>(
        mut state: MutexGuard<'a, State>,
        key: &str,
        deadline: Option<Instant>,
    ) -> (MutexGuard<'a, State>, bool) {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left.is_some_and(|left| left.is_zero()) {
            return (state, false);
        }
        let written = state.wait_on(key);
        state = match left {
            None => written.wait(state).unwrap_or_else(|e| e.into_inner()),
            Some(left) => {
                written
                    .wait_timeout(state, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
        state.unwait(key);
        state.wakeups += 1;
        (state, true)
    }
}

/// One PE's connection, owned by its thread.
struct Connection {
    shared: Arc<Shared>,
    events: Sender<StoreEvent>,
    n_pes: u32,
    /// The PE; meaningless until `claimed`.
    rank: u32,
    /// The connection holds `rank`'s slot: from the start for [`Server::serve_unix`], from a
    /// valid HELLO for [`Server::serve_accepted`] and [`Server::serve_tcp`].
    claimed: bool,
    /// Until it is claimed, its HELLO must be in by then.
    join_by: Option<Instant>,
    /// Its place among the TCP connections that have not joined, until it joins.
    ticket: Option<Arc<Ticket>>,
    link: Link,
    /// Who is at the other end, for messages.
    peer: String,
    /// Descriptors received and not yet claimed by a PUT_FD frame.
    fds: Vec<OwnedFd>,
    hello: bool,
    goodbye: bool,
}

/// What to do after a request.
enum Next {
    /// Send this reply (with this descriptor) and go on.
    Reply(Reply, Option<Arc<OwnedFd>>),
    /// Send the reply starting with `head` and ending with the stored `value`, and go on.
    Stream {
        /// The reply's name, for messages.
        name: &'static str,
        head: Vec<u8>,
        value: Arc<[u8]>,
    },
    /// Send the VALUES reply starting with `head`, then each value with its length, and go on.
    Values {
        head: Vec<u8>,
        values: Vec<Arc<[u8]>>,
    },
    /// Send a FDS reply with these descriptors, and go on.
    Fds(Vec<Arc<OwnedFd>>),
    /// Nothing to send; go on.
    Silent,
    /// Send this error and close: the peer broke the protocol.
    Fatal(String),
    /// Send this reply, then close for the given reason.
    Close(Reply, String),
}

/// Why reading a request stopped.
enum ReadEnd {
    /// The peer closed the stream between frames (or reset it).
    Closed,
    /// Nothing came within the socket's timeout; waiting goes on.
    Idle,
    /// The peer is dropped for this reason (sent to it first).
    Refuse(String),
}

/// Reads one request frame: a frame before HELLO may be no larger than a HELLO, every frame
/// takes twice its length from `budget` (waiting for room up to the stall limit) before its
/// body is read, and the body must arrive in full within the stall limit (and by `join`'s
/// deadline, until the connection joins: the deadline and how long it was).
fn read_request<'b>(
    reader: &mut link::LinkReader<'_>,
    hello: bool,
    join: Option<(Instant, Duration)>,
    budget: &'b FrameBudget,
) -> Result<(wire::Frame, Reservation<'b>), ReadEnd> {
    let ended = |e: WireError| match e {
        WireError::Closed => ReadEnd::Closed,
        WireError::Io(e) if e.kind() == io::ErrorKind::ConnectionReset => ReadEnd::Closed,
        WireError::TimedOut { .. } if join.is_some_and(|(by, _)| Instant::now() >= by) => {
            let limit = join.map_or(0, |(_, limit)| limit.as_secs());
            ReadEnd::Refuse(format!(
                "it did not join the job within {limit} s (TLS handshake and HELLO together)"
            ))
        }
        WireError::TimedOut { partial: false } => ReadEnd::Idle,
        e => ReadEnd::Refuse(format!("bad frame: {e}")),
    };
    reader.set_deadline(join.map(|(by, _)| by));
    let len = wire::read_header(reader).map_err(ended)?;
    if !hello && len > MAX_HELLO_FRAME_LEN {
        return Err(ReadEnd::Refuse(format!(
            "a {len}-byte frame before HELLO (a HELLO frame is at most {MAX_HELLO_FRAME_LEN} \
             bytes)"
        )));
    }
    let Some(reservation) = budget.reserve(2 * len, Instant::now() + IO_STALL_LIMIT) else {
        return Err(ReadEnd::Refuse(format!(
            "its {len}-byte frame found no room within {} s: the store holds at most \
             {FRAME_BUDGET} bytes of frames across connections, and others hold them",
            IO_STALL_LIMIT.as_secs()
        )));
    };
    let by = Instant::now() + IO_STALL_LIMIT;
    reader.set_deadline(Some(join.map_or(by, |(join_by, _)| join_by.min(by))));
    let frame = wire::read_body(reader, len).map_err(ended)?;
    Ok((frame, reservation))
}

impl Connection {
    /// Adds the connection's place among those that have not joined.
    fn with_ticket(mut self, ticket: Arc<Ticket>) -> Self {
        self.ticket = Some(ticket);
        self
    }

    fn run(mut self) {
        let result = self.serve();
        if !self.claimed {
            // Never joined the job: nothing for the launcher to act on.
            let evicted = (self.ticket.as_ref()).is_some_and(|t| t.evicted.load(Ordering::SeqCst));
            // A stranger that connects and closes without a word is refused like any other
            // (over TLS its cut handshake is; over plain TCP it ends here), so that a scan of
            // the port shows in the log.
            let why = match result {
                Err(message) => message,
                Ok(()) if evicted => "connection closed".into(),
                Ok(()) => "it closed the connection without saying HELLO".into(),
            };
            let why = match &self.ticket {
                Some(ticket) => self.shared.why_dropped(ticket, why.into()),
                None => why.into(),
            };
            let peer = format!("{} that did not join the job", self.peer);
            self.shared.refusals.refused(&peer, &why);
            return;
        }
        if let Err(message) = result {
            tracing::warn!(
                "store: PE {} broke the store protocol: {message}",
                self.rank
            );
            let _ = self.events.send(StoreEvent::ProtocolError {
                rank: self.rank,
                message: message.into(),
            });
        }
        // Record before telling, so that a launcher reacting to the event sees the final state.
        self.shared.update_peer(self.rank, |p| p.closed = true);
        let _ = self.events.send(StoreEvent::Disconnected {
            rank: self.rank,
            said_goodbye: self.goodbye,
        });
    }

    /// Answers requests until EOF (`Ok`) or a protocol violation (`Err`, already answered).
    /// A PE that leaves while its reply is on its way (killed, or gone with the job) has not
    /// broken the protocol: that ends the connection as its EOF would.
    fn serve(&mut self) -> Result<(), Refusal> {
        let shared = Arc::clone(&self.shared);
        loop {
            let join = match (self.claimed, self.join_by) {
                (false, Some(by)) => Some((by, self.join_limit())),
                _ => None,
            };
            let read = {
                let mut reader = self.link.reader(&mut self.fds);
                read_request(&mut reader, self.hello, join, &shared.budget)
            };
            let (frame, reservation) = match read {
                Ok(read) => read,
                Err(ReadEnd::Closed) => return Ok(()),
                Err(ReadEnd::Idle) => continue,
                Err(ReadEnd::Refuse(message)) => return Err(self.refuse(message)),
            };
            let request = Request::from_frame(&frame);
            drop(frame);
            let request = match request {
                Ok(r) => r,
                Err(e) => return Err(self.refuse(e.to_string())),
            };
            shared.requests.fetch_add(1, Ordering::Relaxed);
            let fd_op = matches!(
                request,
                Request::PutFd { .. } | Request::GetFd { .. } | Request::GatherFd { .. }
            );
            if fd_op && !self.link.passes_fds() {
                return Err(self.refuse(format!(
                    "{} over {}: file descriptors travel only over node-local Unix sockets",
                    request.name(),
                    self.link.kind()
                )));
            }
            let wants_fd = matches!(request, Request::PutFd { .. });
            if self.fds.len() != usize::from(wants_fd) {
                let n = self.fds.len();
                self.fds.clear();
                return Err(self.refuse(format!(
                    "{} frame came with {n} file descriptors",
                    request.name()
                )));
            }
            let bye = matches!(request, Request::Bye);
            let next = self.handle(request);
            // The request is stored or answered: its bytes are no longer held.
            drop(reservation);
            match next {
                Next::Reply(reply, fd) => {
                    let fd = fd.as_deref().map(AsFd::as_fd);
                    if let Err(e) = self.send(&reply, fd) {
                        return self.send_failed(reply.name(), e);
                    }
                    if bye {
                        // After the reply: whoever waits for every goodbye may then end this
                        // process without cutting a reply short.
                        let _ = self.events.send(StoreEvent::Goodbye { rank: self.rank });
                    }
                }
                Next::Stream { name, head, value } => {
                    if let Err(e) = self.link.send_parts(&head, &value, None) {
                        return self.send_failed(name, e);
                    }
                }
                Next::Values { head, values } => {
                    if let Err(e) = self.send_values(head, &values) {
                        return self.send_failed("VALUES", e);
                    }
                }
                Next::Fds(fds) => {
                    if let Err(e) = self.send_fds(&fds) {
                        return self.send_failed("FDS", e);
                    }
                }
                Next::Silent => {}
                Next::Fatal(message) => return Err(self.refuse(message)),
                Next::Close(reply, message) => {
                    let _ = self.send(&reply, None);
                    return Err(message.into());
                }
            }
        }
    }

    /// How long this connection has to join the job.
    fn join_limit(&self) -> Duration {
        match self.link {
            Link::Unix(_) => IO_STALL_LIMIT,
            _ => TCP_JOIN_LIMIT,
        }
    }

    /// A reply could not be sent: the end of the connection if the peer is gone, a protocol
    /// violation if it stopped reading.
    fn send_failed(&self, reply: &str, e: io::Error) -> Result<(), Refusal> {
        if matches!(
            e.kind(),
            io::ErrorKind::BrokenPipe
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::NotConnected
        ) {
            tracing::debug!(
                "store: {} left before its {reply} reply was sent ({e})",
                self.peer
            );
            return Ok(());
        }
        Err(match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => format!(
                "did not take its {reply} reply within {} s",
                IO_STALL_LIMIT.as_secs()
            )
            .into(),
            _ => format!("cannot send {reply} reply: {e}").into(),
        })
    }

    /// Tells the peer why it is being dropped (best effort) and returns the message.
    fn refuse(&self, message: String) -> Refusal {
        let _ = self.send(&Reply::Error(message.clone()), None);
        Refusal(message)
    }

    /// Sends a VALUES reply from where the values are kept: small values are batched into
    /// sends of about [`SEND_CHUNK`] bytes, large ones sent as they are.
    fn send_values(&self, mut buf: Vec<u8>, values: &[Arc<[u8]>]) -> io::Result<()> {
        for v in values {
            buf.extend_from_slice(&(v.len() as u32).to_le_bytes());
            if v.len() <= SEND_CHUNK {
                buf.extend_from_slice(v);
            } else {
                self.link.send_parts(&buf, v, None)?;
                buf.clear();
            }
            if buf.len() >= SEND_CHUNK {
                self.link.send_parts(&buf, &[], None)?;
                buf.clear();
            }
        }
        if buf.is_empty() {
            return Ok(());
        }
        self.link.send_parts(&buf, &[], None)
    }

    /// Sends a FDS reply: its head, then one zero byte per descriptor, each `sendmsg` carrying
    /// at most [`wire::FDS_PER_SEND`] of them.
    fn send_fds(&self, fds: &[Arc<OwnedFd>]) -> io::Result<()> {
        // The count was checked against MAX_GATHER_COUNT when the request was decoded.
        self.link
            .send_fds(&wire::fds_reply_head(fds.len() as u32), &[])?;
        let zeros = [0u8; wire::FDS_PER_SEND];
        for chunk in fds.chunks(wire::FDS_PER_SEND) {
            let borrowed: Vec<BorrowedFd<'_>> = chunk.iter().map(|f| f.as_fd()).collect();
            self.link.send_fds(&zeros[..chunk.len()], &borrowed)?;
        }
        Ok(())
    }

    fn send(&self, reply: &Reply, fd: Option<BorrowedFd<'_>>) -> io::Result<()> {
        let frame = reply.encode().map_err(io::Error::other)?;
        self.link.send_frame(&frame, fd)
    }

    /// Waits for the `count` keys of `prefix` and keeps the kind of entry `pick` takes; else
    /// the reply: the PEs still missing at the timeout, or the first key holding the other kind
    /// (`wrong` says what it holds).
    fn gather<T>(
        &self,
        prefix: &str,
        count: u32,
        timeout_ms: u64,
        pick: impl Fn(Entry) -> Option<T>,
        wrong: &str,
    ) -> Result<Vec<T>, Next> {
        let wait = Duration::from_millis(timeout_ms);
        let entries = self
            .shared
            .wait_for_all(prefix, count, wait)
            .map_err(|missing| Next::Reply(Reply::Missing(missing), None))?;
        entries
            .into_iter()
            .enumerate()
            .map(|(i, e)| pick(e).ok_or(i))
            .collect::<Result<Vec<T>, usize>>()
            .map_err(|i| Next::Reply(Reply::Error(format!("key '{prefix}{i}' {wrong}")), None))
    }

    fn handle(&mut self, request: Request) -> Next {
        if !self.hello && !matches!(request, Request::Hello { .. }) {
            return Next::Fatal(format!("{} before HELLO", request.name()));
        }
        match request {
            Request::Hello {
                version,
                rank,
                n_pes,
                job,
            } => {
                if self.hello {
                    return Next::Fatal("second HELLO".into());
                }
                if version != PROTOCOL_VERSION {
                    // Answer with our version so the client can name both.
                    return Next::Close(
                        Reply::HelloAck {
                            version: PROTOCOL_VERSION,
                            n_pes: self.n_pes,
                        },
                        format!(
                            "protocol version mismatch: PE speaks {version}, \
                             launcher {PROTOCOL_VERSION}"
                        ),
                    );
                }
                if self.shared.secret {
                    if !self.claimed
                        && !bool::from(job.as_bytes().ct_eq(self.shared.job.as_bytes()))
                    {
                        return Next::Fatal(
                            "HELLO does not carry this job's secret (the unique id's): not a PE \
                             of this job"
                                .into(),
                        );
                    }
                } else if !self.shared.job.is_empty() && !job.is_empty() && job != self.shared.job {
                    return Next::Fatal(format!(
                        "HELLO is for job '{job}', but this store serves job '{}'",
                        self.shared.job
                    ));
                }
                if !self.claimed {
                    if n_pes != self.n_pes {
                        let message = self.record_refusal(
                            rank,
                            format!(
                                "HELLO says PE {rank} of {n_pes}, but this job has {} PEs",
                                self.n_pes
                            ),
                        );
                        // Answer with our size so the client can name both.
                        return Next::Close(
                            Reply::HelloAck {
                                version: PROTOCOL_VERSION,
                                n_pes: self.n_pes,
                            },
                            message,
                        );
                    }
                    if let Err(message) = self.claim(rank) {
                        return Next::Fatal(message.into());
                    }
                } else if rank != self.rank || n_pes != self.n_pes {
                    return Next::Fatal(format!(
                        "HELLO says PE {rank} of {n_pes}, but this socket belongs to PE {} of {}",
                        self.rank, self.n_pes
                    ));
                }
                self.hello = true;
                self.shared.update_peer(self.rank, |p| p.connected = true);
                Next::Reply(
                    Reply::HelloAck {
                        version: PROTOCOL_VERSION,
                        n_pes: self.n_pes,
                    },
                    None,
                )
            }
            Request::Set { key, value } => {
                // Copied into its shared form before the lock: no other connection waits on it.
                let value: Arc<[u8]> = value.into();
                let mut state = self.shared.lock();
                if let Err(message) = state.check_room("SET", &key, value.len()) {
                    return Next::Reply(Reply::Error(message), None);
                }
                let old = state.put(key, Entry::Bytes(value));
                // A large value replaced is freed after the lock.
                drop(state);
                drop(old);
                Next::Reply(Reply::Ok, None)
            }
            Request::Get { key, timeout_ms } => {
                match self
                    .shared
                    .wait_for(&key, Duration::from_millis(timeout_ms))
                {
                    None => Next::Reply(Reply::Timeout, None),
                    Some(Entry::Bytes(v)) => match wire::value_reply_head(v.len()) {
                        Ok(head) => Next::Stream {
                            name: "VALUE",
                            head,
                            value: v,
                        },
                        // Stored values are within the limit: SET and APPEND checked them.
                        Err(e) => Next::Reply(Reply::Error(e.to_string()), None),
                    },
                    Some(Entry::Fd(_)) => Next::Reply(
                        Reply::Error("key holds a file descriptor; use GET_FD".into()),
                        None,
                    ),
                }
            }
            Request::Add { key, delta } => {
                let result = {
                    let mut state = self.shared.lock();
                    let old = match state.entries.get(&key) {
                        None => Ok(0),
                        Some(Entry::Bytes(v)) => match <[u8; 8]>::try_from(&v[..]) {
                            Ok(b) => Ok(i64::from_le_bytes(b)),
                            Err(_) => Err(format!(
                                "key holds a {}-byte value, not an 8-byte counter",
                                v.len()
                            )),
                        },
                        Some(Entry::Fd(_)) => {
                            Err("key holds a file descriptor, not a counter".into())
                        }
                    };
                    let room = state.check_room("ADD", &key, 8);
                    old.and_then(|old| {
                        room?;
                        let new = old.wrapping_add(delta);
                        let bytes: Arc<[u8]> = new.to_le_bytes().into();
                        state.put(key, Entry::Bytes(bytes));
                        Ok(new)
                    })
                };
                match result {
                    Ok(new) => Next::Reply(Reply::Counter(new), None),
                    Err(message) => Next::Reply(Reply::Error(message), None),
                }
            }
            Request::Delete { key } => {
                let old = self.shared.lock().remove(&key);
                drop(old);
                Next::Reply(Reply::Ok, None)
            }
            Request::DeletePrefix { prefix } => {
                let removed = self.shared.lock().remove_prefix(&prefix);
                Next::Reply(Reply::Counter(removed as i64), None)
            }
            Request::Cas {
                key,
                expected,
                desired,
            } => {
                let (swapped, current) = {
                    let mut state = self.shared.lock();
                    let current = match state.entries.get(&key) {
                        None => None,
                        Some(Entry::Bytes(v)) => Some(Arc::clone(v)),
                        Some(Entry::Fd(_)) => {
                            return Next::Reply(
                                Reply::Error("key holds a file descriptor, not a value".into()),
                                None,
                            )
                        }
                    };
                    if current.as_deref() == expected.as_deref() {
                        if let Err(message) = state.check_room("CAS", &key, desired.len()) {
                            return Next::Reply(Reply::Error(message), None);
                        }
                        let stored: Arc<[u8]> = desired.into();
                        state.put(key, Entry::Bytes(Arc::clone(&stored)));
                        (true, Some(stored))
                    } else {
                        (false, current)
                    }
                };
                match wire::swapped_reply_head(swapped, current.as_ref().map(|v| v.len())) {
                    Ok(head) => Next::Stream {
                        name: "SWAPPED",
                        head,
                        value: current.unwrap_or_else(|| Arc::from(&[][..])),
                    },
                    // Stored values are within the limit: SET and APPEND checked them.
                    Err(e) => Next::Reply(Reply::Error(e.to_string()), None),
                }
            }
            Request::Append { key, value } => {
                let result = {
                    let mut state = self.shared.lock();
                    let old: Result<Arc<[u8]>, String> = match state.entries.get(&key) {
                        None => Ok(Arc::from(&[][..])),
                        Some(Entry::Bytes(v)) => Ok(Arc::clone(v)),
                        Some(Entry::Fd(_)) => Err("key holds a file descriptor".into()),
                    };
                    old.and_then(|old| {
                        let len = old.len() + value.len();
                        if len > MAX_VALUE_LEN {
                            return Err(format!(
                                "the value would grow to {len} bytes, limit {MAX_VALUE_LEN}"
                            ));
                        }
                        state.check_room("APPEND", &key, len)?;
                        // Built in place: a Vec turned into an Arc would be one more copy
                        // beyond what the frame's reservation covers.
                        let joined: Arc<[u8]> = old.iter().chain(&value).copied().collect();
                        state.put(key, Entry::Bytes(joined));
                        Ok(len)
                    })
                };
                match result {
                    Ok(len) => Next::Reply(Reply::Counter(len as i64), None),
                    Err(message) => Next::Reply(Reply::Error(message), None),
                }
            }
            Request::PutFd { key } => match self.fds.pop() {
                Some(fd) => {
                    self.shared.insert(key, Entry::Fd(Arc::new(fd)));
                    Next::Reply(Reply::Ok, None)
                }
                // serve() checked that exactly one descriptor came with this frame.
                None => Next::Fatal("PUT_FD frame came without a file descriptor".into()),
            },
            Request::GetFd { key, timeout_ms } => {
                match self
                    .shared
                    .wait_for(&key, Duration::from_millis(timeout_ms))
                {
                    None => Next::Reply(Reply::Timeout, None),
                    Some(Entry::Fd(fd)) => Next::Reply(Reply::Fd, Some(fd)),
                    Some(Entry::Bytes(_)) => Next::Reply(
                        Reply::Error("key holds a value, not a file descriptor".into()),
                        None,
                    ),
                }
            }
            Request::Gather {
                prefix,
                count,
                timeout_ms,
            } => {
                let bytes = |e| match e {
                    Entry::Bytes(v) => Some(v),
                    Entry::Fd(_) => None,
                };
                let wrong = "holds a file descriptor; use GATHER_FD";
                let values = match self.gather(&prefix, count, timeout_ms, bytes, wrong) {
                    Ok(values) => values,
                    Err(reply) => return reply,
                };
                match wire::values_reply_head(values.iter().map(|v| v.len())) {
                    Ok(head) => Next::Values { head, values },
                    Err(e) => Next::Reply(
                        Reply::Error(format!("{}: {e}", wire::GATHER_TOO_LARGE)),
                        None,
                    ),
                }
            }
            Request::GatherFd {
                prefix,
                count,
                timeout_ms,
            } => {
                let fd = |e| match e {
                    Entry::Fd(fd) => Some(fd),
                    Entry::Bytes(_) => None,
                };
                let wrong = "holds a value, not a file descriptor";
                match self.gather(&prefix, count, timeout_ms, fd, wrong) {
                    Ok(fds) => Next::Fds(fds),
                    Err(reply) => reply,
                }
            }
            Request::Abort {
                status,
                after_error,
            } => {
                self.shared.update_peer(self.rank, |p| {
                    p.abort_status = Some(status);
                    p.abort_after_error = after_error;
                });
                let _ = self.events.send(StoreEvent::Abort {
                    rank: self.rank,
                    status,
                    after_error,
                });
                Next::Silent
            }
            Request::Bye => {
                self.goodbye = true;
                self.shared
                    .update_peer(self.rank, |p| p.said_goodbye = true);
                // The Goodbye event follows the reply (serve).
                Next::Reply(Reply::Ok, None)
            }
        }
    }

    /// Records why PE `rank` was refused, for the PEs that wait for it at start-up
    /// (`bootstrap::gather`), so that they name it instead of timing out; returns `message`.
    fn record_refusal(&self, rank: u32, message: String) -> String {
        self.shared.insert(
            refused_key(rank),
            Entry::Bytes(message.clone().into_bytes().into()),
        );
        message
    }

    /// Takes `rank`'s slot for a connection from the listening socket, as its HELLO asks (the
    /// job's size is checked already).
    fn claim(&mut self, rank: u32) -> Result<(), Refusal> {
        if rank >= self.n_pes {
            return Err(self
                .record_refusal(
                    rank,
                    format!("HELLO says PE {rank}, but this job has {} PEs", self.n_pes),
                )
                .into());
        }
        let mut state = self.shared.lock();
        if state.peers[rank as usize].is_some() {
            let holder = state.holders[rank as usize].clone();
            drop(state);
            return Err(self.rank_taken(rank, holder));
        }
        state.peers[rank as usize] = Some(PeerStatus::default());
        state.holders[rank as usize] = Some(format!(
            "a connection from {} said HELLO as PE {rank} first",
            self.peer
        ));
        drop(state);
        self.rank = rank;
        self.claimed = true;
        if let Some(ticket) = self.ticket.take() {
            self.shared.leave(&ticket);
        }
        Ok(())
    }
}

impl Connection {
    /// Refuses a HELLO for `rank`, whose place is held already (`holder` says by whom). Over
    /// plain TCP the store cannot tell a PE from an impostor, so the message says so: the PE
    /// refused may be the real one, and its host must learn at once why it cannot join. Only
    /// who may join the job gets this far (TLS, a unique id's secret, the uid check; anyone
    /// over plain TCP), and they could end the job anyway.
    fn rank_taken(&self, rank: u32, holder: Option<String>) -> Refusal {
        let holder = holder.unwrap_or_else(|| format!("PE {rank} is served on its own socket"));
        let mut message = format!("PE {rank}'s {}: {holder}", wire::PLACE_TAKEN);
        if matches!(self.link, Link::Tcp(_)) {
            message.push_str(
                "; this store runs without TLS (SHMEM_TLS_DISABLE=1), so anyone who reaches \
                 its port can take a PE's place: if that was not this job's PE, run the store \
                 with TLS",
            );
        }
        // The PEs waiting for this rank at start-up then fail naming the reason, instead of
        // waiting for a PE whose place another holds.
        self.record_refusal(rank, message).into()
    }
}

/// Why the store ends a connection: the text it sends the peer in an ERROR reply (when the
/// peer still reads) and reports to its host. The protocol carries it as text.
#[derive(Debug)]
struct Refusal(String);

impl From<String> for Refusal {
    fn from(text: String) -> Self {
        Refusal(text)
    }
}

impl From<&str> for Refusal {
    fn from(text: &str) -> Self {
        Refusal(text.to_string())
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Refusal> for String {
    fn from(r: Refusal) -> Self {
        r.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unix::{send_frame, FdReader};
    use crate::{BootstrapError, Client};
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::os::fd::OwnedFd;
    use std::thread;

    const T: Duration = Duration::from_secs(30);

    /// A server with `n` served ranks; returns the PE ends of the sockets.
    fn job(n: u32) -> (Server, Receiver<StoreEvent>, Vec<OwnedFd>) {
        let (server, events) = Server::new(n);
        let mut ends = Vec::new();
        for rank in 0..n {
            let (ours, theirs) = UnixStream::pair().unwrap();
            server.serve_unix(rank, ours).unwrap();
            ends.push(OwnedFd::from(theirs));
        }
        (server, events, ends)
    }

    fn next_event(events: &Receiver<StoreEvent>) -> StoreEvent {
        events.recv_timeout(T).expect("an event")
    }

    /// Events until (and including) `rank`'s Disconnected.
    fn events_until_disconnect(events: &Receiver<StoreEvent>, rank: u32) -> Vec<StoreEvent> {
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
    fn pes_exchange_values_counters_and_collectives() {
        let n = 4;
        let (server, events, ends) = job(n);
        let handles: Vec<_> = ends
            .into_iter()
            .enumerate()
            .map(|(rank, fd)| {
                thread::spawn(move || {
                    let rank = rank as u32;
                    let c = Client::connect_inherited(fd, rank, n, T).unwrap();
                    assert_eq!((c.rank(), c.n_pes()), (rank, n));
                    c.set(&format!("addr/{rank}"), format!("pe{rank}").as_bytes())
                        .unwrap();
                    let peer = (rank + 1) % n;
                    assert_eq!(
                        c.get(&format!("addr/{peer}"), T).unwrap(),
                        format!("pe{peer}").as_bytes()
                    );
                    let v = c.add("counter", 10).unwrap();
                    assert!(v % 10 == 0 && (10..=40).contains(&v));
                    c.barrier(T).unwrap();
                    assert_eq!(c.get("counter", T).unwrap(), 40i64.to_le_bytes());
                    for round in 0..3u8 {
                        let all = c.allgather(&[rank as u8, round], T).unwrap();
                        let want: Vec<Vec<u8>> = (0..n as u8).map(|r| vec![r, round]).collect();
                        assert_eq!(all, want);
                        c.barrier(T).unwrap();
                    }
                    c.goodbye().unwrap();
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let mut goodbyes = 0;
        let mut clean = 0;
        while clean < n {
            match next_event(&events) {
                StoreEvent::Goodbye { .. } => goodbyes += 1,
                StoreEvent::Disconnected { said_goodbye, .. } => {
                    assert!(said_goodbye);
                    clean += 1;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(goodbyes, n);
        for rank in 0..n {
            let st = server.peer_status(rank).unwrap();
            assert!(st.connected && st.said_goodbye && st.closed);
            assert_eq!(st.abort_status, None);
        }
    }

    #[test]
    fn an_allgather_costs_each_pe_a_few_requests_whatever_the_job_size() {
        let n = 16;
        let (server, _events, ends) = job(n);
        let clients: Vec<Client> = (ends.into_iter().enumerate())
            .map(|(rank, fd)| Client::connect_inherited(fd, rank as u32, n, T).unwrap())
            .collect();
        let before = server.requests_served();
        let handles: Vec<_> = (clients.into_iter())
            .map(|c| {
                thread::spawn(move || {
                    let all = c.allgather(&[c.rank() as u8; 3], T).unwrap();
                    let want: Vec<Vec<u8>> = (0..n as u8).map(|r| vec![r; 3]).collect();
                    assert_eq!(all, want);
                    let fd =
                        rustix::fs::memfd_create("t", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
                    rustix::fs::ftruncate(&fd, u64::from(c.rank())).unwrap();
                    c.put_fd(&format!("seg/{}", c.rank()), fd.as_fd()).unwrap();
                    let fds = c.gather_fds("seg/", n, T).unwrap();
                    for (pe, fd) in fds.iter().enumerate() {
                        assert_eq!(rustix::fs::fstat(fd).unwrap().st_size, pe as i64);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        // SET, GATHER and ADD (the last PE's DELETE_PREFIX too), then PUT_FD and GATHER_FD:
        // one GET per peer would be n - 1 more for each PE.
        let served = server.requests_served() - before;
        assert!(
            served <= 5 * n as usize + 1,
            "{served} requests for {n} PEs"
        );
    }

    #[test]
    fn a_write_wakes_only_the_waiters_of_its_key() {
        let n = 8;
        let (server, _events, mut ends) = job(n + 1);
        let writer = Client::connect_inherited(ends.pop().unwrap(), n, n + 1, T).unwrap();
        let handles: Vec<_> = (ends.into_iter().enumerate())
            .map(|(rank, fd)| {
                thread::spawn(move || {
                    let rank = rank as u32;
                    let c = Client::connect_inherited(fd, rank, n + 1, T).unwrap();
                    let key = if rank % 2 == 0 { "gets/" } else { "gathers/" };
                    if rank % 2 == 0 {
                        assert_eq!(c.get(&format!("{key}{rank}"), T).unwrap(), [rank as u8]);
                    } else {
                        let all = c.gather(&format!("{key}{rank}/"), 2, T).unwrap();
                        assert_eq!(all, [[rank as u8], [rank as u8 + 1]]);
                    }
                })
            })
            .collect();
        let start = Instant::now();
        while server.shared.lock().waiters.len() < n as usize {
            assert!(start.elapsed() < T, "the waiters never started waiting");
            thread::sleep(Duration::from_millis(1));
        }
        for i in 0..50 {
            writer.set(&format!("other/{i}"), b"x").unwrap();
            writer.add("counter", 1).unwrap();
        }
        for rank in 0..n {
            if rank % 2 == 0 {
                writer.set(&format!("gets/{rank}"), &[rank as u8]).unwrap();
            } else {
                writer
                    .set(&format!("gathers/{rank}/0"), &[rank as u8])
                    .unwrap();
                writer
                    .set(&format!("gathers/{rank}/1"), &[rank as u8 + 1])
                    .unwrap();
            }
        }
        for h in handles {
            h.join().unwrap();
        }
        // One wake-up per key waited for (n / 2 GETs, two keys per gather); a few spurious
        // ones are allowed. Waking every waiter on every write would be about 100 x n.
        let wakeups = server.wakeups();
        assert!(wakeups <= 3 * n as usize / 2 + 4, "{wakeups} wake-ups");
        assert!(server.shared.lock().waiters.is_empty());
    }

    #[test]
    fn a_gather_names_the_first_key_missing_and_keeps_the_connection() {
        let (_server, _events, mut ends) = job(1);
        let c = Client::connect_inherited(ends.pop().unwrap(), 0, 1, T).unwrap();
        c.set("g/0", b"a").unwrap();
        c.set("g/2", b"c").unwrap();
        let err = c.gather("g/", 4, Duration::from_millis(50)).unwrap_err();
        assert!(
            matches!(err, BootstrapError::Absent { rank: 1, .. }),
            "{err}"
        );
        c.set("g/1", b"b").unwrap();
        c.set("g/3", b"").unwrap();
        let all = c.gather("g/", 4, T).unwrap();
        assert_eq!(all, [&b"a"[..], b"b", b"c", b""]);
        // A value where a descriptor is expected is refused, the connection still usable.
        let err = c.gather_fds("g/", 4, T).unwrap_err();
        assert!(matches!(err, BootstrapError::Refused { .. }), "{err}");
        // Values too large for one reply frame are read one by one.
        let big = vec![7u8; wire::MAX_VALUE_LEN / 2 + 1];
        for i in 0..3 {
            c.set(&format!("big/{i}"), &big).unwrap();
        }
        let all = c.gather("big/", 3, T).unwrap();
        assert!(all.iter().all(|v| *v == big));
    }

    #[test]
    fn get_waits_for_a_later_set() {
        let (_server, _events, mut ends) = job(2);
        let b = Client::connect_inherited(ends.pop().unwrap(), 1, 2, T).unwrap();
        let a = Client::connect_inherited(ends.pop().unwrap(), 0, 2, T).unwrap();
        let waiter = thread::spawn(move || a.get("late", T).unwrap());
        // Whether the GET arrives before or after the SET, it must see the value.
        b.set("late", b"here").unwrap();
        assert_eq!(waiter.join().unwrap(), b"here");
    }

    #[test]
    fn get_timeout_names_the_key_and_keeps_the_connection() {
        let (_server, _events, mut ends) = job(1);
        let c = Client::connect_inherited(ends.pop().unwrap(), 0, 1, T).unwrap();
        let err = c.get("never/there", Duration::from_millis(50)).unwrap_err();
        assert!(
            matches!(&err, BootstrapError::Timeout { key, .. } if key == "never/there"),
            "{err}"
        );
        assert!(err.to_string().contains("never/there"));
        let err = c.get_fd("no/fd", Duration::from_millis(20)).unwrap_err();
        assert!(matches!(err, BootstrapError::Timeout { .. }), "{err}");
        c.set("x", b"1").unwrap();
        assert_eq!(c.get("x", T).unwrap(), b"1");
    }

    #[test]
    fn counters_and_deletes() {
        let (_server, _events, mut ends) = job(1);
        let c = Client::connect_inherited(ends.pop().unwrap(), 0, 1, T).unwrap();
        assert_eq!(c.add("n", 5).unwrap(), 5);
        assert_eq!(c.add("n", -7).unwrap(), -2);
        c.set("s", b"abc").unwrap();
        let err = c.add("s", 1).unwrap_err();
        assert!(matches!(err, BootstrapError::Refused { .. }), "{err}");
        c.delete("n").unwrap();
        c.delete("n").unwrap();
        assert_eq!(c.add("n", 1).unwrap(), 1);
        assert!(matches!(
            c.set("", b"x"),
            Err(BootstrapError::InvalidArgument { .. })
        ));
        assert!(matches!(
            c.set(&"k".repeat(wire::MAX_KEY_LEN + 1), b"x"),
            Err(BootstrapError::InvalidArgument { .. })
        ));
        // A maximal value goes through.
        let big = vec![0x5a; wire::MAX_VALUE_LEN];
        c.set("big", &big).unwrap();
        assert!(c.get("big", T).unwrap() == big);
    }

    /// Bytes the store's entries are charged right now.
    fn held(server: &Server) -> usize {
        server.shared.lock().held
    }

    /// What the store keeps is charged to [`VALUE_BUDGET`] and given back by every way a key
    /// goes (replaced, deleted, deleted by prefix): writes past the budget are refused, whatever
    /// the request, and rounds of barriers and allgathers leave nothing charged behind.
    #[test]
    fn stored_values_stay_within_their_budget() {
        let n = 2;
        let (server, _events, ends) = job(n);
        let pes: Vec<Client> = (ends.into_iter().enumerate())
            .map(|(rank, fd)| Client::connect_inherited(fd, rank as u32, n, T).unwrap())
            .collect();
        let empty = held(&server);
        let big = vec![0x5a; wire::MAX_VALUE_LEN];
        let fit = VALUE_BUDGET / (wire::MAX_VALUE_LEN + ENTRY_OVERHEAD + 8);
        for i in 0..fit {
            pes[i % 2].set(&format!("big/{i}"), &big).unwrap();
        }
        // Replacing a value with one of the same size needs no more room.
        pes[1].set("big/0", &big).unwrap();
        let full = |e: BootstrapError| {
            let text = e.to_string();
            assert!(
                text.contains("does not fit") && text.contains(&VALUE_BUDGET.to_string()),
                "{text}"
            );
        };
        full(pes[0].set("one/more", &big).unwrap_err());
        full(pes[1].cas("one/more", None, &big).unwrap_err());
        pes[0].set("half", &big[..wire::MAX_VALUE_LEN / 2]).unwrap();
        full(
            pes[1]
                .append("half", &big[..wire::MAX_VALUE_LEN / 2])
                .unwrap_err(),
        );
        // Each PE reads what the other wrote, whole.
        assert_eq!(pes[0].get("big/1", T).unwrap(), big);
        assert_eq!(
            pes[1].get("half", T).unwrap(),
            &big[..wire::MAX_VALUE_LEN / 2]
        );
        pes[1].delete("half").unwrap();
        pes[0].delete("big/0").unwrap();
        pes[1].set("one/more", &big).unwrap();
        assert_eq!(pes[0].delete_prefix("big/").unwrap(), fit - 1);
        pes[0].delete("one/more").unwrap();
        assert_eq!(held(&server), empty);
        let rounds: Vec<_> = pes
            .into_iter()
            .map(|c| {
                thread::spawn(move || {
                    for round in 0..50u8 {
                        c.barrier(T).unwrap();
                        let all = c.allgather(&[c.rank() as u8, round], T).unwrap();
                        assert_eq!(all, vec![vec![0, round], vec![1, round]]);
                    }
                })
            })
            .collect();
        for r in rounds {
            r.join().unwrap();
        }
        // The last barrier round's keys, a few bytes: not 50 rounds' worth.
        let left = held(&server) - empty;
        assert!(
            left < 8 * (ENTRY_OVERHEAD + 64),
            "{left} bytes still charged"
        );
    }

    #[test]
    fn memfd_is_shared_through_the_store() {
        let (_server, _events, mut ends) = job(2);
        let b = Client::connect_inherited(ends.pop().unwrap(), 1, 2, T).unwrap();
        let a = Client::connect_inherited(ends.pop().unwrap(), 0, 2, T).unwrap();
        let memfd = rustix::fs::memfd_create("heap", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        a.put_fd("heap/0", memfd.as_fd()).unwrap();
        let got = b.get_fd("heap/0", T).unwrap();
        let mut ours = std::fs::File::from(memfd);
        let mut theirs = std::fs::File::from(got);
        ours.write_all(b"written by PE 0").unwrap();
        theirs.seek(SeekFrom::Start(0)).unwrap();
        let mut s = String::new();
        theirs.read_to_string(&mut s).unwrap();
        assert_eq!(s, "written by PE 0");
        // A value key is not a descriptor and back.
        a.set("v", b"1").unwrap();
        assert!(matches!(
            b.get_fd("v", T),
            Err(BootstrapError::Refused { .. })
        ));
        assert!(matches!(
            b.get("heap/0", T),
            Err(BootstrapError::Refused { .. })
        ));
    }

    #[test]
    fn abort_and_disconnect_events() {
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
    fn never_connected_pe_is_not_marked_connected() {
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

    /// Sends raw bytes as PE `rank`'s socket and returns the events until it is dropped.
    fn raw_exchange(bytes: &[u8], hello_first: bool) -> Vec<StoreEvent> {
        let (server, events, mut ends) = job(2);
        let mut sock = UnixStream::from(ends.remove(0));
        let other = Client::connect_inherited(ends.remove(0), 1, 2, T).unwrap();
        if hello_first {
            let hello = Request::Hello {
                version: PROTOCOL_VERSION,
                rank: 0,
                n_pes: 2,
                job: String::new(),
            };
            sock.write_all(&hello.encode().unwrap()).unwrap();
            let mut reader = FdReader {
                sock: sock.as_fd(),
                fds: &mut Vec::new(),
            };
            let ack = Reply::from_frame(&wire::read_frame(&mut reader).unwrap()).unwrap();
            assert!(matches!(ack, Reply::HelloAck { .. }));
        }
        sock.write_all(bytes).unwrap();
        // EOF after the bytes, so a cut frame ends at once instead of after the stall limit.
        sock.shutdown(std::net::Shutdown::Write).unwrap();
        let seen = events_until_disconnect(&events, 0);
        // The server is still fine for everyone else.
        other.set("still", b"ok").unwrap();
        assert_eq!(other.get("still", T).unwrap(), b"ok");
        drop(server);
        seen
    }

    fn assert_protocol_error(seen: &[StoreEvent], needle: &str) {
        assert!(
            seen.iter().any(|e| matches!(e,
                StoreEvent::ProtocolError { rank: 0, message } if message.contains(needle))),
            "no protocol error containing {needle:?} in {seen:?}"
        );
    }

    #[test]
    fn malformed_frames_close_only_that_connection() {
        assert_protocol_error(&raw_exchange(&[0, 0, 0, 0], true), "frame length 0");
        assert_protocol_error(&raw_exchange(&u32::MAX.to_le_bytes(), true), "out of range");
        assert_protocol_error(&raw_exchange(&[1, 0, 0, 0, 0x42], true), "unknown op");
        assert_protocol_error(&raw_exchange(&[3, 0, 0, 0, 0x05, 9, 0], true), "DELETE");
        // Truncated frame, then EOF.
        assert_protocol_error(&raw_exchange(&[9, 0, 0, 0, 0x02], true), "inside a frame");
        // A frame larger than any HELLO before HELLO, refused before it is read.
        assert_protocol_error(&raw_exchange(&4096u32.to_le_bytes(), false), "before HELLO");
        // Anything but HELLO first.
        let set = Request::Set {
            key: "k".into(),
            value: vec![],
        };
        assert_protocol_error(&raw_exchange(&set.encode().unwrap(), false), "before HELLO");
        // HELLO naming another rank.
        let wrong = Request::Hello {
            version: PROTOCOL_VERSION,
            rank: 1,
            n_pes: 2,
            job: String::new(),
        };
        assert_protocol_error(&raw_exchange(&wrong.encode().unwrap(), false), "PE 1 of 2");
    }

    #[test]
    fn unexpected_descriptor_is_a_protocol_error() {
        let (_server, events, mut ends) = job(1);
        let sock = ends.pop().unwrap();
        let hello = Request::Hello {
            version: PROTOCOL_VERSION,
            rank: 0,
            n_pes: 1,
            job: String::new(),
        };
        let memfd = rustix::fs::memfd_create("x", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        send_frame(sock.as_fd(), &hello.encode().unwrap(), Some(memfd.as_fd())).unwrap();
        assert_protocol_error(&events_until_disconnect(&events, 0), "1 file descriptors");
    }

    #[test]
    fn version_mismatch_is_reported() {
        let (_server, _events, mut ends) = job(1);
        let sock = ends.pop().unwrap();
        let hello = Request::Hello {
            version: PROTOCOL_VERSION + 1,
            rank: 0,
            n_pes: 1,
            job: String::new(),
        };
        send_frame(sock.as_fd(), &hello.encode().unwrap(), None).unwrap();
        let mut fds = Vec::new();
        let mut reader = FdReader {
            sock: sock.as_fd(),
            fds: &mut fds,
        };
        let reply = Reply::from_frame(&wire::read_frame(&mut reader).unwrap()).unwrap();
        assert_eq!(
            reply,
            Reply::HelloAck {
                version: PROTOCOL_VERSION,
                n_pes: 1
            }
        );
    }

    #[test]
    fn client_rejects_wrong_job_size() {
        let (_server, _events, mut ends) = job(2);
        let err = Client::connect_inherited(ends.pop().unwrap(), 1, 3, T).unwrap_err();
        assert!(err.to_string().contains("PE 1 of 3"), "{err}");
    }

    #[test]
    fn accepted_connections_join_as_their_hello_says() {
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
    fn serve_unix_checks_rank() {
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

    /// A TCP store of `n` PEs on a free loopback port, with a fresh job CA when `tls`.
    fn tcp_store(
        n: u32,
        tls: bool,
    ) -> (
        Server,
        Receiver<StoreEvent>,
        std::net::SocketAddr,
        Option<crate::tls::JobCredentials>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let creds = tls.then(|| {
            crate::tls::job_credentials(
                &["127.0.0.1".parse().unwrap()],
                crate::tls::Validity::for_a_job(),
            )
            .unwrap()
        });
        let (server, events) = Server::new(n);
        let config = creds.as_ref().map(|c| c.server.server_config().unwrap());
        server.serve_tcp(listener, config).unwrap();
        (server, events, addr, creds)
    }

    /// Writes `bytes` to a fresh connection one at a time, `every` apart, until the store
    /// closes it or `give_up` has passed; returns how long it stayed open.
    fn trickle(
        addr: std::net::SocketAddr,
        bytes: &[u8],
        every: Duration,
        give_up: Duration,
    ) -> Duration {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_nonblocking(true).unwrap();
        let start = Instant::now();
        let mut sent = 0;
        let mut next = start;
        loop {
            let mut sink = [0u8; 512];
            match s.read(&mut sink) {
                Ok(0) => return start.elapsed(),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return start.elapsed(),
            }
            if start.elapsed() >= give_up {
                return start.elapsed();
            }
            if sent < bytes.len() && Instant::now() >= next {
                let _ = s.write(&bytes[sent..=sent]);
                sent += 1;
                next += every;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn frames_wait_for_room_in_the_budget_then_are_refused() {
        let budget = FrameBudget::default();
        let half = FRAME_BUDGET / 2;
        let first = budget.reserve(half, Instant::now()).unwrap();
        let second = budget.reserve(half, Instant::now()).unwrap();
        // Full: one more byte waits until its deadline, and gets nothing.
        let start = Instant::now();
        let wait = Duration::from_millis(100);
        assert!(budget.reserve(1, start + wait).is_none());
        assert!(start.elapsed() >= wait);
        // Room given back while a frame waits goes to it.
        thread::scope(|s| {
            let waiter = s.spawn(|| budget.reserve(half, Instant::now() + T).map(|r| r.bytes));
            thread::sleep(wait);
            drop(first);
            assert_eq!(waiter.join().unwrap(), Some(half));
        });
        drop(second);
        assert_eq!(*budget.used.lock().unwrap(), 0);
    }

    #[test]
    fn a_trickled_tls_handshake_is_cut_at_the_join_deadline() {
        let (_server, _events, addr, creds) = tcp_store(1, true);
        let pe = crate::tls::identity_from_bundle(creds.unwrap().client_bundle.as_bytes()).unwrap();
        let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let mut conn = rustls::ClientConnection::new(pe.client_config().unwrap(), name).unwrap();
        let mut client_hello = Vec::new();
        while conn.wants_write() {
            conn.write_tls(&mut client_hello).unwrap();
        }
        // Every byte comes well within a single read's timeout; the whole never does.
        let every = TCP_JOIN_LIMIT / 5;
        assert!(client_hello.len() > 50);
        let held = trickle(addr, &client_hello, every, TCP_JOIN_LIMIT * 4);
        assert!(
            held < TCP_JOIN_LIMIT + Duration::from_secs(2),
            "a trickled ClientHello held its connection for {held:?}"
        );
        eprintln!("a trickled ClientHello was cut after {held:?}");
    }

    #[test]
    fn a_trickled_hello_is_cut_at_the_join_deadline() {
        let (server, _events, addr, _) = tcp_store(1, false);
        let hello = Request::Hello {
            version: PROTOCOL_VERSION,
            rank: 0,
            n_pes: 1,
            job: String::new(),
        };
        let every = TCP_JOIN_LIMIT / 5;
        let held = trickle(addr, &hello.encode().unwrap(), every, TCP_JOIN_LIMIT * 6);
        assert!(
            held < TCP_JOIN_LIMIT + Duration::from_secs(2),
            "a trickled HELLO held its connection for {held:?}"
        );
        eprintln!("a trickled HELLO was cut after {held:?}");
        assert!(server.peer_status(0).is_none(), "the trickled HELLO joined");
    }

    #[test]
    fn an_idle_stray_is_told_it_sent_nothing() {
        let (server, _events) = Server::new(1);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let _idle = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (sock, _) = listener.accept().unwrap();
        let why =
            (server.join_tcp(sock, None, "idle", Instant::now() + TCP_JOIN_LIMIT)).unwrap_err();
        let want = format!("sent nothing within {} s", TCP_JOIN_LIMIT.as_secs());
        assert!(why.0.contains(&want), "{why}");
    }

    #[test]
    fn a_reply_to_a_pe_that_left_is_not_a_protocol_error() {
        let (_server, events, mut ends) = job(1);
        let sock = UnixStream::from(ends.pop().unwrap());
        let hello = Request::Hello {
            version: PROTOCOL_VERSION,
            rank: 0,
            n_pes: 1,
            job: String::new(),
        };
        send_frame(sock.as_fd(), &hello.encode().unwrap(), None).unwrap();
        let mut reader = FdReader {
            sock: sock.as_fd(),
            fds: &mut Vec::new(),
        };
        Reply::from_frame(&wire::read_frame(&mut reader).unwrap()).unwrap();
        // A GET whose answer comes after the PE is gone (killed during a teardown).
        let get = Request::Get {
            key: "never".into(),
            timeout_ms: 200,
        };
        send_frame(sock.as_fd(), &get.encode().unwrap(), None).unwrap();
        drop(sock);
        let seen = events_until_disconnect(&events, 0);
        assert!(
            !seen
                .iter()
                .any(|e| matches!(e, StoreEvent::ProtocolError { .. })),
            "{seen:?}"
        );
    }
}
