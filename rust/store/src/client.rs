//! Store client: a PE's end of the control store.
//!
//! Owns the PE's store connection (an inherited Unix socket, or TCP/TLS: `link`), connecting
//! over TCP with retries until the init timeout, and the request/reply discipline on it: one
//! request at a time, every wait bounded (the server waits a GET's timeout; the socket waits
//! that plus a margin), and the round numbers of the control-plane barrier and allgather,
//! whose keys are removed once every PE is past them. Must never be used on the data path, and
//! never carry on silently with a stream that is out of step: after a reply timeout or a
//! broken frame the client is marked broken and every later call says so.
//!
//! Descriptors travel only over Unix sockets: a client on TCP sends PUT_FD/GET_FD to the
//! node-local store attached with [`Client::attach_fd_store`].
//!
//! Keys under `shmem/` are taken by [`Client::barrier`] and [`Client::allgather`].

use std::net::SocketAddr;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use rustix::io::{fcntl_dupfd_cloexec, fcntl_getfd, fcntl_setfd, FdFlags};

use crate::addr::StoreAddr;
use crate::link::{self, HandshakeError, Link};
use crate::wire::{self, Reply, Request, WireError, PROTOCOL_VERSION};
use crate::BootstrapError;

/// Extra time the socket waits for a reply beyond what the server may take, so that a
/// server-side timeout always arrives as an answer rather than as a dead socket.
const REPLY_MARGIN: Duration = Duration::from_secs(5);

/// Longest wait one call asks for; longer timeouts are cut to this (30 days), which keeps
/// deadlines and the wire's millisecond count representable.
const MAX_WAIT: Duration = Duration::from_secs(30 * 24 * 3600);

/// Longest nap between attempts to reach a TCP store that does not listen yet.
const LONGEST_CONNECT_NAP: Duration = Duration::from_millis(200);

/// How a PE reaches a store over TCP.
#[derive(Debug, Clone)]
pub struct TcpDial {
    /// The store's address (every port of its range is tried, in order).
    pub addr: StoreAddr,
    /// TLS settings and the name the store's certificate must carry; `None`: plain TCP.
    pub tls: Option<(
        Arc<rustls::ClientConfig>,
        rustls_pki_types::ServerName<'static>,
    )>,
    /// The job this PE belongs to ("" if unknown): a store of another job refuses it.
    pub job: String,
}

/// A PE's connection to the launcher's store. `Send + Sync`; calls from several threads are
/// served one request at a time.
pub struct Client {
    link: Link,
    /// Where PUT_FD/GET_FD go when `link` cannot carry descriptors.
    fd_store: OnceLock<Box<Client>>,
    rank: u32,
    n_pes: u32,
    /// Reply budget of the calls that do not wait for a key (SET, ADD, ...).
    op_timeout: Duration,
    /// [`REPLY_MARGIN`], shortened by tests.
    reply_margin: Duration,
    /// Held from sending a request until its reply is read.
    session: Mutex<Session>,
    /// Held while a frame is written, so that [`Client::abort`] can send between the frames
    /// of a request that is waiting for its reply, without waiting for that reply.
    writer: Mutex<()>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("rank", &self.rank)
            .field("n_pes", &self.n_pes)
            .field("link", &self.link)
            .finish_non_exhaustive()
    }
}

/// Per-connection state, under [`Client::session`].
struct Session {
    /// Descriptors received and not yet claimed by an FD reply.
    fds: Vec<OwnedFd>,
    /// Why the stream is out of step, once it is.
    broken: Option<String>,
    /// The socket's current receive timeout, to skip needless `setsockopt`s.
    recv_timeout: Option<Duration>,
    barrier_round: u64,
    allgather_round: u64,
}

/// Time left until `deadline`, zero once it has passed.
fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

impl Client {
    /// Takes the inherited socket handed over by the launcher; sends HELLO, checks the reply.
    ///
    /// `timeout` bounds the handshake and is the reply budget of every later call that does
    /// not take its own timeout. The socket is made close-on-exec, so the PE's own child
    /// processes do not hold the job's connection open.
    pub fn connect_inherited(
        fd: OwnedFd,
        rank: u32,
        n_pes: u32,
        timeout: Duration,
    ) -> Result<Client, BootstrapError> {
        let op = "connect";
        let io = |source| BootstrapError::Io { op, source };
        let flags = fcntl_getfd(&fd).map_err(|e| io(e.into()))?;
        fcntl_setfd(&fd, flags | FdFlags::CLOEXEC).map_err(|e| io(e.into()))?;
        Client::hello(Link::Unix(UnixStream::from(fd)), rank, n_pes, "", timeout)
    }

    /// Connects to a store over TCP (TLS when `dial.tls` is set), trying every port of the
    /// address's range in order and retrying while nothing listens, until `timeout`; sends
    /// HELLO and checks the reply. A store that refuses this PE for another job is skipped; one
    /// that is full (or closes the connection before answering) is tried again; one that
    /// refuses it otherwise (certificate, TLS or not, rank taken) ends the attempt with that
    /// reason.
    pub fn connect_tcp(
        dial: &TcpDial,
        rank: u32,
        n_pes: u32,
        timeout: Duration,
    ) -> Result<Client, BootstrapError> {
        let deadline = Instant::now() + timeout.min(MAX_WAIT);
        let mut nap = Duration::from_millis(5);
        let ip = dial.addr.dial_ip();
        let mut last = String::from("nothing listens there");
        loop {
            for port in dial.addr.port_list() {
                let target = SocketAddr::new(ip, port);
                let left = deadline.saturating_duration_since(Instant::now());
                match Client::try_tcp(dial, target, rank, n_pes, left) {
                    Ok(client) => return Ok(client),
                    Err(Attempt::Retry(why)) => last = why,
                    // On a range, a port may hold another job's store (another CA, another
                    // job id): the reason is kept, the search goes on. A store that says this
                    // PE's place is taken is this job's: the search ends there.
                    Err(Attempt::Fatal(e))
                        if dial.addr.ports.0 < dial.addr.ports.1
                            && !e.to_string().contains(wire::PLACE_TAKEN) =>
                    {
                        last = format!("{target}: {e}")
                    }
                    Err(Attempt::Fatal(e)) => return Err(e),
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(BootstrapError::Unreachable {
                    who: who(rank),
                    addr: dial.addr.to_string(),
                    after: timeout,
                    last,
                });
            }
            std::thread::sleep(nap.min(left));
            nap = (nap * 2).min(LONGEST_CONNECT_NAP);
        }
    }

    fn try_tcp(
        dial: &TcpDial,
        target: SocketAddr,
        rank: u32,
        n_pes: u32,
        left: Duration,
    ) -> Result<Client, Attempt> {
        let op = "connect";
        let fatal = |message: String| Attempt::Fatal(BootstrapError::Protocol { op, message });
        let sock = match link::tcp_connect(&target, left) {
            Ok(sock) => sock,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionRefused
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::ConnectionReset
                ) =>
            {
                return Err(Attempt::Retry(format!("{target}: {e}")))
            }
            Err(e) => {
                return Err(fatal(format!(
                    "cannot connect to the store at {target}: {e}"
                )))
            }
        };
        let budget = left.max(Duration::from_secs(1));
        let plain = Link::Tcp(sock);
        if let Err(e) = plain.set_timeouts(Some(budget), Some(budget)) {
            return Err(fatal(format!("{target}: socket setup: {e}")));
        }
        let link = match &dial.tls {
            None => plain,
            Some((config, name)) => {
                let Link::Tcp(sock) = plain else {
                    unreachable!("built as Link::Tcp just above")
                };
                let conn = rustls::ClientConnection::new(Arc::clone(config), name.clone())
                    .map_err(|e| fatal(format!("TLS setup: {e}")))?;
                link::handshake(sock, conn, Instant::now() + budget).map_err(|e| {
                    let refusal = match &e {
                        HandshakeError::PeerIsPlain(said) => refusal_in(said),
                        _ => None,
                    };
                    if let Some(full) = refusal.filter(|m| m.contains(wire::STORE_FULL)) {
                        return Attempt::Retry(format!("{target}: {full}"));
                    }
                    if is_transient(&e) {
                        return Attempt::Retry(format!("{target}: {e}"));
                    }
                    fatal(match e {
                        HandshakeError::PeerIsPlain(_) => format!(
                            "the store at {target} answers in plain TCP: it runs without TLS \
                            (SHMEM_TLS_DISABLE=1 there); set SHMEM_TLS_DISABLE=1 for every \
                            PE too, or enable TLS on the store"
                        ),
                        HandshakeError::Tls(e) => format!(
                            "TLS handshake with the store at {target} failed: {e} (the store's \
                            certificate is not signed by this PE's CA, is expired or revoked, \
                            or does not name {}; or it is not the one a unique id pins)",
                            target.ip()
                        ),
                        other => format!("the store at {target}: {other}"),
                    })
                })?
            }
        };
        match Client::hello(link, rank, n_pes, &dial.job, left) {
            Ok(client) => Ok(client),
            Err(BootstrapError::Protocol { message, .. })
                if message.contains("serves job") || message.contains(wire::STORE_FULL) =>
            {
                Err(Attempt::Retry(format!("{target}: {message}")))
            }
            // Dropped before it answered (evicted, or refused before a word could be sent).
            Err(e @ BootstrapError::Closed { .. }) => Err(Attempt::Retry(format!("{target}: {e}"))),
            Err(BootstrapError::Io { source, .. }) if is_tls_alert(&source) => Err(fatal(format!(
                "the store at {target} refused this PE's TLS certificate: {source} (not signed \
                by the store's CA, expired or revoked)"
            ))),
            Err(e) => Err(Attempt::Fatal(e)),
        }
    }

    /// Sends HELLO on a fresh link and checks the reply.
    fn hello(
        link: Link,
        rank: u32,
        n_pes: u32,
        job: &str,
        timeout: Duration,
    ) -> Result<Client, BootstrapError> {
        let op = "connect";
        let io = |source| BootstrapError::Io { op, source };
        let timeout = timeout.min(MAX_WAIT);
        link.set_timeouts(None, Some(timeout + REPLY_MARGIN))
            .map_err(io)?;
        let client = Client {
            link,
            fd_store: OnceLock::new(),
            rank,
            n_pes,
            op_timeout: timeout,
            reply_margin: REPLY_MARGIN,
            session: Mutex::new(Session {
                fds: Vec::new(),
                broken: None,
                recv_timeout: None,
                barrier_round: 0,
                allgather_round: 0,
            }),
            writer: Mutex::new(()),
        };
        let hello = Request::Hello {
            version: PROTOCOL_VERSION,
            rank,
            n_pes,
            job: job.to_string(),
        };
        let reply = {
            let mut s = client.session();
            match client.call(&mut s, op, "", &hello, None, timeout) {
                Ok((reply, _)) => reply,
                Err(BootstrapError::Refused { message, .. }) => {
                    return Err(BootstrapError::Protocol {
                        op,
                        message: format!("the store refused {}: {message}", who(rank)),
                    })
                }
                Err(e) => return Err(e),
            }
        };
        match reply {
            Reply::HelloAck { version, .. } if version != PROTOCOL_VERSION => {
                Err(BootstrapError::VersionMismatch {
                    ours: PROTOCOL_VERSION,
                    theirs: version,
                })
            }
            Reply::HelloAck { n_pes: theirs, .. } if theirs != n_pes => {
                Err(BootstrapError::SizeMismatch {
                    store: theirs,
                    ours: n_pes,
                })
            }
            Reply::HelloAck { .. } => Ok(client),
            other => Err(client.unexpected(op, &other)),
        }
    }

    /// Stores `value` under `key`, replacing any earlier value.
    pub fn set(&self, key: &str, value: &[u8]) -> Result<(), BootstrapError> {
        let mut s = self.session();
        self.set_locked(&mut s, "set", key, value)
    }

    /// Waits up to `timeout` for `key` to exist and returns its value.
    pub fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>, BootstrapError> {
        let mut s = self.session();
        self.get_locked(&mut s, "get", key, timeout)
    }

    /// Adds `delta` to the counter under `key` (a missing key counts as 0); returns the sum.
    pub fn add(&self, key: &str, delta: i64) -> Result<i64, BootstrapError> {
        let mut s = self.session();
        self.add_locked(&mut s, "add", key, delta)
    }

    /// Removes `key` (removing an absent key is not an error).
    pub fn delete(&self, key: &str) -> Result<(), BootstrapError> {
        let op = "delete";
        let mut s = self.session();
        let request = Request::Delete { key: key.into() };
        match self
            .call(&mut s, op, key, &request, None, self.op_timeout)?
            .0
        {
            Reply::Ok => Ok(()),
            other => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// If `value` is under `key` (`None`: the key is absent), replaces it with `desired`.
    /// Returns whether it did, and what the key holds now.
    pub fn cas(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        desired: &[u8],
    ) -> Result<(bool, Option<Vec<u8>>), BootstrapError> {
        let op = "cas";
        let mut s = self.session();
        let request = Request::Cas {
            key: key.into(),
            expected: expected.map(<[u8]>::to_vec),
            desired: desired.to_vec(),
        };
        match self
            .call(&mut s, op, key, &request, None, self.op_timeout)?
            .0
        {
            Reply::Swapped { swapped, current } => Ok((swapped, current)),
            other => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// Appends `value` to the bytes under `key` (missing = empty); returns the new length.
    pub fn append(&self, key: &str, value: &[u8]) -> Result<usize, BootstrapError> {
        let op = "append";
        let mut s = self.session();
        let request = Request::Append {
            key: key.into(),
            value: value.to_vec(),
        };
        match self
            .call(&mut s, op, key, &request, None, self.op_timeout)?
            .0
        {
            Reply::Counter(n) => Ok(n as usize),
            other => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// Removes every key that starts with `prefix`; returns how many went.
    pub fn delete_prefix(&self, prefix: &str) -> Result<usize, BootstrapError> {
        let mut s = self.session();
        self.delete_prefix_locked(&mut s, "delete_prefix", prefix)
    }

    fn delete_prefix_locked(
        &self,
        s: &mut Session,
        op: &'static str,
        prefix: &str,
    ) -> Result<usize, BootstrapError> {
        let request = Request::DeletePrefix {
            prefix: prefix.into(),
        };
        match self.call(s, op, prefix, &request, None, self.op_timeout)?.0 {
            Reply::Counter(n) => Ok(n as usize),
            other => Err(self.fail(s, self.unexpected(op, &other))),
        }
    }

    /// Sends later PUT_FD/GET_FD to `store` (a node-local Unix store), so that every PE of a
    /// TCP job exchanges descriptors in one place (PE 0's own link could carry them, but the
    /// others' cannot). Fails if one is attached already.
    pub fn attach_fd_store(&self, store: Client) -> Result<(), BootstrapError> {
        self.fd_store
            .set(Box::new(store))
            .map_err(|_| BootstrapError::Protocol {
                op: "attach_fd_store",
                message: "a descriptor store is attached already".into(),
            })
    }

    /// Whether this client's own connection carries descriptors.
    pub fn passes_fds(&self) -> bool {
        self.link.passes_fds()
    }

    /// Connects to a store of groups ([`crate::Server::open`]) over TCP (TLS when `dial.tls`
    /// is set) as a client that holds no PE's place, retrying while nothing listens there
    /// (or the store is full) until `timeout`, as [`Client::connect_tcp`] does.
    pub fn connect_open(dial: &TcpDial, timeout: Duration) -> Result<Client, BootstrapError> {
        Client::connect_tcp(dial, wire::NO_RANK, 0, timeout)
    }

    /// Waits up to `timeout` until `key` holds something other than `seen` (`None`: until it
    /// exists) and returns what it holds then (`None`: it was removed). A blocking get is
    /// `watch(key, None, timeout)`; a wait for the next change of a value known is
    /// `watch(key, Some(&known), timeout)`.
    pub fn watch(
        &self,
        key: &str,
        seen: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<Option<Vec<u8>>, BootstrapError> {
        let op = "watch";
        if let Some(seen) = seen {
            wire::check_value(seen)
                .map_err(|source| BootstrapError::InvalidArgument { op, source })?;
        }
        let timeout = timeout.min(MAX_WAIT);
        let request = Request::Watch {
            key: key.into(),
            seen: seen.map(<[u8]>::to_vec),
            timeout_ms: timeout.as_millis() as u64,
        };
        let mut s = self.session();
        match self.call(&mut s, op, key, &request, None, timeout)?.0 {
            Reply::Watched(now) => Ok(now),
            other => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// Joins `group` as `member` (see [`Request::GroupJoin`]); returns the rank it holds. The
    /// membership is this connection's: every later request of it is the member's heartbeat,
    /// and its end is the member's end.
    pub fn group_join(
        &self,
        group: &str,
        member: &str,
        size: u32,
        rank: Option<u32>,
        loss: Duration,
        drop_owned: bool,
    ) -> Result<u32, BootstrapError> {
        let op = "group join";
        let request = Request::GroupJoin {
            group: group.into(),
            member: member.into(),
            size,
            rank,
            loss_ms: loss.min(MAX_WAIT).as_millis() as u64,
            drop_owned,
        };
        let mut s = self.session();
        let reply = self
            .call(&mut s, op, group, &request, None, self.op_timeout)
            .map_err(|e| match e {
                BootstrapError::Refused { ref message, .. } => {
                    match wire::member_id_held_rank(message, member) {
                        Some(held) => BootstrapError::MemberIdHeld {
                            op,
                            group: group.into(),
                            member: member.into(),
                            rank: held,
                        },
                        None => e,
                    }
                }
                e => e,
            })?
            .0;
        match reply {
            Reply::Counter(rank) if (0..i64::from(size)).contains(&rank) => Ok(rank as u32),
            other => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// Leaves `group` (the member this connection joined as).
    pub fn group_leave(&self, group: &str) -> Result<(), BootstrapError> {
        let op = "group leave";
        let request = Request::GroupLeave {
            group: group.into(),
        };
        let mut s = self.session();
        match self
            .call(&mut s, op, group, &request, None, self.op_timeout)?
            .0
        {
            Reply::Ok => Ok(()),
            other => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// Records `key` as owned by this connection's member of `group`: it is removed when the
    /// member leaves or is reported down, if the group was made so.
    pub fn group_own(&self, group: &str, key: &str) -> Result<(), BootstrapError> {
        let op = "group own";
        let request = Request::GroupOwn {
            group: group.into(),
            key: key.into(),
        };
        let mut s = self.session();
        match self
            .call(&mut s, op, key, &request, None, self.op_timeout)?
            .0
        {
            Reply::Ok => Ok(()),
            other => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// Waits up to `timeout` for events of `group` after number `after`; returns the group's
    /// members and those events (none at the timeout). Counts as the heartbeat of the members
    /// this connection holds.
    pub fn group_watch(
        &self,
        group: &str,
        after: u64,
        timeout: Duration,
    ) -> Result<wire::GroupView, BootstrapError> {
        let op = "group watch";
        let timeout = timeout.min(MAX_WAIT);
        let request = Request::GroupWatch {
            group: group.into(),
            after,
            timeout_ms: timeout.as_millis() as u64,
        };
        let mut s = self.session();
        match self.call(&mut s, op, group, &request, None, timeout)?.0 {
            Reply::Group(view) => Ok(view),
            other => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// Begins (`begin`) or ends the membership change `tag` of `group` (see
    /// [`Request::GroupChange`]); returns whether it did, and what the group's event key
    /// holds now (the change in progress, when a begin failed).
    pub fn group_change(
        &self,
        group: &str,
        begin: bool,
        tag: &str,
    ) -> Result<(bool, Option<Vec<u8>>), BootstrapError> {
        let op = if begin {
            "group change begin"
        } else {
            "group change end"
        };
        let request = Request::GroupChange {
            group: group.into(),
            begin,
            tag: tag.into(),
        };
        let mut s = self.session();
        match self
            .call(&mut s, op, group, &request, None, self.op_timeout)?
            .0
        {
            Reply::Swapped { swapped, current } => Ok((swapped, current)),
            other => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// Shuts the connection down in both directions, from any thread: a call waiting for its
    /// reply ends at once (as closed), and every later call fails.
    pub fn shutdown(&self) {
        let _ = rustix::net::shutdown(self.link.socket(), rustix::net::Shutdown::Both);
    }

    /// A close-on-exec duplicate of the connection's socket, for a thread that watches it
    /// close (`poll` for `POLLRDHUP`).
    pub fn watch_socket(&self) -> std::io::Result<OwnedFd> {
        Ok(fcntl_dupfd_cloexec(self.link.socket(), 0)?)
    }

    /// The client that descriptors go through: the attached one, else this one.
    fn fd_client(&self) -> &Client {
        match self.fd_store.get() {
            Some(other) => other,
            None => self,
        }
    }

    /// Stores a duplicate of `fd` under `key`; the store keeps it until the job ends.
    pub fn put_fd(&self, key: &str, fd: BorrowedFd<'_>) -> Result<(), BootstrapError> {
        let target = self.fd_client();
        if !std::ptr::eq(target, self) {
            return target.put_fd(key, fd);
        }
        let op = "put_fd";
        let mut s = self.session();
        let request = Request::PutFd { key: key.into() };
        match self
            .call(&mut s, op, key, &request, Some(fd), self.op_timeout)?
            .0
        {
            Reply::Ok => Ok(()),
            other => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// Waits up to `timeout` for a descriptor under `key` and returns a duplicate of it
    /// (close-on-exec).
    pub fn get_fd(&self, key: &str, timeout: Duration) -> Result<OwnedFd, BootstrapError> {
        let target = self.fd_client();
        if !std::ptr::eq(target, self) {
            return target.get_fd(key, timeout);
        }
        let op = "get_fd";
        let timeout = timeout.min(MAX_WAIT);
        let mut s = self.session();
        let request = Request::GetFd {
            key: key.into(),
            timeout_ms: timeout.as_millis() as u64,
        };
        match self.call(&mut s, op, key, &request, None, timeout)? {
            (Reply::Fd, mut fds) if fds.len() == 1 => {
                fds.pop().ok_or(BootstrapError::Closed { op })
            }
            (other, _) => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// Waits up to `timeout` until the keys `prefix0` .. `prefix{count-1}` all hold values and
    /// returns them in index order, in one round trip (GATHER). A key still absent at the
    /// timeout is a [`BootstrapError::Absent`] naming the first such index. When the values
    /// together do not fit one frame, they are read one by one instead.
    pub fn gather(
        &self,
        prefix: &str,
        count: u32,
        timeout: Duration,
    ) -> Result<Vec<Vec<u8>>, BootstrapError> {
        let mut s = self.session();
        self.gather_locked(&mut s, "gather", prefix, count, timeout)
    }

    /// Waits up to `timeout` until the keys `prefix0` .. `prefix{count-1}` all hold
    /// descriptors and returns duplicates of them (close-on-exec) in index order, in one round
    /// trip (GATHER_FD). A key still absent at the timeout is a [`BootstrapError::Absent`]
    /// naming the first such index.
    pub fn gather_fds(
        &self,
        prefix: &str,
        count: u32,
        timeout: Duration,
    ) -> Result<Vec<OwnedFd>, BootstrapError> {
        let target = self.fd_client();
        if !std::ptr::eq(target, self) {
            return target.gather_fds(prefix, count, timeout);
        }
        let op = "gather_fd";
        let timeout = timeout.min(MAX_WAIT);
        let mut s = self.session();
        let request = Request::GatherFd {
            prefix: prefix.into(),
            count,
            timeout_ms: timeout.as_millis() as u64,
        };
        match self.call(&mut s, op, prefix, &request, None, timeout)? {
            (Reply::Fds(n), fds) if n == count && fds.len() == count as usize => Ok(fds),
            (Reply::Missing(missing), _) => Err(absent(op, &missing, timeout)),
            (other, _) => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// Control-plane barrier over all n_pes, built on ADD + GET; each call uses a fresh round
    /// number.
    ///
    /// Every PE must call it the same number of times. The last PE to arrive marks the round
    /// done; the others wait for that mark up to `timeout`. The last PE to arrive at round
    /// `r` also removes round `r - 1`'s keys: every PE has left that round.
    pub fn barrier(&self, timeout: Duration) -> Result<(), BootstrapError> {
        let op = "barrier";
        let deadline = Instant::now() + timeout.min(MAX_WAIT);
        let mut s = self.session();
        let round = s.barrier_round;
        s.barrier_round += 1;
        let arrived = format!("shmem/barrier/{round}/arrived");
        let done = format!("shmem/barrier/{round}/done");
        let count = self.add_locked(&mut s, op, &arrived, 1)?;
        if count == i64::from(self.n_pes) {
            if let Some(previous) = round.checked_sub(1) {
                self.delete_prefix_locked(&mut s, op, &format!("shmem/barrier/{previous}/"))?;
            }
            self.set_locked(&mut s, op, &done, &[])?;
        } else if count > i64::from(self.n_pes) {
            return Err(self.fail(
                &mut s,
                BootstrapError::Protocol {
                    op,
                    message: format!(
                        "{count} PEs arrived at barrier round {round} of a {}-PE job \
                         (PEs called the barrier different numbers of times?)",
                        self.n_pes
                    ),
                },
            ));
        }
        self.get_locked(&mut s, op, &done, left(deadline))?;
        Ok(())
    }

    /// Every PE contributes `data`; returns all contributions indexed by rank (SET, then one
    /// GATHER: O(N) work at the store for each PE).
    ///
    /// Every PE must call it the same number of times; `timeout` bounds the whole call. Each
    /// PE counts itself done after reading every contribution; the last one removes the
    /// round's keys.
    pub fn allgather(
        &self,
        data: &[u8],
        timeout: Duration,
    ) -> Result<Vec<Vec<u8>>, BootstrapError> {
        let op = "allgather";
        let deadline = Instant::now() + timeout.min(MAX_WAIT);
        let mut s = self.session();
        let round = s.allgather_round;
        s.allgather_round += 1;
        let prefix = format!("shmem/allgather/{round}/");
        let mine = format!("{prefix}{}", self.rank);
        self.set_locked(&mut s, op, &mine, data)?;
        let all = self.gather_locked(&mut s, op, &prefix, self.n_pes, left(deadline))?;
        let read = self.add_locked(&mut s, op, &format!("{prefix}read"), 1)?;
        if read == i64::from(self.n_pes) {
            self.delete_prefix_locked(&mut s, op, &prefix)?;
        }
        Ok(all)
    }

    /// Tells the launcher to end the whole job with `status` (best effort; does not exit the
    /// process); `after_error`: the library stops the job after an error it reported, rather
    /// than the program calling `shmem_global_exit`.
    ///
    /// Does not wait for a request in flight on another thread: the frame goes out between
    /// that request's frames, and no reply is awaited.
    pub fn abort(&self, status: i32, after_error: bool) {
        let frame = match (Request::Abort {
            status,
            after_error,
        })
        .encode()
        {
            Ok(frame) => frame,
            // An ABORT frame has no key or value, so it always encodes.
            Err(_) => return,
        };
        let _writing = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = self.link.send_frame(&frame, None) {
            tracing::debug!(
                rank = self.rank,
                "store: ABORT({status}) not delivered: {e}"
            );
        }
    }

    /// Goodbye frame sent by finalize; after it, EOF on this connection is a clean exit.
    pub fn goodbye(&self) -> Result<(), BootstrapError> {
        let op = "goodbye";
        let mut s = self.session();
        match self
            .call(&mut s, op, "", &Request::Bye, None, self.op_timeout)?
            .0
        {
            Reply::Ok => Ok(()),
            other => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// This PE's rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of PEs in the job.
    pub fn n_pes(&self) -> u32 {
        self.n_pes
    }

    fn session(&self) -> MutexGuard<'_, Session> {
        // Panics abort the process (panic = "abort"); poisoning can only come from a test, and
        // a broken stream is recorded in the session itself.
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_locked(
        &self,
        s: &mut Session,
        op: &'static str,
        key: &str,
        value: &[u8],
    ) -> Result<(), BootstrapError> {
        wire::check_value(value)
            .map_err(|source| BootstrapError::InvalidArgument { op, source })?;
        let request = Request::Set {
            key: key.into(),
            value: value.to_vec(),
        };
        match self.call(s, op, key, &request, None, self.op_timeout)?.0 {
            Reply::Ok => Ok(()),
            other => Err(self.fail(s, self.unexpected(op, &other))),
        }
    }

    fn get_locked(
        &self,
        s: &mut Session,
        op: &'static str,
        key: &str,
        timeout: Duration,
    ) -> Result<Vec<u8>, BootstrapError> {
        let timeout = timeout.min(MAX_WAIT);
        let request = Request::Get {
            key: key.into(),
            timeout_ms: timeout.as_millis() as u64,
        };
        match self.call(s, op, key, &request, None, timeout)?.0 {
            Reply::Value(v) => Ok(v),
            other => Err(self.fail(s, self.unexpected(op, &other))),
        }
    }

    fn gather_locked(
        &self,
        s: &mut Session,
        op: &'static str,
        prefix: &str,
        count: u32,
        timeout: Duration,
    ) -> Result<Vec<Vec<u8>>, BootstrapError> {
        let timeout = timeout.min(MAX_WAIT);
        let deadline = Instant::now() + timeout;
        let request = Request::Gather {
            prefix: prefix.into(),
            count,
            timeout_ms: timeout.as_millis() as u64,
        };
        match self.call(s, op, prefix, &request, None, timeout) {
            Ok((Reply::Values(values), _)) if values.len() == count as usize => Ok(values),
            Ok((Reply::Missing(missing), _)) => Err(absent(op, &missing, timeout)),
            Ok((other, _)) => Err(self.fail(s, self.unexpected(op, &other))),
            Err(BootstrapError::Refused { message, .. })
                if message.starts_with(wire::GATHER_TOO_LARGE) =>
            {
                (0..count)
                    .map(|i| {
                        let key = format!("{prefix}{i}");
                        match self.get_locked(s, op, &key, left(deadline)) {
                            Err(BootstrapError::Timeout { after, .. }) => {
                                Err(BootstrapError::Absent { op, rank: i, after })
                            }
                            other => other,
                        }
                    })
                    .collect()
            }
            Err(e) => Err(e),
        }
    }

    fn add_locked(
        &self,
        s: &mut Session,
        op: &'static str,
        key: &str,
        delta: i64,
    ) -> Result<i64, BootstrapError> {
        let request = Request::Add {
            key: key.into(),
            delta,
        };
        match self.call(s, op, key, &request, None, self.op_timeout)?.0 {
            Reply::Counter(v) => Ok(v),
            other => Err(self.fail(s, self.unexpected(op, &other))),
        }
    }

    /// One heartbeat of this PE's membership in a group (`crate::liveness`): adds 1 to `key`
    /// (this PE's count of heartbeats), its reply awaited at most `within`. Returns
    /// `Ok(false)` without sending anything while another thread's request is in flight on
    /// this connection: the store hears this PE through that one. A reply that does not come
    /// in time is a [`BootstrapError::Timeout`], and the connection is broken from then on.
    pub fn heartbeat(&self, key: &str, within: Duration) -> Result<bool, BootstrapError> {
        let op = "heartbeat";
        let mut s = match self.session.try_lock() {
            Ok(s) => s,
            Err(std::sync::TryLockError::WouldBlock) => return Ok(false),
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        };
        let request = Request::Add {
            key: key.into(),
            delta: 1,
        };
        match self
            .exchange(&mut s, op, key, &request, None, within, within)?
            .0
        {
            Reply::Counter(_) => Ok(true),
            other => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// Sends one request and reads its reply. `wait` is how long the server may take; the
    /// socket allows [`REPLY_MARGIN`] more. Refusals and server-side timeouts come back as
    /// errors that leave the connection usable; anything else marks it broken.
    fn call(
        &self,
        s: &mut Session,
        op: &'static str,
        key: &str,
        request: &Request,
        fd: Option<BorrowedFd<'_>>,
        wait: Duration,
    ) -> Result<(Reply, Vec<OwnedFd>), BootstrapError> {
        let budget = wait + self.reply_margin;
        self.exchange(s, op, key, request, fd, wait, budget)
    }

    /// [`Client::call`] with the reply awaited at most `budget` in all.
    #[allow(clippy::too_many_arguments)]
    fn exchange(
        &self,
        s: &mut Session,
        op: &'static str,
        key: &str,
        request: &Request,
        fd: Option<BorrowedFd<'_>>,
        wait: Duration,
        budget: Duration,
    ) -> Result<(Reply, Vec<OwnedFd>), BootstrapError> {
        if let Some(cause) = &s.broken {
            return Err(BootstrapError::Broken {
                cause: cause.clone(),
            });
        }
        let frame = request
            .encode()
            .map_err(|source| BootstrapError::InvalidArgument { op, source })?;
        if s.recv_timeout != Some(budget) {
            self.link
                .set_recv_timeout(Some(budget))
                .map_err(|source| BootstrapError::Io { op, source })?;
            s.recv_timeout = Some(budget);
        }

        let sent = {
            let _writing = self.writer.lock().unwrap_or_else(|e| e.into_inner());
            self.link.send_frame(&frame, fd)
        };
        if let Err(e) = sent {
            let err = match e.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                    BootstrapError::Timeout {
                        op,
                        key: key.into(),
                        after: budget,
                    }
                }
                std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset => {
                    BootstrapError::Closed { op }
                }
                _ => BootstrapError::Io { op, source: e },
            };
            return Err(self.fail(s, err));
        }

        let read = wire::read_frame(&mut self.link.reader(&mut s.fds));
        let reply = match read.and_then(|frame| Reply::from_frame(&frame)) {
            Ok(reply) => reply,
            Err(e) => {
                let err = match e {
                    WireError::Closed | WireError::Truncated { .. } => {
                        BootstrapError::Closed { op }
                    }
                    WireError::TimedOut { .. } => BootstrapError::Timeout {
                        op,
                        key: key.into(),
                        after: budget,
                    },
                    WireError::Io(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                        BootstrapError::Closed { op }
                    }
                    WireError::Io(source) => BootstrapError::Io { op, source },
                    other => BootstrapError::Protocol {
                        op,
                        message: other.to_string(),
                    },
                };
                return Err(self.fail(s, err));
            }
        };

        let wants_fds = match reply {
            Reply::Fd => 1,
            Reply::Fds(n) => n as usize,
            _ => 0,
        };
        if s.fds.len() != wants_fds {
            let n = s.fds.len();
            s.fds.clear();
            let err = BootstrapError::Protocol {
                op,
                message: format!("{} reply came with {n} file descriptors", reply.name()),
            };
            return Err(self.fail(s, err));
        }
        match reply {
            Reply::Error(message) => Err(BootstrapError::Refused {
                op,
                key: key.into(),
                message,
            }),
            Reply::Timeout => Err(BootstrapError::Timeout {
                op,
                key: key.into(),
                after: wait,
            }),
            reply => Ok((reply, std::mem::take(&mut s.fds))),
        }
    }

    /// Marks the stream out of step and passes the error on.
    fn fail(&self, s: &mut Session, err: BootstrapError) -> BootstrapError {
        if s.broken.is_none() {
            s.broken = Some(err.to_string());
        }
        err
    }

    fn unexpected(&self, op: &'static str, reply: &Reply) -> BootstrapError {
        BootstrapError::Protocol {
            op,
            message: format!("unexpected {} reply", reply.name()),
        }
    }
}

/// Who a client is, for messages: a PE, or a client without a PE's place.
fn who(rank: u32) -> String {
    if rank == wire::NO_RANK {
        "this client".into()
    } else {
        format!("PE {rank}")
    }
}

/// The error of a gather that timed out with the indices `missing` still absent: the first of
/// them is named.
fn absent(op: &'static str, missing: &[u32], after: Duration) -> BootstrapError {
    match missing.first() {
        Some(&rank) => BootstrapError::Absent { op, rank, after },
        None => BootstrapError::Protocol {
            op,
            message: "the store said keys were missing but named none".into(),
        },
    }
}

/// Outcome of one connection attempt.
enum Attempt {
    /// Nothing there yet, or another job's store: try the next port, or again later.
    Retry(String),
    /// The store refused this PE, or TLS failed: no point in trying again.
    Fatal(BootstrapError),
}

/// The message of a store's ERROR frame among the bytes a peer answered a TLS handshake with.
fn refusal_in(said: &[u8]) -> Option<String> {
    match Reply::from_frame(&wire::read_frame(&mut &said[..]).ok()?).ok()? {
        Reply::Error(message) => Some(message),
        _ => None,
    }
}

/// Whether a handshake failed in a way that trying again may cure: the store closed the
/// connection, or reset it, before TLS was settled (it evicted this connection, or had no
/// room for it and could not say so), or took longer than this attempt had left.
fn is_transient(e: &HandshakeError) -> bool {
    match e {
        HandshakeError::Closed | HandshakeError::TimedOut => true,
        HandshakeError::Io(e) => matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::BrokenPipe
                | std::io::ErrorKind::UnexpectedEof
        ),
        _ => false,
    }
}

/// Whether an I/O error carries a TLS alert from the peer.
fn is_tls_alert(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::InvalidData && e.to_string().starts_with("TLS:")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unix::{send_frame, FdReader};
    use std::os::fd::AsFd;

    const T: Duration = Duration::from_secs(30);

    #[test]
    fn client_is_send_and_sync() {
        fn check<C: Send + Sync>() {}
        check::<Client>();
    }

    #[test]
    fn silent_server_times_out_and_breaks_the_client() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        // A "server" that answers HELLO and then never again.
        let server = std::thread::spawn(move || {
            let mut fds = Vec::new();
            let mut r = FdReader {
                sock: theirs.as_fd(),
                fds: &mut fds,
            };
            wire::read_frame(&mut r).unwrap();
            let ack = Reply::HelloAck {
                version: PROTOCOL_VERSION,
                n_pes: 1,
            };
            send_frame(theirs.as_fd(), &ack.encode().unwrap(), None).unwrap();
            theirs
        });
        let mut c = Client::connect_inherited(ours.into(), 0, 1, T).unwrap();
        let _keep_open = server.join().unwrap();
        c.reply_margin = Duration::from_millis(100);
        let start = Instant::now();
        let err = c.get("k", Duration::ZERO).unwrap_err();
        assert!(
            matches!(&err, BootstrapError::Timeout { key, .. } if key == "k"),
            "{err}"
        );
        assert!(start.elapsed() >= c.reply_margin);
        assert!(matches!(
            c.set("k", b"v"),
            Err(BootstrapError::Broken { .. })
        ));
    }

    #[test]
    fn closed_server_is_reported() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        drop(theirs);
        let err = Client::connect_inherited(ours.into(), 0, 1, T).expect_err("no server");
        assert!(matches!(err, BootstrapError::Closed { .. }), "{err}");
    }

    #[test]
    fn connect_needs_a_socket() {
        let file = std::fs::File::open("/dev/null").unwrap();
        let err = Client::connect_inherited(file.into(), 0, 1, T).expect_err("not a socket");
        assert!(matches!(err, BootstrapError::Io { .. }), "{err}");
    }
}
