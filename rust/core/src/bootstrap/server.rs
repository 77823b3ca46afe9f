//! Store server: the host's side of the control store (run by `shmemrun`, or by PE 0 itself
//! under other launchers: `node`).
//!
//! Owns the key-value state of one job (values, counters, passed descriptors) and one thread
//! per PE connection that answers its requests in order, over Unix sockets, TCP or TLS
//! (`link`). It reports what its host must act on (ABORT, BYE, disconnects, protocol errors)
//! as [`StoreEvent`]s and never acts on them itself. Must never block on one connection on
//! behalf of another: a stuck or hostile client only ever holds up its own thread, every read
//! of a started frame and every send has a timeout, no lock is held across socket I/O, and the
//! number of open TCP connections is bounded. A TCP connection that is not part of the job
//! (no valid certificate, plain TCP to a TLS store, bad frames, another job's HELLO) is refused
//! and logged, and never becomes a [`StoreEvent`].

use std::collections::HashMap;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use subtle::ConstantTimeEq;

use super::link::{self, HandshakeError, Link, Speaks};
use super::wire::{self, Reply, Request, WireError, MAX_VALUE_LEN, PROTOCOL_VERSION};

/// Longest a started frame may take to arrive in full, and a reply to be taken by the peer.
/// Idle time between frames is unlimited (a PE may compute for hours between store calls).
const IO_STALL_LIMIT: Duration = Duration::from_secs(30);

/// Stack of a connection thread: it only parses frames and touches a hash map.
const CONNECTION_STACK: usize = 256 * 1024;

/// TCP connections open at once beyond one per PE (strays, retries, PEs reconnecting while
/// their old connection closes); more are refused at once, with a log line.
pub const EXTRA_TCP_CONNECTIONS: usize = 32;

/// Handshake and HELLO budget of a TCP connection in tests, which shorten it.
#[cfg(test)]
const TCP_JOIN_LIMIT: Duration = Duration::from_secs(5);
#[cfg(not(test))]
const TCP_JOIN_LIMIT: Duration = IO_STALL_LIMIT;

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
    /// Signalled whenever a key is written, for GET and GET_FD waiters.
    written: Condvar,
    /// Job id a HELLO must carry ("" accepts any).
    job: String,
    /// The job id is a secret (a unique id's): a connection from the listening socket joins
    /// only with exactly it, compared in constant time, and no refusal shows it.
    secret: bool,
    /// TCP connections open now.
    tcp_open: AtomicUsize,
}

/// Key-value state of the job. Finished barrier and allgather rounds are removed by the
/// clients (DELETE_PREFIX).
struct State {
    entries: HashMap<String, Entry>,
    /// Indexed by rank; `None` until [`Server::serve_unix`] is called for that rank, or a
    /// connection from [`Server::serve_accepted`] says HELLO as that rank.
    peers: Vec<Option<PeerStatus>>,
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
                peers: vec![None; n_pes as usize],
            }),
            written: Condvar::new(),
            job: job.to_string(),
            secret,
            tcp_open: AtomicUsize::new(0),
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
        let spawned = self.spawn(rank, true, link, "its inherited socket".into());
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
        self.spawn(u32::MAX, false, link, "a node-local socket".into())
    }

    /// Serves every connection to `listener` (TLS 1.3 with `tls`, else plain TCP), each on its
    /// own thread, for as long as the process runs. At most `n_pes` +
    /// [`EXTRA_TCP_CONNECTIONS`] connections are open at once. A connection joins the job as
    /// the PE its HELLO names, once its TLS handshake (client certificate included) passed.
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
        let limit = self.n_pes as usize + EXTRA_TCP_CONNECTIONS;
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
            let open = self.shared.tcp_open.fetch_add(1, Ordering::SeqCst) + 1;
            if open > limit {
                self.shared.tcp_open.fetch_sub(1, Ordering::SeqCst);
                tracing::warn!(
                    "store: refused a connection from {peer}: {limit} connections are open \
                    already (the job has {} PEs)",
                    self.n_pes
                );
                continue;
            }
            let server = self.clone();
            let tls = tls.clone();
            let spawned = std::thread::Builder::new()
                .name("shmem-store-tcp".into())
                .stack_size(CONNECTION_STACK)
                .spawn(move || {
                    let peer = format!("{peer}");
                    match server.join_tcp(sock, tls, &peer) {
                        Ok(link) => server.run_connection(link, format!("TCP peer {peer}")),
                        Err(why) => {
                            tracing::warn!("store: refused a connection from {peer}: {why}")
                        }
                    }
                    server.shared.tcp_open.fetch_sub(1, Ordering::SeqCst);
                });
            if let Err(e) = spawned {
                self.shared.tcp_open.fetch_sub(1, Ordering::SeqCst);
                tracing::warn!("store: cannot serve a connection from {peer}: {e}");
            }
        }
    }

    /// Sets up an accepted TCP connection: timeouts, what the peer speaks, the TLS handshake.
    fn join_tcp(
        &self,
        sock: TcpStream,
        tls: Option<Arc<rustls::ServerConfig>>,
        peer: &str,
    ) -> Result<Link, String> {
        let setup = |e: io::Error| format!("socket setup: {e}");
        link::prepare_tcp(&sock).map_err(setup)?;
        let plain = Link::Tcp(sock);
        plain
            .set_timeouts(Some(TCP_JOIN_LIMIT), Some(TCP_JOIN_LIMIT))
            .map_err(setup)?;
        let Link::Tcp(sock) = plain else {
            unreachable!("built as Link::Tcp just above")
        };
        let prefix = link::peek_prefix(&sock, Instant::now() + TCP_JOIN_LIMIT)
            .map_err(|e| format!("nothing readable: {e}"))?;
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
                link::handshake(sock, conn).map_err(|e| match e {
                    HandshakeError::Tls(e) => format!("TLS handshake failed: {e}"),
                    other => other.to_string(),
                })?
            }
        };
        link.set_timeouts(Some(IO_STALL_LIMIT), Some(IO_STALL_LIMIT))
            .map_err(|e| format!("socket setup: {e}"))?;
        tracing::debug!("store: {} connection from {peer}", link.kind());
        Ok(link)
    }

    /// Serves a joined TCP connection on this thread until it ends.
    fn run_connection(&self, link: Link, peer: String) {
        self.connection(u32::MAX, false, link, peer).run();
    }

    fn connection(&self, rank: u32, claimed: bool, link: Link, peer: String) -> Connection {
        Connection {
            shared: Arc::clone(&self.shared),
            events: self.events.clone(),
            n_pes: self.n_pes,
            rank,
            claimed,
            started: Instant::now(),
            link,
            peer,
            fds: Vec::new(),
            hello: false,
            goodbye: false,
        }
    }

    fn spawn(&self, rank: u32, claimed: bool, link: Link, peer: String) -> io::Result<()> {
        let conn = self.connection(rank, claimed, link, peer);
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

    /// Size of the job this store serves.
    pub fn n_pes(&self) -> u32 {
        self.n_pes
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
        self.lock().entries.insert(key, entry);
        self.written.notify_all();
    }

    /// Waits until `key` exists or `timeout` passes (an unrepresentable deadline waits forever).
    fn wait_for(&self, key: &str, timeout: Duration) -> Option<Entry> {
        let deadline = Instant::now().checked_add(timeout);
        let mut state = self.lock();
        loop {
            if let Some(entry) = state.entries.get(key) {
                return Some(entry.clone());
            }
            state = match deadline {
                None => self.written.wait(state).unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return None;
                    }
                    self.written
                        .wait_timeout(state, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
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
    /// valid HELLO for [`Server::serve_accepted`].
    claimed: bool,
    /// When serving began (bounds the wait for an accepted connection's HELLO).
    started: Instant,
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
    /// Nothing to send; go on.
    Silent,
    /// Send this error and close: the peer broke the protocol.
    Fatal(String),
    /// Send this reply, then close for the given reason.
    Close(Reply, String),
}

impl Connection {
    fn run(mut self) {
        let result = self.serve();
        if !self.claimed {
            // Never joined the job: nothing for the launcher to act on.
            if let Err(message) = result {
                tracing::warn!(
                    "store: refused a connection from {} that did not join the job: {message}",
                    self.peer
                );
            }
            return;
        }
        if let Err(message) = result {
            tracing::warn!(rank = self.rank, "store: {message}");
            let _ = self.events.send(StoreEvent::ProtocolError {
                rank: self.rank,
                message,
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
    fn serve(&mut self) -> Result<(), String> {
        loop {
            let frame = {
                let mut reader = self.link.reader(&mut self.fds);
                match wire::read_frame(&mut reader) {
                    Ok(frame) => frame,
                    Err(WireError::Closed) => return Ok(()),
                    // Idle between frames: fine, keep waiting (but a connection from the
                    // listening socket must say who it is first).
                    Err(WireError::TimedOut { partial: false }) => {
                        let limit = match self.link {
                            Link::Unix(_) => IO_STALL_LIMIT,
                            _ => TCP_JOIN_LIMIT,
                        };
                        if !self.claimed && self.started.elapsed() >= limit {
                            return Err(
                                self.refuse(format!("no HELLO within {} s", limit.as_secs()))
                            );
                        }
                        continue;
                    }
                    Err(WireError::Io(e)) if e.kind() == io::ErrorKind::ConnectionReset => {
                        return Ok(())
                    }
                    Err(e) => return Err(self.refuse(format!("bad frame: {e}"))),
                }
            };
            let request = match Request::from_frame(&frame) {
                Ok(r) => r,
                Err(e) => return Err(self.refuse(e.to_string())),
            };
            let fd_op = matches!(request, Request::PutFd { .. } | Request::GetFd { .. });
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
            match self.handle(request) {
                Next::Reply(reply, fd) => {
                    let fd = fd.as_deref().map(AsFd::as_fd);
                    if let Err(e) = self.send(&reply, fd) {
                        return Err(format!("cannot send {} reply: {e}", reply.name()));
                    }
                    if bye {
                        // After the reply: whoever waits for every goodbye may then end this
                        // process without cutting a reply short.
                        let _ = self.events.send(StoreEvent::Goodbye { rank: self.rank });
                    }
                }
                Next::Silent => {}
                Next::Fatal(message) => return Err(self.refuse(message)),
                Next::Close(reply, message) => {
                    let _ = self.send(&reply, None);
                    return Err(message);
                }
            }
        }
    }

    /// Tells the peer why it is being dropped (best effort) and returns the message.
    fn refuse(&self, message: String) -> String {
        let _ = self.send(&Reply::Error(message.clone()), None);
        message
    }

    fn send(&self, reply: &Reply, fd: Option<BorrowedFd<'_>>) -> io::Result<()> {
        let frame = reply.encode().map_err(io::Error::other)?;
        self.link.send_frame(&frame, fd)
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
                        return Next::Fatal(message);
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
                self.shared.insert(key, Entry::Bytes(value.into()));
                Next::Reply(Reply::Ok, None)
            }
            Request::Get { key, timeout_ms } => {
                match self
                    .shared
                    .wait_for(&key, Duration::from_millis(timeout_ms))
                {
                    None => Next::Reply(Reply::Timeout, None),
                    Some(Entry::Bytes(v)) => Next::Reply(Reply::Value(v.to_vec()), None),
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
                    old.map(|old| {
                        let new = old.wrapping_add(delta);
                        let bytes: Arc<[u8]> = new.to_le_bytes().into();
                        state.entries.insert(key, Entry::Bytes(bytes));
                        new
                    })
                };
                match result {
                    Ok(new) => {
                        self.shared.written.notify_all();
                        Next::Reply(Reply::Counter(new), None)
                    }
                    Err(message) => Next::Reply(Reply::Error(message), None),
                }
            }
            Request::Delete { key } => {
                self.shared.lock().entries.remove(&key);
                Next::Reply(Reply::Ok, None)
            }
            Request::DeletePrefix { prefix } => {
                let mut state = self.shared.lock();
                let before = state.entries.len();
                state.entries.retain(|k, _| !k.starts_with(&prefix));
                let removed = before - state.entries.len();
                Next::Reply(Reply::Counter(removed as i64), None)
            }
            Request::Cas {
                key,
                expected,
                desired,
            } => {
                let reply = {
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
                        let stored: Arc<[u8]> = desired.into();
                        state.entries.insert(key, Entry::Bytes(Arc::clone(&stored)));
                        Reply::Swapped {
                            swapped: true,
                            current: Some(stored.to_vec()),
                        }
                    } else {
                        Reply::Swapped {
                            swapped: false,
                            current: current.map(|v| v.to_vec()),
                        }
                    }
                };
                if matches!(reply, Reply::Swapped { swapped: true, .. }) {
                    self.shared.written.notify_all();
                }
                Next::Reply(reply, None)
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
                        let mut joined = Vec::with_capacity(len);
                        joined.extend_from_slice(&old);
                        joined.extend_from_slice(&value);
                        state.entries.insert(key, Entry::Bytes(joined.into()));
                        Ok(len)
                    })
                };
                match result {
                    Ok(len) => {
                        self.shared.written.notify_all();
                        Next::Reply(Reply::Counter(len as i64), None)
                    }
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
            super::refused_key(rank),
            Entry::Bytes(message.clone().into_bytes().into()),
        );
        message
    }

    /// Takes `rank`'s slot for a connection from the listening socket, as its HELLO asks (the
    /// job's size is checked already).
    fn claim(&mut self, rank: u32) -> Result<(), String> {
        if rank >= self.n_pes {
            return Err(self.record_refusal(
                rank,
                format!("HELLO says PE {rank}, but this job has {} PEs", self.n_pes),
            ));
        }
        let mut state = self.shared.lock();
        let slot = &mut state.peers[rank as usize];
        if slot.is_some() {
            return Err(format!("PE {rank} is already connected to this store"));
        }
        *slot = Some(PeerStatus::default());
        self.rank = rank;
        self.claimed = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::unix::{send_frame, FdReader};
    use super::super::{BootstrapError, Client};
    use super::*;
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
            err.to_string().contains("PE 2 is already connected"),
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
}
