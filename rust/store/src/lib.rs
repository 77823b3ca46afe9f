//! shmem-store: the job's key-value control store: its protocol ([`wire`]), the server (run by
//! `shmemrun`, or by PE 0 under other launchers) and the client each PE holds, the streams they
//! run over (`link`: Unix sockets with descriptor passing in `unix`, TCP, TLS 1.3), store
//! addresses ([`addr`]) and trust ([`tls`]).
//!
//! Must never decide who the PEs are or how they meet: that is the launcher's and the
//! runtime's part of the bootstrap. Every blocking call has a timeout, and errors name the
//! operation and the key. Safe Rust only: what needs `unsafe` (allocator tuning of the
//! process that hosts the store) is its host's business.

#![forbid(unsafe_code)]

pub mod addr;
mod client;
mod error;
mod link;
mod server;
pub mod tls;
mod unix;
pub mod wire;

pub use client::{Client, TcpDial};
pub use error::BootstrapError;
pub use server::{
    refused_key, PeerStatus, Server, StoreEvent, EXTRA_TCP_CONNECTIONS, FRAME_BUDGET, VALUE_BUDGET,
};
