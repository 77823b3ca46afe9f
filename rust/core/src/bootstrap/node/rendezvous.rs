//! The node-local descriptor stores of a job whose store is on TCP: heap, control-segment and
//! static-data memfds cannot travel over TCP, and no abstract socket crosses nodes, so the
//! lowest PE of each node serves a second, descriptor-only store on an abstract Unix socket
//! and publishes its name in the job's store under a key of that node; every PE of the node
//! attaches a client of it to its store client ([`Client::attach_fd_store`]), which then routes
//! PUT_FD/GET_FD/GATHER_FD there. A job on several nodes thus has one descriptor store per
//! node, and descriptors are only ever exchanged among the PEs of one node.
//!
//! Owns those sockets and their acceptors (only this user's processes get in: SO_PEERCRED, as
//! in `meet`). The names are random, so nothing is left in any file system and no other job
//! meets there. Must never carry anything but descriptors: job control (ABORT, BYE, failures)
//! stays on the TCP store.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::time::Duration;

use crate::bootstrap::store::{Client, Server};
use crate::error::{Error, LaunchError, Result};

/// Prefix of the store keys under which each node's host publishes its socket's name (the
/// node number follows).
const NAME_PREFIX: &str = "shmem/fd-rendezvous/";

/// Where this PE's node keeps its descriptor store: the store key of its name and the PE that
/// hosts it (the node's lowest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeStore {
    key: String,
    host: u32,
}

impl NodeStore {
    /// The descriptor store of PE `me`'s node, from every PE's node number.
    pub(crate) fn of(node_of: &[u32], me: u32) -> NodeStore {
        let node = node_of[me as usize];
        let host = node_of.iter().position(|&n| n == node).unwrap_or(0) as u32;
        NodeStore {
            key: format!("{NAME_PREFIX}{node}"),
            host,
        }
    }
}

/// Gives `store` (a client of a TCP store) its node's descriptor store: the node's lowest PE
/// opens it and publishes its name, the node's other PEs look the name up and connect. Bounded
/// by `timeout`. A client whose own link carries descriptors (PE 0's, to its own store) gets
/// one as well, since the other PEs of its node cannot reach it there.
pub(crate) fn attach(store: &Client, node: &NodeStore, timeout: Duration) -> Result<()> {
    let fd_client = if store.rank() == node.host {
        open_for_host(store, node, timeout)?
    } else {
        connect(store, node, timeout)?
    };
    store.attach_fd_store(fd_client)?;
    Ok(())
}

/// The node's lowest PE: opens the descriptor store, publishes its name through `store`, and
/// returns this PE's own client of it.
fn open_for_host(store: &Client, node: &NodeStore, timeout: Duration) -> Result<Client> {
    let (rank, n_pes) = (store.rank(), store.n_pes());
    let uid = rustix::process::geteuid().as_raw();
    let name = crate::bootstrap::bits::socket_name(uid, "fd", "the descriptor store's name")?;
    let addr = SocketAddr::from_abstract_name(name.as_bytes())
        .map_err(|e| Error::os(format!("socket name @{name}"), e))?;
    let listener = UnixListener::bind_addr(&addr)
        .map_err(|e| Error::os(format!("opening the descriptor store @{name}"), e))?;
    // Its events (goodbyes, disconnects) are the TCP store's business: nobody listens.
    let (server, _events) = Server::new(n_pes);
    let (mine, theirs) =
        UnixStream::pair().map_err(|e| Error::os("socket pair to the descriptor store", e))?;
    server
        .serve_unix(rank, theirs)
        .map_err(|e| Error::os("serving this PE's descriptor store connection", e))?;
    std::thread::Builder::new()
        .name("shmem-fd-accept".into())
        .stack_size(128 * 1024)
        .spawn(move || crate::bootstrap::node::meet::accept_loop(&listener, &server, uid))
        .map_err(|e| Error::os("starting the descriptor store thread", e))?;
    let client = Client::connect_inherited(mine.into(), rank, n_pes, timeout)?;
    store.set(&node.key, name.as_bytes())?;
    Ok(client)
}

/// The node's other PEs: look up the descriptor store's name and connect.
fn connect(store: &Client, node: &NodeStore, timeout: Duration) -> Result<Client> {
    let (rank, n_pes) = (store.rank(), store.n_pes());
    let name = (store.get(&node.key, timeout))
        .map_err(|e| e.unpublished(node.host, "the name of its node's descriptor store"))?;
    let shown = String::from_utf8_lossy(&name).into_owned();
    let addr = SocketAddr::from_abstract_name(&name)
        .map_err(|e| Error::os(format!("socket name @{shown}"), e))?;
    let stream = UnixStream::connect_addr(&addr).map_err(|e| {
        Error::Launch(LaunchError::NoDescriptorStore {
            socket: shown.to_string(),
            pe: rank,
            host: node.host,
            source: e,
        })
    })?;
    Ok(Client::connect_inherited(
        stream.into(),
        rank,
        n_pes,
        timeout,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_node_is_served_by_its_lowest_pe() {
        let node_of = [0, 1, 0, 1, 2];
        assert_eq!(
            NodeStore::of(&node_of, 2),
            NodeStore {
                key: "shmem/fd-rendezvous/0".into(),
                host: 0
            }
        );
        assert_eq!(NodeStore::of(&node_of, 3).host, 1);
        assert_eq!(NodeStore::of(&node_of, 1).key, "shmem/fd-rendezvous/1");
        assert_eq!(NodeStore::of(&node_of, 4).host, 4);
    }
}
