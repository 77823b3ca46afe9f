//! Request dispatch: what the store answers to each request of a connection (HELLO and the
//! claim of a PE's place, values, counters, gathers, descriptors, ABORT, BYE). Reads and
//! writes the job's state; sends nothing itself (the connection loop sends the reply).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use subtle::ConstantTimeEq;

use super::connection::{Connection, Next, Refusal};
use super::state::Entry;
use super::{PeerStatus, StoreEvent};
use crate::link::Link;
use crate::wire::{self, Reply, Request, MAX_VALUE_LEN, PROTOCOL_VERSION};

/// Store key under which the store records why it refused PE `rank`'s HELLO (another job
/// size, or its place taken by another connection), for the PEs waiting for that PE at
/// start-up.
pub fn refused_key(rank: u32) -> String {
    format!("shmem/refused/{rank}")
}

impl Connection {
    /// Waits for the `count` keys of `prefix` and keeps the kind of entry `pick` takes; else
    /// the reply: the PEs still missing at the timeout, or the first key holding the other kind
    /// (`wrong` says what it holds).
    pub(super) fn gather<T>(
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

    pub(super) fn handle(&mut self, request: Request) -> Next {
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
                if rank == wire::NO_RANK && !self.claimed {
                    if let Err(message) = self.claim_open(n_pes) {
                        return Next::Fatal(message.into());
                    }
                } else if !self.claimed {
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
            Request::Abort { .. } if self.open => Next::Fatal(
                "ABORT from a client that is no PE of a job: it has no job to stop".into(),
            ),
            Request::Watch {
                key,
                seen,
                timeout_ms,
            } => self.watch(key, seen, timeout_ms),
            Request::GroupJoin {
                group,
                member,
                size,
                rank,
                loss_ms,
                drop_owned,
            } => self.group_join(group, member, size, rank, loss_ms, drop_owned),
            Request::GroupLeave { group } => self.group_leave(group),
            Request::GroupOwn { group, key } => self.group_own(group, key),
            Request::GroupWatch {
                group,
                after,
                timeout_ms,
            } => self.group_watch(group, after, timeout_ms),
            Request::GroupChange { group, begin, tag } => self.group_change(group, begin, tag),
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
    pub(super) fn record_refusal(&self, rank: u32, message: String) -> String {
        self.shared.insert(
            refused_key(rank),
            Entry::Bytes(message.clone().into_bytes().into()),
        );
        message
    }

    /// Takes a place among the clients without a PE's place ([`wire::NO_RANK`]) for a
    /// connection from the listening socket: only a store of groups
    /// ([`Server::open`](super::Server::open)) has them, up to its limit.
    pub(super) fn claim_open(&mut self, n_pes: u32) -> Result<(), Refusal> {
        let limit = self.shared.open_clients;
        if limit == 0 {
            return Err(format!(
                "HELLO of a client without a PE's place, but this store serves a job of {} PEs \
                 and takes none",
                self.n_pes
            )
            .into());
        }
        if n_pes != 0 {
            return Err(format!(
                "HELLO of a client without a PE's place names a job of {n_pes} PEs (it must \
                 name 0)"
            )
            .into());
        }
        let now = self.shared.open_now.fetch_add(1, Ordering::SeqCst);
        if now >= limit {
            self.shared.open_now.fetch_sub(1, Ordering::SeqCst);
            return Err(format!(
                "{}: {now} clients are connected, the most this store takes",
                wire::STORE_FULL
            )
            .into());
        }
        self.open = true;
        self.rank = wire::NO_RANK;
        self.claimed = true;
        if let Some(ticket) = self.ticket.take() {
            self.shared.leave(&ticket);
        }
        Ok(())
    }

    /// Takes `rank`'s slot for a connection from the listening socket, as its HELLO asks (the
    /// job's size is checked already).
    pub(super) fn claim(&mut self, rank: u32) -> Result<(), Refusal> {
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
    pub(super) fn rank_taken(&self, rank: u32, holder: Option<String>) -> Refusal {
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

#[cfg(test)]
mod tests {

    use crate::server::tests::*;
    use crate::unix::{send_frame, FdReader};
    use crate::wire::{self, Reply, Request, PROTOCOL_VERSION};
    use crate::{BootstrapError, Client, StoreEvent};
    use std::io::{Read, Seek, SeekFrom, Write};

    use std::os::fd::AsFd;
    use std::thread;

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
}
