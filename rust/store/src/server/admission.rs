//! Admission and budgets: who may take a connection of the store and what all connections
//! together may hold. The TCP acceptor, the places of connections that have not joined the job
//! (evicting the oldest for a newer one, or refusing as "store full"), the deadline to join
//! (TLS handshake and HELLO together), the budget of frame bytes held across connections
//! ([`FRAME_BUDGET`]) and the rate-limited log of refusals. Must never look inside a request:
//! that is [`super::dispatch`]'s.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::connection::Refusal;
use super::{Server, Shared, CONNECTION_STACK, IO_STALL_LIMIT};
use crate::link::{self, HandshakeError, Link, Speaks};
use crate::wire::{Reply, MAX_FRAME_LEN, STORE_FULL};

/// TCP connections that have not joined the job (no HELLO accepted yet: PEs on their way in,
/// strays) held at once beyond one per PE. When that many are held, a new connection evicts
/// the oldest of them if it has waited at least `JOIN_GRACE`, else it is refused as "store
/// full" (a PE then tries again). Connections that joined are not counted here.
pub const EXTRA_TCP_CONNECTIONS: usize = 32;

/// How long a connection that has not joined is safe from eviction: time enough for a PE's
/// TLS handshake and HELLO.
pub(super) const JOIN_GRACE: Duration = Duration::from_secs(1);

/// Deadline for a TCP connection to join the job: TLS handshake and HELLO together, however
/// its bytes are spread. Tests shorten it.
#[cfg(test)]
pub(super) const TCP_JOIN_LIMIT: Duration = Duration::from_secs(3);
#[cfg(not(test))]
pub(super) const TCP_JOIN_LIMIT: Duration = IO_STALL_LIMIT;

/// Bytes of frames the store holds at once across all its connections. A frame is charged
/// twice its length while it is read and decoded (the frame, then its decoded copy); one that
/// does not fit waits for room, up to `IO_STALL_LIMIT`, then is refused. Replies are sent
/// from where values are kept, a bounded chunk at a time, and are not charged.
pub const FRAME_BUDGET: usize = 4 * MAX_FRAME_LEN;

/// Refusals of a burst logged one by one; later ones are counted and summarised.
pub(super) const REFUSALS_LOGGED: u32 = 5;

/// Period of the summary of refusals not logged one by one; a burst ends after a period
/// without refusals.
pub(super) const REFUSAL_SUMMARY_PERIOD: Duration = Duration::from_secs(5);

/// A TCP connection that has not joined the job yet, as the acceptor sees it.
pub(super) struct Ticket {
    /// When it was accepted.
    pub(super) since: Instant,
    /// Another descriptor of its socket, to shut the connection down when it is evicted.
    pub(super) sock: OwnedFd,
    /// It was evicted to make room for a newer connection.
    pub(super) evicted: AtomicBool,
}

/// The budget of [`FRAME_BUDGET`] bytes.
#[derive(Default)]
pub(super) struct FrameBudget {
    pub(super) used: Mutex<usize>,
    pub(super) freed: Condvar,
}

/// Bytes taken from a [`FrameBudget`], given back on drop.
pub(super) struct Reservation<'a> {
    pub(super) budget: &'a FrameBudget,
    pub(super) bytes: usize,
}

impl FrameBudget {
    /// Takes `bytes`, waiting for room until `until`; `None` if there was none by then.
    pub(super) fn reserve(&self, bytes: usize, until: Instant) -> Option<Reservation<'_>> {
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

/// Writes refusal lines: the first [`REFUSALS_LOGGED`] of a burst one by one, then a summary
/// of how many more there were every [`REFUSAL_SUMMARY_PERIOD`], so that a flood of strays
/// cannot flood the log.
#[derive(Default)]
pub(super) struct RefusalLog {
    pub(super) state: Mutex<RefusalState>,
}

#[derive(Default)]
pub(super) struct RefusalState {
    /// Refusals logged one by one in this burst.
    pub(super) logged: u32,
    /// Refusals counted since the last summary.
    pub(super) counted: u64,
    /// When the last refusal came.
    pub(super) last: Option<Instant>,
    /// A summary thread is running.
    pub(super) summarising: bool,
}

impl RefusalLog {
    /// Logs (or counts) the refusal of the connection from `peer`, for `why`.
    pub(super) fn refused(self: &Arc<Self>, peer: &str, why: &str) {
        let now = Instant::now();
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let quiet = st
            .last
            .is_none_or(|t| now.duration_since(t) >= REFUSAL_SUMMARY_PERIOD);
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
    pub(super) fn flush(&self) {
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
    pub(super) fn summarise(&self) {
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

impl Server {
    pub(super) fn accept_tcp(
        &self,
        listener: &TcpListener,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) {
        let joining_limit = self.n_pes as usize + EXTRA_TCP_CONNECTIONS;
        // Joining, joined (at most one per PE, or the clients of a store of groups), and
        // evicted ones on their way out.
        let open_limit = 2 * joining_limit + self.shared.open_clients;
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
    pub(super) fn admit(
        &self,
        sock: &TcpStream,
        now: Instant,
        limit: usize,
    ) -> Result<Arc<Ticket>, String> {
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
    pub(super) fn refuse_at_once(&self, sock: TcpStream, peer: &str, why: &str) {
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
    pub(super) fn join_tcp(
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
}

/// Sends a plain ERROR frame and closes without resetting the connection: the peer's unread
/// bytes are drained first (a close with unread data sends a reset, which may destroy the
/// frame before the peer reads it).
pub(super) fn refuse_plainly(sock: TcpStream, why: &str) {
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
    pub(super) fn leave(&self, ticket: &Arc<Ticket>) {
        let mut joining = self.joining.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = joining.iter().position(|t| Arc::ptr_eq(t, ticket)) {
            joining.remove(at);
        }
    }

    /// Why a connection that did not join was dropped: `why`, unless it was evicted.
    pub(super) fn why_dropped(&self, ticket: &Ticket, why: String) -> String {
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

    pub(super) fn joining_limit(&self) -> usize {
        self.lock().peers.len() + EXTRA_TCP_CONNECTIONS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::tests::*;

    use crate::wire::{Request, PROTOCOL_VERSION};
    use crate::{Server, StoreEvent};
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    use std::sync::mpsc::Receiver;
    use std::thread;

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
}
