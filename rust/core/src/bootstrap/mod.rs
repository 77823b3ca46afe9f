//! Bootstrap: the key-value control store that PEs use to find each other at setup time.
//!
//! Owns the store protocol ([`wire`]), the store server ([`Server`], run by `shmemrun`, or by
//! PE 0 under other launchers) and the client each PE holds ([`Client`]): SET, GET with
//! timeout, ADD, CAS, APPEND, DELETE, descriptor passing, ABORT (global exit), BYE (finalize),
//! and barrier/allgather built on them; the streams they run over ([`link`]: Unix sockets, TCP,
//! TLS 1.3), store addresses ([`addr`]), trust and certificates ([`tls`]), the node-local
//! descriptor store of TCP jobs ([`rendezvous`]); where each PE runs ([`locality`]); which
//! launcher started the job ([`launch`]), its own key-value service ([`kvs`]: PMI-1 over
//! `PMI_FD`, [`pmi1`], or PMIx loaded at run time, [`pmix`]) and how PEs meet without
//! `shmemrun` ([`node`]).
//! Must never be used on the data path (puts, gets, atomics, data-path waits): every call here
//! is a round trip to the store. Every blocking step has a timeout, and errors name the
//! operation and the key.

pub mod addr;
pub mod attrs;
mod client;
pub(crate) mod kvs;
pub(crate) mod launch;
mod link;
pub(crate) mod locality;
pub(crate) mod node;
mod pmi1;
mod pmix;
pub(crate) mod rendezvous;
mod server;
pub mod tls;
pub mod uniqueid;
mod unix;
pub mod wire;

use std::io;
use std::time::Duration;

use crate::error::Error;

pub use client::{Client, TcpDial};
pub use server::{PeerStatus, Server, StoreEvent, EXTRA_TCP_CONNECTIONS, FRAME_BUDGET};

/// Store key under which the store records why it refused PE `rank`'s HELLO (another job
/// size), for the PEs waiting for that PE at start-up.
pub(crate) fn refused_key(rank: u32) -> String {
    format!("shmem/refused/{rank}")
}

/// 128 bits from the system's random generator, for secrets and names no other job picks;
/// `what` says what they are for, in the error.
pub(crate) fn random_bits(what: &str) -> crate::error::Result<[u8; 16]> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| Error::Launch(format!("the system's random generator failed ({what})")))?;
    Ok(bytes)
}

/// `bytes` in lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

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

/// The text of [`BootstrapError::Timeout`]: a wait for a key, or for any answer at all (HELLO).
fn timeout_text(op: &str, key: &str, after: Duration) -> String {
    let secs = after.as_secs_f64();
    if key.is_empty() {
        format!("the store did not answer {op} within {secs:.1} s")
    } else {
        format!("store {op} timed out after {secs:.1} s waiting for key '{key}'")
    }
}

impl BootstrapError {
    /// The same error seen from a start-up step in which PE `rank` publishes `what`: a wait
    /// for its key that timed out becomes [`BootstrapError::NotPublished`], naming the PE and
    /// what it had not done. Any other error is returned as it is.
    pub(crate) fn unpublished(self, rank: u32, what: &'static str) -> BootstrapError {
        match self {
            BootstrapError::Timeout { after, .. } => {
                BootstrapError::NotPublished { rank, what, after }
            }
            other => other.unshared(what),
        }
    }

    /// The same error seen from a start-up allgather in which every PE shares `what`: the
    /// PE an [`BootstrapError::Absent`] names becomes the PE that did not publish it. Any other
    /// error is returned as it is.
    pub(crate) fn unshared(self, what: &'static str) -> BootstrapError {
        match self {
            BootstrapError::Absent { rank, after, .. } => {
                BootstrapError::NotPublished { rank, what, after }
            }
            other => other,
        }
    }
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BootstrapError {
    /// A key or value broke a protocol rule (empty key, key over 1 KiB, value over 16 MiB,
    /// or a descriptor on a link that cannot carry one);
    /// nothing was sent and the connection is still usable.
    #[error("store {op}: {source}")]
    InvalidArgument {
        /// Operation that was refused.
        op: &'static str,
        /// The broken limit.
        source: wire::WireError,
    },
    /// The key did not appear (GET, GET_FD, barrier, allgather), or the store did not answer,
    /// within the timeout.
    #[error("{}", timeout_text(op, key, *after))]
    Timeout {
        /// Operation that timed out.
        op: &'static str,
        /// Key it waited for.
        key: String,
        /// How long it waited.
        after: Duration,
    },
    /// A PE's contribution to a collective step (allgather) did not appear within the timeout:
    /// that PE never reached the store, or stopped before its turn.
    #[error(
        "store {op}: PE {rank} did not take part within {:.1} s: it did not start, is stuck, \
         or died before reaching the job's store",
        .after.as_secs_f64()
    )]
    Absent {
        /// Operation that timed out.
        op: &'static str,
        /// The PE that was waited for.
        rank: u32,
        /// How long it waited.
        after: Duration,
    },
    /// A PE's part of a start-up step (its heap, its node, ...) did not appear in the store
    /// within the start-up timeout: that PE has not called `shmem_init`, or is slow, stuck or
    /// dead before the step.
    #[error(
        "PE {rank} did not publish {what} within {:.1} s (the start-up timeout, \
         SHMEM_INIT_TIMEOUT): it has not called shmem_init, or is stuck or died before that step",
        .after.as_secs_f64()
    )]
    NotPublished {
        /// The PE that was waited for.
        rank: u32,
        /// What it had to publish ("its symmetric heap").
        what: &'static str,
        /// How long this PE waited.
        after: Duration,
    },
    /// The store serves a job of another size than this PE was told: the PEs were given
    /// different PE counts.
    #[error("the store serves {store} PEs, but this PE was told {ours}")]
    SizeMismatch {
        /// The store's job size.
        store: u32,
        /// This PE's.
        ours: u32,
    },
    /// The store answered the request with an error (for example ADD on a key that holds no
    /// counter, or GET on a key that holds a descriptor); the connection is still usable.
    #[error("store refused {op} on key '{key}': {message}")]
    Refused {
        /// Operation refused.
        op: &'static str,
        /// Key it named.
        key: String,
        /// The store's reason.
        message: String,
    },
    /// The store speaks another protocol version (launcher and library from different builds).
    #[error(
        "store protocol version mismatch: this library speaks {ours}, the launcher {theirs}; \
         use the shmemrun that came with this library"
    )]
    VersionMismatch {
        /// Version of this library.
        ours: u32,
        /// Version of the store.
        theirs: u32,
    },
    /// The store's host (`shmemrun`, or PE 0 under other launchers) closed the connection: it
    /// is stopping the job, or it died.
    #[error("store connection closed during {op} (the store's host, shmemrun or PE 0, stopped the job or died)")]
    Closed {
        /// Operation in progress.
        op: &'static str,
    },
    /// The connection failed at the system level (bad descriptor, not a socket, send failed).
    #[error("store connection failed during {op}: {source}")]
    Io {
        /// Operation in progress.
        op: &'static str,
        /// The system error.
        source: io::Error,
    },
    /// The peer sent a frame that breaks the protocol, or an answer that does not fit the
    /// request.
    #[error("store protocol error during {op}: {message}")]
    Protocol {
        /// Operation in progress.
        op: &'static str,
        /// What was wrong.
        message: String,
    },
    /// An earlier failure (timeout or broken frame) left the stream out of step; every later
    /// call fails with this.
    #[error("store connection unusable after an earlier failure: {cause}")]
    Broken {
        /// The earlier failure.
        cause: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_up_waits_name_the_pe_and_what_it_had_not_published() {
        let after = Duration::from_millis(5000);
        let timeout = BootstrapError::Timeout {
            op: "get_fd",
            key: "heap/2".into(),
            after,
        };
        assert_eq!(
            timeout.to_string(),
            "store get_fd timed out after 5.0 s waiting for key 'heap/2'"
        );
        assert_eq!(
            timeout.unpublished(2, "its symmetric heap").to_string(),
            "PE 2 did not publish its symmetric heap within 5.0 s (the start-up timeout, \
             SHMEM_INIT_TIMEOUT): it has not called shmem_init, or is stuck or died before that \
             step"
        );
        let absent = BootstrapError::Absent {
            op: "allgather",
            rank: 3,
            after,
        };
        assert!(matches!(
            absent.unshared("its layout"),
            BootstrapError::NotPublished {
                rank: 3,
                what: "its layout",
                ..
            }
        ));
        let closed = BootstrapError::Closed { op: "get_fd" };
        assert!(matches!(
            closed.unpublished(1, "x"),
            BootstrapError::Closed { .. }
        ));
        let silent = BootstrapError::Timeout {
            op: "connect",
            key: String::new(),
            after,
        };
        assert_eq!(
            silent.to_string(),
            "the store did not answer connect within 5.0 s"
        );
    }
}
