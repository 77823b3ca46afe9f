//! The job's key-value control store, as the runtime sees it: the `shmem-store` crate (protocol
//! [`wire`], server, client, addresses [`addr`], trust [`tls`], the job's `liveness` group)
//! under the paths the rest of the bootstrap names it by. The runtime's own uses of the store
//! live beside this module (`gather`, `heartbeat`).

pub use shmem_store::{
    addr, liveness, tls, wire, BootstrapError, Client, PeerStatus, Server, StoreEvent, TcpDial,
    EXTRA_TCP_CONNECTIONS, FRAME_BUDGET, VALUE_BUDGET,
};
