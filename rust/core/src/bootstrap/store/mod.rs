//! The job's key-value control store: its protocol ([`wire`]), the server (run by `shmemrun`,
//! or by PE 0 under other launchers) and the client each PE holds, the streams they run over
//! (`link`: Unix sockets with descriptor passing in `unix`, TCP, TLS 1.3), store addresses
//! ([`addr`]) and trust ([`tls`]).
//!
//! Must never decide who the PEs are or how they meet: that is the launcher's and the node's
//! part of the bootstrap. Every blocking call has a timeout, and errors name the operation
//! and the key.

pub mod addr;
mod client;
mod error;
mod gather;
mod link;
mod server;
pub mod tls;
mod unix;
pub mod wire;

pub use client::{Client, TcpDial};
pub use error::BootstrapError;
pub(crate) use gather::{gather, refused_key};
pub use server::{
    give_back_large_frees, PeerStatus, Server, StoreEvent, EXTRA_TCP_CONNECTIONS, FRAME_BUDGET,
    VALUE_BUDGET,
};
