//! The group API (`shmem_core::group`) across processes: a group of four where a fifth member
//! joins while the others are blocked in a wait, then one leaves and one is SIGKILLed (the
//! others see "member down" within the bound and go on, their data intact), then one
//! withdraws its memory (the others' reads of it fail); eight members racing for ranks, a
//! ninth refused, one leaving and a newcomer taking its rank; a hundred joins and leaves
//! beside two members that stay, measured in every process (the store's, the members' and the
//! one that comes and goes): resident memory, descriptors, mappings and threads.
//!
//! Each runs over two paths ([`Path`]): the group's default worker (the node path over UCX;
//! half the members' memory allocated by the group, shareable, half private, so that members
//! of one node both map each other's memory and go through UCX), and the node path without
//! UCX (a node worker over the loopback, every member's memory allocated by the group), where
//! private memory is refused naming UCX.
//!
//! Every member and the store are child processes: this test binary run again with
//! `GROUP_API_CHILD` (a member, driven by commands on its stdin, answering on its stdout) or
//! `GROUP_API_SERVE` (a store of groups at that address). Where UCX cannot be loaded the tests
//! over UCX say so and pass. `tests/multinode/group_api_netns.sh` runs those over UCX with the
//! store in one network namespace and the members split across it and another
//! (`GROUP_API_REMOTE`: the store's address; `GROUP_API_OTHER_NETNS`: the namespace every
//! other member starts in; `GROUP_API_STORE_PID`: the store's process, measured too), and
//! checks that members whose UCX is hidden (`GROUP_API_HIDE_UCX`: the library's file, hidden
//! by a bind mount) make the node path without it and are refused a member of the other
//! namespace, naming UCX.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use shmem_core::bootstrap::addr::StoreAddr;
use shmem_core::bootstrap::TcpDial;
use std::sync::Arc;

use shmem_core::dynamic::node::NodeWorker;
use shmem_core::dynamic::ucx::UcxWorker;
use shmem_core::group::{Group, GroupError, GroupOptions, MemberEvent};
use shmem_core::TransportError;
use shmem_store::Store;

mod common;
use common::Watchdog;

const CHILD_VAR: &str = "GROUP_API_CHILD";
const SERVE_VAR: &str = "GROUP_API_SERVE";
const REMOTE_VAR: &str = "GROUP_API_REMOTE";
const NETNS_VAR: &str = "GROUP_API_OTHER_NETNS";
const STORE_PID_VAR: &str = "GROUP_API_STORE_PID";
const HIDE_VAR: &str = "GROUP_API_HIDE_UCX";

/// Bound of one command's answer.
const T: Duration = Duration::from_secs(60);
/// The members' loss bound, and the most a report of a member down may take.
const LOSS: Duration = Duration::from_secs(2);
const DOWN_BOUND: Duration = Duration::from_secs(10);
/// Bytes each member registers.
const HEAP: usize = 1 << 20;

/// The worker the members of a test use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// The group's default ([`shmem_core::group::default_worker`]: the node path over UCX).
    /// Members joining with an even index allocate their memory through the group
    /// (shareable), the others register private memory.
    Ucx,
    /// The node path without UCX (`NodeWorker::without_ucx`, what the default is where UCX
    /// does not load); every member's memory allocated through the group.
    Node,
    /// A UCX worker alone, no node path (the timing's reference).
    UcxOnly,
    /// The group's default, every member's memory allocated through the group (for members
    /// whose UCX is hidden: the default is then the node path without UCX).
    Default,
}

impl Path {
    fn word(self) -> &'static str {
        match self {
            Path::Ucx => "ucx",
            Path::Node => "node",
            Path::UcxOnly => "ucx-only",
            Path::Default => "default",
        }
    }

    fn parse(w: &str) -> Path {
        match w {
            "ucx" => Path::Ucx,
            "node" => Path::Node,
            "ucx-only" => Path::UcxOnly,
            "default" => Path::Default,
            _ => panic!("no path {w}"),
        }
    }

    /// Whether this path runs here (says why not).
    fn runs(self) -> bool {
        self == Path::Node || ucx_loads()
    }

    /// The memory the member joining `i`-th registers: `alloc` or `private`.
    fn memory(self, i: usize) -> &'static str {
        match self {
            Path::Ucx if i % 2 == 1 => "private",
            Path::UcxOnly => "private",
            _ => "alloc",
        }
    }

    /// Whether members may start in the other network namespace (the netns script's): not
    /// without UCX, which reaches this node only.
    fn other_netns(self, wanted: bool) -> bool {
        wanted && self != Path::Node
    }
}

/// What the members without UCX give as the reason: the loader's error as the library words
/// it where `libucp.so.0` is missing.
fn ucx_missing() -> String {
    TransportError::NotLoaded {
        library: "libucp.so.0".into(),
        why: "libucp.so.0: cannot open shared object file: No such file or directory".into(),
        package: "libucx0",
    }
    .to_string()
}

/// Whether UCX loads here; if not, says so (the test then passes without running).
fn ucx_loads() -> bool {
    match UcxWorker::open(Duration::from_secs(5)) {
        Ok(_) => true,
        Err(e @ TransportError::NotLoaded { .. }) => {
            eprintln!("skipped: {e}");
            false
        }
        Err(e) => panic!("{e}"),
    }
}

fn dial(url: &str) -> TcpDial {
    TcpDial {
        addr: StoreAddr::parse(url, None).unwrap(),
        tls: None,
        job: "group-api".into(),
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "@@{line}").unwrap();
    out.flush().unwrap();
}

/// Serves a store of groups at `GROUP_API_SERVE` until its stdin closes; says `serving` first.
#[test]
fn group_store_child() {
    let Ok(url) = std::env::var(SERVE_VAR) else {
        return;
    };
    let store = Store::serve_or_join(&dial(&url), None, 512, T).unwrap();
    assert!(store.server.is_some(), "nothing else serves {url}");
    say("serving");
    for _ in std::io::stdin().lock().lines() {}
}

fn member_options(size: u32, path: Path) -> GroupOptions {
    let mut o = GroupOptions::new(size);
    o.worker = match path {
        Path::Ucx | Path::Default => None,
        Path::Node => Some(Arc::new(NodeWorker::without_ucx(ucx_missing(), T).unwrap())),
        Path::UcxOnly => Some(Arc::new(UcxWorker::open(T).unwrap())),
    };
    o.timeout = Duration::from_secs(30);
    o.connect_timeout = T;
    o.member.heartbeat = Duration::from_millis(500);
    o.member.loss = LOSS;
    o.member.control_timeout = T;
    o
}

/// The bytes member `rank` writes for `tag`.
fn line(tag: &str, rank: u32) -> Vec<u8> {
    format!("{tag}:{rank};").into_bytes()
}

fn ranks(list: &str) -> Vec<u32> {
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect()
}

fn event_name(e: &MemberEvent) -> Option<(&'static str, u32)> {
    match e {
        MemberEvent::Joined { rank, .. } => Some(("joined", *rank)),
        MemberEvent::Left { rank, .. } => Some(("left", *rank)),
        MemberEvent::Down { rank, .. } => Some(("down", *rank)),
        _ => None,
    }
}

/// A member of this process: its group, its registered memory ("heap": the group's, or
/// `private`'s) and other private memory it registered.
struct Joined {
    group: Group,
    heap: *mut u8,
    private: Vec<Vec<u8>>,
}

impl Joined {
    fn local(&self, at: usize, len: usize) -> Vec<u8> {
        assert!(at + len <= HEAP);
        // SAFETY: the heap's HEAP bytes live while the group does; members write them
        // through the transport or their mapping: read them volatile after their flush.
        (at..at + len)
            .map(|i| unsafe { std::ptr::read_volatile(self.heap.add(i)) })
            .collect()
    }
}

/// One command of a member child; the answer's text, or why it failed.
fn command(
    url: &str,
    group: &str,
    id: &str,
    path: Path,
    joined: &mut Option<Joined>,
    f: &[&str],
) -> Result<String, String> {
    let e = |e: GroupError| e.to_string();
    if f[0] == "join" {
        let size: u32 = f[1].parse().unwrap();
        let g = Group::join(&dial(url), group, id, member_options(size, path)).map_err(e)?;
        let mut private = Vec::new();
        let heap = match f[2] {
            "alloc" => g.alloc("heap", HEAP).map_err(e)?,
            _ => {
                let mut mem = vec![0u8; HEAP];
                // SAFETY: `mem` lives in `joined` beside the group, which is dropped or left
                // first (a Vec's buffer does not move with it).
                unsafe { g.register("heap", mem.as_mut_ptr(), mem.len()) }.map_err(e)?;
                let at = mem.as_mut_ptr();
                private.push(mem);
                at
            }
        };
        let rank = g.rank();
        *joined = Some(Joined {
            group: g,
            heap,
            private,
        });
        return Ok(rank.to_string());
    }
    if f[0] == "register_private" {
        let j = joined.as_mut().ok_or("not a member")?;
        let mut mem = vec![0u8; 4096];
        // SAFETY: as at join.
        unsafe { j.group.register(f[1], mem.as_mut_ptr(), mem.len()) }.map_err(e)?;
        j.private.push(mem);
        return Ok(String::new());
    }
    let j = joined.as_ref().ok_or("not a member")?;
    let g = &j.group;
    let me = g.rank();
    match f[0] {
        "members" => Ok(g
            .members()
            .map_err(e)?
            .iter()
            .map(|(r, id)| format!("{r}:{id}"))
            .collect::<Vec<_>>()
            .join(",")),
        "put_all" => {
            let data = line(f[1], me);
            for (r, _) in g.members().map_err(e)? {
                g.put(r, "heap", u64::from(me) * 64, &data).map_err(e)?;
                g.flush(r).map_err(e)?;
            }
            Ok(String::new())
        }
        "check_local" => {
            for r in ranks(f[2]) {
                let want = line(f[1], r);
                let got = j.local(r as usize * 64, want.len());
                if got != want {
                    return Err(format!(
                        "rank {me}: at rank {r}'s place: {:?}, not {:?}",
                        String::from_utf8_lossy(&got),
                        String::from_utf8_lossy(&want)
                    ));
                }
            }
            Ok(String::new())
        }
        "check_remote" => {
            let want = line(f[1], me);
            for r in ranks(f[2]) {
                let mut got = vec![0u8; want.len()];
                g.get(r, "heap", u64::from(me) * 64, &mut got).map_err(e)?;
                if got != want {
                    return Err(format!(
                        "rank {me}: read back from rank {r}: {:?}, not {:?}",
                        String::from_utf8_lossy(&got),
                        String::from_utf8_lossy(&want)
                    ));
                }
            }
            Ok(String::new())
        }
        "expect_gone" => {
            let r: u32 = f[1].parse().unwrap();
            match g.put(r, "heap", 0, b"late") {
                Ok(()) => Err(format!("a put to rank {r} succeeded")),
                Err(err) => Ok(err.to_string()),
            }
        }
        "check_remote_private" => {
            let (r, name) = (f[1].parse::<u32>().unwrap(), f[2]);
            let mut got = [1u8; 8];
            g.get(r, name, 0, &mut got).map_err(e)?;
            if got != [0; 8] {
                return Err(format!("rank {me}: read {got:?} from rank {r}'s '{name}'"));
            }
            Ok(String::new())
        }
        "expect_needs_ucx" => {
            let (r, name) = (f[1].parse::<u32>().unwrap(), f[2]);
            match g.get(r, name, 0, &mut [0u8; 8]) {
                Err(err @ GroupError::Transport { .. }) => Ok(err.to_string()),
                Err(err) => Err(format!("a get from rank {r}: {err}")),
                Ok(()) => Err(format!("a get from rank {r}'s '{name}' succeeded")),
            }
        }
        "time_put" => {
            // Microseconds per blocking put (and flush) of `bytes` to rank `r`, best of 5
            // runs of `n`.
            let (r, bytes, n) = (
                f[1].parse::<u32>().unwrap(),
                f[2].parse::<usize>().unwrap(),
                f[3].parse::<u32>().unwrap(),
            );
            let src = vec![0xa5u8; bytes];
            let mut best = f64::MAX;
            for _ in 0..5 {
                let start = Instant::now();
                for _ in 0..n {
                    g.put(r, "heap", 0, &src).map_err(e)?;
                    g.flush(r).map_err(e)?;
                }
                best = best.min(start.elapsed().as_secs_f64() * 1e6 / f64::from(n));
            }
            Ok(format!("{best:.1}"))
        }
        "unregister" => g.unregister("heap").map(|()| String::new()).map_err(e),
        "expect_withdrawn" => {
            let r: u32 = f[1].parse().unwrap();
            match g.get(r, "heap", 0, &mut [0u8; 8]) {
                Err(err @ GroupError::NoRegistration { .. }) => Ok(err.to_string()),
                Err(err) => Err(format!("a get from rank {r}: {err}")),
                Ok(()) => Err(format!("a get from rank {r} succeeded")),
            }
        }
        "set" => g
            .set(f[1], f[2].as_bytes())
            .map(|()| String::new())
            .map_err(e),
        "wait" => {
            let v = g.watch(f[1], None, T).map_err(e)?;
            Ok(String::from_utf8_lossy(&v.unwrap_or_default()).into_owned())
        }
        "barrier" => {
            let r = g.barrier().map_err(e)?;
            Ok(format!("{} {:?} {:?}", r.round, r.data.len(), r.gone))
        }
        "allgather" => {
            let r = g.allgather(id.as_bytes()).map_err(e)?;
            let ids: Vec<String> = r
                .data
                .iter()
                .map(|(r, d)| format!("{r}:{}", String::from_utf8_lossy(d)))
                .collect();
            Ok(ids.join(","))
        }
        "wait_event" => {
            let (kind, rank) = (f[1], f[2].parse::<u32>().unwrap());
            let deadline = Instant::now() + T;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match g.next_event(left) {
                    Some(ev) if event_name(&ev) == Some((kind, rank)) => {
                        return Ok(format!("{ev:?}"));
                    }
                    Some(_) => {}
                    None => return Err(format!("rank {me}: no event {kind} {rank} within {T:?}")),
                }
            }
        }
        "leave" => {
            let j = joined.take().unwrap();
            j.group.leave().map_err(e)?;
            drop(j.private);
            Ok(String::new())
        }
        other => Err(format!("unknown command {other}")),
    }
}

/// A member in a child process: `GROUP_API_CHILD` is `<store url> <group> <id> <path>`; runs the
/// commands of its stdin (see [`command`]) until it closes, answering `reply ok ...` or
/// `reply err ...` to each.
#[test]
fn group_child() {
    let Ok(spec) = std::env::var(CHILD_VAR) else {
        return;
    };
    let _watchdog = Watchdog::new("group_child", Duration::from_secs(900));
    let f: Vec<String> = spec.split(' ').map(str::to_string).collect();
    let (url, group, id, path) = (&f[0], &f[1], &f[2], Path::parse(&f[3]));
    let mut joined: Option<Joined> = None;
    say("ready");
    for l in std::io::stdin().lock().lines() {
        let l = l.unwrap();
        let words: Vec<&str> = l.split(' ').collect();
        match command(url, group, id, path, &mut joined, &words) {
            Ok(text) => say(&format!("reply ok {text}")),
            Err(text) => say(&format!("reply err {}", text.replace('\n', " "))),
        }
    }
}

/// A child process (a member or the store), killed when dropped.
struct Kid {
    name: String,
    proc: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// The command sent last, for the messages.
    last: String,
}

impl Kid {
    fn spawn(name: &str, env: (&str, String), other_netns: bool) -> Kid {
        Kid::spawn_hiding(name, env, other_netns, None)
    }

    /// As [`Kid::spawn`]; with `hide`, the file `hide` (UCX's library) is hidden from the
    /// child by a bind mount of /dev/null in a mount namespace of its own.
    fn spawn_hiding(name: &str, env: (&str, String), other_netns: bool, hide: Option<&str>) -> Kid {
        let exe = std::env::current_exe().unwrap();
        let test = if env.0 == SERVE_VAR {
            "group_store_child"
        } else {
            "group_child"
        };
        let mut argv: Vec<std::ffi::OsString> = Vec::new();
        if let Some(lib) = hide {
            let sh = r#"mount --bind /dev/null "$0" && exec "$@""#;
            argv.extend(["unshare", "-m", "sh", "-c", sh, lib].map(Into::into));
        }
        if let Some(ns) = std::env::var(NETNS_VAR).ok().filter(|_| other_netns) {
            argv.extend(["ip", "netns", "exec"].map(Into::into));
            argv.push(ns.into());
        }
        argv.push(exe.into());
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(env.0, env.1)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut proc = cmd.spawn().unwrap();
        let stdin = proc.stdin.take();
        let out = proc.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                // libtest's own words may precede ours on the line.
                if let Some(i) = l.find("@@") {
                    if tx.send(l[i + 2..].to_string()).is_err() {
                        break;
                    }
                }
            }
        });
        let mut kid = Kid {
            name: name.into(),
            proc,
            stdin,
            lines: rx,
            last: "start".into(),
        };
        let first = kid.next_line();
        assert!(first == "ready" || first == "serving", "{name}: {first}");
        kid
    }

    /// A member over `path`, in the other network namespace if `other_netns` and the path
    /// reaches it.
    fn member(s: &Setup, path: Path, group: &str, id: &str, other_netns: bool) -> Kid {
        Kid::spawn(
            id,
            (CHILD_VAR, format!("{} {group} {id} {}", s.url, path.word())),
            path.other_netns(other_netns),
        )
    }

    fn next_line(&mut self) -> String {
        self.lines.recv_timeout(T).unwrap_or_else(|e| {
            panic!("{}: {}: no answer within {T:?} ({e})", self.name, self.last)
        })
    }

    fn send(&mut self, cmd: &str) {
        self.last = cmd.into();
        let stdin = self.stdin.as_mut().expect("the child's stdin");
        writeln!(stdin, "{cmd}").unwrap();
        stdin.flush().unwrap();
    }

    /// The answer to the command sent last: `Ok(text)` or `Err(text)`.
    fn answer(&mut self) -> Result<String, String> {
        let l = self.next_line();
        if let Some(t) = l.strip_prefix("reply ok") {
            Ok(t.trim().to_string())
        } else if let Some(t) = l.strip_prefix("reply err") {
            Err(t.trim().to_string())
        } else {
            panic!("{}: unexpected line {l}", self.name)
        }
    }

    fn run(&mut self, cmd: &str) -> String {
        self.send(cmd);
        self.answer()
            .unwrap_or_else(|e| panic!("{}: {cmd}: {e}", self.name))
    }

    fn pid(&self) -> u32 {
        self.proc.id()
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.proc.kill();
        let _ = self.proc.wait();
    }
}

/// Sends `cmd` to every kid, then collects their answers (run at once, not in turn).
fn all(kids: &mut [&mut Kid], cmd: &str) -> Vec<String> {
    all_each(kids, |_| cmd.to_string())
}

/// Sends `cmd(i)` to the `i`-th kid, then collects their answers.
fn all_each(kids: &mut [&mut Kid], cmd: impl Fn(usize) -> String) -> Vec<String> {
    for (i, k) in kids.iter_mut().enumerate() {
        k.send(&cmd(i));
    }
    kids.iter_mut()
        .map(|k| {
            let (name, last) = (k.name.clone(), k.last.clone());
            k.answer().unwrap_or_else(|e| panic!("{name}: {last}: {e}"))
        })
        .collect()
}

/// Where the store is: a child process of this test, or the netns script's.
struct Setup {
    url: String,
    store: Option<Kid>,
}

fn setup() -> Setup {
    if let Ok(url) = std::env::var(REMOTE_VAR) {
        return Setup { url, store: None };
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("tcp://127.0.0.1:{port}");
    let store = Kid::spawn("store", (SERVE_VAR, url.clone()), false);
    Setup {
        url,
        store: Some(store),
    }
}

/// Whether this process is a child of these tests (which then run nothing of their own).
fn a_child() -> bool {
    std::env::var_os(CHILD_VAR).is_some() || std::env::var_os(SERVE_VAR).is_some()
}

#[test]
fn four_members_a_fifth_joins_one_leaves_one_is_killed() {
    four_members(Path::Ucx);
}

#[test]
fn four_members_a_fifth_joins_one_leaves_one_is_killed_without_ucx() {
    four_members(Path::Node);
}

fn four_members(path: Path) {
    let _watchdog = Watchdog::new("four_members", Duration::from_secs(600));
    if a_child() || !path.runs() {
        return;
    }
    let s = setup();
    let group = "four";
    let mut kids: Vec<Kid> = (0..4)
        .map(|i| Kid::member(&s, path, group, &format!("m{i}"), i % 2 == 1))
        .collect();
    // One at a time, so that ranks follow the order.
    for (i, k) in kids.iter_mut().enumerate() {
        assert_eq!(k.run(&format!("join 8 {}", path.memory(i))), i.to_string());
    }
    let mut refs: Vec<&mut Kid> = kids.iter_mut().collect();
    all(&mut refs, "put_all t1");
    all(&mut refs, "check_local t1 0,1,2,3");
    all(&mut refs, "check_remote t1 0,1,2,3");
    // Private memory of another process: through UCX, or, without it, refused naming it.
    kids[0].run("register_private priv");
    if path == Path::Node {
        let e = kids[1].run("expect_needs_ucx 0 priv");
        assert!(
            e.contains("'four'") && e.contains("rank 0") && e.contains("private memory"),
            "{e}"
        );
        assert!(
            e.contains("through UCX") && e.contains("install libucx0"),
            "{e}"
        );
    } else {
        kids[1].run("check_remote_private 0 priv");
    }

    // The four block in a wait; a fifth joins meanwhile (its join's change runs with their
    // groups' threads) and releases them.
    for k in kids.iter_mut() {
        k.send("wait go");
    }
    thread::sleep(Duration::from_millis(300));
    let mut fifth = Kid::member(&s, path, group, "m4", false);
    assert_eq!(fifth.run(&format!("join 8 {}", path.memory(4))), "4");
    fifth.run("set go now");
    for k in kids.iter_mut() {
        assert_eq!(k.answer().unwrap(), "now");
        k.run("wait_event joined 4");
    }
    kids.push(fifth);
    let mut refs: Vec<&mut Kid> = kids.iter_mut().collect();
    all(&mut refs, "put_all t2");
    all(&mut refs, "check_local t2 0,1,2,3,4");
    all(&mut refs, "check_remote t2 0,1,2,3,4");
    let rounds = all(&mut refs, "barrier");
    assert!(rounds.iter().all(|r| *r == rounds[0]), "{rounds:?}");
    assert!(rounds[0].ends_with("5 []"), "{rounds:?}");

    // Rank 1 leaves; rank 2 is SIGKILLed.
    kids[1].run("leave");
    for i in [0, 2, 3, 4] {
        kids[i].run("wait_event left 1");
    }
    kids[2].proc.kill().unwrap();
    kids[2].proc.wait().unwrap();
    let killed = Instant::now();
    let mut took = Vec::new();
    for i in [0, 3, 4] {
        kids[i].run("wait_event down 2");
        took.push(killed.elapsed());
    }
    eprintln!("member down seen by ranks 0, 3, 4 after {took:?} (bound {DOWN_BOUND:?})");
    assert!(took.iter().all(|t| *t < DOWN_BOUND), "{took:?}");
    let mut rest: Vec<&mut Kid> = kids
        .iter_mut()
        .enumerate()
        .filter(|(i, _)| [0, 3, 4].contains(i))
        .map(|(_, k)| k)
        .collect();
    // Calls to the members gone fail naming the group, the rank and the member.
    for gone in [1, 2] {
        for e in all(&mut rest, &format!("expect_gone {gone}")) {
            assert!(
                e.contains("'four'") && e.contains(&format!("rank {gone}")),
                "{e}"
            );
        }
    }
    // They go on; what the others wrote before they went is intact.
    all(&mut rest, "check_local t2 0,1,2,3,4");
    all(&mut rest, "put_all t3");
    all(&mut rest, "check_local t3 0,3,4");
    all(&mut rest, "check_remote t3 0,3,4");
    let rounds = all(&mut rest, "barrier");
    assert!(rounds.iter().all(|r| r.ends_with("3 []")), "{rounds:?}");
    // Rank 0 withdraws its memory: once the others confirmed, their cached keys are gone and
    // their reads fail, naming it.
    rest[0].run("unregister");
    for k in rest.iter_mut().skip(1) {
        let e = k.run("expect_withdrawn 0");
        assert!(e.contains("rank 0") && e.contains("'heap'"), "{e}");
    }
    let gathered = all(&mut rest, "allgather");
    assert!(
        gathered.iter().all(|g| g == "0:m0,3:m3,4:m4"),
        "{gathered:?}"
    );
    all(&mut rest, "leave");
    drop(s);
}

#[test]
fn eight_racing_members_are_ranked_and_a_newcomer_takes_a_freed_rank() {
    eight_racing(Path::Ucx);
}

#[test]
fn eight_racing_members_are_ranked_and_a_newcomer_takes_a_freed_rank_without_ucx() {
    eight_racing(Path::Node);
}

fn eight_racing(path: Path) {
    let _watchdog = Watchdog::new("eight_racing", Duration::from_secs(600));
    if a_child() || !path.runs() {
        return;
    }
    let s = setup();
    let group = "eight";
    let mut kids: Vec<Kid> = (0..8)
        .map(|i| Kid::member(&s, path, group, &format!("r{i}"), i % 2 == 1))
        .collect();
    let mut refs: Vec<&mut Kid> = kids.iter_mut().collect();
    let got: Vec<u32> = all_each(&mut refs, |i| format!("join 8 {}", path.memory(i)))
        .iter()
        .map(|r| r.parse().unwrap())
        .collect();
    let mut sorted = got.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..8).collect::<Vec<u32>>(), "{got:?}");
    // Every member sees the same members through the group API.
    let members = all(&mut refs, "members");
    assert!(members.iter().all(|m| *m == members[0]), "{members:?}");
    assert_eq!(members[0].split(',').count(), 8);
    // A ninth is refused: the group is full.
    let mut ninth = Kid::member(&s, path, group, "r8", false);
    ninth.send(&format!("join 8 {}", path.memory(8)));
    let e = ninth.answer().unwrap_err();
    assert!(e.contains("'eight'"), "{e}");
    // The member holding rank 3 leaves; a newcomer takes rank 3 (the lowest free rank at or
    // after the cursor, which wrapped past 7).
    let at3 = got.iter().position(|r| *r == 3).unwrap();
    kids[at3].run("leave");
    let mut newcomer = Kid::member(&s, path, group, "r9", true);
    assert_eq!(newcomer.run(&format!("join 8 {}", path.memory(9))), "3");
    let mut refs: Vec<&mut Kid> = kids
        .iter_mut()
        .enumerate()
        .filter(|(i, _)| *i != at3)
        .map(|(_, k)| k)
        .collect();
    refs.push(&mut newcomer);
    let members = all(&mut refs, "members");
    assert!(members.iter().all(|m| m.contains("3:r9")), "{members:?}");
    // Its data reaches everyone, and theirs reaches it.
    all(&mut refs, "put_all n");
    all(&mut refs, "check_local n 0,1,2,3,4,5,6,7");
    all(&mut refs, "check_remote n 0,1,2,3,4,5,6,7");
    all(&mut refs, "leave");
    drop(s);
}

/// [`usage_now`] once it is settled: descriptors, mappings and threads the same for 1.5 s (the
/// store ends a closed connection's thread when the wait it serves ends, up to a heartbeat
/// after the member's call returned), or after 10 s.
fn usage(pid: u32) -> [usize; 4] {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = usage_now(pid);
    let mut since = Instant::now();
    loop {
        thread::sleep(Duration::from_millis(250));
        let now = usage_now(pid);
        if now[1..] != last[1..] {
            since = Instant::now();
        }
        if since.elapsed() >= Duration::from_millis(1500) || Instant::now() >= deadline {
            return now;
        }
        last = now;
    }
}

/// Resident memory (KiB), descriptors, mappings and threads of process `pid`.
fn usage_now(pid: u32) -> [usize; 4] {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> usize {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    let maps =
        std::fs::read_to_string(format!("/proc/{pid}/maps")).map_or(0, |m| m.lines().count());
    [field("VmRSS:"), fds, maps, field("Threads:")]
}

#[test]
fn a_hundred_joins_and_leaves_leave_nothing_behind() {
    a_hundred_joins(Path::Ucx);
}

#[test]
fn a_hundred_joins_and_leaves_leave_nothing_behind_without_ucx() {
    a_hundred_joins(Path::Node);
}

fn a_hundred_joins(path: Path) {
    let _watchdog = Watchdog::new("a_hundred_joins", Duration::from_secs(900));
    if a_child() || !path.runs() {
        return;
    }
    let s = setup();
    let group = "loop";
    let mut a = Kid::member(&s, path, group, "stays-a", false);
    let mut b = Kid::member(&s, path, group, "stays-b", true);
    let mut c = Kid::member(&s, path, group, "comes-and-goes", false);
    assert_eq!(a.run(&format!("join 8 {}", path.memory(0))), "0");
    assert_eq!(b.run(&format!("join 8 {}", path.memory(1))), "1");
    let join_c = format!("join 8 {}", path.memory(2));
    let mut before: HashMap<&str, [usize; 4]> = HashMap::new();
    let mut half: HashMap<&str, [usize; 4]> = HashMap::new();
    let start = Instant::now();
    let (warm, cycles) = (5, 100);
    for i in 1..=warm + cycles {
        let rank = c.run(&join_c);
        for k in [&mut a, &mut b] {
            k.run(&format!("wait_event joined {rank}"));
        }
        let ranks = format!("0,1,{rank}");
        let tag = format!("c{i}");
        let mut kids = [&mut a, &mut b, &mut c];
        all(&mut kids, &format!("put_all {tag}"));
        all(&mut kids, &format!("check_local {tag} {ranks}"));
        all(&mut kids, &format!("check_remote {tag} {ranks}"));
        all(&mut kids, "barrier");
        c.run("leave");
        for k in [&mut a, &mut b] {
            k.run(&format!("wait_event left {rank}"));
        }
        if i == warm {
            for (name, pid) in procs(&s, &a, &b, &c) {
                before.insert(name, usage(pid));
            }
            eprintln!("after {warm} warm-up cycles ({:?})", start.elapsed());
        }
        if i == warm + cycles / 2 {
            for (name, pid) in procs(&s, &a, &b, &c) {
                half.insert(name, usage(pid));
            }
        }
    }
    let took = start.elapsed();
    eprintln!(
        "{path:?} path: {cycles} joins and leaves in {took:?}; (RSS KiB, descriptors, \
         mappings, threads) after {warm}, {} and {} cycles:",
        warm + cycles / 2,
        warm + cycles
    );
    let mut grew = Vec::new();
    for (name, pid) in procs(&s, &a, &b, &c) {
        let [rss0, fd0, map0, th0] = before[name];
        let after @ [rss1, fd1, map1, th1] = usage(pid);
        eprintln!(
            "  {name}: {:?} -> {:?} -> {after:?}",
            before[name], half[name]
        );
        // Descriptors and threads do not grow. Mappings may by a few: the C allocator's
        // per-thread arenas (two mappings each, at most eight per core) are made when more
        // threads than before run at once (the store's connections' threads end a moment
        // after their members leave), and kept. Resident memory within allocator noise.
        if fd1 > fd0 || map1 > map0 + 8 || th1 > th0 || rss1 > rss0 + 4096 {
            grew.push(format!("{name}: {:?} -> {after:?}", before[name]));
        }
    }
    assert!(grew.is_empty(), "grew: {grew:?}");
    drop(s);
}

/// The processes measured: the store (when it is this test's child) and the three members.
fn procs<'a>(s: &Setup, a: &Kid, b: &Kid, c: &Kid) -> Vec<(&'a str, u32)> {
    let mut v = Vec::new();
    if let Some(store) = &s.store {
        v.push(("store", store.pid()));
    } else if let Some(pid) = std::env::var(STORE_PID_VAR)
        .ok()
        .and_then(|p| p.parse().ok())
    {
        v.push(("store", pid));
    }
    v.extend([
        ("member that stays (rank 0)", a.pid()),
        ("member that stays (rank 1)", b.pid()),
        ("member that comes and goes", c.pid()),
    ]);
    v
}

/// Without UCX, a member of another network namespace (another node) is refused, naming UCX.
/// Runs in `tests/multinode/group_api_netns.sh` only (`GROUP_API_OTHER_NETNS`), which hides
/// UCX's library from the members (`GROUP_API_HIDE_UCX`: its file).
#[test]
fn without_ucx_a_member_of_another_node_is_refused_naming_ucx() {
    let _watchdog = Watchdog::new("without_ucx_another_node", Duration::from_secs(300));
    if a_child() {
        return;
    }
    if std::env::var_os(NETNS_VAR).is_none() {
        eprintln!("skipped: needs a second network namespace ({NETNS_VAR})");
        return;
    }
    // With UCX's library hidden from the members (the netns script says where it is), they
    // make the group's default worker and find UCX missing themselves.
    let hide = std::env::var(HIDE_VAR).ok().filter(|v| !v.is_empty());
    let path = if hide.is_some() {
        Path::Default
    } else {
        Path::Node
    };
    let s = setup();
    let group = "apart";
    let spec = |id: &str| (CHILD_VAR, format!("{} {group} {id} {}", s.url, path.word()));
    let mut here = Kid::spawn_hiding("here", spec("here"), false, hide.as_deref());
    let mut there = Kid::spawn_hiding("there", spec("there"), true, hide.as_deref());
    assert_eq!(here.run("join 2 alloc"), "0");
    assert_eq!(there.run("join 2 alloc"), "1");
    for (k, other) in [(&mut here, 1), (&mut there, 0)] {
        let e = k.run(&format!("expect_needs_ucx {other} heap"));
        assert!(
            e.contains("another node") && e.contains("through UCX") && e.contains("libucx0"),
            "{e}"
        );
        assert!(
            hide.is_none() || e.contains("cannot load libucp.so.0"),
            "{e}"
        );
        eprintln!("refused as it should be: {e}");
    }
    all(&mut [&mut here, &mut there], "leave");
    drop(s);
}

/// A timing, not a check (`cargo test --release --test group -- --ignored --nocapture
/// time_`): a blocking put and flush of 1 MiB between two member processes of this node,
/// through the node path (shareable memory, mapped) and through a UCX worker alone.
#[test]
#[ignore = "a timing: run by hand"]
fn time_a_put_of_1_mib_between_two_processes() {
    let _watchdog = Watchdog::new("time_a_put", Duration::from_secs(600));
    if a_child() {
        return;
    }
    let mut paths = vec![Path::Node];
    if ucx_loads() {
        paths.extend([Path::Ucx, Path::UcxOnly]);
    }
    let s = setup();
    for path in paths {
        let group = format!("time-{}", path.word());
        let mut a = Kid::member(&s, path, &group, "a", false);
        let mut b = Kid::member(&s, path, &group, "b", false);
        // Both allocate through the group where the path has a node path: shareable memory.
        let mem = if path == Path::UcxOnly {
            "private"
        } else {
            "alloc"
        };
        assert_eq!(a.run(&format!("join 2 {mem}")), "0");
        assert_eq!(b.run(&format!("join 2 {mem}")), "1");
        for bytes in [8usize, 4096, HEAP] {
            let us = a.run(&format!("time_put 1 {bytes} 200"));
            eprintln!("{path:?} ({mem} memory): put+flush of {bytes} bytes: {us} us");
        }
        all(&mut [&mut a, &mut b], "leave");
    }
    drop(s);
}
