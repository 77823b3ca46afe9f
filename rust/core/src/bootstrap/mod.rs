//! Bootstrap: the key-value control store that PEs use to find each other at setup time.
//!
//! Owns the store protocol ([`wire`]), the store server ([`Server`], run by `shmemrun`, or by
//! PE 0 under other launchers) and the client each PE holds ([`Client`]): SET, GET with
//! timeout, ADD, CAS, APPEND, DELETE, descriptor passing, ABORT (global exit), BYE (finalize),
//! and barrier/allgather built on them; the streams they run over ([`link`]: Unix sockets, TCP,
//! TLS 1.3), store addresses ([`addr`]), trust and certificates ([`tls`]), the node-local
//! descriptor store of TCP jobs ([`rendezvous`]); which launcher started the job ([`launch`])
//! and how PEs meet without `shmemrun` ([`node`]).
//! Must never be used on the data path (puts, gets, atomics, data-path waits): every call here
//! is a round trip to the store. Every blocking step has a timeout, and errors name the
//! operation and the key.

pub mod addr;
pub mod attrs;
mod client;
pub(crate) mod launch;
mod link;
pub(crate) mod node;
pub(crate) mod rendezvous;
mod server;
pub mod tls;
pub mod uniqueid;
mod unix;
pub mod wire;

use std::io;
use std::time::Duration;

pub use client::{Client, TcpDial};
pub use server::{PeerStatus, Server, StoreEvent, EXTRA_TCP_CONNECTIONS};

/// Store key under which the store records why it refused PE `rank`'s HELLO (another job
/// size), for the PEs waiting for that PE at start-up.
pub(crate) fn refused_key(rank: u32) -> String {
    format!("shmem/refused/{rank}")
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
    #[error("store {op} timed out after {after:?} waiting for key '{key}'")]
    Timeout {
        /// Operation that timed out.
        op: &'static str,
        /// Key it waited for.
        key: String,
        /// How long it waited.
        after: Duration,
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
