//! The byte stream under one store connection: a Unix socket (descriptors may travel beside
//! frames), plain TCP, or TLS 1.3 over TCP.
//!
//! Owns sending whole frames, reading bytes for `wire::read_frame`, the TLS handshake and the
//! record layer. A [`Link`] is shared by one reader and any number of senders at once (a PE's
//! `abort` goes out while another thread waits for a reply): no lock is held across a blocking
//! socket call, and TLS records of two senders never interleave. Must never interpret frames,
//! and never raise `SIGPIPE` (the host program may not ignore it). Timeouts are the socket's
//! own (`SO_RCVTIMEO`/`SO_SNDTIMEO`): a timed-out read surfaces as `WouldBlock`. A reader may
//! also carry a deadline for everything it reads (a connection joining the job, the rest of a
//! started frame): each read then first waits for data until that deadline, so that a peer
//! trickling one byte at a time cannot stretch it; a passed deadline surfaces as `TimedOut`.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::net::sockopt::{set_socket_timeout, Timeout};
use rustix::net::{recv, RecvFlags};

use crate::unix::{send_frame, FdReader};

/// Bytes read from the socket at a time under TLS.
const RAW_READ: usize = 16 * 1024;

/// Plaintext turned into TLS records at a time, so that sending a large frame never holds
/// more than this much of it encrypted.
const TLS_SEND_CHUNK: usize = 64 * 1024;

/// Most bytes gathered from a peer that answers a TLS handshake in plain TCP (a store's
/// refusal: one short ERROR frame).
const PLAIN_ANSWER_LIMIT: usize = 8 * 1024;

/// One connection's stream.
pub(crate) enum Link {
    /// A Unix stream socket: frames may carry one descriptor.
    Unix(UnixStream),
    /// Plain TCP.
    Tcp(TcpStream),
    /// TLS 1.3 over TCP.
    Tls(Box<TlsLink>),
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind())
    }
}

impl Link {
    /// "unix", "tcp" or "tls", for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Link::Unix(_) => "unix",
            Link::Tcp(_) => "tcp",
            Link::Tls(_) => "tls",
        }
    }

    /// The socket underneath (for timeouts, `poll` and `shutdown`).
    pub fn socket(&self) -> BorrowedFd<'_> {
        match self {
            Link::Unix(s) => s.as_fd(),
            Link::Tcp(s) => s.as_fd(),
            Link::Tls(t) => t.sock.as_fd(),
        }
    }

    /// Whether frames on this link may carry descriptors.
    pub fn passes_fds(&self) -> bool {
        matches!(self, Link::Unix(_))
    }

    /// Sets the socket's send and receive timeouts (`None`: wait forever).
    pub fn set_timeouts(&self, recv: Option<Duration>, send: Option<Duration>) -> io::Result<()> {
        set_socket_timeout(self.socket(), Timeout::Recv, recv)?;
        set_socket_timeout(self.socket(), Timeout::Send, send)?;
        Ok(())
    }

    /// Sets the receive timeout alone.
    pub fn set_recv_timeout(&self, recv: Option<Duration>) -> io::Result<()> {
        set_socket_timeout(self.socket(), Timeout::Recv, recv).map_err(Into::into)
    }

    /// Sends a whole frame, with `fd` beside it (Unix links only).
    pub fn send_frame(&self, frame: &[u8], fd: Option<BorrowedFd<'_>>) -> io::Result<()> {
        self.send_parts(frame, &[], fd)
    }

    /// Sends one frame made of `head` then `tail` (a value sent from where it is stored,
    /// without a copy of the whole frame), with `fd` beside it (Unix links only).
    pub fn send_parts(
        &self,
        head: &[u8],
        tail: &[u8],
        fd: Option<BorrowedFd<'_>>,
    ) -> io::Result<()> {
        let plain = |sock: BorrowedFd<'_>, fd| {
            send_frame(sock, head, fd)?;
            if tail.is_empty() {
                return Ok(());
            }
            send_frame(sock, tail, None)
        };
        match (self, fd) {
            (Link::Unix(s), fd) => plain(s.as_fd(), fd),
            (_, Some(_)) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "file descriptors cannot travel over TCP",
            )),
            (Link::Tcp(s), None) => plain(s.as_fd(), None),
            (Link::Tls(t), None) => t.send(&[head, tail]),
        }
    }

    /// Sends `bytes` with `fds` attached to the first of them (Unix links only; at most
    /// [`wire::FDS_PER_SEND`](crate::wire::FDS_PER_SEND) descriptors).
    pub fn send_fds(&self, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
        match self {
            Link::Unix(s) => crate::unix::send_with_fds(s.as_fd(), bytes, fds),
            _ if fds.is_empty() => self.send_parts(bytes, &[], None),
            _ => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "file descriptors cannot travel over TCP",
            )),
        }
    }

    /// A reader for one frame; descriptors that arrive (Unix links) go to `fds`.
    pub fn reader<'a>(&'a self, fds: &'a mut Vec<OwnedFd>) -> LinkReader<'a> {
        LinkReader {
            link: self,
            fds,
            deadline: None,
        }
    }
}

/// [`Read`] over a [`Link`], from [`Link::reader`].
pub(crate) struct LinkReader<'a> {
    link: &'a Link,
    fds: &'a mut Vec<OwnedFd>,
    /// Every read waits for data until then at most (`None`: the socket's timeout alone).
    deadline: Option<Instant>,
}

impl LinkReader<'_> {
    /// Bounds every later read by `deadline` (`None`: by the socket's timeout alone).
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }
}

impl Read for LinkReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let (Some(deadline), Link::Unix(_) | Link::Tcp(_)) = (self.deadline, self.link) {
            wait_readable(self.link.socket(), deadline)?;
        }
        match self.link {
            Link::Unix(s) => FdReader {
                sock: s.as_fd(),
                fds: self.fds,
            }
            .read(buf),
            Link::Tcp(s) => Ok(recv(s, buf, RecvFlags::empty())?.0),
            Link::Tls(t) => t.read(buf, self.deadline),
        }
    }
}

/// Waits until `sock` has something to read (data, end of stream or an error) or `deadline`
/// passes, which is a `TimedOut` error.
pub(crate) fn wait_readable(sock: BorrowedFd<'_>, deadline: Instant) -> io::Result<()> {
    use rustix::event::{poll, PollFd, PollFlags};
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "nothing arrived before the deadline",
            ));
        }
        let timeout = rustix::time::Timespec {
            tv_sec: left.as_secs().try_into().unwrap_or(i64::MAX),
            tv_nsec: left.subsec_nanos().into(),
        };
        let mut fds = [PollFd::new(&sock, PollFlags::IN)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => continue,
            Ok(_) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
}

/// TLS over TCP after a completed handshake.
pub(crate) struct TlsLink {
    sock: TcpStream,
    state: Mutex<TlsState>,
    /// Held from producing records to sending them, so two senders' records keep their order.
    sending: Mutex<()>,
}

struct TlsState {
    conn: rustls::Connection,
    /// Plaintext decrypted and not yet read.
    inbox: Vec<u8>,
    /// Read position in `inbox`.
    pos: usize,
    /// The peer closed the stream (close_notify or TCP EOF).
    eof: bool,
}

/// Recovers a lock whose holder panicked: panics abort the process outside tests.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, TlsErrorBox(e))
}

impl TlsLink {
    fn read(&self, buf: &mut [u8], deadline: Option<Instant>) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut raw = vec![0u8; RAW_READ];
        loop {
            {
                let mut st = lock(&self.state);
                if st.pos < st.inbox.len() {
                    let n = buf.len().min(st.inbox.len() - st.pos);
                    let at = st.pos;
                    buf[..n].copy_from_slice(&st.inbox[at..at + n]);
                    st.pos += n;
                    if st.pos == st.inbox.len() {
                        st.inbox.clear();
                        st.pos = 0;
                    }
                    return Ok(n);
                }
                if st.eof {
                    return Ok(0);
                }
            }
            // Blocks without the lock, so senders go on meanwhile.
            if let Some(deadline) = deadline {
                wait_readable(self.sock.as_fd(), deadline)?;
            }
            let n = recv(&self.sock, &mut raw, RecvFlags::empty())?.0;
            let mut st = lock(&self.state);
            if n == 0 {
                st.eof = true;
                continue;
            }
            feed(&mut st, &raw[..n])?;
            let wants_write = st.conn.wants_write();
            drop(st);
            if wants_write {
                self.flush()?;
            }
        }
    }

    /// Sends `parts` as one stream of records, a chunk at a time.
    fn send(&self, parts: &[&[u8]]) -> io::Result<()> {
        let _sending = lock(&self.sending);
        for chunk in parts.iter().flat_map(|p| p.chunks(TLS_SEND_CHUNK)) {
            let records = {
                let mut st = lock(&self.state);
                st.conn.writer().write_all(chunk)?;
                drain_records(&mut st.conn)?
            };
            send_all(&self.sock, &records)?;
        }
        Ok(())
    }

    /// Sends what the record layer has queued (alerts, key updates).
    fn flush(&self) -> io::Result<()> {
        let _sending = lock(&self.sending);
        let records = drain_records(&mut lock(&self.state).conn)?;
        send_all(&self.sock, &records)
    }
}

/// Decrypts `bytes` into the inbox (rustls holds little plaintext at a time, so it is moved out
/// after every record batch).
fn feed(st: &mut TlsState, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        st.conn.read_tls(&mut bytes)?;
        st.conn.process_new_packets().map_err(tls_error)?;
        let mut chunk = [0u8; 4096];
        loop {
            match st.conn.reader().read(&mut chunk) {
                Ok(0) => {
                    st.eof = true;
                    break;
                }
                Ok(n) => st.inbox.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

fn drain_records(conn: &mut rustls::Connection) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut out)?;
    }
    Ok(out)
}

fn send_all(sock: &TcpStream, bytes: &[u8]) -> io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    send_frame(sock.as_fd(), bytes, None)
}

/// What the first bytes of a stream say it speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Speaks {
    /// A TLS record (handshake or alert).
    Tls,
    /// A store frame: its length's high bytes are zero, which no TLS record header has.
    Plain,
    /// Neither; or the stream ended first.
    Unknown,
}

/// Tells a TLS record header from a store frame: a TLS record starts with content type 0x15
/// (alert) or 0x16 (handshake) then version 0x03 0x01..0x04; a store frame with a length
/// under 64 KiB has a zero third byte.
pub(crate) fn classify(prefix: &[u8]) -> Speaks {
    match prefix {
        [0x15 | 0x16, 0x03, 0x01..=0x04, ..] => Speaks::Tls,
        [_, _, 0, ..] => Speaks::Plain,
        _ => Speaks::Unknown,
    }
}

/// Peeks at up to 3 bytes of `sock` without consuming them (until `deadline`, or EOF). A peer
/// that sends nothing by `deadline` is a `TimedOut` error.
pub(crate) fn peek_prefix(sock: &TcpStream, deadline: Instant) -> io::Result<Vec<u8>> {
    let mut buf = [0u8; 3];
    wait_readable(sock.as_fd(), deadline)?;
    loop {
        let n = recv(sock, &mut buf, RecvFlags::PEEK)?.0;
        if n == buf.len() || n == 0 {
            return Ok(buf[..n].to_vec());
        }
        if Instant::now() >= deadline {
            return Ok(buf[..n].to_vec());
        }
        // A few bytes arrived and maybe the rest are on their way: wait for more, or for the
        // peer's end of stream (readable data alone would wake the poll at once).
        use rustix::event::{poll, PollFd, PollFlags};
        let mut fds = [PollFd::new(sock, PollFlags::RDHUP)];
        let nap = rustix::time::Timespec {
            tv_sec: 0,
            tv_nsec: 10_000_000,
        };
        if let Ok(1..) = poll(&mut fds, Some(&nap)) {
            if fds[0]
                .revents()
                .intersects(PollFlags::RDHUP | PollFlags::HUP)
            {
                let n = recv(sock, &mut buf, RecvFlags::PEEK)?.0;
                return Ok(buf[..n].to_vec());
            }
        }
    }
}

/// Why a TLS handshake failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HandshakeError {
    /// The peer answered with a store frame: it runs without TLS, or refused this connection
    /// before TLS (the frame, as far as it came, is kept for the caller to read).
    #[error("the peer speaks plain TCP, not TLS")]
    PeerIsPlain(Vec<u8>),
    /// The deadline passed before the handshake completed.
    #[error("the TLS handshake did not complete in time")]
    TimedOut,
    /// The peer closed the connection during the handshake.
    #[error("connection closed during the TLS handshake")]
    Closed,
    /// TLS itself failed (certificate refused, alert received, bad record...).
    #[error("TLS handshake failed: {0}")]
    Tls(rustls::Error),
    /// The socket failed or timed out.
    #[error("TLS handshake: {0}")]
    Io(io::Error),
}

/// Runs the TLS handshake on `sock` and returns the link; the whole handshake must be done by
/// `deadline`, however the peer spreads its bytes. A peer whose first bytes are a store frame
/// is reported as [`HandshakeError::PeerIsPlain`].
pub(crate) fn handshake(
    sock: TcpStream,
    conn: impl Into<rustls::Connection>,
    deadline: Instant,
) -> Result<Link, HandshakeError> {
    let mut conn: rustls::Connection = conn.into();
    conn.set_buffer_limit(None);
    let mut st = TlsState {
        conn,
        inbox: Vec::new(),
        pos: 0,
        eof: false,
    };
    let mut first = Vec::new();
    let mut raw = vec![0u8; RAW_READ];
    loop {
        let records = drain_records(&mut st.conn).map_err(HandshakeError::Io)?;
        send_all(&sock, &records).map_err(HandshakeError::Io)?;
        if !st.conn.is_handshaking() {
            break;
        }
        match wait_readable(sock.as_fd(), deadline) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::TimedOut => return Err(HandshakeError::TimedOut),
            Err(e) => return Err(HandshakeError::Io(e)),
        }
        let n = recv(&sock, &mut raw, RecvFlags::empty())
            .map_err(|e| HandshakeError::Io(e.into()))?
            .0;
        if n == 0 {
            return Err(match classify(&first) {
                Speaks::Plain => HandshakeError::PeerIsPlain(first),
                _ => HandshakeError::Closed,
            });
        }
        let mut bytes = &raw[..n];
        if first.len() < 3 {
            // Judge the peer by its first 3 bytes before rustls sees any of them.
            let take = (3 - first.len()).min(n);
            first.extend_from_slice(&bytes[..take]);
            if first.len() < 3 {
                continue;
            }
            if classify(&first) == Speaks::Plain {
                first.extend_from_slice(&bytes[take..]);
                return Err(HandshakeError::PeerIsPlain(plain_answer(
                    &sock, first, deadline,
                )));
            }
            let held = std::mem::take(&mut first);
            bytes = &bytes[take..];
            if let Err(e) = feed_handshake(&mut st, &held) {
                return Err(fail(&sock, &mut st, e));
            }
            first = held;
        }
        if let Err(e) = feed_handshake(&mut st, bytes) {
            return Err(fail(&sock, &mut st, e));
        }
    }
    Ok(Link::Tls(Box::new(TlsLink {
        sock,
        state: Mutex::new(st),
        sending: Mutex::new(()),
    })))
}

/// What a peer that answered a handshake in plain TCP says: `got` and whatever follows until
/// it closes, `PLAIN_ANSWER_LIMIT` bytes, or a second (or `deadline`) passes.
fn plain_answer(sock: &TcpStream, mut got: Vec<u8>, deadline: Instant) -> Vec<u8> {
    let until = deadline.min(Instant::now() + Duration::from_secs(1));
    let mut raw = [0u8; 1024];
    while got.len() < PLAIN_ANSWER_LIMIT && wait_readable(sock.as_fd(), until).is_ok() {
        match recv(sock, &mut raw, RecvFlags::empty()) {
            Ok((0, _)) | Err(_) => break,
            Ok((n, _)) => got.extend_from_slice(&raw[..n.min(PLAIN_ANSWER_LIMIT - got.len())]),
        }
    }
    got
}

fn feed_handshake(st: &mut TlsState, bytes: &[u8]) -> Result<(), HandshakeError> {
    feed(st, bytes).map_err(|e| {
        match e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<TlsErrorBox>())
        {
            Some(TlsErrorBox(tls)) => HandshakeError::Tls(tls.clone()),
            None => HandshakeError::Io(e),
        }
    })
}

/// Sends the alert rustls queued for a failed handshake (best effort), so that the peer learns
/// why, and passes the error on.
fn fail(sock: &TcpStream, st: &mut TlsState, e: HandshakeError) -> HandshakeError {
    if let Ok(records) = drain_records(&mut st.conn) {
        let _ = send_all(sock, &records);
    }
    e
}

/// A rustls error carried inside an `io::Error`, so the handshake can name it exactly.
#[derive(Debug)]
struct TlsErrorBox(rustls::Error);

impl std::fmt::Display for TlsErrorBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TLS: {}", self.0)
    }
}

impl std::error::Error for TlsErrorBox {}

/// A TCP connection to `addr` with `SO_RCVTIMEO`/`SO_SNDTIMEO` and no Nagle delay (frames are
/// small request/reply pairs).
pub(crate) fn tcp_connect(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let sock = TcpStream::connect_timeout(addr, timeout.max(Duration::from_millis(1)))?;
    prepare_tcp(&sock)?;
    Ok(sock)
}

/// Close-on-exec (std does it) and no Nagle delay.
pub(crate) fn prepare_tcp(sock: &TcpStream) -> io::Result<()> {
    sock.set_nodelay(true)
}
