//! The node path ([`super::node`]): node workers over the loopback worker (so that CI proves
//! it without UCX) and over UCX where libucp loads: in one process, between two and three
//! processes of this node (the test binary run again as members), registrations made and
//! withdrawn while peers use them, a member SIGKILLed, a newcomer, and 100 cycles without
//! growth in descriptors, mappings or threads.

use super::loopback::LoopbackWorker;
use super::node::{NodeWorker, SharedMemory};
use super::tests::{
    alone_at, connect_put_get, fds_and_maps, field, hex, spawn_child, three_members, ucx_worker,
    unhex, ChildLines,
};
use super::*;
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

/// The bound of a node worker's exchanges in these tests.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A node worker over `inner` (`loopback` or `ucx`); `None` (saying why) where UCX is not
/// installed.
fn node_worker(inner: &str) -> Option<NodeWorker> {
    let inner: Box<dyn DynamicWorker> = match inner {
        "loopback" => Box::new(LoopbackWorker::new()),
        _ => Box::new(ucx_worker()?),
    };
    Some(NodeWorker::new(inner, TIMEOUT).unwrap())
}

/// Entries of /proc/self/task.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

#[test]
fn three_node_workers_over_loopback_in_one_process() {
    let (a, b, c) = (
        node_worker("loopback").unwrap(),
        node_worker("loopback").unwrap(),
        node_worker("loopback").unwrap(),
    );
    // Private memory: through the inner loopback workers.
    three_members(&a, &b, &c);
}

/// Shareable memory of `b` mapped by `a`; the registration's checks.
fn shareable_checks(a: &dyn DynamicWorker, b: &dyn DynamicWorker) {
    let mem = SharedMemory::new(8192).unwrap();
    // SAFETY: `mem` maps its own memfd from 0 and outlives the registration.
    let (reg, key) =
        unsafe { b.register_fd(mem.fd(), 4096, mem.as_ptr().add(4096), 4096) }.unwrap();
    let ab = a.connect(&b.address()).unwrap();
    assert!(a.peer_name(ab).unwrap().contains("this node"));
    a.put(ab, &key, 10, b"mapped").unwrap();
    // SAFETY: the put above completed (a copy); nothing else writes.
    let seen = unsafe { std::slice::from_raw_parts(mem.as_ptr().add(4096 + 10), 6) };
    assert_eq!(seen, b"mapped");
    let src = vec![0x5a_u8; 4096];
    // SAFETY: `src` lives until the flush.
    unsafe { a.put_nb(ab, &key, 0, src.as_ptr(), src.len()) }.unwrap();
    a.flush(ab).unwrap();
    let mut back = vec![0u8; 4096];
    // SAFETY: `back` lives and is untouched until the flush.
    unsafe { a.get_nb(ab, &key, 0, back.as_mut_ptr(), 4096) }.unwrap();
    a.flush(ab).unwrap();
    assert_eq!(back, src);
    // Beyond the registration, and a key claiming more than its owner registered.
    let e = a.put(ab, &key, 4095, &[0; 2]).unwrap_err();
    assert!(matches!(e, TransportError::BadKey { op: "put", .. }), "{e}");
    let mut forged = key.clone();
    forged[4 + 24..4 + 32].copy_from_slice(&8192u64.to_le_bytes());
    let e = a.put(ab, &forged, 4096, &[1]).unwrap_err();
    assert!(e.to_string().contains("outside its registration"), "{e}");
    // Withdrawn: refused, and the memory is left alone.
    b.unregister(reg).unwrap();
    let e = a.put(ab, &key, 0, &[1]).unwrap_err();
    assert!(e.to_string().contains("unregistered"), "{e}");
    // SAFETY: as above.
    assert_eq!(unsafe { *mem.as_ptr().add(4096) }, 0x5a);
    // A new registration in the same slot does not revive the old key.
    // SAFETY: as above.
    let (reg2, key2) = unsafe { b.register_fd(mem.fd(), 0, mem.as_ptr(), 4096) }.unwrap();
    assert!(a.put(ab, &key, 0, &[1]).is_err());
    a.put(ab, &key2, 0, &[2]).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { *mem.as_ptr() }, 2);
    a.disconnect(ab).unwrap();
    b.unregister(reg2).unwrap();
}

#[test]
fn shareable_memory_is_mapped_over_loopback_in_one_process() {
    let (a, b) = (
        node_worker("loopback").unwrap(),
        node_worker("loopback").unwrap(),
    );
    shareable_checks(&a, &b);
    // Threads sharing one endpoint, from the key's first use (the mapping) on.
    let mem = SharedMemory::new(4096).unwrap();
    // SAFETY: `mem` outlives the registration.
    let (reg, key) = unsafe { b.register_fd(mem.fd(), 0, mem.as_ptr(), 4096) }.unwrap();
    let ab = a.connect(&b.address()).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let (a, key) = (&a, &key);
            s.spawn(move || {
                for i in 0..100u64 {
                    let at = u64::from(t) * 1024 + i % 1000;
                    a.put(ab, key, at, &[t + 1]).unwrap();
                    let mut x = [0u8];
                    a.get(ab, key, at, &mut x).unwrap();
                    assert_eq!(x[0], t + 1);
                }
            });
        }
    });
    a.disconnect(ab).unwrap();
    b.unregister(reg).unwrap();
    // A file shorter than the registration is refused at once.
    let mem = SharedMemory::new(4096).unwrap();
    // SAFETY: refused before anything is registered.
    let e = unsafe { b.register_fd(mem.fd(), 1, mem.as_ptr(), 4096) }.unwrap_err();
    assert!(e.to_string().contains("holds 4096 bytes"), "{e}");
}

#[test]
fn a_peers_shareable_file_is_handed_over_to_map_elsewhere() {
    let (a, b) = (
        node_worker("loopback").unwrap(),
        node_worker("loopback").unwrap(),
    );
    let mem = SharedMemory::new(8192).unwrap();
    // SAFETY: `mem` maps its own memfd from 0 and outlives the registrations.
    let (reg, key) =
        unsafe { b.register_fd(mem.fd(), 4096, mem.as_ptr().add(4096), 4096) }.unwrap();
    let ab = a.connect(&b.address()).unwrap();
    let (fd, offset, len) = a
        .shared_file(ab, &key)
        .unwrap()
        .expect("a peer of this node");
    assert_eq!((offset, len), (4096, 4096));
    let there = crate::mapping::Mapping::map_shared_at(&fd, offset, 4096).unwrap();
    there
        .atomic_u64(8)
        .store(77, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: the word lies in `mem`, written through the other mapping above.
    assert_eq!(unsafe { *(mem.as_ptr().add(4096 + 8) as *const u64) }, 77);
    // Private memory is not handed over; a withdrawn registration is refused.
    let mut private = vec![0u8; 4096];
    // SAFETY: `private` outlives the registration.
    let (preg, pkey) = unsafe { b.register(private.as_mut_ptr(), 4096) }.unwrap();
    assert!(a.shared_file(ab, &pkey).unwrap().is_none());
    b.unregister(preg).unwrap();
    b.unregister(reg).unwrap();
    let e = a.shared_file(ab, &key).unwrap_err();
    assert!(e.to_string().contains("unregistered"), "{e}");
    // Workers that map nothing hand over nothing.
    let (l, m) = (LoopbackWorker::new(), LoopbackWorker::new());
    let lm = l.connect(&m.address()).unwrap();
    // SAFETY: `mem` outlives the registration.
    let (mreg, mkey) = unsafe { m.register_fd(mem.fd(), 0, mem.as_ptr(), 4096) }.unwrap();
    assert!(l.shared_file(lm, &mkey).unwrap().is_none());
    m.unregister(mreg).unwrap();
    a.disconnect(ab).unwrap();
}

#[test]
fn a_dropped_node_worker_fails_operations_to_it() {
    let a = node_worker("loopback").unwrap();
    let b = node_worker("loopback").unwrap();
    let mem = SharedMemory::new(4096).unwrap();
    // SAFETY: `mem` outlives `b`.
    let (_reg, key) = unsafe { b.register_fd(mem.fd(), 0, mem.as_ptr(), 4096) }.unwrap();
    let ab = a.connect(&b.address()).unwrap();
    a.put(ab, &key, 0, &[1]).unwrap();
    let addr = b.address();
    drop(b);
    let e = a.put(ab, &key, 0, &[1]).unwrap_err();
    assert!(
        matches!(e, TransportError::PeerGone { op: "put", .. }),
        "{e}"
    );
    assert!(matches!(a.flush(ab), Err(TransportError::PeerGone { .. })));
    let e = a.connect(&addr).unwrap_err();
    assert!(
        matches!(e, TransportError::PeerGone { op: "connect", .. }),
        "{e}"
    );
    a.disconnect(ab).unwrap();
}

/// A node worker without UCX maps shareable memory of a peer over UCX, and the two refuse each
/// other's private memory naming UCX (an inner worker never gets another kind's address).
#[test]
fn a_node_worker_without_ucx_refuses_what_needs_ucx_naming_it() {
    let why = "cannot load libucp.so.0 (left out by this test): install libucx0";
    let a = NodeWorker::without_ucx(why.into(), TIMEOUT).unwrap();
    assert_eq!(a.without_ucx_reason(), Some(why));
    let Some(b) = node_worker("ucx") else {
        return;
    };
    let mem = SharedMemory::new(4096).unwrap();
    // SAFETY: `mem` maps its memfd from 0 and outlives the registrations.
    let (_shared, shared) = unsafe { b.register_fd(mem.fd(), 0, mem.as_ptr(), 4096) }.unwrap();
    let mut private_b = vec![0u8; 64];
    // SAFETY: `private_b` outlives `b`.
    let (_pb, private_b_key) = unsafe { b.register(private_b.as_mut_ptr(), 64) }.unwrap();
    let mut private_a = vec![0u8; 64];
    // SAFETY: `private_a` outlives `a`.
    let (_pa, private_a_key) = unsafe { a.register(private_a.as_mut_ptr(), 64) }.unwrap();
    let ab = a.connect(&b.address()).unwrap();
    a.put(ab, &shared, 0, b"mapped").unwrap();
    let e = a.put(ab, &private_b_key, 0, b"x").unwrap_err();
    assert!(
        matches!(e, TransportError::NeedsUcx { op: "put", .. }),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains(&format!("this process could not load: {why}")),
        "{e}"
    );
    let ba = b.connect(&a.address()).unwrap();
    let e = b.put(ba, &private_a_key, 0, b"x").unwrap_err();
    assert!(
        e.to_string()
            .contains("which the peer's process could not load"),
        "{e}"
    );
    assert_eq!(private_a[0], 0);
    drop((a, b));
}

/// Set in the children of the tests below: the inner worker their member uses. A marker
/// between this test binary and its own children, not a setting of the library.
const CHILD_VAR: &str = "DYNAMIC_NODE_TEST_CHILD";

/// A member in a process of its own (the test binary run again, this test only), over the
/// inner worker [`CHILD_VAR`] names: registers 4096 bytes of shareable memory and 4096 of
/// private memory, publishes its address and both keys, then answers its parent's commands on
/// stdin (lines `= ...` on stdout) until stdin closes. Does nothing in a plain test run.
#[test]
fn node_child() {
    let Ok(inner) = std::env::var(CHILD_VAR) else {
        return;
    };
    let w = node_worker(&inner).expect("the parent checked that the inner worker opens");
    let mem = SharedMemory::new(4096).unwrap();
    // SAFETY: `mem` outlives `w` (dropped last).
    let (_reg, key) = unsafe { w.register_fd(mem.fd(), 0, mem.as_ptr(), 4096) }.unwrap();
    let mut private = vec![0u8; 4096];
    // SAFETY: `private` outlives `w`.
    let (_preg, pkey) = unsafe { w.register(private.as_mut_ptr(), 4096) }.unwrap();
    println!("addr {}", hex(&w.address()));
    println!("key {}", hex(&key));
    println!("pkey {}", hex(&pkey));
    let mut regs: HashMap<u64, (Registration, SharedMemory)> = HashMap::new();
    let mut eps: HashMap<u64, Endpoint> = HashMap::new();
    // The bytes at `off` of memory that peers write (by copies, or UCX): read volatile, after
    // their flush.
    let read = |at: *const u8, off: usize, len: usize| -> String {
        hex(&(off..off + len)
            // SAFETY: `at` is one of this member's live 4096-byte regions; the parent asks
            // within them.
            .map(|i| unsafe { std::ptr::read_volatile(at.add(i)) })
            .collect::<Vec<u8>>())
    };
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let f: Vec<&str> = line.split_whitespace().collect();
        let answer = match f[..] {
            ["show", off, len] => read(mem.as_ptr(), off.parse().unwrap(), len.parse().unwrap()),
            ["showprivate", off, len] => {
                read(private.as_ptr(), off.parse().unwrap(), len.parse().unwrap())
            }
            ["showreg", id, off, len] => {
                let (_, m) = &regs[&id.parse().unwrap()];
                read(m.as_ptr(), off.parse().unwrap(), len.parse().unwrap())
            }
            ["reg"] => {
                let m = SharedMemory::new(4096).unwrap();
                // SAFETY: `m` is kept with its registration until `unreg`.
                let (r, k) = unsafe { w.register_fd(m.fd(), 0, m.as_ptr(), 4096) }.unwrap();
                let id = r.id;
                regs.insert(id, (r, m));
                format!("{id} {}", hex(&k))
            }
            ["big"] => {
                // Both registrations of one region, kept until the end.
                let m = SharedMemory::new(TIMED_LEN).unwrap();
                // SAFETY: `m` is kept in `regs`, dropped after `w` (below).
                let (r, k) = unsafe { w.register_fd(m.fd(), 0, m.as_ptr(), TIMED_LEN) }.unwrap();
                // SAFETY: as above.
                let (_, pk) = unsafe { w.register(m.as_ptr(), TIMED_LEN) }.unwrap();
                regs.insert(r.id, (r, m));
                format!("{} {}", hex(&k), hex(&pk))
            }
            ["unreg", id] => {
                let (r, m) = regs.remove(&id.parse().unwrap()).unwrap();
                w.unregister(r).unwrap();
                drop(m);
                "ok".into()
            }
            ["connect", addr] => {
                let ep = w.connect(&unhex(addr)).unwrap();
                eps.insert(ep.0, ep);
                ep.0.to_string()
            }
            ["put", ep, key, off, data] => {
                let ep = eps[&ep.parse().unwrap()];
                match w
                    .put(ep, &unhex(key), off.parse().unwrap(), &unhex(data))
                    .and_then(|()| w.flush(ep))
                {
                    Ok(()) => "ok".into(),
                    Err(e) => format!("err {e}"),
                }
            }
            _ => format!("err unknown command {line:?}"),
        };
        println!("= {answer}");
    }
    drop(w);
    drop(private);
}

/// A child member: its process, its stdin, its stdout's lines, its address and keys.
struct Member {
    proc: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: ChildLines,
    address: Vec<u8>,
    key: Vec<u8>,
    pkey: Vec<u8>,
}

impl Member {
    fn start(inner: &str) -> Member {
        let (proc, stdin, mut lines) = spawn_child(
            "transport::dynamic::node_tests::node_child",
            CHILD_VAR,
            inner,
        );
        let address = field(&mut lines, "addr ");
        let key = field(&mut lines, "key ");
        let pkey = field(&mut lines, "pkey ");
        Member {
            proc,
            stdin,
            lines,
            address,
            key,
            pkey,
        }
    }

    /// The child's answer to `cmd`.
    fn ask(&mut self, cmd: &str) -> String {
        writeln!(self.stdin, "{cmd}").unwrap();
        loop {
            let l = self.lines.next().expect("the child's answer").unwrap();
            if let Some(v) = l.strip_prefix("= ") {
                return v.to_string();
            }
        }
    }

    fn show(&mut self, what: &str, off: usize, len: usize) -> Vec<u8> {
        unhex(&self.ask(&format!("{what} {off} {len}")))
    }

    /// Ends the child (stdin closed) and checks that it passed.
    fn end(self) {
        let Member {
            mut proc, stdin, ..
        } = self;
        drop(stdin);
        assert!(proc.wait().unwrap().success());
    }
}

/// This process and one child member over `inner`: puts and gets checked by the other side,
/// registrations made and withdrawn while running; private memory through the inner worker
/// (`private_reached`), or refused naming the key (the loopback cannot reach another process).
fn two_processes(inner: &str, private_reached: bool) {
    let Some(a) = node_worker(inner) else { return };
    let mut c = Member::start(inner);
    let ep = a.connect(&c.address).unwrap();
    a.put(ep, &c.key, 8, b"from parent").unwrap();
    a.flush(ep).unwrap();
    assert_eq!(c.show("show", 8, 11), b"from parent");
    let mut got = [0u8; 11];
    a.get(ep, &c.key, 8, &mut got).unwrap();
    assert_eq!(&got, b"from parent");
    let src: Vec<u8> = (0..=255).collect();
    // SAFETY: `src` lives until the flush.
    unsafe { a.put_nb(ep, &c.key, 1000, src.as_ptr(), src.len()) }.unwrap();
    a.flush(ep).unwrap();
    assert_eq!(c.show("show", 1000, 256), src);

    // Private memory.
    let r = a.put(ep, &c.pkey, 0, b"private");
    if private_reached {
        r.unwrap();
        a.flush(ep).unwrap();
        assert_eq!(c.show("showprivate", 0, 7), b"private");
    } else {
        let e = r.unwrap_err();
        assert!(matches!(e, TransportError::BadKey { op: "put", .. }), "{e}");
        assert!(e.to_string().contains("private memory"), "{e}");
        assert!(e.to_string().contains(&key_name(&c.pkey)), "{e}");
        assert_eq!(c.show("showprivate", 0, 7), [0; 7]);
    }

    // Registered while running, used, withdrawn: later operations fail.
    for round in 0..3u8 {
        let reply = c.ask("reg");
        let (id, key) = reply.split_once(' ').unwrap();
        let key = unhex(key);
        a.put(ep, &key, 4000, &[round + 1; 96]).unwrap();
        a.flush(ep).unwrap();
        assert_eq!(c.show(&format!("showreg {id}"), 4000, 96), [round + 1; 96]);
        assert_eq!(c.ask(&format!("unreg {id}")), "ok");
        let e = a.put(ep, &key, 0, &[1]).unwrap_err();
        assert!(matches!(e, TransportError::BadKey { .. }), "{e}");
        assert!(e.to_string().contains("unregistered"), "{e}");
        assert!(a.get(ep, &key, 0, &mut [0]).is_err());
    }
    a.disconnect(ep).unwrap();
    assert!(matches!(
        a.put(ep, &c.key, 0, &[1]),
        Err(TransportError::Disconnected { .. })
    ));
    c.end();
}

#[test]
fn two_processes_over_loopback() {
    two_processes("loopback", false);
}

#[test]
fn two_processes_over_ucx() {
    two_processes("ucx", true);
}

/// This process and two children over `inner`: each writes to the others, each side checks.
fn three_processes(inner: &str) {
    let Some(a) = node_worker(inner) else { return };
    let (mut b, mut c) = (Member::start(inner), Member::start(inner));
    let mem = SharedMemory::new(4096).unwrap();
    // SAFETY: `mem` outlives `a`'s registration (unregistered below).
    let (reg, key) = unsafe { a.register_fd(mem.fd(), 0, mem.as_ptr(), 4096) }.unwrap();
    let (ab, ac) = (
        a.connect(&b.address).unwrap(),
        a.connect(&c.address).unwrap(),
    );
    a.put(ab, &b.key, 0, b"a to b").unwrap();
    a.put(ac, &c.key, 0, b"a to c").unwrap();
    // b writes into c and into this process.
    let bc = b.ask(&format!("connect {}", hex(&c.address)));
    let ba = b.ask(&format!("connect {}", hex(&a.address())));
    let put = format!("put {bc} {} 100 {}", hex(&c.key), hex(b"b to c"));
    assert_eq!(b.ask(&put), "ok");
    let put = format!("put {ba} {} 200 {}", hex(&key), hex(b"b to a"));
    assert_eq!(b.ask(&put), "ok");
    // c writes into b.
    let cb = c.ask(&format!("connect {}", hex(&b.address)));
    let put = format!("put {cb} {} 300 {}", hex(&b.key), hex(b"c to b"));
    assert_eq!(c.ask(&put), "ok");

    assert_eq!(b.show("show", 0, 6), b"a to b");
    assert_eq!(c.show("show", 0, 6), b"a to c");
    assert_eq!(c.show("show", 100, 6), b"b to c");
    assert_eq!(b.show("show", 300, 6), b"c to b");
    let mut got = [0u8; 6];
    a.get(ac, &c.key, 100, &mut got).unwrap();
    assert_eq!(&got, b"b to c");
    // SAFETY: b's put completed before it answered.
    let seen = unsafe { std::slice::from_raw_parts(mem.as_ptr().add(200), 6) };
    assert_eq!(seen, b"b to a");
    // Withdrawn here: b's next put fails, naming the registration.
    a.unregister(reg).unwrap();
    let put = format!("put {ba} {} 200 {}", hex(&key), hex(b"late"));
    let answer = b.ask(&put);
    assert!(
        answer.starts_with("err") && answer.contains("unregistered"),
        "{answer}"
    );
    a.disconnect(ab).unwrap();
    a.disconnect(ac).unwrap();
    b.end();
    c.end();
}

#[test]
fn three_processes_over_loopback() {
    three_processes("loopback");
}

#[test]
fn three_processes_over_ucx() {
    three_processes("ucx");
}

/// A child member SIGKILLed: operations to it fail within the bound; a newcomer is reached.
fn killed_member(inner: &str) {
    let Some(a) = node_worker(inner) else { return };
    let mut c1 = Member::start(inner);
    let ep = a.connect(&c1.address).unwrap();
    a.put(ep, &c1.key, 8, b"before").unwrap();
    assert_eq!(c1.show("show", 8, 6), b"before");
    c1.proc.kill().unwrap();
    c1.proc.wait().unwrap();
    let killed = Instant::now();
    let err = loop {
        match a.put(ep, &c1.key, 0, &[1; 64]).and_then(|()| a.flush(ep)) {
            Err(e) => break e,
            Ok(()) => assert!(
                killed.elapsed() < Duration::from_secs(10),
                "operations to a killed member still succeed"
            ),
        }
    };
    let failed_after = killed.elapsed();
    assert!(matches!(err, TransportError::PeerGone { .. }), "{err}");
    assert!(err.to_string().contains(&a.peer_name(ep).unwrap()), "{err}");
    assert!(matches!(a.flush(ep), Err(TransportError::PeerGone { .. })));
    let t = Instant::now();
    let closed = a.disconnect(ep);
    eprintln!(
        "node over {inner}: killed member: failed after {failed_after:?} ({err}); disconnect \
         {:?} in {:?}",
        closed.err().map(|e| e.to_string()),
        t.elapsed()
    );
    assert!(failed_after < Duration::from_secs(1));
    assert!(t.elapsed() < TIMEOUT);

    let mut c2 = Member::start(inner);
    let ep2 = a.connect(&c2.address).unwrap();
    a.put(ep2, &c2.key, 100, b"to the newcomer").unwrap();
    a.flush(ep2).unwrap();
    assert_eq!(c2.show("show", 100, 15), b"to the newcomer");
    a.disconnect(ep2).unwrap();
    c2.end();
}

#[test]
fn a_killed_node_member_fails_over_loopback_and_a_newcomer_is_reached() {
    killed_member("loopback");
}

#[test]
fn a_killed_node_member_fails_over_ucx_and_a_newcomer_is_reached() {
    killed_member("ucx");
}

/// Descriptors, mappings and threads of this process, and its mappings of the node path's
/// memfds (`shmem-dynamic`, `shmem-dynamic-registrations`).
fn counts() -> (usize, usize, usize, usize) {
    let (fds, maps) = fds_and_maps();
    let ours = std::fs::read_to_string("/proc/self/maps").map_or(0, |m| {
        m.lines().filter(|l| l.contains("shmem-dynamic")).count()
    });
    (fds, maps, threads(), ours)
}

/// `cycles` rounds between `a` and `b` of one process: new shareable memory, registered,
/// connected to, put and get through the node path, disconnected, unregistered, freed; the
/// counts before (after a warm-up round) and after.
fn node_cycles(
    a: &dyn DynamicWorker,
    b: &dyn DynamicWorker,
    cycles: usize,
) -> [(usize, usize, usize, usize); 2] {
    let round = |i: usize| {
        let mem = SharedMemory::new(1 << 16).unwrap();
        // SAFETY: `mem` outlives the registration, withdrawn in this round.
        let (reg, key) = unsafe { b.register_fd(mem.fd(), 0, mem.as_ptr(), 1 << 16) }.unwrap();
        connect_put_get(a, b, &key, i);
        b.unregister(reg).unwrap();
    };
    round(0);
    let before = counts();
    for i in 1..=cycles {
        round(i);
    }
    // The peer's socket thread closes its side of each connection as it sees it end.
    let deadline = Instant::now() + Duration::from_secs(5);
    while counts().0 > before.0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    [before, counts()]
}

fn hundred_cycles(inner: &str, test: &str) {
    if !alone_at(&format!("transport::dynamic::node_tests::{test}")) {
        return;
    }
    let (Some(a), Some(b)) = (node_worker(inner), node_worker(inner)) else {
        return;
    };
    let start = Instant::now();
    let [before, after] = node_cycles(&a, &b, 100);
    let took = start.elapsed();
    drop((a, b));
    let end = counts();
    eprintln!(
        "node over {inner}: fds, maps, threads, memfd maps: two workers {before:?}, after 100 \
         cycles {after:?} ({took:?}); both dropped {end:?}"
    );
    assert!(after.0 <= before.0, "{before:?} -> {after:?}");
    // The node path's own mappings exactly; all lines within a few (neighbouring mappings of
    // the allocator and thread stacks merge and split), where a leak would add 100 or more.
    assert!(after.3 <= before.3, "{before:?} -> {after:?}");
    assert!(after.1 <= before.1 + 8, "{before:?} -> {after:?}");
    assert!(after.2 <= before.2, "{before:?} -> {after:?}");
    assert_eq!(end.3, 0, "{before:?} -> {end:?}");
    assert!(
        end.2 + 2 <= before.2,
        "the workers' threads: {before:?} -> {end:?}"
    );
}

#[test]
fn a_hundred_node_cycles_over_loopback_leave_nothing_behind() {
    hundred_cycles(
        "loopback",
        "a_hundred_node_cycles_over_loopback_leave_nothing_behind",
    );
}

#[test]
fn a_hundred_node_cycles_over_ucx_leave_nothing_behind() {
    hundred_cycles("ucx", "a_hundred_node_cycles_over_ucx_leave_nothing_behind");
}

#[test]
fn three_node_workers_over_ucx_in_one_process() {
    let (Some(a), Some(b), Some(c)) = (node_worker("ucx"), node_worker("ucx"), node_worker("ucx"))
    else {
        return;
    };
    three_members(&a, &b, &c);
    shareable_checks(&a, &b);
}

/// Bytes of the puts [`node_put_timing`] times.
const TIMED_LEN: usize = 1 << 20;

/// Prints the time of a blocking put of [`TIMED_LEN`] bytes on `ep` to each key, after a
/// warm-up.
fn time_puts(a: &dyn DynamicWorker, ep: Endpoint, to: &str, keys: [(&str, &[u8]); 2]) {
    let src = vec![7u8; TIMED_LEN];
    for (path, key) in keys {
        for _ in 0..10 {
            a.put(ep, key, 0, &src).unwrap();
        }
        a.flush(ep).unwrap();
        let n = 200;
        let t = Instant::now();
        for _ in 0..n {
            a.put(ep, key, 0, &src).unwrap();
        }
        a.flush(ep).unwrap();
        let each = t.elapsed() / n;
        eprintln!(
            "1 MiB put to {to}, {path}: {each:?} each, {:.2} GB/s",
            TIMED_LEN as f64 / each.as_secs_f64() / 1e9
        );
    }
}

/// Not a check: times 1 MiB puts (blocking, so each is complete) through the node path
/// (shareable memory) and through the inner UCX worker (the same memory registered
/// privately), to a worker of this process and to one of another process, and prints them.
/// `cargo test --release -p shmem-core -- --ignored node_put_timing --nocapture`.
#[test]
#[ignore]
fn node_put_timing() {
    let (Some(a), Some(b)) = (node_worker("ucx"), node_worker("ucx")) else {
        return;
    };
    let mem = SharedMemory::new(TIMED_LEN).unwrap();
    // SAFETY: `mem` outlives both registrations (unregistered below).
    let (shared, shared_key) =
        unsafe { b.register_fd(mem.fd(), 0, mem.as_ptr(), TIMED_LEN) }.unwrap();
    // SAFETY: as above.
    let (private, private_key) = unsafe { b.register(mem.as_ptr(), TIMED_LEN) }.unwrap();
    let ep = a.connect(&b.address()).unwrap();
    let keys = [
        ("node path", &shared_key[..]),
        ("ucx inner", &private_key[..]),
    ];
    time_puts(&a, ep, "this process", keys);
    a.disconnect(ep).unwrap();
    b.unregister(shared).unwrap();
    b.unregister(private).unwrap();

    let mut c = Member::start("ucx");
    let reply = c.ask("big");
    let (shared_key, private_key) = reply.split_once(' ').unwrap();
    let (shared_key, private_key) = (unhex(shared_key), unhex(private_key));
    let ep = a.connect(&c.address).unwrap();
    let keys = [
        ("node path", &shared_key[..]),
        ("ucx inner", &private_key[..]),
    ];
    time_puts(&a, ep, "another process", keys);
    a.disconnect(ep).unwrap();
    c.end();
}
