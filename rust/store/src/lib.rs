//! shmem-store: the job's key-value control store: its protocol ([`wire`]), the server (run by
//! `shmemrun`, or by PE 0 under other launchers) and the client each PE holds, the streams they
//! run over (`link`: Unix sockets with descriptor passing in `unix`, TCP, TLS 1.3), store
//! addresses ([`addr`]) and trust ([`tls`]); and groups whose members come and go
//! ([`group`]: members with ranks the store hands out, liveness, serialized membership
//! changes, a store served by whichever process binds its address first), and the liveness
//! of a job's PEs across nodes over a group ([`liveness`]).
//!
//! Must never decide who the PEs are or how they meet: that is the launcher's and the
//! runtime's part of the bootstrap. Every blocking call has a timeout, and errors name the
//! operation and the key. Safe Rust only: what needs `unsafe` (allocator tuning of the
//! process that hosts the store) is its host's business.

#![forbid(unsafe_code)]

pub mod addr;
mod client;
mod error;
pub mod group;
mod link;
pub mod liveness;
mod server;
pub mod tls;
pub mod unix;
pub mod wire;

pub use client::{Client, TcpDial};
pub use error::BootstrapError;
pub use group::{Change, ChangeKind, GroupOptions, Member, MemberEvent, Store};
pub use server::{
    refused_key, PeerStatus, Server, StoreEvent, CONNECTION_ENDED, EXTRA_TCP_CONNECTIONS,
    FRAME_BUDGET, MAX_GROUP_SIZE, MAX_MEMBER_ID_LEN, MAX_OWNED_KEYS, VALUE_BUDGET,
};
