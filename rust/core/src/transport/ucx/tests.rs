//! One PE reaching itself through UCX (its endpoint to its own worker): every operation of the
//! table on memory this test owns. Skipped, with a line saying so, where UCX is not installed.

use super::*;
use std::time::Duration;

/// A one-PE job whose heap is `mem`, or `None` when UCX cannot be loaded here.
fn one_pe(mem: &mut [u64]) -> Option<Ucx> {
    let mut t = match Ucx::open(0, vec![true], vec![false], Duration::from_secs(20)) {
        Ok(t) => t,
        Err(e @ TransportError::NotLoaded { .. }) => {
            eprintln!("skipped: {e}");
            return None;
        }
        Err(e) => panic!("{e}"),
    };
    let address = t.address();
    t.connect(&[address]).unwrap();
    let base = mem.as_mut_ptr() as usize;
    let key = t
        .register(Segment::Heap, base, std::mem::size_of_val(mem))
        .unwrap();
    t.attach(Segment::Heap, &[key]).unwrap();
    Some(t)
}

#[test]
fn puts_gets_and_atomics_reach_the_memory() {
    let mut mem = vec![0u64; 512];
    let Some(t) = one_pe(&mut mem) else { return };
    let c = Ctx(0);
    t.put(c, 0, Segment::Heap, 8, &7u64.to_ne_bytes()).unwrap();
    let mut out = [0u8; 8];
    t.get(c, 0, Segment::Heap, 8, &mut out).unwrap();
    assert_eq!(u64::from_ne_bytes(out), 7);

    // 8-byte atomics: every operation, the old value back.
    let amo = |op, value, compare| {
        t.amo(c, 0, Segment::Heap, 8, op, 8, value, compare)
            .unwrap()
    };
    assert_eq!(amo(AmoOp::FetchAdd, 5, 0), 7);
    assert_eq!(amo(AmoOp::Fetch, 0, 0), 12);
    assert_eq!(amo(AmoOp::CompareSwap, 1, 99), 12); // no match: unchanged
    assert_eq!(amo(AmoOp::CompareSwap, 40, 12), 12);
    assert_eq!(amo(AmoOp::FetchOr, 0x3, 0), 40);
    assert_eq!(amo(AmoOp::FetchAnd, 0x2a, 0), 43);
    assert_eq!(amo(AmoOp::FetchXor, 0xff, 0), 42);
    assert_eq!(amo(AmoOp::Swap, u64::MAX, 0), 0xd5);
    assert_eq!(amo(AmoOp::Set, 9, 0), 0);
    assert_eq!(amo(AmoOp::Fetch, 0, 0), 9);

    // 4-byte atomics touch their element only.
    let amo32 = |op, value, compare| {
        t.amo(c, 0, Segment::Heap, 20, op, 4, value, compare)
            .unwrap()
    };
    assert_eq!(amo32(AmoOp::FetchAdd, 0xffff_ffff, 0), 0);
    assert_eq!(amo32(AmoOp::CompareSwap, 3, 0xffff_ffff), 0xffff_ffff);
    assert_eq!(amo32(AmoOp::Fetch, 0, 0), 3);

    // Non-blocking calls land by quiet; fence orders.
    let src: Vec<u8> = (0..=255).collect();
    // SAFETY: `src` outlives the quiet below.
    unsafe { t.put_nbi(c, 0, Segment::Heap, 1024, src.as_ptr(), src.len()) }.unwrap();
    t.fence(c).unwrap();
    let mut back = vec![0u8; 256];
    // SAFETY: `back` is neither read nor dropped before the quiet below.
    unsafe { t.get_nbi(c, 0, Segment::Heap, 1024, back.as_mut_ptr(), back.len()) }.unwrap();
    t.quiet(c).unwrap();
    assert_eq!(back, src);
    t.progress().unwrap();
    t.finalize().unwrap();
    assert_eq!(t.counts.amos.load(Ordering::Relaxed), 13);
    assert!(t.put(c, 0, Segment::Heap, 0, &[1]).is_err());
    drop(t);
    assert_eq!(mem[1], 9);
    assert_eq!(mem[2] >> 32, 3);
    assert_eq!(mem[2] & 0xffff_ffff, 0);
}

#[test]
fn refuses_ranges_outside_the_segment() {
    let mut mem = vec![0u64; 4];
    let Some(t) = one_pe(&mut mem) else { return };
    let e = t
        .put(Ctx(0), 0, Segment::Heap, 30, &[0; 4])
        .unwrap_err()
        .to_string();
    assert_eq!(e, "bytes [30, 30+4) are outside PE 0's heap of 32 bytes");
    let e = t
        .get(Ctx(0), 0, Segment::Data, 0, &mut [0; 1])
        .unwrap_err()
        .to_string();
    assert!(e.contains("not registered"), "{e}");
    assert!(t.put(Ctx(0), 1, Segment::Heap, 0, &[0]).is_err());
    assert!(t
        .amo(Ctx(0), 0, Segment::Heap, 4, AmoOp::Fetch, 8, 0, 0)
        .is_err());
}

#[test]
fn a_short_key_is_refused_with_the_pe() {
    let mut mem = vec![0u64; 4];
    let Some(mut t) = one_pe(&mut mem) else {
        return;
    };
    let e = t
        .attach(Segment::Control, &[vec![1, 2, 3]])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "PE 0's remote key is malformed: 3 bytes, expected at least 16"
    );
}

#[test]
fn not_loaded_names_the_file_and_the_package() {
    let e = TransportError::NotLoaded {
        library: ffi::LIBRARY.into(),
        why: "libucp.so.0: cannot open shared object file: No such file or directory".into(),
        package: PACKAGE,
    };
    assert_eq!(
        e.to_string(),
        "cannot load libucp.so.0 (libucp.so.0: cannot open shared object file: No such file or \
         directory): install libucx0 (apt-get install libucx0)"
    );
}

/// Two PEs in this process, each taking the other for a PE of another node, each with a heap
/// of `mem`'s halves; `None` when UCX cannot be loaded here.
fn two_nodes(mem: &mut [u64]) -> Option<(Ucx, Ucx)> {
    let open = |me: usize| {
        let remote = vec![me != 0, me != 1];
        Ucx::open(me, vec![true, true], remote, Duration::from_secs(20))
    };
    let mut a = match open(0) {
        Ok(t) => t,
        Err(e @ TransportError::NotLoaded { .. }) => {
            eprintln!("skipped: {e}");
            return None;
        }
        Err(e) => panic!("{e}"),
    };
    let mut b = open(1).unwrap();
    let addresses = [a.address(), b.address()];
    a.connect(&addresses).unwrap();
    b.connect(&addresses).unwrap();
    let (ma, mb) = mem.split_at_mut(mem.len() / 2);
    let ka = a
        .register(
            Segment::Heap,
            ma.as_mut_ptr() as usize,
            std::mem::size_of_val(ma),
        )
        .unwrap();
    let kb = b
        .register(
            Segment::Heap,
            mb.as_mut_ptr() as usize,
            std::mem::size_of_val(mb),
        )
        .unwrap();
    a.attach(Segment::Heap, &[ka.clone(), kb.clone()]).unwrap();
    b.attach(Segment::Heap, &[ka, kb]).unwrap();
    Some((a, b))
}

#[test]
fn a_dead_peer_fails_the_requests_to_it_naming_it() {
    let mut mem = vec![0u64; 64];
    let Some((a, b)) = two_nodes(&mut mem) else {
        return;
    };
    let c = Ctx(0);
    a.put(c, 1, Segment::Heap, 8, &7u64.to_ne_bytes()).unwrap();
    a.quiet(c).unwrap();
    let mut out = [0u8; 8];
    a.get(c, 1, Segment::Heap, 8, &mut out).unwrap();
    assert_eq!(u64::from_ne_bytes(out), 7);
    // PE 1 goes as a dead process's would: its connections close. Without error handling UCX
    // aborted this process here; with it, the requests to PE 1 fail and say who is gone.
    drop(b);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let e = loop {
        let r = a
            .put(c, 1, Segment::Heap, 8, &8u64.to_ne_bytes())
            .and_then(|()| a.quiet(c));
        if let Err(e) = r {
            break e;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "puts to a dead PE still succeed after 60 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(
        matches!(e, TransportError::PeerFailed { pe: 1, .. }),
        "wanted PE 1 lost, got: {e}"
    );
    // PE 0 itself is still reached.
    a.put(c, 0, Segment::Heap, 0, &3u64.to_ne_bytes()).unwrap();
    a.get(c, 0, Segment::Heap, 0, &mut out).unwrap();
    assert_eq!(u64::from_ne_bytes(out), 3);
}

#[test]
fn the_tcp_segments_are_set_only_where_ucx_may_use_tcp() {
    assert!(tls_has_tcp(None));
    assert!(tls_has_tcp(Some("tcp,self")) && tls_has_tcp(Some("sm, tcp")));
    assert!(tls_has_tcp(Some("all")) && tls_has_tcp(Some("^sm")));
    assert!(!tls_has_tcp(Some("sm,self")) && !tls_has_tcp(Some("^tcp,sm")));
    assert!(!tls_has_tcp(Some("tcp_sockcm")));
}

#[test]
fn a_progress_thread_stands_by_while_a_call_waits_and_resumes_when_it_leaves() {
    use std::sync::atomic::AtomicUsize;
    // A bound far past the test's patience: every return from a stand-by below is a wakeup.
    let standby = Arc::new(Standby::bounded(Duration::from_secs(600)));
    let steps = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&steps);
    let waiting = standby.enter();
    let thread = spawn_progress(
        "shmem-test",
        "a test progress thread",
        None,
        Arc::clone(&standby),
        move |_, _| {
            counted.fetch_add(1, Ordering::SeqCst);
            Stepped::Idle
        },
    )
    .unwrap();
    // Stepping with nothing to do, it would step every nap (at most 1 ms): not once here.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        steps.load(Ordering::SeqCst),
        0,
        "stepped while a call waited"
    );
    // The last waiting call to leave wakes it.
    drop(waiting);
    let left = Instant::now();
    while steps.load(Ordering::SeqCst) == 0 {
        assert!(
            left.elapsed() < Duration::from_secs(30),
            "not woken when the call left"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // A second call: the thread stands by again once its current nap ends (its naps are
    // 1 ms at most).
    let waiting = standby.enter();
    std::thread::sleep(Duration::from_millis(50));
    let settled = steps.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        steps.load(Ordering::SeqCst) <= settled + 1,
        "stepped {} times while the second call waited",
        steps.load(Ordering::SeqCst) - settled
    );
    // Stopping wakes a thread that stands by.
    let stopping = Instant::now();
    thread.stop("test");
    assert!(
        stopping.elapsed() < Duration::from_secs(30),
        "stop waited for the stand-by"
    );
    drop(waiting);
}

/// An unreachable peer's `ucp_ep_create` error says what to check; any other failure is UCX's
/// words alone.
#[test]
fn an_unreachable_peer_is_explained() {
    let api = match load_api() {
        Ok(api) => api,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let unreachable = ep_create_failure(api, -6);
    assert!(unreachable.starts_with(&api.describe(-6)), "{unreachable}");
    assert!(
        unreachable.contains("UCX_NET_DEVICES") && unreachable.contains("when the process starts"),
        "{unreachable}"
    );
    let other = ep_create_failure(api, -3);
    assert_eq!(other, api.describe(-3));
}
