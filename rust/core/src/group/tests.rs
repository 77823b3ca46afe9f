//! The group API in one process, over loopback workers and a store this process serves:
//! memory reached by rank and name, a member leaving and one dropped (endpoints torn down,
//! calls to them failing naming group, rank and id), a withdrawn registration, barriers and
//! allgathers while members come and go. Across processes and over UCX:
//! `rust/core/tests/group.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use shmem_store::addr::StoreAddr;
use shmem_store::{Server, Store, TcpDial};

use super::*;
use crate::dynamic::loopback::LoopbackWorker;
use crate::dynamic::node::NodeWorker;

#[path = "../../tests/common/mod.rs"]
mod common;
use common::Watchdog;

const T: Duration = Duration::from_secs(20);

/// A store of groups on a free loopback port, served by this process.
fn store() -> (Server, TcpDial) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dial = TcpDial {
        addr: StoreAddr::parse(&format!("tcp://127.0.0.1:{port}"), None).unwrap(),
        tls: None,
        job: "group-api".into(),
    };
    let s = Store::serve_or_join(&dial, None, 256, T).unwrap();
    (s.server.expect("this process binds the address"), dial)
}

fn options(size: u32) -> GroupOptions {
    let mut o = GroupOptions::new(size);
    o.timeout = Duration::from_secs(10);
    o.connect_timeout = T;
    o.member.heartbeat = Duration::from_millis(200);
    o.member.loss = Duration::from_secs(2);
    o.member.control_timeout = T;
    o.worker = Some(Arc::new(LoopbackWorker::new()));
    o
}

fn join(dial: &TcpDial, group: &str, id: &str) -> Group {
    Group::join(dial, group, id, options(8)).unwrap()
}

/// Waits for an event `f` accepts, skipping others.
fn wait_event(g: &Group, f: impl Fn(&MemberEvent) -> bool) -> MemberEvent {
    let deadline = Instant::now() + T;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match g.next_event(left) {
            Some(e) if f(&e) => return e,
            Some(_) => {}
            None => panic!(
                "group {} rank {}: no such event within {T:?}",
                g.name(),
                g.rank()
            ),
        }
    }
}

#[test]
fn members_reach_each_others_memory_by_rank_and_name() {
    let _watchdog = Watchdog::new(
        "members_reach_each_others_memory_by_rank_and_name",
        Duration::from_secs(120),
    );
    let (_server, dial) = store();
    let a = join(&dial, "mem", "a");
    let b = join(&dial, "mem", "b");
    let c = join(&dial, "mem", "c");
    assert_eq!((a.rank(), b.rank(), c.rank()), (0, 1, 2));
    assert_eq!(
        c.members().unwrap(),
        vec![(0, "a".into()), (1, "b".into()), (2, "c".into())]
    );
    let mut mem: Vec<Vec<u8>> = (0..3).map(|_| vec![0u8; 4096]).collect();
    for (g, m) in [&a, &b, &c].into_iter().zip(mem.iter_mut()) {
        // SAFETY: `mem` outlives the groups (dropped after them, below).
        unsafe { g.register("heap", m.as_mut_ptr(), m.len()) }.unwrap();
    }
    // Every member writes its rank's line into every member's memory, itself included.
    for g in [&a, &b, &c] {
        for r in 0..3 {
            let line = format!("from {}", g.rank());
            g.put(r, "heap", u64::from(g.rank()) * 64, line.as_bytes())
                .unwrap();
            g.flush(r).unwrap();
        }
    }
    for g in [&a, &b, &c] {
        for r in 0..3 {
            for from in 0..3u32 {
                let mut got = [0u8; 6];
                g.get(r, "heap", u64::from(from) * 64, &mut got).unwrap();
                assert_eq!(&got, format!("from {from}").as_bytes());
            }
        }
    }
    // The non-blocking forms complete at the flush.
    let src = b"non-blocking".to_vec();
    let mut back = vec![0u8; src.len()];
    // SAFETY: `src` and `back` live, untouched, until the flush.
    unsafe {
        a.put_nb(2, "heap", 1000, src.as_ptr(), src.len()).unwrap();
        a.flush(2).unwrap();
        a.get_nb(2, "heap", 1000, back.as_mut_ptr(), back.len())
            .unwrap();
    }
    a.flush(2).unwrap();
    assert_eq!(back, src);

    // Refused: a name nobody registered, a rank nobody holds, a range outside.
    let e = a.put(1, "nothing", 0, b"x").unwrap_err();
    assert!(
        matches!(e, GroupError::NoRegistration { rank: 1, .. }),
        "{e}"
    );
    assert!(
        e.to_string().contains("'mem'") && e.to_string().contains("'nothing'"),
        "{e}"
    );
    let e = a.put(7, "heap", 0, b"x").unwrap_err();
    assert!(matches!(e, GroupError::NoMember { rank: 7, .. }), "{e}");
    let e = a.put(1, "heap", 4090, &[0; 8]).unwrap_err();
    assert!(matches!(e, GroupError::Transport { rank: 1, .. }), "{e}");
    // SAFETY: refused before anything is registered.
    let e = unsafe { a.register("heap", mem[0].as_mut_ptr(), 8) }.unwrap_err();
    assert!(
        matches!(e, GroupError::InvalidArgument { arg: "name", .. }),
        "{e}"
    );

    // A withdrawn registration: confirmed by every member, then refused to all of them,
    // cached keys included.
    c.unregister("heap").unwrap();
    for g in [&a, &b, &c] {
        let e = g.put(2, "heap", 0, b"late").unwrap_err();
        assert!(
            matches!(e, GroupError::NoRegistration { rank: 2, .. }),
            "{e}"
        );
    }
    // Registered again under the same name: reached again.
    // SAFETY: as above.
    unsafe { c.register("heap", mem[2].as_mut_ptr(), 4096) }.unwrap();
    a.put(2, "heap", 8, b"again").unwrap();
    a.flush(2).unwrap();

    // One leaves: the others see it, their endpoint to it is gone, calls to it name it.
    c.leave().unwrap();
    for g in [&a, &b] {
        wait_event(g, |e| matches!(e, MemberEvent::Left { rank: 2, .. }));
        let e = g.put(2, "heap", 0, b"x").unwrap_err();
        assert!(matches!(e, GroupError::Gone { rank: 2, .. }), "{e}");
        assert!(e.to_string().contains("left the group"), "{e}");
    }
    assert_eq!(&mem[2][8..13], b"again");
    // One is dropped without leaving: down, as if its process died.
    drop(b);
    let e = wait_event(&a, |e| matches!(e, MemberEvent::Down { .. }));
    assert!(matches!(e, MemberEvent::Down { rank: 1, .. }), "{e:?}");
    let e = a.get(1, "heap", 0, &mut [0; 4]).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, GroupError::Gone { rank: 1, .. }), "{e}");
    assert!(text.contains("'mem'") && text.contains("rank 1"), "{text}");
    // A newcomer takes the lowest free rank at or after the cursor (3), and is reached.
    let d = join(&dial, "mem", "d");
    assert_eq!(d.rank(), 3);
    // SAFETY: as above.
    unsafe { d.register("heap", mem[1].as_mut_ptr(), 4096) }.unwrap();
    a.put(3, "heap", 0, b"newcomer").unwrap();
    a.flush(3).unwrap();
    assert_eq!(&mem[1][..8], b"newcomer");
    d.leave().unwrap();
    a.leave().unwrap();
}

#[test]
fn collectives_count_the_members_of_their_round() {
    let _watchdog = Watchdog::new(
        "collectives_count_the_members_of_their_round",
        Duration::from_secs(120),
    );
    let (_server, dial) = store();
    let a = Arc::new(join(&dial, "coll", "a"));
    let b = Arc::new(join(&dial, "coll", "b"));
    let run = |g: &Arc<Group>, data: Vec<u8>| {
        let g = Arc::clone(g);
        std::thread::spawn(move || g.allgather(&data))
    };
    let (ta, tb) = (run(&a, b"A".to_vec()), run(&b, b"BB".to_vec()));
    let (ga, gb) = (ta.join().unwrap().unwrap(), tb.join().unwrap().unwrap());
    assert_eq!(ga, gb);
    assert_eq!(ga.data, vec![(0, b"A".to_vec()), (1, b"BB".to_vec())]);
    assert!(ga.gone.is_empty());

    // A newcomer takes part from the next round begun after its join.
    let c = Arc::new(join(&dial, "coll", "c"));
    let ts: Vec<_> = [&a, &b, &c]
        .iter()
        .map(|g| {
            let g = Arc::clone(g);
            std::thread::spawn(move || g.barrier())
        })
        .collect();
    let rounds: Vec<Gathered> = ts.into_iter().map(|t| t.join().unwrap().unwrap()).collect();
    assert!(
        rounds
            .iter()
            .all(|r| r.data.len() == 3 && r.round == ga.round + 1),
        "{rounds:?}"
    );

    // A member dropped while the others wait in a barrier: named, not waited for.
    let ts: Vec<_> = [&a, &b]
        .iter()
        .map(|g| {
            let g = Arc::clone(g);
            std::thread::spawn(move || g.barrier())
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    drop(Arc::try_unwrap(c).unwrap());
    for t in ts {
        let r = t.join().unwrap().unwrap();
        assert_eq!(r.gone, vec![2], "{r:?}");
        assert_eq!(r.data.len(), 2, "{r:?}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    // A member alive that does not take part: the others fail within the bound, naming it.
    let mut o = options(8);
    o.timeout = Duration::from_millis(800);
    let d = Group::join(&dial, "coll", "d", o).unwrap();
    let started = Instant::now();
    let e = d.barrier().unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(&e, GroupError::Timeout { missing, .. } if missing.contains(&0)),
        "{e}"
    );
    drop(d);
    let a = Arc::try_unwrap(a).unwrap();
    let b = Arc::try_unwrap(b).unwrap();
    // a and b go on: d's round is theirs too (it began with them in it), and d's contribution
    // was in before it went.
    let tb = std::thread::spawn(move || {
        let r = b.barrier();
        (b, r)
    });
    let ra = a.barrier().unwrap();
    let (b, rb) = tb.join().unwrap();
    let rb = rb.unwrap();
    assert_eq!(ra.round, rb.round);
    assert!(
        ra.gone.is_empty() && ra.data.iter().any(|(r, _)| *r == 3),
        "{ra:?}"
    );
    a.leave().unwrap();
    b.leave().unwrap();
}

#[test]
fn the_application_keys_and_bad_arguments() {
    let _watchdog = Watchdog::new(
        "the_application_keys_and_bad_arguments",
        Duration::from_secs(120),
    );
    let (_server, dial) = store();
    let a = join(&dial, "keys", "a");
    let b = Arc::new(join(&dial, "keys", "b"));
    let waiter = {
        let b = Arc::clone(&b);
        std::thread::spawn(move || b.watch("k", None, T))
    };
    std::thread::sleep(Duration::from_millis(100));
    // Other calls of the group go on while one waits.
    b.set("other", b"x").unwrap();
    assert_eq!(b.members().unwrap().len(), 2);
    a.set("k", b"v").unwrap();
    assert_eq!(waiter.join().unwrap().unwrap().as_deref(), Some(&b"v"[..]));
    let e = a
        .watch("k", Some(b"v"), Duration::from_millis(200))
        .unwrap_err();
    assert!(e.to_string().contains("app/k"), "{e}");
    let e = Group::join(&dial, "a/b", "x", options(8)).unwrap_err();
    assert!(
        matches!(e, GroupError::InvalidArgument { arg: "name", .. }),
        "{e}"
    );
    let e = Group::join(&dial, "keys", "a", options(8)).unwrap_err();
    assert!(matches!(e, GroupError::Store { op: "join", .. }), "{e}");
    drop(b);
    a.leave().unwrap();
}

/// Members over node workers without UCX, in one process: memory the group allocates is
/// reached through the members' mappings, private memory through the loopback (a worker of
/// this process); a withdrawn allocation is refused; the default worker is the node path.
#[test]
fn allocated_memory_is_shareable_and_withdrawn_with_its_registration() {
    let _watchdog = Watchdog::new(
        "allocated_memory_is_shareable_and_withdrawn_with_its_registration",
        Duration::from_secs(120),
    );
    let (_server, dial) = store();
    let node = || {
        let mut o = options(8);
        let w = NodeWorker::without_ucx("UCX left out by this test".into(), T).unwrap();
        o.worker = Some(Arc::new(w));
        o
    };
    let a = Group::join(&dial, "alloc", "a", node()).unwrap();
    let b = Group::join(&dial, "alloc", "b", node()).unwrap();
    assert_eq!(a.worker().name(), "node");
    let at = a.alloc("shared", 8192).unwrap();
    let e = a.alloc("shared", 64).unwrap_err();
    assert!(
        matches!(e, GroupError::InvalidArgument { op: "alloc", .. }),
        "{e}"
    );
    b.put(0, "shared", 4000, b"mapped").unwrap();
    b.flush(0).unwrap();
    // SAFETY: 8192 bytes at `at` live until "shared" is unregistered; b's put completed.
    let seen: Vec<u8> = (4000..4006)
        .map(|i| unsafe { std::ptr::read_volatile(at.add(i)) })
        .collect();
    assert_eq!(seen, b"mapped");
    // SAFETY: as above; nothing else writes meanwhile.
    unsafe { at.add(100).copy_from(b"owner".as_ptr(), 5) };
    let mut got = [0u8; 5];
    b.get(0, "shared", 100, &mut got).unwrap();
    assert_eq!(&got, b"owner");
    let e = b.put(0, "shared", 8190, &[0; 4]).unwrap_err();
    assert!(e.to_string().contains("outside"), "{e}");
    // Private memory of a worker of this process: through the loopback.
    let mut private = vec![0u8; 64];
    // SAFETY: `private` outlives the groups (dropped after them).
    unsafe { b.register("private", private.as_mut_ptr(), private.len()) }.unwrap();
    a.put(1, "private", 0, b"loop").unwrap();
    a.flush(1).unwrap();
    a.unregister("shared").unwrap();
    let e = b.get(0, "shared", 0, &mut got).unwrap_err();
    assert!(matches!(e, GroupError::NoRegistration { .. }), "{e}");
    // The name is free again.
    a.alloc("shared", 64).unwrap();
    b.get(0, "shared", 0, &mut got).unwrap();
    assert_eq!(got, [0; 5]);
    a.leave().unwrap();
    b.leave().unwrap();
    assert_eq!(&private[..4], b"loop");
    if let Ok(w) = default_worker(T) {
        assert_eq!(w.name(), "node");
    }
}
