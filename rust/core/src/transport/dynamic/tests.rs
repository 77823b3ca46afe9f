//! The dynamic API over the loopback worker: three workers of this process connecting on
//! demand, registering and unregistering while they run, a member that leaves or is dropped,
//! and 100 cycles without descriptor or mapping growth. The same checks over UCX are in
//! [`super::ucx`]'s tests.

use super::loopback::LoopbackWorker;
use super::*;

/// Lines of /proc/self/maps and entries of /proc/self/fd.
pub(crate) fn fds_and_maps() -> (usize, usize) {
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    let maps = std::fs::read_to_string("/proc/self/maps").map_or(0, |m| m.lines().count());
    (fds, maps)
}

/// The checks every implementation passes: `a`, `b` and `c` are three workers of this process.
pub(crate) fn three_members(a: &dyn DynamicWorker, b: &dyn DynamicWorker, c: &dyn DynamicWorker) {
    let mut mem_b = vec![0u8; 4096];
    let mut mem_c = vec![0u8; 4096];
    // SAFETY: the vectors outlive their registrations (unregistered below, before the drop).
    let (reg_b, key_b) = unsafe { b.register(mem_b.as_mut_ptr(), mem_b.len()) }.unwrap();
    let (reg_c, key_c) = unsafe { c.register(mem_c.as_mut_ptr(), mem_c.len()) }.unwrap();

    // On demand: a reaches b, then c, from their published addresses.
    let ab = a.connect(&b.address()).unwrap();
    a.put(ab, &key_b, 100, b"hello b").unwrap();
    a.flush(ab).unwrap();
    let ac = a.connect(&c.address()).unwrap();
    let src: Vec<u8> = (0..=255).collect();
    // SAFETY: `src` lives and is unchanged until the flush below.
    unsafe { a.put_nb(ac, &key_c, 1000, src.as_ptr(), src.len()) }.unwrap();
    a.flush(ac).unwrap();
    // Checked by the other side, with its own endpoint back.
    let ba = b.connect(&a.address()).unwrap();
    let peer = b.peer_name(ba).unwrap();
    assert!(peer.contains(a.name()), "{peer}");
    assert_eq!(&mem_b[100..107], b"hello b");
    assert_eq!(&mem_c[1000..1256], &src[..]);
    let mut back = [0u8; 7];
    a.get(ab, &key_b, 100, &mut back).unwrap();
    assert_eq!(&back, b"hello b");
    let mut back2 = vec![0u8; 256];
    // SAFETY: `back2` lives and is untouched until the flush.
    unsafe { a.get_nb(ac, &key_c, 1000, back2.as_mut_ptr(), back2.len()) }.unwrap();
    a.flush(ac).unwrap();
    assert_eq!(back2, src);

    // Out of range and a key of another worker: refused, naming the operation and the key.
    let e = a.put(ab, &key_b, 4090, &[0; 8]).unwrap_err();
    assert!(matches!(e, TransportError::BadKey { op: "put", .. }), "{e}");
    assert!(e.to_string().contains(&key_name(&key_b)), "{e}");
    let e = a.get(ab, &key_c, 0, &mut [0; 8]).unwrap_err();
    assert!(matches!(e, TransportError::BadKey { op: "get", .. }), "{e}");
    let e = a.put(ab, b"nonsense", 0, &[0; 8]).unwrap_err();
    assert!(matches!(e, TransportError::BadKey { .. }), "{e}");

    // A registration made while running is reachable at once.
    let mut extra = vec![0u8; 64];
    // SAFETY: `extra` outlives its registration.
    let (reg_x, key_x) = unsafe { b.register(extra.as_mut_ptr(), extra.len()) }.unwrap();
    a.put(ab, &key_x, 0, &[7; 64]).unwrap();
    a.flush(ab).unwrap();
    assert_eq!(extra, vec![7; 64]);
    b.unregister(reg_x).unwrap();

    // Disconnect: later operations on the endpoint fail cleanly; a new endpoint works.
    a.disconnect(ac).unwrap();
    let e = a.put(ac, &key_c, 0, &[1]).unwrap_err();
    assert!(
        matches!(e, TransportError::Disconnected { op: "put", .. }),
        "{e}"
    );
    assert!(matches!(
        a.flush(ac),
        Err(TransportError::Disconnected { .. })
    ));
    let ac2 = a.connect(&c.address()).unwrap();
    a.put(ac2, &key_c, 0, &[9]).unwrap();
    a.flush(ac2).unwrap();
    assert_eq!(mem_c[0], 9);

    b.disconnect(ba).unwrap();
    a.disconnect(ab).unwrap();
    a.disconnect(ac2).unwrap();
    b.unregister(reg_b).unwrap();
    c.unregister(reg_c).unwrap();
}

#[test]
fn three_loopback_workers_connect_on_demand() {
    let (a, b, c) = (
        LoopbackWorker::new(),
        LoopbackWorker::new(),
        LoopbackWorker::new(),
    );
    three_members(&a, &b, &c);
}

#[test]
fn an_unregistered_key_is_refused() {
    let (a, b) = (LoopbackWorker::new(), LoopbackWorker::new());
    let mut mem = vec![0u8; 64];
    // SAFETY: `mem` outlives its registration.
    let (reg, key) = unsafe { b.register(mem.as_mut_ptr(), mem.len()) }.unwrap();
    let ab = a.connect(&b.address()).unwrap();
    b.unregister(reg).unwrap();
    let e = a.put(ab, &key, 0, &[1]).unwrap_err();
    assert!(e.to_string().contains("unregistered"), "{e}");
    assert_eq!(mem[0], 0);
}

#[test]
fn a_dropped_member_fails_operations_to_it() {
    let a = LoopbackWorker::new();
    let b = LoopbackWorker::new();
    let mut mem = vec![0u8; 64];
    // SAFETY: `mem` outlives `b`, which releases the registration on drop.
    let (_reg, key) = unsafe { b.register(mem.as_mut_ptr(), mem.len()) }.unwrap();
    let ab = a.connect(&b.address()).unwrap();
    let addr_b = b.address();
    drop(b);
    let e = a.put(ab, &key, 0, &[1]).unwrap_err();
    assert!(
        matches!(e, TransportError::PeerGone { op: "put", .. }),
        "{e}"
    );
    assert!(matches!(a.flush(ab), Err(TransportError::PeerGone { .. })));
    assert!(a.connect(&addr_b).is_err());
    a.disconnect(ab).unwrap();
    // A newcomer is reached.
    let n = LoopbackWorker::new();
    // SAFETY: `mem` outlives `n`.
    let (_r, key) = unsafe { n.register(mem.as_mut_ptr(), mem.len()) }.unwrap();
    let an = a.connect(&n.address()).unwrap();
    a.put(an, &key, 3, &[5]).unwrap();
    assert_eq!(mem[3], 5);
}

#[test]
fn keys_name_their_registration() {
    let h = KeyHeader {
        worker: 0xabc,
        id: 7,
        base: 4096,
        len: 100,
    };
    let key = h.encode(b"rkey");
    let (back, rest) = KeyHeader::decode(&key).unwrap();
    assert_eq!((back, rest), (h, &b"rkey"[..]));
    assert_eq!(key_name(&key), "#7 of worker 0000000000000abc");
    assert_eq!(h.address_of(96, 4), Ok(4192));
    assert!(h.address_of(97, 4).is_err());
    assert!(h.address_of(u64::MAX, 1).is_err());
    assert!(KeyHeader::decode(b"SHdk").is_err());
}

/// `cycles` rounds of connect, register, put, unregister, disconnect between two workers;
/// returns the descriptors and mappings before and after (after one warm-up round).
pub(crate) fn cycle(
    a: &dyn DynamicWorker,
    b: &dyn DynamicWorker,
    cycles: usize,
) -> [(usize, usize); 2] {
    let mut mem = vec![0u8; 1 << 16];
    let mut round = |i: usize| {
        // SAFETY: `mem` outlives the registration, unregistered in this round.
        let (reg, key) = unsafe { b.register(mem.as_mut_ptr(), 1 << 16) }.unwrap();
        let ep = a.connect(&b.address()).unwrap();
        a.put(ep, &key, (i % 1000) as u64, &[i as u8]).unwrap();
        a.flush(ep).unwrap();
        let mut x = [0u8];
        a.get(ep, &key, (i % 1000) as u64, &mut x).unwrap();
        assert_eq!(x[0], i as u8);
        a.disconnect(ep).unwrap();
        b.unregister(reg).unwrap();
    };
    round(0);
    let before = fds_and_maps();
    for i in 1..=cycles {
        round(i);
    }
    [before, fds_and_maps()]
}

#[test]
fn a_hundred_cycles_leave_nothing_behind() {
    let (a, b) = (LoopbackWorker::new(), LoopbackWorker::new());
    let [before, after] = cycle(&a, &b, 100);
    eprintln!("loopback: fds, maps before {before:?}, after 100 cycles {after:?}");
    assert!(after.0 <= before.0, "{before:?} -> {after:?}");
    assert!(after.1 <= before.1 + 2, "{before:?} -> {after:?}");
}
