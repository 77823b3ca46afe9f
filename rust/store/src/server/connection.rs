//! The connection loop: one thread per connection reads a frame (within the frame budget and
//! the stall limit), has [`super::dispatch`] answer it and sends the reply, until EOF or a
//! protocol violation, which it reports to the host as a [`StoreEvent`] (a connection that
//! never joined is logged as refused instead). Must never block on another connection.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::admission::{FrameBudget, Reservation, Ticket, FRAME_BUDGET, TCP_JOIN_LIMIT};
use super::{Shared, StoreEvent, IO_STALL_LIMIT};
use crate::link::{self, Link};
use crate::wire::{self, Reply, Request, WireError, MAX_HELLO_FRAME_LEN};

/// About how many bytes one send of a VALUES reply carries.
pub(super) const SEND_CHUNK: usize = 64 * 1024;

/// One PE's connection, owned by its thread.
pub(super) struct Connection {
    /// Number of the connection in its store: the id of the group memberships it holds.
    pub(super) id: u64,
    /// Groups this connection is a member of.
    pub(super) groups: Vec<String>,
    /// The connection is a client without a PE's place ([`wire::NO_RANK`]), counted in
    /// [`Shared::open_now`].
    pub(super) open: bool,
    pub(super) shared: Arc<Shared>,
    pub(super) events: Sender<StoreEvent>,
    pub(super) n_pes: u32,
    /// The PE; meaningless until `claimed`.
    pub(super) rank: u32,
    /// The connection holds `rank`'s slot: from the start for
    /// [`Server::serve_unix`](super::Server::serve_unix), from a valid HELLO for
    /// [`Server::serve_accepted`](super::Server::serve_accepted) and
    /// [`Server::serve_tcp`](super::Server::serve_tcp).
    pub(super) claimed: bool,
    /// Until it is claimed, its HELLO must be in by then.
    pub(super) join_by: Option<Instant>,
    /// Its place among the TCP connections that have not joined, until it joins.
    pub(super) ticket: Option<Arc<Ticket>>,
    pub(super) link: Link,
    /// Who is at the other end, for messages.
    pub(super) peer: String,
    /// Descriptors received and not yet claimed by a PUT_FD frame.
    pub(super) fds: Vec<OwnedFd>,
    pub(super) hello: bool,
    pub(super) goodbye: bool,
}

/// What to do after a request.
pub(super) enum Next {
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
pub(super) enum ReadEnd {
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
pub(super) fn read_request<'b>(
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
    pub(super) fn with_ticket(mut self, ticket: Arc<Ticket>) -> Self {
        self.ticket = Some(ticket);
        self
    }

    pub(super) fn run(mut self) {
        let result = self.serve();
        if !self.groups.is_empty() {
            self.shared.connection_closed(self.id, &self.groups);
        }
        if self.open {
            self.shared.open_now.fetch_sub(1, Ordering::SeqCst);
            // No PE of a job: nothing for the host to act on.
            if let Err(message) = result {
                tracing::warn!(
                    "store: client {} broke the store protocol: {message}",
                    self.peer
                );
            }
            return;
        }
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
    pub(super) fn serve(&mut self) -> Result<(), Refusal> {
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
            self.heard(true);
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
            self.heard(false);
            // The request is stored or answered: its bytes are no longer held.
            drop(reservation);
            match next {
                Next::Reply(reply, fd) => {
                    let fd = fd.as_deref().map(AsFd::as_fd);
                    if let Err(e) = self.send(&reply, fd) {
                        return self.send_failed(reply.name(), e);
                    }
                    if bye && !self.open {
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
    pub(super) fn join_limit(&self) -> Duration {
        match self.link {
            Link::Unix(_) => IO_STALL_LIMIT,
            _ => TCP_JOIN_LIMIT,
        }
    }

    /// A reply could not be sent: the end of the connection if the peer is gone, a protocol
    /// violation if it stopped reading.
    pub(super) fn send_failed(&self, reply: &str, e: io::Error) -> Result<(), Refusal> {
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
    pub(super) fn refuse(&self, message: String) -> Refusal {
        let _ = self.send(&Reply::Error(message.clone()), None);
        Refusal(message)
    }

    /// Sends a VALUES reply from where the values are kept: small values are batched into
    /// sends of about [`SEND_CHUNK`] bytes, large ones sent as they are.
    pub(super) fn send_values(&self, mut buf: Vec<u8>, values: &[Arc<[u8]>]) -> io::Result<()> {
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
    pub(super) fn send_fds(&self, fds: &[Arc<OwnedFd>]) -> io::Result<()> {
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

    pub(super) fn send(&self, reply: &Reply, fd: Option<BorrowedFd<'_>>) -> io::Result<()> {
        let frame = reply.encode().map_err(io::Error::other)?;
        self.link.send_frame(&frame, fd)
    }
}

/// Why the store ends a connection: the text it sends the peer in an ERROR reply (when the
/// peer still reads) and reports to its host. The protocol carries it as text.
#[derive(Debug)]
pub(super) struct Refusal(pub(super) String);

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
    use crate::server::tests::*;
    use crate::unix::{send_frame, FdReader};
    use crate::wire::{self, Reply, Request, PROTOCOL_VERSION};
    use crate::{Client, StoreEvent};
    use std::io::Write;

    use std::os::unix::net::UnixStream;

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
