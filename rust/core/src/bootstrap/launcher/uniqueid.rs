//! The unique id of CANN's `shmem_get_uniqueid`: an opaque block one process creates and the
//! user hands to every PE (through a file, torch.distributed, MPI), which then meet through it.
//!
//! Owns the bytes inside CANN's `internal[124]` (the layout below), the choice of the address
//! written there (`SHMEM_UID_SESSION_ID`, `SHMEM_UID_SOCK_IFNAME`, else the first non-loopback
//! interface that is up, else loopback), the store's listening socket bound right then (port
//! from the session id, else the first free one of `SHMEM_INSTANCE_PORT_RANGE`, else any), its
//! self-signed certificate, whose fingerprint goes into the id, and the random secret. The
//! process that made an id keeps its listener, certificate and key in a registry keyed by the
//! secret until `shmem_finalize` or exit: that process, and only it, can be PE 0 of the id's
//! job. Must never connect anywhere, and never put the key or anything secret but the secret
//! into the id.
//!
//! Layout of the 124 bytes (integers little-endian unless said):
//!
//! | bytes   | field |
//! | ------- | ----- |
//! | 0..4    | magic `SHU1` |
//! | 4       | address family: 4 or 6 |
//! | 5       | reserved, 0 |
//! | 6..8    | store port, big-endian: where the maker's socket listens |
//! | 8..24   | store IP address (IPv4 in the first 4 bytes) |
//! | 24..40  | secret: 128 random bits; admits the job's PEs (sent in HELLO, inside TLS) |
//! | 40..72  | SHA-256 fingerprint of the store's self-signed certificate (DER) |
//! | 72..124 | zeros |

use std::ffi::CStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Mutex, MutexGuard};

use subtle::ConstantTimeEq;

use crate::bootstrap::store::addr::StoreAddr;
use crate::bootstrap::store::tls::{self, PinnedServer, Validity};
use crate::env;
use crate::error::{Error, LaunchError, Result};

/// Bytes of CANN's `internal[]`.
pub const INNER_LEN: usize = 124;
const MAGIC: &[u8; 4] = b"SHU1";

/// Why the bytes of `internal[]` are not a unique id this library made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BadUniqueId {
    /// Not the length of `internal[]`.
    #[error("{0} bytes, not {INNER_LEN}")]
    Length(usize),
    /// Another library's, or garbage.
    #[error("not made by shmem_get_uniqueid of this library (bad magic)")]
    Magic,
    /// Made by an older build.
    #[error("it names no store port (made by an older build of this library)")]
    NoPort,
    /// An address family this library never writes.
    #[error("unknown address family {0}")]
    Family(u8),
    /// Never filled.
    #[error("its secret is empty (an id never filled by shmem_get_uniqueid)")]
    NoSecret,
    /// Made by an older build.
    #[error(
        "it carries no store certificate fingerprint (made by an older build of this library)"
    )]
    NoFingerprint,
}

pub use crate::bootstrap::error::NoAddress;

/// A decoded unique id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueId {
    /// Where the job's store listens.
    pub addr: SocketAddr,
    /// Random secret shared by the job's PEs.
    pub secret: [u8; 16],
    /// SHA-256 fingerprint of the store's certificate.
    pub fingerprint: [u8; 32],
}

impl UniqueId {
    /// The 124 bytes that go into CANN's `internal[]`.
    pub fn encode(&self) -> [u8; INNER_LEN] {
        let mut b = [0u8; INNER_LEN];
        b[0..4].copy_from_slice(MAGIC);
        b[6..8].copy_from_slice(&self.addr.port().to_be_bytes());
        match self.addr.ip() {
            IpAddr::V4(ip) => {
                b[4] = 4;
                b[8..12].copy_from_slice(&ip.octets());
            }
            IpAddr::V6(ip) => {
                b[4] = 6;
                b[8..24].copy_from_slice(&ip.octets());
            }
        }
        b[24..40].copy_from_slice(&self.secret);
        b[40..72].copy_from_slice(&self.fingerprint);
        b
    }

    /// Reads the bytes of `internal[]`; says what is wrong when they are not a unique id made
    /// by this library.
    pub fn decode(b: &[u8]) -> std::result::Result<UniqueId, BadUniqueId> {
        if b.len() != INNER_LEN {
            return Err(BadUniqueId::Length(b.len()));
        }
        if &b[0..4] != MAGIC {
            return Err(BadUniqueId::Magic);
        }
        let port = u16::from_be_bytes([b[6], b[7]]);
        if port == 0 {
            return Err(BadUniqueId::NoPort);
        }
        let ip = match b[4] {
            4 => IpAddr::V4(Ipv4Addr::new(b[8], b[9], b[10], b[11])),
            6 => {
                let mut o = [0u8; 16];
                o.copy_from_slice(&b[8..24]);
                IpAddr::V6(Ipv6Addr::from(o))
            }
            f => return Err(BadUniqueId::Family(f)),
        };
        let mut secret = [0u8; 16];
        secret.copy_from_slice(&b[24..40]);
        if secret == [0u8; 16] {
            return Err(BadUniqueId::NoSecret);
        }
        let mut fingerprint = [0u8; 32];
        fingerprint.copy_from_slice(&b[40..72]);
        if fingerprint == [0u8; 32] {
            return Err(BadUniqueId::NoFingerprint);
        }
        Ok(UniqueId {
            addr: SocketAddr::new(ip, port),
            secret,
            fingerprint,
        })
    }

    /// A name for the id in messages and in the check that every PE was given the same one:
    /// the start of its fingerprint, never the secret.
    pub fn tag(&self) -> String {
        crate::bootstrap::bits::hex(&self.fingerprint[..6])
    }

    /// The store's address (`tcp://ip:port`, `tcp6://[ip]:port` when printed).
    pub fn store_addr(&self) -> StoreAddr {
        StoreAddr::from_socket(self.addr)
    }
}

/// An id this process made, kept for serving its store.
struct Made {
    secret: [u8; 16],
    fingerprint: [u8; 32],
    server: PinnedServer,
}

static MADE: Mutex<Vec<Made>> = Mutex::new(Vec::new());

fn made() -> MutexGuard<'static, Vec<Made>> {
    MADE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes a new unique id: binds the store's listening socket at the address from the
/// environment or an interface (on `port_range`'s first free port when the address names no
/// port, else on any free port), makes its self-signed certificate and a fresh random secret,
/// and keeps the socket, certificate and key in this process's registry.
pub fn create(port_range: Option<(u16, u16)>) -> Result<UniqueId> {
    let session = env::text(env::UID_SESSION_ID);
    let (ip, ports) = match &session {
        Some(text) => {
            let at = parse_session(text).map_err(|source| Error::BadAddress {
                name: env::UID_SESSION_ID,
                value: text.clone(),
                source: source.into(),
            })?;
            (at.ip(), (at.port(), at.port()))
        }
        None => (
            pick_address(env::text(env::UID_SOCK_IFNAME).as_deref())?,
            port_range.unwrap_or((0, 0)),
        ),
    };
    let wanted = StoreAddr {
        text: ip.to_string(),
        host: ip.to_string(),
        ip,
        ports,
    };
    let listener = wanted.bind().map_err(|source| match &session {
        Some(text) => Error::BadAddress {
            name: env::UID_SESSION_ID,
            value: text.clone(),
            source: source.into(),
        },
        None => Error::Launch(LaunchError::UniqueIdStore { source }),
    })?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::os("the unique id's listening socket", e))?
        .port();
    let (cert, key) =
        tls::pinned_certificate(&[ip], Validity::for_a_job()).map_err(|source| Error::Tls {
            what: "the unique id's store certificate".into(),
            source,
        })?;
    let fingerprint = tls::fingerprint(&cert);
    let secret = crate::bootstrap::bits::random_bits("the unique id's secret")?;
    made().push(Made {
        secret,
        fingerprint,
        server: PinnedServer {
            listener,
            cert,
            key,
        },
    });
    Ok(UniqueId {
        addr: SocketAddr::new(ip, port),
        secret,
        fingerprint,
    })
}

/// The listener, certificate and key of `id`, if this process made it: a new handle on them
/// (the registry keeps its own until [`release_all`]). `None`: another process made `id`.
pub fn served_here(id: &UniqueId) -> Option<std::io::Result<PinnedServer>> {
    made()
        .iter()
        .find(|m| bool::from(m.secret.ct_eq(&id.secret)) && m.fingerprint == id.fingerprint)
        .map(|m| m.server.try_clone())
}

/// Closes the listeners of every id this process made and drops their keys (`shmem_finalize`).
pub fn release_all() {
    made().clear();
}

/// `IP:PORT` or `[IPv6]:PORT`.
fn parse_session(s: &str) -> std::result::Result<SocketAddr, NoAddress> {
    s.parse::<SocketAddr>().map_err(|_| NoAddress::Session)
}

/// Which family an interface name asks for (`NAME:inet4`, `NAME:inet6`, or any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Any,
    V4,
    V6,
}

/// Splits `SHMEM_UID_SOCK_IFNAME` into the interface name and the family asked for.
fn parse_ifname(s: &str) -> std::result::Result<(&str, Want), NoAddress> {
    let (name, want) = match s.rsplit_once(':') {
        Some((name, "inet4")) => (name, Want::V4),
        Some((name, "inet6")) => (name, Want::V6),
        Some((_, other)) => return Err(NoAddress::Family(other.to_string())),
        None => (s, Want::Any),
    };
    if name.is_empty() {
        return Err(NoAddress::NoName);
    }
    Ok((name, want))
}

/// One address of one interface.
#[derive(Debug, Clone)]
struct IfAddr {
    name: String,
    ip: IpAddr,
    up: bool,
    loopback: bool,
}

/// The address to put in a unique id: the named interface's, else the first non-loopback
/// interface that is up (IPv4 first), else loopback.
fn pick_address(ifname: Option<&str>) -> Result<IpAddr> {
    let all = interfaces()?;
    choose(&all, ifname).map_err(|source| match ifname {
        Some(v) => Error::BadAddress {
            name: env::UID_SOCK_IFNAME,
            value: v.into(),
            source: source.into(),
        },
        None => Error::Launch(LaunchError::UniqueId {
            call: "shmem_get_uniqueid",
            source,
        }),
    })
}

fn choose(all: &[IfAddr], ifname: Option<&str>) -> std::result::Result<IpAddr, NoAddress> {
    let family_ok = |a: &IfAddr, want: Want| match want {
        Want::Any => true,
        Want::V4 => a.ip.is_ipv4(),
        Want::V6 => a.ip.is_ipv6(),
    };
    // Link-local IPv6 addresses need a scope to be reached: never pick one by ourselves.
    let usable = |a: &IfAddr| match a.ip {
        IpAddr::V6(ip) => (ip.segments()[0] & 0xffc0) != 0xfe80,
        IpAddr::V4(_) => true,
    };
    if let Some(spec) = ifname {
        let (name, want) = parse_ifname(spec)?;
        let mut found: Vec<&IfAddr> = all
            .iter()
            .filter(|a| a.name == name && family_ok(a, want))
            .collect();
        found.sort_by_key(|a| (!a.ip.is_ipv4(), !usable(a)));
        return match found.first() {
            Some(a) if a.up => Ok(a.ip),
            Some(_) => Err(NoAddress::Down(name.to_string())),
            None => Err(NoAddress::NoSuchInterface {
                name: name.to_string(),
                family: match want {
                    Want::Any => "IP",
                    Want::V4 => "IPv4",
                    Want::V6 => "IPv6",
                },
                all: names(all),
            }),
        };
    }
    let pick = |v4: bool, loopback: bool| {
        all.iter()
            .find(|a| a.up && a.loopback == loopback && a.ip.is_ipv4() == v4 && usable(a))
            .map(|a| a.ip)
    };
    pick(true, false)
        .or_else(|| pick(false, false))
        .or_else(|| pick(true, true))
        .or_else(|| pick(false, true))
        .ok_or_else(|| NoAddress::NoneUp(names(all)))
}

fn names(all: &[IfAddr]) -> String {
    let mut v: Vec<&str> = all.iter().map(|a| a.name.as_str()).collect();
    v.dedup();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// Every IPv4 and IPv6 address of every interface, in the system's order.
fn interfaces() -> Result<Vec<IfAddr>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head we own and free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(Error::os(
            "listing network interfaces (getifaddrs)",
            std::io::Error::last_os_error(),
        ));
    }
    let mut out = Vec::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, not yet freed.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { CStr::from_ptr(ifa.ifa_name) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: ifa_addr is non-null and points at a sockaddr whose family says its type.
        let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
        let ip = match family {
            libc::AF_INET => {
                // SAFETY: the family is AF_INET, so the address is a sockaddr_in.
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)))
            }
            libc::AF_INET6 => {
                // SAFETY: the family is AF_INET6, so the address is a sockaddr_in6.
                let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr))
            }
            _ => continue,
        };
        let flags = ifa.ifa_flags;
        out.push(IfAddr {
            name,
            ip,
            up: flags & libc::IFF_UP as u32 != 0 && flags & libc::IFF_RUNNING as u32 != 0,
            loopback: flags & libc::IFF_LOOPBACK as u32 != 0,
        });
    }
    // SAFETY: `head` came from getifaddrs and is freed once; nothing borrowed from it remains.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ifa(name: &str, ip: &str, up: bool, loopback: bool) -> IfAddr {
        IfAddr {
            name: name.into(),
            ip: ip.parse().unwrap(),
            up,
            loopback,
        }
    }

    #[test]
    fn round_trips() {
        for addr in ["10.1.2.3:8666", "[fd00::5]:1", "127.0.0.1:65535"] {
            let id = UniqueId {
                addr: addr.parse().unwrap(),
                secret: [7; 16],
                fingerprint: [9; 32],
            };
            let bytes = id.encode();
            assert_eq!(&bytes[72..], &[0u8; 52][..]);
            assert_eq!(UniqueId::decode(&bytes).unwrap(), id);
        }
    }

    #[test]
    fn refuses_foreign_bytes() {
        assert!(UniqueId::decode(&[0u8; INNER_LEN])
            .unwrap_err()
            .to_string()
            .contains("bad magic"));
        let mut b = UniqueId {
            addr: "1.2.3.4:5".parse().unwrap(),
            secret: [1; 16],
            fingerprint: [2; 32],
        }
        .encode();
        b[4] = 9;
        assert!(UniqueId::decode(&b)
            .unwrap_err()
            .to_string()
            .contains("family 9"));
        b[4] = 4;
        b[24..40].fill(0);
        assert!(UniqueId::decode(&b)
            .unwrap_err()
            .to_string()
            .contains("secret is empty"));
        assert!(UniqueId::decode(&b[..10])
            .unwrap_err()
            .to_string()
            .contains("10 bytes"));
        let mut b = UniqueId {
            addr: "1.2.3.4:5".parse().unwrap(),
            secret: [1; 16],
            fingerprint: [0; 32],
        }
        .encode();
        assert!(UniqueId::decode(&b)
            .unwrap_err()
            .to_string()
            .contains("no store certificate"));
        b[40] = 1;
        b[6..8].fill(0);
        assert!(UniqueId::decode(&b)
            .unwrap_err()
            .to_string()
            .contains("no store port"));
    }

    #[test]
    fn fresh_ids_listen_and_pin_their_certificate() {
        let a = create(None).unwrap();
        let b = create(None).unwrap();
        assert_ne!(a.secret, b.secret);
        assert_ne!(a.fingerprint, [0u8; 32]);
        assert_ne!(a.fingerprint, b.fingerprint);
        assert_ne!(a.addr.port(), 0);
        assert_eq!(UniqueId::decode(&a.encode()).unwrap(), a);
        // This process made both: it holds the listener at the id's port and the certificate
        // whose fingerprint the id carries.
        for id in [&a, &b] {
            let server = served_here(id).unwrap().unwrap();
            assert_eq!(server.listener.local_addr().unwrap(), id.addr);
            assert_eq!(tls::fingerprint(&server.cert), id.fingerprint);
            let flags = rustix::io::fcntl_getfd(&server.listener).unwrap();
            assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
        }
        // An id made elsewhere (another secret) is not served here.
        let mut other = a.clone();
        other.secret[0] ^= 1;
        assert!(served_here(&other).is_none());
        assert_eq!(a.tag().len(), 12);
        assert!(a.store_addr().to_string().starts_with("tcp"));
    }

    #[test]
    fn a_range_gives_the_first_free_port() {
        // A port the system just found free starts the range.
        let lo = std::net::TcpListener::bind("0.0.0.0:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
            .min(65535 - 20);
        let id = create(Some((lo, lo + 20))).unwrap();
        assert!((lo..=lo + 20).contains(&id.addr.port()), "{}", id.addr);
        // The range's ports are taken one by one.
        let next = create(Some((id.addr.port(), id.addr.port()))).unwrap_err();
        assert!(next.to_string().contains("in use"), "{next}");
    }

    #[test]
    fn interface_choice() {
        let all = [
            ifa("lo", "127.0.0.1", true, true),
            ifa("lo", "::1", true, true),
            ifa("eth0", "fe80::1", true, false),
            ifa("eth0", "10.0.0.2", true, false),
            ifa("eth1", "192.168.1.9", false, false),
            ifa("eth2", "fd00::2", true, false),
        ];
        assert_eq!(
            choose(&all, None).unwrap(),
            "10.0.0.2".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            choose(&all, Some("eth2:inet6")).unwrap(),
            "fd00::2".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            choose(&all, Some("lo")).unwrap(),
            "127.0.0.1".parse::<IpAddr>().unwrap()
        );
        assert!(choose(&all, Some("eth1"))
            .unwrap_err()
            .to_string()
            .contains("down"));
        let e = choose(&all, Some("wlan0")).unwrap_err().to_string();
        assert!(
            e.contains("no interface wlan0") && e.contains("eth0"),
            "{e}"
        );
        assert!(choose(&all, Some("eth0:ipx"))
            .unwrap_err()
            .to_string()
            .contains("ipx"));
        // Only loopback up: loopback it is.
        let lo_only = [
            ifa("lo", "127.0.0.1", true, true),
            ifa("eth1", "192.168.1.9", false, false),
        ];
        assert_eq!(
            choose(&lo_only, None).unwrap(),
            "127.0.0.1".parse::<IpAddr>().unwrap()
        );
        assert!(choose(&[], None)
            .unwrap_err()
            .to_string()
            .contains("no network interface"));
    }

    #[test]
    fn this_machine_has_an_address() {
        let ip = pick_address(None).unwrap();
        assert!(!ip.is_unspecified());
    }

    #[test]
    fn session_ids() {
        assert_eq!(
            parse_session("127.0.0.1:1234").unwrap(),
            "127.0.0.1:1234".parse().unwrap()
        );
        assert!(parse_session("[::1]:886").is_ok());
        assert!(parse_session("host:1").is_err());
    }
}
