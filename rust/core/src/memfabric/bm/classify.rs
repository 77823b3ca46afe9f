//! How a Big Memory copy's two addresses are read: memfabric's copy types resolved to a local
//! side or a place in the pool (a rank's segment and an offset in it), and the hcomUrl of the
//! configuration. Pure logic, no state.

use super::BmError;
use std::net::IpAddr;

/// memfabric's copy types (`smem_bm_copy_type`).
pub const COPY_L2G: u32 = 0;
pub const COPY_G2L: u32 = 1;
pub const COPY_G2H: u32 = 2;
pub const COPY_H2G: u32 = 3;
pub const COPY_L2GH: u32 = 4;
pub const COPY_GH2L: u32 = 5;
pub const COPY_GH2H: u32 = 6;
pub const COPY_H2GH: u32 = 7;
pub const COPY_G2G: u32 = 8;
pub const COPY_AUTO: u32 = 9;
/// The first value that is not a copy type.
pub const COPY_BUTT: u32 = 10;

/// memfabric's names of the copy types, indexed by type.
static COPY_TYPE_NAMES: [&str; COPY_BUTT as usize] = [
    "L2G", "G2L", "G2H", "H2G", "L2GH", "GH2L", "GH2H", "H2GH", "G2G", "AUTO",
];

/// memfabric's names of the copy types, for messages.
pub fn copy_type_name(t: u32) -> &'static str {
    COPY_TYPE_NAMES.get(t as usize).copied().unwrap_or("?")
}

/// A pool's address range: `world` segments of `max` bytes from `base`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pool {
    pub base: usize,
    pub max: u64,
    pub world: u32,
}

impl Pool {
    /// One past the pool's last byte.
    pub fn end(&self) -> usize {
        self.base + (self.max as usize) * self.world as usize
    }

    /// Whether `addr` lies in the pool.
    pub fn contains(&self, addr: usize) -> bool {
        addr >= self.base && addr < self.end()
    }

    /// The rank whose segment holds `addr`, `None` outside the pool: the offset divided by the
    /// per-rank stride (`max`), whatever each rank backs of it.
    pub fn rank_of(&self, addr: usize) -> Option<u32> {
        self.contains(addr)
            .then(|| ((addr - self.base) as u64 / self.max) as u32)
    }
}

/// One side of a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Memory of this process outside the pool (memfabric's L or H: both plain memory here).
    Local(usize),
    /// `offset` in the segment of `rank`.
    Pool { rank: u32, offset: u64 },
}

/// How a copy type reads one side: forced local, or by range (must lie in the pool).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Read {
    Local,
    Pool,
    Auto,
}

fn reads(t: u32) -> (Read, Read) {
    match t {
        COPY_L2G | COPY_H2G | COPY_H2GH => (Read::Local, Read::Pool),
        COPY_G2L | COPY_G2H | COPY_GH2H => (Read::Pool, Read::Local),
        // L2GH and GH2L force nothing in memfabric: they read both sides by range, as G2G.
        COPY_L2GH | COPY_GH2L | COPY_G2G => (Read::Pool, Read::Pool),
        t => {
            debug_assert_eq!(t, COPY_AUTO);
            (Read::Auto, Read::Auto)
        }
    }
}

/// Which of an object's pools a place lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The host (DRAM) pool.
    Host,
    /// The device (HBM) pool.
    Device,
}

/// One side of a copy on an object with a device pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Memory of this process outside the pools; `device`: local device memory (memfabric's
    /// L: the type forces it, or AUTO finds it in [`DEVICE_VA`]), else local host memory (H).
    Local { addr: usize, device: bool },
    /// `offset` in the segment of `rank` of the pool `kind`.
    Pool { kind: Kind, rank: u32, offset: u64 },
}

/// The NPU's device address window: an AUTO copy's address outside the pools that lies here is
/// local device memory, any other local host memory.
pub const DEVICE_VA: std::ops::Range<usize> = 0x1000_0000_0000..0x1800_0000_0000;

/// How a message names the pools: `the pool [b, e)`, or each with its kind.
struct Ranges<'a>(&'a [(Kind, Pool)]);

impl std::fmt::Display for Ranges<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            [(_, p)] => write!(f, "the pool [{:#x}, {:#x})", p.base, p.end()),
            pools => {
                f.write_str("the pools")?;
                for (i, (kind, p)) in pools.iter().enumerate() {
                    let sep = if i == 0 { "" } else { " and" };
                    let kind = match kind {
                        Kind::Host => "host",
                        Kind::Device => "device",
                    };
                    write!(f, "{sep} [{:#x}, {:#x}) ({kind})", p.base, p.end())?;
                }
                Ok(())
            }
        }
    }
}

/// Resolves a copy of `len` bytes from `src` to `dest` with copy type `t`, as memfabric does:
/// a side read by range that lies outside the pool, or a pool side that does not fit in one
/// rank's segment, is refused with -2000 (AUTO: -2, the lower layer's code); local to local
/// is refused. A side the type forces local that lies in the pool is taken as what it is (a
/// place in the pool), so a copy never touches another rank's reserved range unchecked.
/// `what` names the argument in messages (`params`, `params->...[3]`).
pub fn resolve(
    pool: &Pool,
    t: u32,
    src: usize,
    dest: usize,
    len: u64,
    what: impl std::fmt::Display + Copy,
) -> Result<(Side, Side), BmError> {
    if let Some(sides) = resolve_valid(pool, t, src, dest, len) {
        return Ok(sides);
    }
    let side = |p: Place| match p {
        Place::Local { addr, .. } => Side::Local(addr),
        Place::Pool { rank, offset, .. } => Side::Pool { rank, offset },
    };
    let (s, d) = resolve_in(&[(Kind::Host, *pool)], t, src, dest, len, what)?;
    Ok((side(s), side(d)))
}

/// [`resolve`] of a copy it accepts, as [`resolve_in`] reads it with this one pool (every
/// copy of a host pool): `None` where [`resolve_in`] refuses it, to name why. Computed
/// without a message's makings, for the copies' path.
#[inline]
fn resolve_valid(pool: &Pool, t: u32, src: usize, dest: usize, len: u64) -> Option<(Side, Side)> {
    if t >= COPY_BUTT || pool.max == 0 {
        return None;
    }
    let (rs, rd) = reads(t);
    let side = |addr: usize, read: Read| -> Option<Side> {
        if !pool.contains(addr) {
            return (read != Read::Pool).then_some(Side::Local(addr));
        }
        let rel = (addr - pool.base) as u64;
        let rank = rel / pool.max;
        let offset = rel - rank * pool.max;
        (offset.checked_add(len)? <= pool.max).then_some(Side::Pool {
            rank: rank as u32,
            offset,
        })
    };
    match (side(src, rs)?, side(dest, rd)?) {
        (Side::Local(_), Side::Local(_)) => None,
        sides => Some(sides),
    }
}

/// [`resolve`] over an object's pools (a host pool, a device pool, or both): each side read by
/// range lies in one of them; a local side is local device memory where the type forces it
/// (L2G's source, G2L's destination) or, with AUTO, where it lies in [`DEVICE_VA`].
pub fn resolve_in(
    pools: &[(Kind, Pool)],
    t: u32,
    src: usize,
    dest: usize,
    len: u64,
    what: impl std::fmt::Display + Copy,
) -> Result<(Place, Place), BmError> {
    if t >= COPY_BUTT {
        return Err(BmError::invalid(format!(
            "invalid argument t={t}: not below {COPY_BUTT}"
        )));
    }
    // Written only in messages.
    let name = || copy_type_name(t);
    let (rs, rd) = reads(t);
    let side =
        |addr: usize, read: Read, arg: &str, forced_device: bool| -> Result<Place, BmError> {
            let Some(&(kind, pool)) = pools.iter().find(|(_, p)| p.contains(addr)) else {
                if read == Read::Pool {
                    return Err(BmError::invalid(format!(
                        "invalid argument {what}{arg}={addr:#x}: copy type {} reads it as a \
                     place in {}, and it lies outside",
                        name(),
                        Ranges(pools)
                    )));
                }
                let device = forced_device || (read == Read::Auto && DEVICE_VA.contains(&addr));
                return Ok(Place::Local { addr, device });
            };
            let rank = pool.rank_of(addr).expect("inside the pool");
            let offset = (addr - pool.base) as u64 - u64::from(rank) * pool.max;
            if offset.checked_add(len).is_none_or(|e| e > pool.max) {
                let code = if read == Read::Auto {
                    super::LOWER_INVALID_PARAM
                } else {
                    super::INVALID_PARAM
                };
                return Err(BmError::new(
                    code,
                    format!(
                        "invalid argument {what}{arg}={addr:#x} with dataSize={len}: [{addr:#x}, \
                     +{len}) does not fit in rank {rank}'s segment of {} bytes (from offset \
                     {offset})",
                        pool.max
                    ),
                ));
            }
            Ok(Place::Pool { kind, rank, offset })
        };
    let s = side(src, rs, "src", t == COPY_L2G)?;
    let d = side(dest, rd, "dest", t == COPY_G2L)?;
    if let (Place::Local { .. }, Place::Local { .. }) = (s, d) {
        return Err(BmError::invalid(format!(
            "invalid argument {what}: src={src:#x} and dest={dest:#x} both lie outside {} \
             (copy type {}): local to local is not a pool copy",
            Ranges(pools),
            name()
        )));
    }
    Ok((s, d))
}

/// How messages name a copy's argument: `params` (a copy) or `params->[i]` (element `i` of a
/// batch), written only when a message is.
#[derive(Clone, Copy)]
pub struct Param {
    pub batch: bool,
    pub i: usize,
}

impl std::fmt::Display for Param {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.batch {
            write!(f, "params->[{}]", self.i)
        } else {
            f.write_str("params")
        }
    }
}

/// How messages name a field of an element: `params->` or `params->[i].`, before the field.
#[derive(Clone, Copy)]
struct Element(Param);

impl std::fmt::Display for Element {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.batch {
            write!(f, "{}.", self.0)
        } else {
            write!(f, "{}->", self.0)
        }
    }
}

/// Resolves element `i` (`src`, `dest`, `size`) of a copy (`batch` false: its only element)
/// or a batch with copy type `t` ([`resolve`]); NULL addresses and size 0 are refused. Returns
/// its sides and length.
pub fn resolve_element(
    pool: &Pool,
    t: u32,
    (src, dest, len): (usize, usize, u64),
    batch: bool,
    i: usize,
) -> Result<(Side, Side, usize), BmError> {
    let what = Element(Param { batch, i });
    nonzero(what, src, dest, len)?;
    let (s, d) = resolve(pool, t, src, dest, len, what)?;
    Ok((s, d, len as usize))
}

/// Refuses a NULL address or size 0 of an element.
fn nonzero(what: Element, src: usize, dest: usize, len: u64) -> Result<(), BmError> {
    if src == 0 || dest == 0 || len == 0 {
        return Err(BmError::invalid(format!(
            "invalid argument {what}src={src:#x} dest={dest:#x} dataSize={len}: neither may be 0"
        )));
    }
    Ok(())
}

/// [`resolve_batch`] over an object's pools ([`resolve_in`]): every element goes the way of
/// element 0, pool kinds included. Returns each element's sides and length.
pub fn resolve_places(
    pools: &[(Kind, Pool)],
    elements: &[(usize, usize, u64)],
    t: u32,
    batch: bool,
) -> Result<Vec<(Place, Place, usize)>, BmError> {
    let kind = |p: Place| match p {
        Place::Local { device: true, .. } => "local device",
        Place::Local { device: false, .. } => "local host",
        Place::Pool {
            kind: Kind::Host, ..
        } => "host pool",
        Place::Pool {
            kind: Kind::Device, ..
        } => "device pool",
    };
    let mut ops = Vec::with_capacity(elements.len());
    let mut first = None;
    for (i, &(src, dest, len)) in elements.iter().enumerate() {
        let what = Element(Param { batch, i });
        nonzero(what, src, dest, len)?;
        let (s, d) = resolve_in(pools, t, src, dest, len, what)?;
        let shape = (kind(s), kind(d));
        match first {
            None => first = Some(shape),
            Some(f) if f != shape => {
                return Err(BmError::invalid(format!(
                    "invalid argument {what}: its direction ({} to {}) differs from element \
                     0's ({} to {}); a batch copies in one direction",
                    shape.0, shape.1, f.0, f.1
                )))
            }
            Some(_) => {}
        }
        ops.push((s, d, len as usize));
    }
    Ok(ops)
}

/// Resolves the `(src, dest, size)` elements of a copy (`batch` false: one element) or a
/// batch with copy type `t` ([`resolve`] for each); a batch's direction is element 0's, and
/// an element going another way is refused naming its index, as are NULL addresses and size
/// 0. Returns each element's sides and length.
pub fn resolve_batch(
    pool: &Pool,
    elements: &[(usize, usize, u64)],
    t: u32,
    batch: bool,
) -> Result<Vec<(Side, Side, usize)>, BmError> {
    let mut ops = Vec::with_capacity(elements.len());
    let mut first: Option<(bool, bool)> = None;
    for (i, &element) in elements.iter().enumerate() {
        let (s, d, len) = resolve_element(pool, t, element, batch, i)?;
        let what = Element(Param { batch, i });
        let shape = (
            matches!(s, Side::Pool { .. }),
            matches!(d, Side::Pool { .. }),
        );
        match first {
            None => first = Some(shape),
            Some(f) if f != shape => {
                return Err(BmError::invalid(format!(
                    "invalid argument {what}: its direction ({}) differs from element 0's ({}); \
                     a batch copies in one direction",
                    direction(shape),
                    direction(f)
                )))
            }
            Some(_) => {}
        }
        ops.push((s, d, len));
    }
    Ok(ops)
}

fn direction((s, d): (bool, bool)) -> &'static str {
    match (s, d) {
        (false, true) => "local to pool",
        (true, false) => "pool to local",
        _ => "pool to pool",
    }
}

/// memfabric's hcomUrl, parsed: `tcp://<ip>[/<prefix>]:<port>` (IPv6 in brackets); `None`
/// when empty (any interface).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HcomUrl {
    pub ip: IpAddr,
    pub prefix: u8,
    pub port: u16,
}

/// Parses an hcomUrl as memfabric writes it (`tcp://0.0.0.0/0:10005`,
/// `tcp://192.168.0.1/16:12005`, `tcp://127.0.0.1:1234`); empty: `None`.
pub fn parse_hcom_url(url: &str) -> Result<Option<HcomUrl>, BmError> {
    if url.is_empty() {
        return Ok(None);
    }
    let bad = |why: &str| {
        BmError::invalid(format!(
            "invalid argument config->hcomUrl='{url}': {why} (expected tcp://<ip>[/<prefix>]:<port>)"
        ))
    };
    let rest = url
        .strip_prefix("tcp://")
        .or_else(|| url.strip_prefix("tcp6://"))
        .ok_or_else(|| bad("no tcp:// scheme"))?;
    let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad("no ':<port>'"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| bad(&format!("port '{port}' is not a number of 0..65535")))?;
    let (ip, prefix) = match host.split_once('/') {
        Some((ip, p)) => (
            ip,
            Some(
                p.parse::<u8>()
                    .map_err(|_| bad(&format!("prefix '{p}' is not a number")))?,
            ),
        ),
        None => (host, None),
    };
    let ip = ip.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = ip
        .parse()
        .map_err(|_| bad(&format!("'{ip}' is not an IP address")))?;
    let full = if ip.is_ipv4() { 32 } else { 128 };
    let prefix = prefix.unwrap_or(full);
    if prefix > full {
        return Err(bad(&format!("prefix /{prefix} is longer than the address")));
    }
    Ok(Some(HcomUrl { ip, prefix, port }))
}

impl HcomUrl {
    /// Whether `addr` lies in the URL's subnet (`ip/prefix`; prefix 0: any address).
    pub fn matches(&self, addr: IpAddr) -> bool {
        fn masked(a: u128, prefix: u8, bits: u8) -> u128 {
            if prefix == 0 {
                0
            } else {
                a >> (bits - prefix)
            }
        }
        match (self.ip, addr) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                masked(u32::from(n).into(), self.prefix, 32)
                    == masked(u32::from(a).into(), self.prefix, 32)
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                masked(u128::from(n), self.prefix, 128) == masked(u128::from(a), self.prefix, 128)
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB2: u64 = 2 << 20;

    fn pool() -> Pool {
        Pool {
            base: 0x2000_0000_0000,
            max: 4 * MIB2,
            world: 3,
        }
    }

    #[test]
    fn the_copies_quick_resolution_accepts_what_resolve_in_accepts_alike() {
        let p = pool();
        let seg = p.max as usize;
        let addrs = [
            0x1000,
            p.base - 1,
            p.base,
            p.base + 100,
            p.base + seg - 8,
            p.base + seg,
            p.base + 2 * seg + 4096,
            p.end() - 1,
            p.end(),
            DEVICE_VA.start + 64,
        ];
        for t in 0..=COPY_BUTT {
            for &src in &addrs {
                for &dest in &addrs {
                    for len in [1, 8, 4096, p.max, p.max + 1] {
                        let slow = resolve_in(&[(Kind::Host, p)], t, src, dest, len, "params")
                            .ok()
                            .map(|(s, d)| {
                                let side = |x: Place| match x {
                                    Place::Local { addr, .. } => Side::Local(addr),
                                    Place::Pool { rank, offset, .. } => Side::Pool { rank, offset },
                                };
                                (side(s), side(d))
                            });
                        assert_eq!(
                            resolve_valid(&p, t, src, dest, len),
                            slow,
                            "t={t} src={src:#x} dest={dest:#x} len={len}"
                        );
                    }
                }
            }
        }
    }

    fn at(rank: u32, offset: u64) -> usize {
        pool().base + (u64::from(rank) * pool().max + offset) as usize
    }

    #[test]
    fn pool_arithmetic_divides_by_max() {
        let p = pool();
        assert_eq!(p.end(), p.base + 3 * 4 * MIB2 as usize);
        assert_eq!(p.rank_of(at(0, 0)), Some(0));
        assert_eq!(p.rank_of(at(1, 4 * MIB2 - 1)), Some(1));
        assert_eq!(p.rank_of(at(2, 5)), Some(2));
        assert_eq!(p.rank_of(p.end()), None);
        assert_eq!(p.rank_of(p.base - 1), None);
    }

    #[test]
    fn every_copy_type_resolves_as_memfabric_reads_it() {
        let p = pool();
        let h = 0x1234_5000usize;
        let g1 = at(1, 64);
        let g2 = at(2, 0);
        let pool1 = Side::Pool {
            rank: 1,
            offset: 64,
        };
        let pool2 = Side::Pool { rank: 2, offset: 0 };
        for t in [COPY_L2G, COPY_H2G, COPY_H2GH] {
            assert_eq!(
                resolve(&p, t, h, g1, 8, "").unwrap(),
                (Side::Local(h), pool1)
            );
            // The pool side read by range must be in the pool.
            let e = resolve(&p, t, h, h + 64, 8, "params->").unwrap_err();
            assert_eq!(e.code, -2000);
            assert!(e.message.contains("params->dest="), "{}", e.message);
            // A forced-local side inside the pool is what it is.
            assert_eq!(resolve(&p, t, g2, g1, 8, "").unwrap(), (pool2, pool1));
        }
        for t in [COPY_G2L, COPY_G2H, COPY_GH2H] {
            assert_eq!(
                resolve(&p, t, g1, h, 8, "").unwrap(),
                (pool1, Side::Local(h))
            );
            assert_eq!(resolve(&p, t, h, h, 8, "").unwrap_err().code, -2000);
        }
        for t in [COPY_G2G, COPY_L2GH, COPY_GH2L] {
            assert_eq!(resolve(&p, t, g1, g2, 8, "").unwrap(), (pool1, pool2));
            assert_eq!(resolve(&p, t, h, g2, 8, "").unwrap_err().code, -2000);
            assert_eq!(resolve(&p, t, g1, h, 8, "").unwrap_err().code, -2000);
        }
        assert_eq!(
            resolve(&p, COPY_AUTO, h, g2, 8, "").unwrap(),
            (Side::Local(h), pool2)
        );
        assert_eq!(
            resolve(&p, COPY_AUTO, g1, h, 8, "").unwrap(),
            (pool1, Side::Local(h))
        );
        assert_eq!(
            resolve(&p, COPY_AUTO, g1, g2, 8, "").unwrap(),
            (pool1, pool2)
        );
        // Local to local is refused, whatever the type.
        let e = resolve(&p, COPY_AUTO, h, h + 8, 8, "").unwrap_err();
        assert_eq!(e.code, -2000);
        assert!(e.message.contains("local to local"), "{}", e.message);
        assert_eq!(
            resolve(&p, COPY_BUTT, h, g1, 8, "").unwrap_err().code,
            -2000
        );
    }

    #[test]
    fn a_pool_side_fits_in_one_segment() {
        let p = pool();
        let h = 0x1000usize;
        let last = at(0, 4 * MIB2 - 8);
        assert!(resolve(&p, COPY_H2G, h, last, 8, "").is_ok());
        let e = resolve(&p, COPY_H2G, h, last, 9, "").unwrap_err();
        assert_eq!(e.code, -2000);
        assert!(e.message.contains("rank 0's segment"), "{}", e.message);
        // The pool's end.
        let end = at(2, 4 * MIB2 - 4);
        assert_eq!(
            resolve(&p, COPY_H2G, h, end, 8, "").unwrap_err().code,
            -2000
        );
        // AUTO answers the lower layer's -2.
        assert_eq!(resolve(&p, COPY_AUTO, h, end, 8, "").unwrap_err().code, -2);
    }

    #[test]
    fn a_batch_goes_the_way_of_its_first_element() {
        let p = pool();
        let h = 0x1234_5000usize;
        let ok = resolve_batch(
            &p,
            &[(h, at(1, 0), 8), (h + 8, at(2, 8), 8)],
            COPY_H2G,
            true,
        )
        .unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(
            ok[1],
            (Side::Local(h + 8), Side::Pool { rank: 2, offset: 8 }, 8)
        );
        // AUTO reads element 1 as pool to local: refused, naming it.
        let e =
            resolve_batch(&p, &[(h, at(1, 0), 8), (at(2, 0), h, 8)], COPY_AUTO, true).unwrap_err();
        assert_eq!(e.code, -2000);
        assert!(e.message.contains("params->[1]."), "{}", e.message);
        assert!(
            e.message.contains("element 0's (local to pool)"),
            "{}",
            e.message
        );
        // Each element's pool side is checked.
        let e =
            resolve_batch(&p, &[(h, at(1, 0), 8), (h, p.end(), 8)], COPY_H2G, true).unwrap_err();
        assert!(e.message.contains("params->[1].dest="), "{}", e.message);
        let e = resolve_batch(&p, &[(h, at(1, 0), 0)], COPY_H2G, false).unwrap_err();
        assert!(e.message.contains("params->src="), "{}", e.message);
        assert!(e.message.contains("dataSize=0"), "{}", e.message);
    }

    #[test]
    fn hcom_urls_as_memfabric_writes_them() {
        assert_eq!(parse_hcom_url("").unwrap(), None);
        let u = parse_hcom_url("tcp://0.0.0.0/0:10005").unwrap().unwrap();
        assert_eq!((u.prefix, u.port), (0, 10005));
        assert!(u.matches("10.1.2.3".parse().unwrap()));
        let u = parse_hcom_url("tcp://192.168.0.1/16:12005")
            .unwrap()
            .unwrap();
        assert!(u.matches("192.168.7.9".parse().unwrap()));
        assert!(!u.matches("192.169.0.1".parse().unwrap()));
        assert!(!u.matches("::1".parse().unwrap()));
        let u = parse_hcom_url("tcp://127.0.0.1:1234").unwrap().unwrap();
        assert_eq!(u.prefix, 32);
        assert!(u.matches("127.0.0.1".parse().unwrap()));
        assert!(!u.matches("127.0.0.2".parse().unwrap()));
        let u = parse_hcom_url("tcp://[fe80::1]/64:7000").unwrap().unwrap();
        assert!(u.matches("fe80::2".parse().unwrap()));
        for bad in [
            "127.0.0.1:1",
            "tcp://127.0.0.1",
            "tcp://host:1",
            "tcp://1.2.3.4/33:1",
            "tcp://1.2.3.4/x:1",
            "tcp://1.2.3.4:70000",
        ] {
            let e = parse_hcom_url(bad).unwrap_err();
            assert_eq!(e.code, -2000, "{bad}");
            assert!(e.message.contains(bad), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn two_pools_and_local_device_memory() {
        let host = Pool {
            base: 0x10_0000_0000,
            max: MIB2,
            world: 2,
        };
        let device = Pool {
            base: 0x20_0000_0000,
            max: 2 * MIB2,
            world: 2,
        };
        let pools = [(Kind::Host, host), (Kind::Device, device)];
        let at = |s: usize, d: usize, t: u32| resolve_in(&pools, t, s, d, 64, "params");
        let buf = 0x7000_0000usize;
        let dev = DEVICE_VA.start + 0x1000;
        // L2G: the source is local device memory, the destination either pool.
        assert_eq!(
            at(buf, device.base + 2 * MIB2 as usize + 8, COPY_L2G).unwrap(),
            (
                Place::Local {
                    addr: buf,
                    device: true
                },
                Place::Pool {
                    kind: Kind::Device,
                    rank: 1,
                    offset: 8
                }
            )
        );
        // G2G between the pools, each way.
        let (s, d) = at(host.base, device.base, COPY_G2G).unwrap();
        assert!(matches!(
            s,
            Place::Pool {
                kind: Kind::Host,
                rank: 0,
                ..
            }
        ));
        assert!(matches!(
            d,
            Place::Pool {
                kind: Kind::Device,
                rank: 0,
                ..
            }
        ));
        // AUTO: the NPU's address window is local device memory, the rest local host memory.
        let (s, _) = at(dev, device.base, COPY_AUTO).unwrap();
        assert_eq!(
            s,
            Place::Local {
                addr: dev,
                device: true
            }
        );
        let (s, _) = at(buf, device.base, COPY_AUTO).unwrap();
        assert_eq!(
            s,
            Place::Local {
                addr: buf,
                device: false
            }
        );
        // H2G outside both pools: the message names both.
        let e = at(buf, buf + 64, COPY_H2G).unwrap_err();
        assert_eq!(e.code, -2000);
        assert!(e.message.contains("(host) and"), "{}", e.message);
        // A batch keeps one direction, pool kinds included.
        let e = resolve_places(
            &pools,
            &[(buf, host.base, 64), (buf, device.base, 64)],
            COPY_H2G,
            true,
        )
        .unwrap_err();
        assert!(e.message.contains("params->[1]"), "{}", e.message);
        assert!(e.message.contains("device pool"), "{}", e.message);
    }
}
