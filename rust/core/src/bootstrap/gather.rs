//! Start-up allgathers that notice PEs the store refused (another job size at HELLO) and name
//! the PE that never published its part, instead of a bare timeout. Used by the steps every PE
//! must pass once (node identities, the attributes check); later exchanges use
//! [`Client::allgather`].

use std::time::Duration;

use crate::error::Error;
use shmem_store::{refused_key, BootstrapError, Client};

/// What [`gather`] read: every PE's value (this PE's included) up to the first PE it could not
/// read, and why it could not.
pub(crate) struct Gathered {
    /// Indexed by PE; `None` for PEs not read.
    pub values: Vec<Option<Vec<u8>>>,
    /// The first PE that could not be read and why; `None` when every PE was.
    pub error: Option<Error>,
}

impl Gathered {
    /// The PEs whose values were read (this PE's included).
    pub fn seen(&self) -> Vec<u32> {
        (self.values.iter().enumerate())
            .filter(|(_, v)| v.is_some())
            .map(|(pe, _)| pe as u32)
            .collect()
    }
}

/// How long one GATHER of a start-up allgather waits before [`gather`] looks whether the
/// store refused the PE it waits for.
const REFUSAL_CHECK: Duration = Duration::from_millis(200);

/// A start-up allgather that notices PEs the store refused: publishes `mine` (which is `what`,
/// for messages: "its node identity") at `{prefix}{my PE}`, then reads every PE's value at
/// `{prefix}{pe}` with one GATHER at a time until `deadline`. While a PE's value is missing,
/// looks whether the store refused that PE's HELLO (an [`Error::Mismatch`] with the store's
/// reason); at the deadline, the first PE still missing has not published it
/// ([`BootstrapError::NotPublished`]). On failure the values of the PEs before the first one
/// missing are read one by one, so that the caller can compare them. The keys stay in the
/// store: start-up writes each once.
pub(crate) fn gather(
    store: &Client,
    prefix: &str,
    what: &'static str,
    mine: &[u8],
    deadline: std::time::Instant,
) -> Gathered {
    use std::time::Instant;
    let (me, n_pes) = (store.rank(), store.n_pes());
    let mut values = vec![None; n_pes as usize];
    values[me as usize] = Some(mine.to_vec());
    if let Err(e) = store.set(&format!("{prefix}{me}"), mine) {
        return Gathered {
            values,
            error: Some(e.into()),
        };
    }
    let started = Instant::now();
    let (missing, error) = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let pe = match store.gather(prefix, n_pes, left.min(REFUSAL_CHECK)) {
            Ok(all) => {
                return Gathered {
                    values: all.into_iter().map(Some).collect(),
                    error: None,
                }
            }
            Err(BootstrapError::Absent { rank, .. }) => rank,
            Err(e) => break (None, Error::from(e)),
        };
        if let Ok(why) = store.get(&refused_key(pe), Duration::ZERO) {
            let what = format!(
                "cannot join this PE's job (PE {me} of {n_pes}): {}",
                String::from_utf8_lossy(&why)
            );
            break (
                Some(pe),
                Error::Mismatch {
                    pe: pe as i32,
                    what,
                },
            );
        }
        if left.is_zero() {
            let after = started.elapsed();
            break (
                Some(pe),
                Error::Bootstrap(BootstrapError::NotPublished {
                    rank: pe,
                    what,
                    after,
                }),
            );
        }
    };
    for pe in (0..missing.unwrap_or(0)).filter(|&pe| pe != me) {
        match store.get(&format!("{prefix}{pe}"), Duration::ZERO) {
            Ok(v) => values[pe as usize] = Some(v),
            Err(_) => break,
        }
    }
    Gathered {
        values,
        error: Some(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shmem_store::addr::StoreAddr;
    use shmem_store::wire::{self, Reply, Request, PROTOCOL_VERSION};
    use shmem_store::{Server, TcpDial};
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::thread;
    use std::time::Instant;

    const T: Duration = Duration::from_secs(30);

    /// A stray that said HELLO as PE 1 of a plain-TCP store holds PE 1's place: the real PE 1
    /// is refused, and the PEs waiting for PE 1 at start-up fail at once with the reason
    /// instead of waiting out their timeout.
    #[test]
    fn a_stray_in_a_pes_place_ends_start_up_at_once_naming_it() {
        for n in [2u32, 4] {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let (server, _events) = Server::new(n);
            server.serve_tcp(listener, None).unwrap();
            let taken = n - 1;
            let mut stray = TcpStream::connect(addr).unwrap();
            stray.set_read_timeout(Some(T)).unwrap();
            let hello = Request::Hello {
                version: PROTOCOL_VERSION,
                rank: taken,
                n_pes: n,
                job: String::new(),
            };
            stray.write_all(&hello.encode().unwrap()).unwrap();
            let ack = Reply::from_frame(&wire::read_frame(&mut stray).unwrap()).unwrap();
            assert!(matches!(ack, Reply::HelloAck { .. }), "{ack:?}");
            let dial = TcpDial {
                addr: StoreAddr::parse(&format!("tcp://{addr}"), None).unwrap(),
                tls: None,
                job: String::new(),
            };
            let err = Client::connect_tcp(&dial, taken, n, T).unwrap_err();
            assert!(err.to_string().contains(wire::PLACE_TAKEN), "{err}");
            let started = Instant::now();
            let waiting: Vec<_> = (0..taken)
                .map(|rank| {
                    let dial = dial.clone();
                    thread::spawn(move || {
                        let c = Client::connect_tcp(&dial, rank, n, T).unwrap();
                        let got = gather(
                            &c,
                            "test/identity/",
                            "its identity",
                            &[rank as u8],
                            Instant::now() + T,
                        );
                        // Every PE before the one missing was read, each another's value.
                        for pe in (0..taken).filter(|&pe| pe != rank) {
                            assert_eq!(got.values[pe as usize], Some(vec![pe as u8]));
                        }
                        got.error
                            .expect("PE 1's place is held by a stray")
                            .to_string()
                    })
                })
                .collect();
            for pe in waiting {
                let err = pe.join().unwrap();
                assert!(
                    err.contains(&format!("PE {taken}'s {}", wire::PLACE_TAKEN))
                        && err.contains("runs without TLS"),
                    "{err}"
                );
            }
            let took = started.elapsed();
            assert!(took < T / 2, "start-up failed after {took:?}");
        }
    }
}
