//! Where a TCP store listens: `tcp://host[:port]` and `tcp6://[ip][:port]`, with the port
//! range of `SHMEM_INSTANCE_PORT_RANGE` when no port is given.
//!
//! Owns parsing those strings, name resolution, and binding a listener on the first free port
//! of a range. Must never connect anywhere.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, ToSocketAddrs};

/// Why a store address or a listening socket was refused (a port range is
/// `shmem_base::env::parse_port_range`'s).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AddrError {
    /// No `tcp://` or `tcp6://` scheme.
    #[error("'{0}' is not a store address: expected tcp://host[:port] or tcp6://[ip][:port]")]
    NoScheme(String),
    /// The address breaks its syntax (`why` says how).
    #[error("'{text}': {why}")]
    Syntax {
        /// The address as written.
        text: String,
        /// What is wrong.
        why: &'static str,
    },
    /// The address names no host.
    #[error("'{0}' names no host")]
    NoHost(String),
    /// The port part is not a port.
    #[error("'{text}': '{port}' is not a port (0 to 65535)")]
    BadPort {
        /// The address as written.
        text: String,
        /// The port part.
        port: String,
    },
    /// A `tcp6://` address names an IPv4 address.
    #[error("'{text}': {host} is not an IPv6 address")]
    NotV6 {
        /// The address as written.
        text: String,
        /// Its host.
        host: String,
    },
    /// The host name does not resolve.
    #[error("'{text}': cannot resolve '{host}': {source}")]
    Unresolvable {
        /// The address as written.
        text: String,
        /// Its host.
        host: String,
        /// The resolver's error.
        source: io::Error,
    },
    /// The host name resolves, but to no address of the family asked for.
    #[error("'{text}': '{host}' has no address of the kind asked for")]
    NoAddress {
        /// The address as written.
        text: String,
        /// Its host.
        host: String,
    },
    /// Binding a port failed for another reason than its being in use.
    #[error("cannot listen at {addr} (port {port}): {source}", addr = SocketAddr::new(*.ip, *.port))]
    Listen {
        /// Address.
        ip: IpAddr,
        /// Port.
        port: u16,
        /// The system's error.
        source: io::Error,
    },
    /// The one port asked for is in use.
    #[error(
        "cannot listen at {addr}: port {port} is in use{}; pick another port",
        .source.as_ref().map_or_else(String::new, |e| format!(": {e}")),
        addr = SocketAddr::new(*.ip, *.port)
    )]
    PortInUse {
        /// Address.
        ip: IpAddr,
        /// Port.
        port: u16,
        /// The system's error.
        source: Option<io::Error>,
    },
    /// Every port of the range is in use.
    #[error(
        "cannot listen on {ip}: every port of {lo}-{hi} (SHMEM_INSTANCE_PORT_RANGE) is in use"
    )]
    RangeInUse {
        /// Address.
        ip: IpAddr,
        /// First port.
        lo: u16,
        /// Last port.
        hi: u16,
    },
}

/// Port of a store whose address names none, and no range is set.
pub const DEFAULT_PORT: u16 = 8666;

/// Address family asked for by the scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `tcp://`: IPv4 preferred when a name resolves to both.
    V4,
    /// `tcp6://`: IPv6 only.
    V6,
}

/// A parsed store address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreAddr {
    /// The address as the user wrote it, for messages.
    pub text: String,
    /// The host as written (a name or an IP address).
    pub host: String,
    /// Resolved IP address.
    pub ip: IpAddr,
    /// First and last port to try (equal when one port was given; 0..0 lets the system pick).
    pub ports: (u16, u16),
}

impl std::fmt::Display for StoreAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl StoreAddr {
    /// The address of a store already bound at `addr` (a unique id's), written as PEs are told
    /// it ([`url`]).
    pub fn from_socket(addr: SocketAddr) -> StoreAddr {
        StoreAddr {
            text: url(addr.ip(), addr.port()),
            host: addr.ip().to_string(),
            ip: addr.ip(),
            ports: (addr.port(), addr.port()),
        }
    }

    /// Parses a store address. Without a port, the range (if given) or [`DEFAULT_PORT`].
    pub fn parse(s: &str, range: Option<(u16, u16)>) -> Result<StoreAddr, AddrError> {
        let syntax = |why| AddrError::Syntax {
            text: s.to_string(),
            why,
        };
        let (family, rest) = if let Some(rest) = s.strip_prefix("tcp6://") {
            (Family::V6, rest)
        } else if let Some(rest) = s.strip_prefix("tcp://") {
            (Family::V4, rest)
        } else {
            return Err(AddrError::NoScheme(s.to_string()));
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = if let Some(bracketed) = rest.strip_prefix('[') {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or_else(|| syntax("'[' without ']'"))?;
            match after {
                "" => (host, None),
                p => (
                    host,
                    Some(
                        p.strip_prefix(':')
                            .ok_or_else(|| syntax("expected ':port' after ']'"))?,
                    ),
                ),
            }
        } else if family == Family::V6 && rest.matches(':').count() > 1 {
            return Err(syntax("write an IPv6 address in brackets, [::1]:8666"));
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (rest, None),
            }
        };
        if host.is_empty() {
            return Err(AddrError::NoHost(s.to_string()));
        }
        let ports = match port {
            Some(p) => {
                let p: u16 = p.parse().map_err(|_| AddrError::BadPort {
                    text: s.to_string(),
                    port: p.to_string(),
                })?;
                (p, p)
            }
            None => range.unwrap_or((DEFAULT_PORT, DEFAULT_PORT)),
        };
        let ip = resolve(s, host, family)?;
        Ok(StoreAddr {
            text: s.to_string(),
            host: host.to_string(),
            ip,
            ports,
        })
    }

    /// The address PEs of this node dial: a wildcard address becomes the loopback.
    pub fn dial_ip(&self) -> IpAddr {
        match self.ip {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        }
    }

    /// The name the store's certificate must carry: the host name as written, or the IP
    /// address dialled.
    pub fn server_name(&self) -> rustls_pki_types::ServerName<'static> {
        if self.host.parse::<IpAddr>().is_err() {
            if let Ok(name) = rustls_pki_types::ServerName::try_from(self.host.clone()) {
                return name;
            }
        }
        rustls_pki_types::ServerName::IpAddress(self.dial_ip().into())
    }

    /// Every port to try, in order.
    pub fn port_list(&self) -> impl Iterator<Item = u16> {
        self.ports.0..=self.ports.1
    }

    /// Binds the first free port of the range. A single port in use is an error naming it; a
    /// range with every port in use names the range.
    pub fn bind(&self) -> Result<TcpListener, AddrError> {
        let mut last = None;
        for port in self.port_list() {
            match TcpListener::bind(SocketAddr::new(self.ip, port)) {
                Ok(l) => return Ok(l),
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => last = Some(e),
                Err(source) => {
                    return Err(AddrError::Listen {
                        ip: self.ip,
                        port,
                        source,
                    })
                }
            }
        }
        let (lo, hi) = self.ports;
        Err(if lo == hi {
            AddrError::PortInUse {
                ip: self.ip,
                port: lo,
                source: last,
            }
        } else {
            AddrError::RangeInUse {
                ip: self.ip,
                lo,
                hi,
            }
        })
    }
}

/// A store's address as PEs are told it (`tcp://1.2.3.4:5`, `tcp6://[::1]:5`).
pub fn url(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(ip) => format!("tcp://{ip}:{port}"),
        IpAddr::V6(ip) => format!("tcp6://[{ip}]:{port}"),
    }
}

/// `host` (of the address `text`) as an IP address of `family`.
fn resolve(text: &str, host: &str, family: Family) -> Result<IpAddr, AddrError> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return match (family, ip) {
            (Family::V6, IpAddr::V4(_)) => Err(AddrError::NotV6 {
                text: text.to_string(),
                host: host.to_string(),
            }),
            (_, ip) => Ok(ip),
        };
    }
    let all: Vec<IpAddr> = (host, 0)
        .to_socket_addrs()
        .map_err(|source| AddrError::Unresolvable {
            text: text.to_string(),
            host: host.to_string(),
            source,
        })?
        .map(|a| a.ip())
        .collect();
    let pick = match family {
        Family::V4 => all.iter().find(|ip| ip.is_ipv4()).or(all.first()),
        Family::V6 => all.iter().find(|ip| ip.is_ipv6()),
    };
    pick.copied().ok_or_else(|| AddrError::NoAddress {
        text: text.to_string(),
        host: host.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        let a = StoreAddr::parse("tcp://127.0.0.1:9000", None).unwrap();
        assert_eq!(
            (a.ip, a.ports),
            ("127.0.0.1".parse().unwrap(), (9000, 9000))
        );
        let a = StoreAddr::parse("tcp://127.0.0.1", None).unwrap();
        assert_eq!(a.ports, (DEFAULT_PORT, DEFAULT_PORT));
        let a = StoreAddr::parse("tcp://10.0.0.1", Some((7000, 7010))).unwrap();
        assert_eq!(a.ports, (7000, 7010));
        let a = StoreAddr::parse("tcp6://[::1]:0", None).unwrap();
        assert_eq!((a.ip, a.ports), ("::1".parse().unwrap(), (0, 0)));
        let a = StoreAddr::parse("tcp6://[::]", None).unwrap();
        assert_eq!(a.dial_ip(), "::1".parse::<IpAddr>().unwrap());
        assert_eq!(url(a.dial_ip(), 5), "tcp6://[::1]:5");
        let a = StoreAddr::parse("tcp://localhost:1", None).unwrap();
        assert!(a.ip.is_loopback());
        for bad in [
            "udp://1.2.3.4:5",
            "tcp://:5",
            "tcp://1.2.3.4:x",
            "tcp://1.2.3.4:70000",
            "tcp6://::1:5",
            "tcp6://127.0.0.1:5",
            "tcp6://[::1",
        ] {
            assert!(StoreAddr::parse(bad, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_port_in_use_is_named() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let a = StoreAddr::parse(&format!("tcp://127.0.0.1:{port}"), None).unwrap();
        let err = a.bind().unwrap_err().to_string();
        assert!(err.contains(&format!("port {port} is in use")), "{err}");
        // A range moves on to the next free port.
        let a = StoreAddr {
            text: "r".into(),
            host: "127.0.0.1".into(),
            ip: "127.0.0.1".parse().unwrap(),
            ports: (port, port.saturating_add(20)),
        };
        let l = a.bind().unwrap();
        assert_ne!(l.local_addr().unwrap().port(), port);
    }
}
