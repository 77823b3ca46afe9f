//! Store client: a PE's end of the control store.
//!
//! Owns the PE's store socket and the request/reply discipline on it: one request at a time,
//! every wait bounded (the server waits a GET's timeout; the socket waits that plus a margin),
//! and the round numbers of the control-plane barrier and allgather. Must never be used on the
//! data path, and never carry on silently with a stream that is out of step: after a reply
//! timeout or a broken frame the client is marked broken and every later call says so.
//!
//! Keys under `shmem/` are taken by [`Client::barrier`] and [`Client::allgather`].

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::io::{fcntl_getfd, fcntl_setfd, FdFlags};
use rustix::net::sockopt::{set_socket_timeout, Timeout};

use super::unix::{send_frame, FdReader};
use super::wire::{self, Reply, Request, WireError, PROTOCOL_VERSION};
use super::BootstrapError;

/// Extra time the socket waits for a reply beyond what the server may take, so that a
/// server-side timeout always arrives as an answer rather than as a dead socket.
const REPLY_MARGIN: Duration = Duration::from_secs(5);

/// Longest wait one call asks for; longer timeouts are cut to this (30 days), which keeps
/// deadlines and the wire's millisecond count representable.
const MAX_WAIT: Duration = Duration::from_secs(30 * 24 * 3600);

/// A PE's connection to the launcher's store. `Send + Sync`; calls from several threads are
/// served one request at a time.
pub struct Client {
    sock: OwnedFd,
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
            .field("sock", &self.sock)
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
        let timeout = timeout.min(MAX_WAIT);
        set_socket_timeout(&fd, Timeout::Send, Some(timeout + REPLY_MARGIN))
            .map_err(|e| io(e.into()))?;
        let client = Client {
            sock: fd,
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
        };
        let reply = {
            let mut s = client.session();
            match client.call(&mut s, op, "", &hello, None, timeout) {
                Ok((reply, _)) => reply,
                Err(BootstrapError::Refused { message, .. }) => {
                    return Err(BootstrapError::Protocol {
                        op,
                        message: format!("the store refused PE {rank}: {message}"),
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
                Err(BootstrapError::Protocol {
                    op,
                    message: format!("the store serves {theirs} PEs, but this PE was told {n_pes}"),
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

    /// Stores a duplicate of `fd` under `key`; the store keeps it until the job ends.
    pub fn put_fd(&self, key: &str, fd: BorrowedFd<'_>) -> Result<(), BootstrapError> {
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
        let op = "get_fd";
        let timeout = timeout.min(MAX_WAIT);
        let mut s = self.session();
        let request = Request::GetFd {
            key: key.into(),
            timeout_ms: timeout.as_millis() as u64,
        };
        match self.call(&mut s, op, key, &request, None, timeout)? {
            (Reply::Fd, Some(fd)) => Ok(fd),
            (other, _) => Err(self.fail(&mut s, self.unexpected(op, &other))),
        }
    }

    /// Control-plane barrier over all n_pes, built on ADD + GET; each call uses a fresh round
    /// number.
    ///
    /// Every PE must call it the same number of times. The last PE to arrive marks the round
    /// done; the others wait for that mark up to `timeout`.
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

    /// Every PE contributes `data`; returns all contributions indexed by rank (SET + GETs).
    ///
    /// Every PE must call it the same number of times; `timeout` bounds the whole call.
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
        let key = |rank: u32| format!("shmem/allgather/{round}/{rank}");
        self.set_locked(&mut s, op, &key(self.rank), data)?;
        let mut all = Vec::with_capacity(self.n_pes as usize);
        for rank in 0..self.n_pes {
            if rank == self.rank {
                all.push(data.to_vec());
            } else {
                all.push(self.get_locked(&mut s, op, &key(rank), left(deadline))?);
            }
        }
        Ok(all)
    }

    /// Tells the launcher to end the whole job with `status` (best effort; does not exit the
    /// process).
    ///
    /// Does not wait for a request in flight on another thread: the frame goes out between
    /// that request's frames, and no reply is awaited.
    pub fn abort(&self, status: i32) {
        let frame = match (Request::Abort { status }).encode() {
            Ok(frame) => frame,
            // An ABORT frame has no key or value, so it always encodes.
            Err(_) => return,
        };
        let _writing = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = send_frame(self.sock.as_fd(), &frame, None) {
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
    ) -> Result<(Reply, Option<OwnedFd>), BootstrapError> {
        if let Some(cause) = &s.broken {
            return Err(BootstrapError::Broken {
                cause: cause.clone(),
            });
        }
        let frame = request
            .encode()
            .map_err(|source| BootstrapError::InvalidArgument { op, source })?;
        let budget = wait + self.reply_margin;
        if s.recv_timeout != Some(budget) {
            set_socket_timeout(&self.sock, Timeout::Recv, Some(budget)).map_err(|e| {
                BootstrapError::Io {
                    op,
                    source: e.into(),
                }
            })?;
            s.recv_timeout = Some(budget);
        }

        let sent = {
            let _writing = self.writer.lock().unwrap_or_else(|e| e.into_inner());
            send_frame(self.sock.as_fd(), &frame, fd)
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

        let read = wire::read_frame(&mut FdReader {
            sock: self.sock.as_fd(),
            fds: &mut s.fds,
        });
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

        let wants_fd = matches!(reply, Reply::Fd);
        if s.fds.len() != usize::from(wants_fd) {
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
            reply => Ok((reply, s.fds.pop())),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

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
