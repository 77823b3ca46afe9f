//! The node-local descriptor store of a job whose store is on TCP: heap and job-page memfds
//! cannot travel over TCP, so PE 0 serves a second, descriptor-only store on an abstract Unix
//! socket and publishes its name in the job's store; every PE attaches a client of it to its
//! store client ([`Client::attach_fd_store`]), which then routes PUT_FD/GET_FD there.
//!
//! Owns that socket and its acceptor (only this user's processes get in: SO_PEERCRED, as in
//! `node`). The name is random, so nothing is left in any file system and no other job meets
//! there. Must never carry anything but descriptors: job control (ABORT, BYE, failures) stays
//! on the TCP store.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::time::Duration;

use crate::bootstrap::{Client, Server};
use crate::error::{Error, LaunchError, Result};

/// Store key under which PE 0 publishes the socket's name.
const NAME_KEY: &str = "shmem/fd-rendezvous";

/// A name no other job picks: this user, 128 random bits.
fn random_name(uid: u32) -> Result<String> {
    let bits = crate::bootstrap::random_bits("the descriptor store's name")?;
    Ok(format!("shmem-{uid}-fd-{}", crate::bootstrap::hex(&bits)))
}

/// Gives `store` (a client of a TCP store) its node-local descriptor store: PE 0 opens it and
/// publishes its name, the other PEs look the name up and connect. Bounded by `timeout`.
pub(crate) fn attach(store: &Client, timeout: Duration) -> Result<()> {
    if store.passes_fds() {
        return Ok(());
    }
    let fd_client = if store.rank() == 0 {
        open_for_host(store, timeout)?
    } else {
        connect(store, timeout)?
    };
    store.attach_fd_store(fd_client)?;
    Ok(())
}

/// PE 0: opens the descriptor store, publishes its name through `store`, and returns PE 0's
/// own client of it.
pub(crate) fn open_for_host(store: &Client, timeout: Duration) -> Result<Client> {
    let n_pes = store.n_pes();
    let uid = rustix::process::geteuid().as_raw();
    {
        let name = random_name(uid)?;
        let addr = SocketAddr::from_abstract_name(name.as_bytes())
            .map_err(|e| Error::os(format!("socket name @{name}"), e))?;
        let listener = UnixListener::bind_addr(&addr)
            .map_err(|e| Error::os(format!("opening the descriptor store @{name}"), e))?;
        // Its events (goodbyes, disconnects) are the TCP store's business: nobody listens.
        let (server, _events) = Server::new(n_pes);
        let (mine, theirs) =
            UnixStream::pair().map_err(|e| Error::os("socket pair to the descriptor store", e))?;
        server
            .serve_unix(0, theirs)
            .map_err(|e| Error::os("serving PE 0's descriptor store connection", e))?;
        std::thread::Builder::new()
            .name("shmem-fd-accept".into())
            .stack_size(128 * 1024)
            .spawn(move || crate::bootstrap::node::meet::accept_loop(&listener, &server, uid))
            .map_err(|e| Error::os("starting the descriptor store thread", e))?;
        let client = Client::connect_inherited(mine.into(), 0, n_pes, timeout)?;
        store.set(NAME_KEY, name.as_bytes())?;
        Ok(client)
    }
}

/// Other PEs: looks up the descriptor store's name and connects.
fn connect(store: &Client, timeout: Duration) -> Result<Client> {
    let (rank, n_pes) = (store.rank(), store.n_pes());
    {
        let name = (store.get(NAME_KEY, timeout))
            .map_err(|e| e.unpublished(0, "the name of its node-local descriptor store"))?;
        let shown = String::from_utf8_lossy(&name).into_owned();
        let addr = SocketAddr::from_abstract_name(&name)
            .map_err(|e| Error::os(format!("socket name @{shown}"), e))?;
        let stream = UnixStream::connect_addr(&addr).map_err(|e| {
            Error::Launch(LaunchError::NoDescriptorStore {
                socket: shown.to_string(),
                pe: rank,
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
}
