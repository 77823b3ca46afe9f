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
    // SAFETY: as above.
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

    // Puts from and gets into memory this worker registered itself, its key kept to itself
    // (UCX passes the registration's memory handle): a range that ends where the registration
    // does, and one that runs past its end; then the same memory unregistered.
    let mut local: Vec<u8> = (0..3 * 4096).map(|i| (i * 7 % 251) as u8).collect();
    let pattern = local.clone();
    // SAFETY: `local` outlives its registration (withdrawn below).
    let (reg_l, _) = unsafe { a.register(local.as_mut_ptr(), 2 * 4096) }.unwrap();
    for from in [4096, 6144] {
        a.put(ab, &key_b, 0, &local[from..from + 4096]).unwrap();
        a.flush(ab).unwrap();
        assert_eq!(mem_b[..], pattern[from..from + 4096], "put from {from}");
    }
    mem_b
        .iter_mut()
        .enumerate()
        .for_each(|(i, x)| *x = (i % 13) as u8);
    for into in [4096, 6144] {
        local[into..into + 4096].fill(0);
        // SAFETY: `local` lives and is untouched until the flush.
        unsafe { a.get_nb(ab, &key_b, 0, local.as_mut_ptr().add(into), 4096) }.unwrap();
        a.flush(ab).unwrap();
        assert_eq!(local[into..into + 4096], mem_b[..], "get into {into}");
    }
    a.unregister(reg_l).unwrap();
    local.fill(0);
    a.get(ab, &key_b, 0, &mut local[..4096]).unwrap();
    assert_eq!(local[..4096], mem_b[..]);

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

/// Set in a run of one test alone, in a process of its own ([`alone`]); a marker between this
/// test binary and its own children, not a setting of the library (no `SHMEM_` prefix).
const ALONE_VAR: &str = "DYNAMIC_TRANSPORT_TEST_ALONE";

/// Whether this is `test` running alone in a process of its own; if not, runs it so (the test
/// binary again, this test only) and asserts that it passed. Counts of the process's
/// descriptors and mappings mean nothing while other tests run beside them.
fn alone(test: &str) -> bool {
    alone_at(&format!("transport::dynamic::tests::{test}"))
}

/// [`alone`] for the test at `path` (from the crate's root).
pub(crate) fn alone_at(path: &str) -> bool {
    if std::env::var_os(ALONE_VAR).is_some() {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", path, "--nocapture", "--test-threads=1"])
        .env(ALONE_VAR, "1")
        .output()
        .unwrap();
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{path} alone: {}", out.status);
    false
}

/// Round `i` of a cycle: `a` connects to `b`, puts a byte at `key`, gets it back, disconnects.
pub(crate) fn connect_put_get(a: &dyn DynamicWorker, b: &dyn DynamicWorker, key: &[u8], i: usize) {
    let ep = a.connect(&b.address()).unwrap();
    a.put(ep, key, (i % 1000) as u64, &[i as u8]).unwrap();
    a.flush(ep).unwrap();
    let mut x = [0u8];
    a.get(ep, key, (i % 1000) as u64, &mut x).unwrap();
    assert_eq!(x[0], i as u8);
    a.disconnect(ep).unwrap();
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
        connect_put_get(a, b, &key, i);
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
    if !alone("a_hundred_cycles_leave_nothing_behind") {
        return;
    }
    let (a, b) = (LoopbackWorker::new(), LoopbackWorker::new());
    let [before, after] = cycle(&a, &b, 100);
    eprintln!("loopback: fds, maps before {before:?}, after 100 cycles {after:?}");
    assert!(after.0 <= before.0, "{before:?} -> {after:?}");
    assert!(after.1 <= before.1 + 2, "{before:?} -> {after:?}");
}

/// A UCX worker, or `None` (with a line saying so) where UCX is not installed.
pub(crate) fn ucx_worker() -> Option<super::ucx::UcxWorker> {
    match super::ucx::UcxWorker::open(std::time::Duration::from_secs(10)) {
        Ok(w) => Some(w),
        Err(e @ TransportError::NotLoaded { .. }) => {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn three_ucx_workers_connect_on_demand() {
    let (Some(a), Some(b), Some(c)) = (ucx_worker(), ucx_worker(), ucx_worker()) else {
        return;
    };
    three_members(&a, &b, &c);
}

#[test]
fn a_hundred_ucx_cycles_leave_nothing_behind() {
    if !alone("a_hundred_ucx_cycles_leave_nothing_behind") {
        return;
    }
    // The process's own before any worker (a first worker loads UCX: its mappings stay).
    drop(ucx_worker());
    let base = fds_and_maps();
    let (Some(a), Some(b)) = (ucx_worker(), ucx_worker()) else {
        return;
    };
    let start = std::time::Instant::now();
    let [before, after] = cycle(&a, &b, 100);
    let took = start.elapsed();
    drop(a);
    let connecting_dropped = fds_and_maps();
    drop(b);
    let end = fds_and_maps();
    eprintln!(
        "ucx: fds, maps: no worker {base:?}; two workers {before:?}, after 100 cycles {after:?} \
         ({took:?}); connecting worker dropped {connecting_dropped:?}; both dropped {end:?}"
    );
    // Mappings do not grow with cycles. Descriptors do: UCX 1.13 keeps each closed endpoint's
    // TCP connection (both of its ends are in this process: 2 per cycle) until one of the two
    // workers ends; dropping the connecting worker releases them all.
    assert!(after.1 <= before.1 + 2, "{before:?} -> {after:?}");
    assert!(after.0 <= before.0 + 2 * 100 + 2, "{before:?} -> {after:?}");
    // A few mappings UCX makes once per process (its memory pools) stay.
    assert!(
        end.0 <= base.0 && end.1 <= base.1 + 8,
        "{base:?} -> {end:?}"
    );
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(crate) fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

/// Set in the children of [`a_killed_member_fails_cleanly_and_a_newcomer_is_reached`].
const CHILD_VAR: &str = "DYNAMIC_TRANSPORT_TEST_CHILD";

/// A member in a process of its own (the test binary run again, this test only): publishes its
/// address and key on stdout, then answers `show <offset> <len>` with the bytes there, until
/// its stdin closes. Does nothing in a plain test run.
#[test]
fn dynamic_ucx_child() {
    use std::io::BufRead;
    if std::env::var_os(CHILD_VAR).is_none() {
        return;
    }
    let Some(w) = ucx_worker() else { return };
    let mut mem = vec![0u8; 4096];
    // SAFETY: `mem` outlives `w`: both are dropped below, `w` first.
    let (_reg, key) = unsafe { w.register(mem.as_mut_ptr(), mem.len()) }.unwrap();
    println!("addr {}", hex(&w.address()));
    println!("key {}", hex(&key));
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let f: Vec<&str> = line.split_whitespace().collect();
        if let ["show", off, len] = f[..] {
            let (off, len): (usize, usize) = (off.parse().unwrap(), len.parse().unwrap());
            // SAFETY: peers write this memory through UCX; read it volatile after their flush.
            let bytes: Vec<u8> = (off..off + len)
                .map(|i| unsafe { std::ptr::read_volatile(mem.as_ptr().add(i)) })
                .collect();
            println!("bytes {}", hex(&bytes));
        }
    }
    drop(w);
    drop(mem);
}

/// A child member: its process, its stdin, its stdout's lines, its address and its key.
struct Child {
    proc: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: ChildLines,
    address: Vec<u8>,
    key: Vec<u8>,
}

/// A child's stdout, by lines.
pub(crate) type ChildLines = std::io::Lines<std::io::BufReader<std::process::ChildStdout>>;

/// The test binary run again as a child member: the test at `test` (from the crate's root)
/// alone, with the marker `var` set to `value`, its stdin and stdout piped to this process.
pub(crate) fn spawn_child(
    test: &str,
    var: &str,
    value: &str,
) -> (std::process::Child, std::process::ChildStdin, ChildLines) {
    use std::io::BufRead;
    let mut proc = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(var, value)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = proc.stdin.take().unwrap();
    let lines = std::io::BufReader::new(proc.stdout.take().unwrap()).lines();
    (proc, stdin, lines)
}

/// The hex bytes after `name` on the next line of `lines` that holds it.
pub(crate) fn field(lines: &mut ChildLines, name: &str) -> Vec<u8> {
    loop {
        let l = lines.next().expect("the child's output").unwrap();
        // The first line follows the harness's `test ... ` on the same line.
        if let Some(i) = l.find(name) {
            return unhex(l[i + name.len()..].trim());
        }
    }
}

impl Child {
    fn start() -> Child {
        let (proc, stdin, mut lines) = spawn_child(
            "transport::dynamic::tests::dynamic_ucx_child",
            CHILD_VAR,
            "1",
        );
        let address = field(&mut lines, "addr ");
        let key = field(&mut lines, "key ");
        Child {
            proc,
            stdin,
            lines,
            address,
            key,
        }
    }

    fn show(&mut self, off: usize, len: usize) -> Vec<u8> {
        use std::io::Write;
        writeln!(self.stdin, "show {off} {len}").unwrap();
        loop {
            let l = self.lines.next().expect("the child's answer").unwrap();
            if let Some(v) = l.strip_prefix("bytes ") {
                return unhex(v.trim());
            }
        }
    }
}

#[test]
fn a_killed_member_fails_cleanly_and_a_newcomer_is_reached() {
    let Some(a) = ucx_worker() else { return };
    let mut c1 = Child::start();
    let ep = a.connect(&c1.address).unwrap();
    a.put(ep, &c1.key, 8, b"from parent").unwrap();
    a.flush(ep).unwrap();
    assert_eq!(c1.show(8, 11), b"from parent");
    let mut got = [0u8; 11];
    a.get(ep, &c1.key, 8, &mut got).unwrap();
    assert_eq!(&got, b"from parent");

    // SIGKILL: operations to it fail within the bound, and so does nothing hang.
    c1.proc.kill().unwrap();
    c1.proc.wait().unwrap();
    let killed = std::time::Instant::now();
    let err = loop {
        let r = a.put(ep, &c1.key, 0, &[1; 64]).and_then(|()| a.flush(ep));
        match r {
            Err(e) => break e,
            Ok(()) => assert!(
                killed.elapsed() < std::time::Duration::from_secs(30),
                "operations to a killed member still succeed"
            ),
        }
    };
    let failed_after = killed.elapsed();
    let t = std::time::Instant::now();
    let closed = a.disconnect(ep);
    eprintln!(
        "ucx: killed member: failed after {failed_after:?} ({err}); disconnect {:?} in {:?}",
        closed.err().map(|e| e.to_string()),
        t.elapsed()
    );
    assert!(
        matches!(
            err,
            TransportError::PeerGone { .. } | TransportError::Deadline { .. }
        ),
        "{err}"
    );
    assert!(failed_after < std::time::Duration::from_secs(25));
    assert!(t.elapsed() < std::time::Duration::from_secs(25));

    // A newcomer, reached on demand.
    let mut c2 = Child::start();
    let ep2 = a.connect(&c2.address).unwrap();
    let buf = b"to the newcomer".to_vec();
    // SAFETY: `buf` lives and is unchanged until the flush.
    unsafe { a.put_nb(ep2, &c2.key, 100, buf.as_ptr(), buf.len()) }.unwrap();
    a.flush(ep2).unwrap();
    assert_eq!(c2.show(100, buf.len()), buf);
    a.disconnect(ep2).unwrap();
    drop(c2.stdin);
    assert!(c2.proc.wait().unwrap().success());
}

/// Sends `sig` to the child `c`.
fn signal(c: &Child, sig: i32) {
    // SAFETY: kill(2) of our own child's pid.
    let r = unsafe { libc::kill(c.proc.id() as libc::pid_t, sig) };
    assert_eq!(r, 0, "kill({}, {sig})", c.proc.id());
    if sig == libc::SIGSTOP {
        // kill(2) only sends it: wait until every thread of the child is stopped, so that no
        // operation issued after this is served by a thread still on its way to the stop.
        let pid = c.proc.id();
        let stopped = || {
            std::fs::read_dir(format!("/proc/{pid}/task"))
                .map(|tasks| {
                    tasks.flatten().all(|t| {
                        std::fs::read_to_string(t.path().join("stat")).is_ok_and(|st| {
                            // The state follows the command's closing parenthesis.
                            st.rsplit_once(')')
                                .is_some_and(|(_, rest)| rest.trim_start().starts_with('T'))
                        })
                    })
                })
                .unwrap_or(false)
        };
        let t = std::time::Instant::now();
        while !stopped() {
            assert!(
                t.elapsed() < std::time::Duration::from_secs(10),
                "child {pid} did not stop within 10 s of SIGSTOP"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// A put, a flush and a get to the live member `c` on `ep`, with how long they took.
fn round_trip(a: &dyn DynamicWorker, ep: Endpoint, c: &Child, i: u8) -> std::time::Duration {
    let t = std::time::Instant::now();
    a.put(ep, &c.key, 200, &[i; 32]).unwrap();
    a.flush(ep).unwrap();
    let mut got = [0u8; 32];
    a.get(ep, &c.key, 200, &mut got).unwrap();
    assert_eq!(got, [i; 32]);
    t.elapsed()
}

#[test]
fn a_wait_for_a_stopped_member_holds_up_no_other_operation() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};
    let Some(a) = ucx_worker() else { return };
    let (mut stopped, mut live, mut leaving) = (Child::start(), Child::start(), Child::start());
    // A failed check leaves no stopped child behind.
    struct Reaper(Vec<u32>);
    impl Drop for Reaper {
        fn drop(&mut self) {
            if std::thread::panicking() {
                for &pid in &self.0 {
                    // SAFETY: kill(2) of a child of this test, not yet waited for.
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                }
            }
        }
    }
    let _reaper = Reaper(vec![stopped.proc.id(), live.proc.id(), leaving.proc.id()]);
    let ep_stopped = a.connect(&stopped.address).unwrap();
    let ep_live = a.connect(&live.address).unwrap();
    let ep_leaving = a.connect(&leaving.address).unwrap();
    for (ep, c) in [
        (ep_stopped, &stopped),
        (ep_live, &live),
        (ep_leaving, &leaving),
    ] {
        round_trip(&a, ep, c, 1);
    }
    let buf = vec![7u8; 1 << 16];

    // A flush to a stopped member waits; a put, flush and get to a live one go on meanwhile,
    // and a forced disconnect of the stopped one ends that flush at once.
    signal(&stopped, libc::SIGSTOP);
    let waiting = AtomicBool::new(true);
    std::thread::scope(|s| {
        let flusher = s.spawn(|| {
            let t = Instant::now();
            // SAFETY: `buf` outlives the flush (or the disconnect that ends it).
            let r = unsafe { a.put_nb(ep_stopped, &stopped.key, 0, buf.as_ptr(), 4096) }
                .and_then(|()| a.flush(ep_stopped));
            waiting.store(false, Ordering::SeqCst);
            (r, t.elapsed())
        });
        std::thread::sleep(Duration::from_millis(300));
        if !waiting.load(Ordering::SeqCst) {
            let (r, took) = flusher.join().unwrap();
            panic!("the put and flush to a stopped member ended after {took:?}: {r:?}");
        }
        let took = round_trip(&a, ep_live, &live, 2);
        assert!(
            waiting.load(Ordering::SeqCst),
            "the flush to a stopped member ended before the check"
        );
        let t = Instant::now();
        a.disconnect_gone(ep_stopped).unwrap();
        let forced = t.elapsed();
        let (r, flush_took) = flusher.join().unwrap();
        eprintln!(
            "ucx: live member's round trip {took:?} while a flush to a stopped one waited; \
             forced disconnect {forced:?}; the flush ended after {flush_took:?}: {r:?}"
        );
        assert!(took < Duration::from_secs(1), "{took:?}");
        assert!(forced < Duration::from_secs(1), "{forced:?}");
        assert!(
            matches!(r, Err(TransportError::Disconnected { .. })),
            "{r:?}"
        );
        assert!(flush_took < Duration::from_secs(2), "{flush_took:?}");
    });

    // A graceful disconnect from a stopped member, with a put in flight to it, may wait for
    // it; the live member is reached meanwhile; killed, the member fails the disconnect's
    // flush and it returns.
    signal(&leaving, libc::SIGSTOP);
    // SAFETY: `buf` outlives the disconnect, which ends the put.
    unsafe { a.put_nb(ep_leaving, &leaving.key, 0, buf.as_ptr(), 4096) }.unwrap();
    let killed = std::sync::Mutex::new(None::<Instant>);
    std::thread::scope(|s| {
        let closer = s.spawn(|| {
            let r = a.disconnect(ep_leaving);
            (r, killed.lock().unwrap().map(|k| k.elapsed()))
        });
        std::thread::sleep(Duration::from_millis(300));
        let took = round_trip(&a, ep_live, &live, 3);
        assert!(took < Duration::from_secs(1), "{took:?}");
        *killed.lock().unwrap() = Some(Instant::now());
        leaving.proc.kill().unwrap();
        leaving.proc.wait().unwrap();
        let (r, after_kill) = closer.join().unwrap();
        eprintln!(
            "ucx: live member's round trip {took:?} while a disconnect from a stopped one \
             waited; it returned {after_kill:?} after the kill: {r:?}"
        );
        // The put may have left in the kernel's socket buffer already, so the close need not
        // wait for the member at all; when it did wait, the kill ends it promptly.
        if let Some(after_kill) = after_kill {
            assert!(after_kill < Duration::from_secs(5), "{after_kill:?}");
        }
    });
    assert_eq!(live.show(200, 4), [3; 4]);

    // A killed member's endpoint, disconnected as gone before any failure was seen.
    stopped.proc.kill().unwrap();
    stopped.proc.wait().unwrap();
    let t = Instant::now();
    let ep = a.connect(&live.address).unwrap();
    round_trip(&a, ep, &live, 4);
    live.proc.kill().unwrap();
    live.proc.wait().unwrap();
    a.disconnect_gone(ep).unwrap();
    let gone = t.elapsed();
    assert!(gone < Duration::from_secs(2), "{gone:?}");
    assert!(matches!(
        a.flush(ep),
        Err(TransportError::Disconnected { .. })
    ));
    a.disconnect(ep_live).unwrap_or_else(|e| eprintln!("{e}"));
}
