//! Groups whose members come and go, end to end over plain TCP and TLS 1.3: WATCH; a store
//! served by whichever process binds first; members that join while the others are blocked,
//! leave, are killed (connection lost) or stopped (heartbeat lost) and are reported down while
//! the others go on; auto ranking; joins and leaves in a loop leaving nothing behind.
//!
//! Members killed or stopped are child processes: this test binary run again with
//! `SHMEM_GROUP_CHILD` set, which joins the group it names and waits to be killed.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use shmem_store::addr::StoreAddr;
use shmem_store::tls::{self, TlsIdentity, Validity};
use shmem_store::{
    BootstrapError, ChangeKind, Client, GroupOptions, Member, MemberEvent, Server, Store, TcpDial,
};

const T: Duration = Duration::from_secs(30);
/// The loss bound the tests' members ask for, and the most a report may take beyond it.
const LOSS: Duration = Duration::from_secs(3);
const SLACK: Duration = Duration::from_secs(4);
const CHILD_ENV: &str = "SHMEM_GROUP_CHILD";

/// A store of groups on a free loopback port, plain or TLS, and what its clients need.
struct Setup {
    /// The store, when this process serves it.
    server: Option<Server>,
    dial: TcpDial,
    /// The client's TLS bundle (PEM), for child processes.
    bundle: Option<String>,
}

fn free_addr() -> StoreAddr {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    StoreAddr::parse(&format!("tcp://127.0.0.1:{port}"), None).unwrap()
}

fn dial_for(addr: &StoreAddr, bundle: Option<&str>) -> TcpDial {
    TcpDial {
        addr: addr.clone(),
        tls: bundle.map(|b| {
            let id = tls::identity_from_bundle(b.as_bytes()).unwrap();
            (id.client_config().unwrap(), addr.server_name())
        }),
        job: "groups".into(),
    }
}

/// Starts the store with [`Store::serve_or_join`] (this process wins the bind) and checks that
/// a second try joins it as a client.
fn setup(tls: bool) -> Setup {
    let addr = free_addr();
    let (server_id, bundle): (Option<TlsIdentity>, Option<String>) = if tls {
        let c =
            tls::job_credentials(&["127.0.0.1".parse().unwrap()], Validity::for_a_job()).unwrap();
        (Some(c.server), Some(c.client_bundle))
    } else {
        (None, None)
    };
    let dial = dial_for(&addr, bundle.as_deref());
    let config = server_id.as_ref().map(|id| id.server_config().unwrap());
    let first = Store::serve_or_join(&dial, config.clone(), 256, T).unwrap();
    let server = first.server.expect("the first process binds the address");
    let second = Store::serve_or_join(&dial, config, 256, T).unwrap();
    assert!(
        second.server.is_none(),
        "the second process joins as a client"
    );
    first.client.set("hello", b"from the first").unwrap();
    assert_eq!(second.client.get("hello", T).unwrap(), b"from the first");
    Setup {
        server: Some(server),
        dial,
        bundle,
    }
}

/// A store in another network namespace (`tests/store/groups_netns.sh`): this process only
/// reaches it. `SHMEM_GROUP_REMOTE` is its address, `SHMEM_GROUP_REMOTE_TLS` the file holding
/// the client's TLS bundle when it runs TLS.
fn remote() -> Option<Setup> {
    let url = std::env::var("SHMEM_GROUP_REMOTE").ok()?;
    let addr = StoreAddr::parse(&url, None).unwrap();
    let bundle = std::env::var("SHMEM_GROUP_REMOTE_TLS")
        .ok()
        .map(|path| std::fs::read_to_string(path).unwrap());
    let dial = dial_for(&addr, bundle.as_deref());
    Some(Setup {
        server: None,
        dial,
        bundle,
    })
}

/// Serves a store of groups at `SHMEM_GROUP_SERVE` (with TLS when `SHMEM_GROUP_SERVE_TLS`
/// names the file to write the client's bundle to) until killed; says `serving` first.
#[test]
fn store_child() {
    let Ok(url) = std::env::var("SHMEM_GROUP_SERVE") else {
        return;
    };
    let addr = StoreAddr::parse(&url, None).unwrap();
    let tls_file = std::env::var("SHMEM_GROUP_SERVE_TLS").ok();
    let (config, bundle) = match &tls_file {
        Some(path) => {
            let c = tls::job_credentials(&[addr.dial_ip()], Validity::for_a_job()).unwrap();
            std::fs::write(path, &c.client_bundle).unwrap();
            (
                Some(c.server.server_config().unwrap()),
                Some(c.client_bundle),
            )
        }
        None => (None, None),
    };
    let store = Store::serve_or_join(&dial_for(&addr, bundle.as_deref()), config, 256, T).unwrap();
    assert!(store.server.is_some(), "nothing else serves {url}");
    let mut out = std::io::stdout().lock();
    writeln!(out, "serving").unwrap();
    out.flush().unwrap();
    drop(out);
    loop {
        thread::sleep(Duration::from_secs(60));
    }
}

/// The group tests against a store in another network namespace (see [`remote`]).
#[test]
fn remote_members() {
    let Some(s) = remote() else {
        return;
    };
    watch_works(&s);
    members_come_and_go(&s);
    auto_ranking(&s);
    a_silent_member_does_not_hold_up_a_change(&s);
    members_down_during_a_change(&s);
    eprintln!("remote group tests passed against {}", s.dial.addr);
}

fn options(size: u32, info: &str) -> GroupOptions {
    GroupOptions {
        heartbeat: Duration::from_millis(200),
        loss: LOSS,
        control_timeout: Duration::from_secs(20),
        info: info.as_bytes().to_vec(),
        ..GroupOptions::new(size)
    }
}

/// [`options`] for a group of 8 with the control timeout `bound`.
fn with_control_timeout(bound: Duration, info: &str) -> GroupOptions {
    GroupOptions {
        control_timeout: bound,
        ..options(8, info)
    }
}

/// Waits for the event `want` picks, skipping others, within `within`; returns it and when.
fn wait_event(
    m: &Member,
    within: Duration,
    want: impl Fn(&MemberEvent) -> bool,
) -> (MemberEvent, Duration) {
    let start = Instant::now();
    loop {
        let left = within.saturating_sub(start.elapsed());
        match m.next_event(left) {
            Some(e) if want(&e) => return (e, start.elapsed()),
            Some(_) => {}
            None => panic!(
                "member {} saw no such event within {:.1} s",
                m.rank(),
                within.as_secs_f64()
            ),
        }
    }
}

/// A child member's options: [`options`], with the loss bound `SHMEM_GROUP_CHILD_LOSS_MS` when
/// it is set.
fn child_options(id: &str) -> GroupOptions {
    let mut o = options(8, id);
    if let Ok(ms) = std::env::var("SHMEM_GROUP_CHILD_LOSS_MS") {
        o.loss = Duration::from_millis(ms.parse().unwrap());
    }
    o
}

/// A member in a child process: joins the group `spec` names and waits to be killed.
#[test]
fn child_member() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut parts = spec.splitn(3, ' ');
    let (url, group, id) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let bundle = std::env::var("SHMEM_GROUP_CHILD_TLS").ok();
    let addr = StoreAddr::parse(url, None).unwrap();
    let dial = dial_for(&addr, bundle.as_deref());
    let m = Member::join(&dial, group, id, &child_options(id), T).unwrap();
    let c = Client::connect_open(&dial, T).unwrap();
    let key = format!("data/{id}");
    c.set(&key, id.as_bytes()).unwrap();
    m.own(&key).unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "joined {}", m.rank()).unwrap();
    out.flush().unwrap();
    drop(out);
    loop {
        thread::sleep(Duration::from_secs(60));
    }
}

/// A child process, killed when dropped (a failed test leaves none behind).
struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a member in a child process; returns it once it has joined, with its rank.
fn spawn_member(s: &Setup, group: &str, id: &str) -> (Kid, u32) {
    spawn_member_with(s, group, id, None)
}

/// As [`spawn_member`], with the loss bound `loss` for the child.
fn spawn_member_with(s: &Setup, group: &str, id: &str, loss: Option<Duration>) -> (Kid, u32) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    if let Some(loss) = loss {
        cmd.env("SHMEM_GROUP_CHILD_LOSS_MS", loss.as_millis().to_string());
    }
    cmd.args(["--exact", "child_member", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{} {group} {id}", s.dial.addr))
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(b) = &s.bundle {
        cmd.env("SHMEM_GROUP_CHILD_TLS", b);
    }
    let mut child = Kid(cmd.spawn().unwrap());
    let out = child.0.stdout.take().unwrap();
    let mut lines = BufReader::new(out).lines();
    let rank = loop {
        let line = lines.next().expect("the child says it joined").unwrap();
        // libtest's own words may precede ours on the line.
        if let Some((_, rank)) = line.split_once("joined ") {
            break rank.trim().parse().unwrap();
        }
    };
    (child, rank)
}

fn watch_works(s: &Setup) {
    let a = Client::connect_open(&s.dial, T).unwrap();
    let b = Arc::new(Client::connect_open(&s.dial, T).unwrap());
    // A blocking get: the key appears later.
    let waiter = {
        let b = Arc::clone(&b);
        thread::spawn(move || b.watch("w/k", None, T).unwrap())
    };
    thread::sleep(Duration::from_millis(50));
    a.set("w/k", b"one").unwrap();
    assert_eq!(waiter.join().unwrap().as_deref(), Some(&b"one"[..]));
    // A change of a value known.
    let waiter = {
        let b = Arc::clone(&b);
        thread::spawn(move || b.watch("w/k", Some(b"one"), T).unwrap())
    };
    thread::sleep(Duration::from_millis(50));
    a.set("w/k", b"one").unwrap();
    a.set("w/k", b"two").unwrap();
    assert_eq!(waiter.join().unwrap().as_deref(), Some(&b"two"[..]));
    // A removal is a change.
    let waiter = {
        let b = Arc::clone(&b);
        thread::spawn(move || b.watch("w/k", Some(b"two"), T).unwrap())
    };
    thread::sleep(Duration::from_millis(50));
    a.delete("w/k").unwrap();
    assert_eq!(waiter.join().unwrap(), None);
    // A value that differs already is answered at once.
    a.set("w/k", b"three").unwrap();
    assert_eq!(
        b.watch("w/k", Some(b"two"), T).unwrap().as_deref(),
        Some(&b"three"[..])
    );
    // The bound names the key and the time; the connection stays usable.
    let err = b
        .watch("w/k", Some(b"three"), Duration::from_millis(100))
        .unwrap_err();
    assert!(
        matches!(&err, BootstrapError::Timeout { key, .. } if key == "w/k"),
        "{err}"
    );
    assert!(err.to_string().contains("w/k") && err.to_string().contains("0.1 s"));
    assert_eq!(b.get("w/k", T).unwrap(), b"three");
}

#[test]
fn watch_waits_for_a_key_to_appear_or_change_plain() {
    watch_works(&setup(false));
}

#[test]
fn watch_waits_for_a_key_to_appear_or_change_tls() {
    watch_works(&setup(true));
}

/// Four members; a fifth joins while the four are blocked in a watch; one leaves; a member in
/// a child process is killed (its connection ends), another stopped (its heartbeat stops):
/// the others see each "member down" within the bound and go on, their data intact.
fn members_come_and_go(s: &Setup) {
    let group = "pool";
    let members: Vec<Member> = (0..4)
        .map(|i| {
            Member::join(
                &s.dial,
                group,
                &format!("m{i}"),
                &options(8, &format!("i{i}")),
                T,
            )
            .unwrap()
        })
        .collect();
    let ranks: Vec<u32> = members.iter().map(Member::rank).collect();
    assert_eq!(ranks, [0, 1, 2, 3], "ranks in order of arrival");
    // Each member's data, and a watch each is blocked in.
    let blocked: Vec<_> = (0..4)
        .map(|i| {
            let dial = s.dial.clone();
            thread::spawn(move || {
                let c = Client::connect_open(&dial, T).unwrap();
                c.set(&format!("data/m{i}"), &[i as u8; 4]).unwrap();
                let go = c.watch("go", None, 4 * T).unwrap();
                (c, go)
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(100));
    let start = Instant::now();
    let fifth = Member::join(&s.dial, group, "m4", &options(8, "i4"), T).unwrap();
    let join_took = start.elapsed();
    assert_eq!(fifth.rank(), 4);
    let joined = fifth.joined();
    assert_eq!(joined.kind, ChangeKind::Join);
    assert!(joined.missing.is_empty(), "{joined:?}");
    let infos: Vec<(u32, Vec<u8>)> = (0..5).map(|r| (r, format!("i{r}").into_bytes())).collect();
    assert_eq!(joined.infos, infos);
    for m in &members {
        wait_event(m, T, |e| matches!(e, MemberEvent::Joined { rank: 4, .. }));
        let (e, _) = wait_event(m, T, |e| matches!(e, MemberEvent::Changed(_)));
        let MemberEvent::Changed(c) = e else {
            unreachable!()
        };
        assert_eq!((c.rank, c.kind), (4, ChangeKind::Join));
        assert_eq!(c.infos, infos);
    }
    // One leaves; the others take part in its change.
    let leaving = members.into_iter().collect::<Vec<_>>();
    let mut members = leaving;
    let gone = members.remove(1);
    let change = gone.leave().unwrap();
    assert_eq!((change.kind, change.rank), (ChangeKind::Leave, 1));
    assert!(change.missing.is_empty(), "{change:?}");
    members.push(fifth);
    for m in &members {
        wait_event(m, T, |e| matches!(e, MemberEvent::Left { rank: 1, .. }));
    }
    // Killed: its connection ends; what it owned goes with it.
    let (mut killed, kr) = spawn_member(s, group, "killed");
    // The cursor is past rank 4: the lowest free rank at or after it is 5, not the 1 freed.
    assert_eq!(kr, 5, "the lowest free rank at or after the cursor");
    let probe = Client::connect_open(&s.dial, T).unwrap();
    assert_eq!(probe.get("data/killed", T).unwrap(), b"killed");
    for m in &members {
        wait_event(m, T, |e| matches!(e, MemberEvent::Joined { rank: 5, .. }));
    }
    killed.0.kill().unwrap();
    let killed_at = Instant::now();
    for m in &members {
        let (e, _) = wait_event(m, LOSS + SLACK, |e| {
            matches!(e, MemberEvent::Down { rank: 5, .. })
        });
        eprintln!(
            "member {}: {e:?} {:.2} s after SIGKILL",
            m.rank(),
            killed_at.elapsed().as_secs_f64()
        );
    }
    killed.0.wait().unwrap();
    assert_eq!(
        probe.watch("data/killed", Some(b"killed"), T).unwrap(),
        None
    );
    // Stopped: its connection stays open but its heartbeat stops.
    let (mut stopped, sr) = spawn_member(s, group, "stopped");
    for m in &members {
        wait_event(
            m,
            T,
            |e| matches!(e, MemberEvent::Joined { rank, .. } if *rank == sr),
        );
    }
    let pid = rustix::process::Pid::from_raw(stopped.0.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    let stopped_at = Instant::now();
    for m in &members {
        let (e, _) = wait_event(
            m,
            LOSS + SLACK,
            |e| matches!(e, MemberEvent::Down { rank, .. } if *rank == sr),
        );
        let MemberEvent::Down { reason, .. } = &e else {
            unreachable!()
        };
        assert!(reason.contains("heartbeat"), "{reason}");
        eprintln!(
            "member {}: down {:.2} s after SIGSTOP ({reason})",
            m.rank(),
            stopped_at.elapsed().as_secs_f64()
        );
    }
    stopped.0.kill().unwrap();
    stopped.0.wait().unwrap();
    // The others go on: their watches end, their data is intact, changes still work.
    probe.set("go", b"now").unwrap();
    for (i, b) in blocked.into_iter().enumerate() {
        let (c, go) = b.join().unwrap();
        assert_eq!(go.as_deref(), Some(&b"now"[..]));
        assert_eq!(c.get(&format!("data/m{i}"), T).unwrap(), [i as u8; 4]);
    }
    let again = Member::join(&s.dial, group, "m5", &options(8, "i5"), T).unwrap();
    assert!(again.joined().missing.is_empty(), "{:?}", again.joined());
    assert_eq!(again.joined().infos.len(), members.len() + 1);
    eprintln!("a join while four members were blocked took {join_took:?}");
}

#[test]
fn members_come_and_go_plain() {
    members_come_and_go(&setup(false));
}

#[test]
fn members_come_and_go_tls() {
    members_come_and_go(&setup(true));
}

/// A member that does not take part in a change (stopped, and not yet reported down: its
/// loss bound is long) is named in the change, which ends at the control timeout instead of
/// waiting for it; the next change runs.
fn a_silent_member_does_not_hold_up_a_change(s: &Setup) {
    let group = "silent";
    let bound = Duration::from_secs(2);
    let short = |info: &str| with_control_timeout(bound, info);
    let first = Member::join(&s.dial, group, "first", &short("f"), T).unwrap();
    let (mut stopped, sr) = spawn_member_with(s, group, "stopped", Some(Duration::from_secs(60)));
    wait_event(&first, T, |e| matches!(e, MemberEvent::Changed(_)));
    let pid = rustix::process::Pid::from_raw(stopped.0.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    let start = Instant::now();
    let late = Member::join(&s.dial, group, "late", &short("l"), T).unwrap();
    let took = start.elapsed();
    assert_eq!(late.joined().missing, [sr], "{:?}", late.joined());
    assert!(
        late.joined()
            .infos
            .iter()
            .any(|(r, i)| *r == first.rank() && i == b"f"),
        "{:?}",
        late.joined()
    );
    assert!(took < bound + SLACK, "the change took {took:?}");
    eprintln!("a change with a silent member ended after {took:?} (bound {bound:?})");
    stopped.0.kill().unwrap();
    stopped.0.wait().unwrap();
    wait_event(
        &first,
        T,
        |e| matches!(e, MemberEvent::Down { rank, .. } if *rank == sr),
    );
    // The silent member is gone: the next change has no one missing.
    let next = late.leave().unwrap();
    assert!(next.missing.is_empty(), "{next:?}");
}

#[test]
fn a_silent_member_does_not_hold_up_a_change_plain() {
    a_silent_member_does_not_hold_up_a_change(&setup(false));
}

#[test]
fn a_silent_member_does_not_hold_up_a_change_tls() {
    a_silent_member_does_not_hold_up_a_change(&setup(true));
}

/// Eight members race for the ranks of a group of 8; one leaves and a newcomer takes its
/// rank; a ninth is refused; explicit ranks are skipped by the ranks the store picks.
fn auto_ranking(s: &Setup) {
    let group = "ranked";
    let racers: Vec<_> = (0..8)
        .map(|i| {
            let dial = s.dial.clone();
            thread::spawn(move || {
                Member::join(&dial, group, &format!("r{i}"), &options(8, ""), T).unwrap()
            })
        })
        .collect();
    let mut members: Vec<Member> = racers.into_iter().map(|h| h.join().unwrap()).collect();
    let mut ranks: Vec<u32> = members.iter().map(Member::rank).collect();
    ranks.sort();
    assert_eq!(ranks, (0..8).collect::<Vec<_>>());
    let full = Member::join(&s.dial, group, "ninth", &options(8, ""), T).unwrap_err();
    let text = full.to_string();
    assert!(
        text.contains("'ranked'") && text.contains("size is 8"),
        "{text}"
    );
    let i = members.iter().position(|m| m.rank() == 3).unwrap();
    members.remove(i).leave().unwrap();
    let newcomer = Member::join(&s.dial, group, "newcomer", &options(8, ""), T).unwrap();
    assert_eq!(
        newcomer.rank(),
        3,
        "the lowest free rank at or after the cursor"
    );
    // A dropped member frees its rank too (its connection ends).
    let i = members.iter().position(|m| m.rank() == 5).unwrap();
    drop(members.remove(i));
    let other = Member::join(&s.dial, group, "other", &options(8, ""), T).unwrap();
    assert_eq!(other.rank(), 5);
    drop((members, newcomer, other));

    // Explicit ranks are recorded; picked ones skip them, from a cursor that moves on.
    let g = "mixed";
    let explicit = Member::join(
        &s.dial,
        g,
        "e1",
        &GroupOptions {
            rank: Some(1),
            ..options(4, "")
        },
        T,
    )
    .unwrap();
    let a = Member::join(&s.dial, g, "a", &options(4, ""), T).unwrap();
    let b = Member::join(&s.dial, g, "b", &options(4, ""), T).unwrap();
    assert_eq!((explicit.rank(), a.rank(), b.rank()), (1, 0, 2));
    drop(a);
    let c = Member::join(&s.dial, g, "c", &options(4, ""), T).unwrap();
    assert_eq!(
        c.rank(),
        3,
        "at or after the cursor, not the lowest overall"
    );
    let d = Member::join(&s.dial, g, "d", &options(4, ""), T).unwrap();
    assert_eq!(d.rank(), 0, "the cursor wraps");
    let taken = Member::join(
        &s.dial,
        g,
        "e2",
        &GroupOptions {
            rank: Some(1),
            ..options(4, "")
        },
        T,
    )
    .unwrap_err();
    assert!(
        taken.to_string().contains("rank 1 is held by member 'e1'"),
        "{taken}"
    );
    let size = Member::join(&s.dial, g, "z", &options(5, ""), T).unwrap_err();
    assert!(
        size.to_string()
            .contains("it has size 4, this member says 5"),
        "{size}"
    );
    // A member id the group has already: a typed refusal naming the rank it holds.
    let again = Member::join(&s.dial, g, "c", &options(4, ""), T).unwrap_err();
    assert!(
        matches!(&again, BootstrapError::MemberIdHeld { group, member, rank: 3, .. }
            if group == g && member == "c"),
        "{again:?}"
    );
    assert!(
        again
            .to_string()
            .contains("member id 'c' holds rank 3 already"),
        "{again}"
    );
}

#[test]
fn ranks_are_handed_out_as_members_arrive_plain() {
    auto_ranking(&setup(false));
}

#[test]
fn ranks_are_handed_out_as_members_arrive_tls() {
    auto_ranking(&setup(true));
}

/// This process's resident memory, in KiB (reported, not compared: the allocator keeps what
/// it freed).
fn rss_kib() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    (status.lines())
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn count_dir(path: &str) -> usize {
    std::fs::read_dir(path).unwrap().count()
}

/// What this process (members and store) and the store hold: descriptors, threads, the
/// store's keys and bytes, groups and waits.
fn footprint(server: &Server) -> [usize; 6] {
    let (keys, bytes) = server.entries();
    let (groups, waits) = server.groups();
    [
        count_dir("/proc/self/fd"),
        count_dir("/proc/self/task"),
        keys,
        bytes,
        groups,
        waits,
    ]
}

/// Whether `now` holds no more than `base`; of the waits, at most the one of the member that
/// stays (its events thread waits or is between two waits).
fn within(now: [usize; 6], base: [usize; 6]) -> bool {
    now[..5].iter().zip(&base[..5]).all(|(n, b)| n <= b) && now[5] <= 1
}

/// Waits until what is held comes back to `base` (connection threads end a little after
/// their clients close), for up to `T`.
fn settle(server: &Server, base: [usize; 6]) -> [usize; 6] {
    let start = Instant::now();
    loop {
        let now = footprint(server);
        if within(now, base) || start.elapsed() > T {
            return now;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

fn joins_and_leaves_leave_nothing(s: &Setup, server: &Server) {
    let group = "churn";
    let stay = Member::join(&s.dial, group, "stay", &options(4, "s"), T).unwrap();
    let one_round = |i: usize| {
        let m = Member::join(&s.dial, group, &format!("c{i}"), &options(4, "c"), T).unwrap();
        let c = Client::connect_open(&s.dial, T).unwrap();
        c.set(&format!("owned/{i}"), &[0; 64]).unwrap();
        m.own(&format!("owned/{i}")).unwrap();
        assert!(m.leave().unwrap().missing.is_empty());
    };
    for i in 0..10 {
        one_round(i);
    }
    while stay.next_event(Duration::ZERO).is_some() {}
    thread::sleep(Duration::from_millis(200));
    let base = settle(server, footprint(server));
    let rss_before = rss_kib();
    let start = Instant::now();
    for i in 10..110 {
        one_round(i);
        while stay.next_event(Duration::ZERO).is_some() {}
    }
    let took = start.elapsed();
    let after = settle(server, base);
    eprintln!(
        "100 joins and leaves in {:.2} s; [fds, threads, keys, key bytes, groups, waits] \
         before {base:?}, after {after:?}; resident memory {rss_before} KiB before, {} KiB \
         after",
        took.as_secs_f64(),
        rss_kib()
    );
    assert!(
        within(after, base),
        "grew: before {base:?}, after {after:?}"
    );
    drop(stay);
}

/// The loop in a process of its own (`SHMEM_GROUP_CHURN` says plain or TLS), so that other
/// tests running meanwhile do not change its counts of descriptors and threads.
#[test]
fn churn_child() {
    let Ok(mode) = std::env::var("SHMEM_GROUP_CHURN") else {
        return;
    };
    let s = setup(mode == "tls");
    joins_and_leaves_leave_nothing(&s, s.server.as_ref().unwrap());
}

fn churn_in_a_child(mode: &str) {
    in_a_child(
        "churn_child",
        "SHMEM_GROUP_CHURN",
        mode,
        "100 joins and leaves",
    );
}

/// Runs the test `test` of this binary in a child process with `env` set to `mode`; checks it
/// passed and said `says`.
fn in_a_child(test: &str, env: &str, mode: &str, says: &str) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(env, mode)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    eprintln!("{text}");
    assert!(out.status.success(), "{test} failed: {text}");
    assert!(text.contains(says), "{text}");
}

#[test]
fn joins_and_leaves_leave_nothing_behind_plain() {
    churn_in_a_child("plain");
}

#[test]
fn joins_and_leaves_leave_nothing_behind_tls() {
    churn_in_a_child("tls");
}

/// Clients retry while nothing listens: a store that comes up later is reached.
#[test]
fn clients_retry_until_the_store_listens() {
    let addr = free_addr();
    let dial = dial_for(&addr, None);
    let late = {
        let dial = dial.clone();
        thread::spawn(move || Client::connect_open(&dial, Duration::from_secs(10)))
    };
    thread::sleep(Duration::from_millis(300));
    let store = Store::serve_or_join(&dial, None, 16, T).unwrap();
    assert!(store.server.is_some());
    let c = late.join().unwrap().unwrap();
    c.set("k", b"v").unwrap();
    assert_eq!(store.client.get("k", T).unwrap(), b"v");
    // Nothing ever listens: the bound and the address are named.
    let nowhere = dial_for(&free_addr(), None);
    let err = Client::connect_open(&nowhere, Duration::from_millis(300)).unwrap_err();
    assert!(
        matches!(err, BootstrapError::Unreachable { .. })
            && err.to_string().contains("could not reach the store")
            && err.to_string().contains(&nowhere.addr.to_string()),
        "{err}"
    );
}

/// A process that finds the port held by one that never answers (a store that is ending, or
/// a process that bound it and lost interest) serves the address itself once it is free,
/// well before its timeout.
#[test]
fn serve_or_join_takes_the_port_once_its_holder_lets_go() {
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    let addr = StoreAddr::parse(&format!("tcp://127.0.0.1:{port}"), None).unwrap();
    let dial = dial_for(&addr, None);
    let started = Instant::now();
    let release = thread::spawn(move || {
        thread::sleep(Duration::from_millis(1200));
        drop(holder);
    });
    let store = Store::serve_or_join(&dial, None, 16, Duration::from_secs(30)).unwrap();
    release.join().unwrap();
    assert!(
        store.server.is_some(),
        "the port was free after 1.2 s: this process should serve it"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    store.client.set("k", b"v").unwrap();
    assert_eq!(store.client.get("k", T).unwrap(), b"v");
    // A holder that never lets go (bound, not listening: every connect is refused): the
    // error names the whole timeout, not the last try's.
    let holder = rustix::net::socket(
        rustix::net::AddressFamily::INET,
        rustix::net::SocketType::STREAM,
        None,
    )
    .unwrap();
    let any = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    rustix::net::bind(&holder, &any).unwrap();
    let port = std::net::SocketAddrV4::try_from(rustix::net::getsockname(&holder).unwrap())
        .unwrap()
        .port();
    let addr = StoreAddr::parse(&format!("tcp://127.0.0.1:{port}"), None).unwrap();
    let err = Store::serve_or_join(
        &dial_for(&addr, None),
        None,
        16,
        Duration::from_millis(1300),
    )
    .unwrap_err();
    assert!(
        matches!(&err, BootstrapError::Unreachable { after, .. } if *after == Duration::from_millis(1300)),
        "{err}"
    );
    drop(holder);
}

/// A job's store takes no client without a PE's place.
#[test]
fn a_job_store_refuses_clients_without_a_place() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (server, events) = Server::for_job(2, "groups");
    std::mem::forget(events);
    server.serve_tcp(listener, None).unwrap();
    let addr = StoreAddr::parse(&format!("tcp://127.0.0.1:{port}"), None).unwrap();
    let err = Client::connect_open(&dial_for(&addr, None), Duration::from_secs(5)).unwrap_err();
    assert!(err.to_string().contains("takes none"), "{err}");
}

/// Sends `signal` to the child `kid`.
fn signal(kid: &Kid, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(kid.0.id() as i32).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
}

/// A member reported down while a change runs stops counting for it: the change ends as soon
/// as every member still alive has taken part, long before its control timeout, and names the
/// member down (not missing). One is SIGKILLed during the change (its connection ends), one is
/// SIGSTOPped (its heartbeat stops: it is reported after its loss bound).
fn members_down_during_a_change(s: &Setup) {
    let group = "downs";
    let bound = Duration::from_secs(60);
    let long = |info: &str| with_control_timeout(bound, info);
    let first = Member::join(&s.dial, group, "first", &long("f"), T).unwrap();
    // Killed during the change: stopped first (its loss bound long, so it is not reported
    // for that), so that the change begins and waits for it; then killed.
    let (killed, kr) = spawn_member_with(s, group, "killed", Some(Duration::from_secs(60)));
    wait_event(&first, T, |e| matches!(e, MemberEvent::Changed(_)));
    signal(&killed, rustix::process::Signal::STOP);
    let joiner = {
        let (dial, o) = (s.dial.clone(), long("k"));
        thread::spawn(move || {
            let start = Instant::now();
            let m = Member::join(&dial, group, "joiner", &o, T);
            (m, start.elapsed())
        })
    };
    thread::sleep(Duration::from_millis(500));
    let killed_at = Instant::now();
    signal(&killed, rustix::process::Signal::KILL);
    let (joiner, took) = joiner.join().unwrap();
    let joiner = joiner.unwrap();
    let since_kill = killed_at.elapsed();
    drop(killed);
    let change = joiner.joined();
    assert_eq!(change.down, [kr], "{change:?}");
    assert!(change.missing.is_empty(), "{change:?}");
    assert!(
        change
            .infos
            .iter()
            .any(|(r, i)| *r == first.rank() && i == b"f"),
        "{change:?}"
    );
    assert!(
        since_kill < LOSS + SLACK && took < bound / 4,
        "the change ended {since_kill:?} after SIGKILL, {took:?} after it began"
    );
    let (seen, _) = wait_event(
        &first,
        T,
        |e| matches!(e, MemberEvent::Changed(c) if c.member == "joiner"),
    );
    let MemberEvent::Changed(seen) = seen else {
        unreachable!()
    };
    assert_eq!(seen.down, [kr], "{seen:?}");
    eprintln!("a change ended {since_kill:?} after a member taking part was SIGKILLed");

    // Stopped during the change: reported down after its loss bound, when the change ends.
    let (stopped, sr) = spawn_member_with(s, group, "stopped", Some(LOSS));
    wait_event(
        &first,
        T,
        |e| matches!(e, MemberEvent::Changed(c) if c.member == "stopped"),
    );
    signal(&stopped, rustix::process::Signal::STOP);
    let start = Instant::now();
    let late = Member::join(&s.dial, group, "late", &long("l"), T).unwrap();
    let took = start.elapsed();
    let change = late.joined();
    assert_eq!(change.down, [sr], "{change:?}");
    assert!(change.missing.is_empty(), "{change:?}");
    assert_eq!(change.infos.len(), 3, "{change:?}");
    assert!(
        took < LOSS + SLACK,
        "the change took {took:?} (loss bound {LOSS:?}, control timeout {bound:?})"
    );
    eprintln!("a change ended {took:?} after it began, a member taking part being SIGSTOPped");
    drop(stopped);
    for m in [late, joiner] {
        let change = m.leave().unwrap();
        assert!(
            change.missing.is_empty() && change.down.is_empty(),
            "{change:?}"
        );
    }
    drop(first);
}

#[test]
fn members_down_during_a_change_stop_counting_plain() {
    members_down_during_a_change(&setup(false));
}

#[test]
fn members_down_during_a_change_stop_counting_tls() {
    members_down_during_a_change(&setup(true));
}

/// The store goes away (its process is killed) while members are connected: every member's
/// application is told within a bound, `leave()` and drop return promptly, and no thread is
/// left running. Runs in a process of its own (`SHMEM_GROUP_LOST` says plain or TLS) so that
/// the count of threads is this test's alone.
#[test]
fn lost_child() {
    let Ok(mode) = std::env::var("SHMEM_GROUP_LOST") else {
        return;
    };
    let addr = free_addr();
    let bundle_file = std::env::temp_dir().join(format!("shmem-lost-{}.pem", std::process::id()));
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "store_child", "--nocapture", "--test-threads=1"])
        .env("SHMEM_GROUP_SERVE", addr.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if mode == "tls" {
        cmd.env("SHMEM_GROUP_SERVE_TLS", &bundle_file);
    }
    let mut store = Kid(cmd.spawn().unwrap());
    let out = store.0.stdout.take().unwrap();
    let mut lines = BufReader::new(out).lines();
    while !lines
        .next()
        .expect("the store says it serves")
        .unwrap()
        .contains("serving")
    {}
    let bundle = (mode == "tls").then(|| std::fs::read_to_string(&bundle_file).unwrap());
    let _ = std::fs::remove_file(&bundle_file);
    let dial = dial_for(&addr, bundle.as_deref());

    let tasks = count_dir("/proc/self/task");
    let members: Vec<Member> = (0..3)
        .map(|i| Member::join(&dial, "lost", &format!("m{i}"), &options(8, "x"), T).unwrap())
        .collect();
    assert!(count_dir("/proc/self/task") >= tasks + 6);
    // A change in progress when the store goes away: a stopped member (its loss bound long)
    // holds it up.
    let s = Setup {
        server: None,
        dial: dial.clone(),
        bundle: bundle.clone(),
    };
    let (stopped, _) = spawn_member_with(&s, "lost", "stopped", Some(Duration::from_secs(60)));
    for m in &members {
        wait_event(
            m,
            T,
            |e| matches!(e, MemberEvent::Changed(c) if c.member == "stopped"),
        );
    }
    signal(&stopped, rustix::process::Signal::STOP);
    let joiner = {
        let o = with_control_timeout(Duration::from_secs(60), "j");
        thread::spawn(move || {
            let m = Member::join(&s.dial, "lost", "joiner", &o, T);
            (m.map(drop), Instant::now())
        })
    };
    thread::sleep(Duration::from_millis(500));
    let died = Instant::now();
    drop(store);
    let (joined, ended) = joiner.join().unwrap();
    let err = joined.unwrap_err();
    let change_ended = ended.saturating_duration_since(died);
    drop(stopped);
    let bound = Duration::from_secs(2);
    assert!(
        change_ended < bound,
        "a change ended {change_ended:?} after the store died: {err}"
    );
    eprintln!("a change ended {change_ended:?} after the store died: {err}");
    for m in &members {
        let (e, after) = wait_event(m, bound, |e| matches!(e, MemberEvent::Lost(_)));
        eprintln!(
            "member {} told {e:?} {:.2} s after the store died",
            m.rank(),
            after.as_secs_f64()
        );
    }
    let mut members = members.into_iter();
    let start = Instant::now();
    let err = members.next().unwrap().leave().unwrap_err();
    let left_in = start.elapsed();
    drop(members.next());
    let dropped_in = start.elapsed() - left_in;
    // The last one takes part in nothing more but still holds its threads until it goes.
    drop(members);
    let gone_in = start.elapsed();
    assert!(
        left_in < bound && gone_in < 2 * bound,
        "leave took {left_in:?} ({err}), drop {dropped_in:?}, all {gone_in:?}"
    );
    assert_eq!(count_dir("/proc/self/task"), tasks, "threads left running");
    eprintln!(
        "store lost: leave failed in {left_in:?} ({err}); drop took {dropped_in:?}; threads \
         back to {tasks}"
    );
}

fn lost_in_a_child(mode: &str) {
    in_a_child("lost_child", "SHMEM_GROUP_LOST", mode, "store lost");
}

#[test]
fn members_are_told_when_the_store_goes_away_plain() {
    lost_in_a_child("plain");
}

#[test]
fn members_are_told_when_the_store_goes_away_tls() {
    lost_in_a_child("tls");
}
