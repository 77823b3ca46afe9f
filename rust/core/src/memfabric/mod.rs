//! The runtime's side of `libmf_smem.so`, memfabric_hybrid's API over this library
//! (`cpp/smem/`, docs/memfabric.md): the config stores its processes start with
//! `smem_create_config_store`. A store is a [`Server::open`] store of clients that come and go,
//! served over plain TCP on the address the URL names, for as long as the process lives; the
//! families built on it (Big Memory, Share Memory) reach it as clients.
//!
//! Reached from `libmf_smem.so` through the facade (`cpp/src/memfabric.cpp`), so that a process
//! using SHMEM and memfabric's API has one runtime. The families: [`bm`], Big Memory pools;
//! [`shm`], Share Memory windows; [`trans`], the transfer engine. On the npu device Big Memory
//! and Share Memory place their device memory through [`npu`], which holds the process's one NPU.

pub mod bm;

pub mod npu;

pub mod shm;

pub mod trans;

use crate::bootstrap::store::Server;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::Mutex;

/// memfabric's code for an argument check that failed (`SM_INVALID_PARAM`).
pub const INVALID_PARAM: i32 = -2000;
/// memfabric's code for any other failure (`SM_ERROR`).
pub const ERROR: i32 = -1;

/// Clients a config store admits at once: every rank of a world of memfabric's largest size
/// (1024) for each of the three families that may share it, and room to spare.
const MAX_CLIENTS: usize = 4096;

/// Lowest port memfabric accepts in a store URL.
const MIN_PORT: u16 = 1025;

/// The stores this process serves, by the address they listen on: started here, or by a
/// family's init ([`keep_served`]); kept for the process's life, so that one family's uninit
/// does not end a store the other ranks, or the other families, use.
static SERVED: Mutex<Vec<(SocketAddr, Server)>> = Mutex::new(Vec::new());

/// Why a config store could not be started: the URL (memfabric's -2000) or the start (-1).
#[derive(Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The URL is not `tcp://<ipv4>:<port>` or `tcp://[<ipv6>]:<port>` with a port of
    /// 1025..65535 and an address other than the wildcard.
    Url(String),
    /// The address could not be served.
    Start(String),
}

impl StoreError {
    /// memfabric's return code for this error.
    pub fn code(&self) -> i32 {
        match self {
            StoreError::Url(_) => INVALID_PARAM,
            StoreError::Start(_) => ERROR,
        }
    }

    /// The message, without the call's name.
    pub fn message(&self) -> &str {
        match self {
            StoreError::Url(m) | StoreError::Start(m) => m,
        }
    }
}

/// Parses a config store URL as memfabric writes it: `tcp://<ipv4>:<port>` or
/// `tcp://[<ipv6>]:<port>`, port 1025..65535, not the wildcard address.
pub fn parse_url(url: &str) -> Result<SocketAddr, StoreError> {
    let bad = |why: &str| StoreError::Url(format!("invalid store URL '{url}': {why}"));
    let rest = url
        .strip_prefix("tcp://")
        .ok_or_else(|| bad("expected tcp://<ip>:<port> or tcp://[<ipv6>]:<port>"))?;
    let (ip, port) = if let Some(bracketed) = rest.strip_prefix('[') {
        let (host, after) = bracketed
            .split_once(']')
            .ok_or_else(|| bad("'[' without ']'"))?;
        let port = after
            .strip_prefix(':')
            .ok_or_else(|| bad("expected ':<port>' after ']'"))?;
        let ip: std::net::Ipv6Addr = host
            .parse()
            .map_err(|_| bad(&format!("'{host}' is not an IPv6 address")))?;
        (IpAddr::V6(ip), port)
    } else {
        let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad("no ':<port>'"))?;
        let ip: std::net::Ipv4Addr = host.parse().map_err(|_| {
            bad(&format!(
                "'{host}' is not an IPv4 address (write IPv6 as [<ipv6>])"
            ))
        })?;
        (IpAddr::V4(ip), port)
    };
    if ip.is_unspecified() {
        return Err(bad(&format!(
            "{ip} is not an address to serve on; name an interface"
        )));
    }
    let port: u32 = port
        .parse()
        .map_err(|_| bad(&format!("port '{port}' is not a number")))?;
    if !(u32::from(MIN_PORT)..=u32::from(u16::MAX)).contains(&port) {
        return Err(bad(&format!("port {port} is not in {MIN_PORT}..65535")));
    }
    Ok(SocketAddr::new(ip, port as u16))
}

/// Keeps `server`, a store this process serves at `addr` for one of the families, for the
/// process's life, so that a later [`config_store_open`] of the same address (another
/// family's init, `smem_create_config_store`) finds it rather than failing to bind.
pub(crate) fn keep_served(addr: SocketAddr, server: Server) {
    SERVED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((addr, server));
}

/// Starts serving a config store at `url` in this process (`smem_create_config_store`). A
/// store this process already serves at that address is kept: nothing to do.
pub fn config_store_open(url: &str) -> Result<(), StoreError> {
    let addr = parse_url(url)?;
    let mut served = SERVED.lock().unwrap_or_else(|e| e.into_inner());
    if served.iter().any(|(a, _)| *a == addr) {
        return Ok(());
    }
    let listener = TcpListener::bind(addr)
        .map_err(|e| StoreError::Start(format!("cannot serve a store on {url}: {e}")))?;
    let server = Server::open("", MAX_CLIENTS);
    server
        .serve_tcp(listener, None)
        .map_err(|e| StoreError::Start(format!("cannot serve a store on {url}: {e}")))?;
    served.push((addr, server));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_as_memfabric_writes_them() {
        assert_eq!(
            parse_url("tcp://127.0.0.1:5000").unwrap(),
            "127.0.0.1:5000".parse().unwrap()
        );
        assert_eq!(
            parse_url("tcp://[::1]:65535").unwrap(),
            "[::1]:65535".parse().unwrap()
        );
        for bad in [
            "",
            "127.0.0.1:5000",
            "tcp6://[::1]:5000",
            "tcp://0.0.0.0:5000",
            "tcp://[::]:5000",
            "tcp://127.0.0.1:1024",
            "tcp://127.0.0.1:65536",
            "tcp://127.0.0.1:0",
            "tcp://127.0.0.1",
            "tcp://localhost:5000",
            "tcp://[::1:5000",
            "tcp://::1:5000",
        ] {
            let e = parse_url(bad).unwrap_err();
            assert_eq!(e.code(), INVALID_PARAM, "{bad}");
            assert!(e.message().contains(bad), "{bad}: {}", e.message());
        }
    }

    #[test]
    fn a_store_is_served_once_per_address() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // The probe's port is free again; another process could take it, rarely.
        let url = format!("tcp://127.0.0.1:{port}");
        config_store_open(&url).unwrap();
        config_store_open(&url).unwrap();
        std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("tcp://127.0.0.1:{}", taken.local_addr().unwrap().port());
        assert_eq!(config_store_open(&url).unwrap_err().code(), ERROR);
    }
}
