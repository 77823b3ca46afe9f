//! The store's memory stays bounded when PEs of the job (insiders, holding its credentials)
//! announce many large frames at once: the bytes it buffers across all connections are
//! budgeted, and frames beyond the budget wait their turn. Its own test binary, so that the
//! process's resident memory measures this store alone.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use shmem_store::addr::StoreAddr;
use shmem_store::wire::{self, Reply, Request};
use shmem_store::{Client, Server, TcpDial};

const T: Duration = Duration::from_secs(60);

/// Held by each test that measures memory: the others' clients would count in it.
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn measuring() -> std::sync::MutexGuard<'static, ()> {
    MEASURING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Resident memory of this process, in bytes.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// A PE's raw connection: says HELLO as `rank` of `n`, then is driven frame by frame.
fn raw_pe(port: u16, rank: u32, n: u32) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let hello = Request::Hello {
        version: wire::PROTOCOL_VERSION,
        rank,
        n_pes: n,
        job: String::new(),
    };
    s.write_all(&hello.encode().unwrap()).unwrap();
    let ack = Reply::from_frame(&wire::read_frame(&mut s).unwrap()).unwrap();
    assert!(matches!(ack, Reply::HelloAck { .. }), "{ack:?}");
    s
}

#[test]
fn large_frames_of_many_pes_stay_within_the_budget() {
    let _alone = measuring();
    const PES: u32 = 8;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (server, events) = Server::for_job(PES + 1, "");
    std::mem::forget(events);
    server.serve_tcp(listener, None).unwrap();
    // Every PE sends the same largest SET frame; the bytes are resident before measuring.
    let frame: Arc<Vec<u8>> = Arc::new(
        Request::Set {
            key: "big".into(),
            value: vec![0x5a; wire::MAX_VALUE_LEN],
        }
        .encode()
        .unwrap(),
    );
    let before = rss();
    let held = Arc::new(Barrier::new(PES as usize + 1));
    let go = Arc::new(Barrier::new(PES as usize + 1));
    let pes: Vec<_> = (0..PES)
        .map(|rank| {
            let (frame, held, go) = (Arc::clone(&frame), Arc::clone(&held), Arc::clone(&go));
            thread::spawn(move || {
                let mut s = raw_pe(port, rank, PES + 1);
                // All but the last byte: the store holds what it accepted of the frame.
                let last = frame.len() - 1;
                let writer = s.try_clone().unwrap();
                let body = thread::spawn(move || {
                    let mut writer = writer;
                    writer.write_all(&frame[..last]).unwrap();
                    (writer, frame)
                });
                held.wait();
                go.wait();
                let (mut writer, frame) = body.join().unwrap();
                writer.write_all(&frame[last..]).unwrap();
                let reply = Reply::from_frame(&wire::read_frame(&mut s).unwrap()).unwrap();
                assert_eq!(reply, Reply::Ok, "PE {rank}");
            })
        })
        .collect();
    held.wait();
    // Let the store read whatever it is going to read of the frames.
    thread::sleep(Duration::from_secs(3));
    let grown = rss().saturating_sub(before);
    go.wait();
    for pe in pes {
        pe.join().unwrap();
    }
    let budget = shmem_store::FRAME_BUDGET;
    eprintln!(
        "{PES} PEs each announcing a {} MiB frame: resident memory grew by {} MiB (budget {} MiB)",
        frame.len() >> 20,
        grown >> 20,
        budget >> 20
    );
    assert!(
        grown <= budget,
        "resident memory grew by {grown} bytes, over the store's budget of {budget}"
    );
    // The store still serves the job.
    let addr = StoreAddr::parse(&format!("tcp://127.0.0.1:{port}"), None).unwrap();
    let dial = TcpDial {
        addr,
        tls: None,
        job: String::new(),
    };
    let c = Client::connect_tcp(&dial, PES, PES + 1, T).unwrap();
    assert_eq!(c.get("big", T).unwrap().len(), wire::MAX_VALUE_LEN);
}

/// Job size of [`insiders_cannot_grow_the_store_past_its_bounds`]: PEs whose large frames
/// arrive at once.
const INSIDERS: u32 = 15;

/// Resident memory of process `pid`, in bytes.
fn rss_of(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Not a test of its own: the store's host for
/// [`insiders_cannot_grow_the_store_past_its_bounds`], when `SHMEM_TEST_STORE_HOST` says so
/// (this binary, run again, so that the store's memory is measured apart from its clients').
/// Serves a TLS store for [`INSIDERS`] PEs and writes its port and the PEs' credentials on
/// stdout; ends when stdin closes, or after a minute and a half.
#[test]
fn store_host() {
    use shmem_store::tls::{self, Validity};
    use std::io::BufRead;
    if std::env::var_os("SHMEM_TEST_STORE_HOST").is_none() {
        return;
    }
    // As shmemrun does.
    shmem_base::malloc::give_back_large_frees();
    let creds =
        tls::job_credentials(&["127.0.0.1".parse().unwrap()], Validity::for_a_job()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (server, events) = Server::for_job(INSIDERS, "");
    server
        .serve_tcp(listener, Some(creds.server.server_config().unwrap()))
        .unwrap();
    println!("PORT {port}");
    println!("BUNDLE-BEGIN\n{}\nBUNDLE-END", creds.client_bundle);
    std::io::stdout().flush().unwrap();
    // Whichever comes first: the test is done (stdin closes), or it was killed meanwhile.
    thread::spawn(|| {
        thread::sleep(Duration::from_secs(90));
        std::process::exit(1);
    });
    for _ in std::io::stdin().lock().lines() {}
    drop(events);
}

/// The store's host process; killed when dropped, should the test fail first.
struct Host(std::process::Child);

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Peak of `pid`'s resident memory while `f` runs, sampled every few milliseconds.
fn peak_rss_during<R>(pid: u32, f: impl FnOnce() -> R) -> (R, usize) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let done = Arc::new(AtomicBool::new(false));
    let stop = Arc::clone(&done);
    let sampler = thread::spawn(move || {
        let mut peak = rss_of(pid);
        while !stop.load(Ordering::SeqCst) {
            peak = peak.max(rss_of(pid));
            thread::sleep(Duration::from_millis(2));
        }
        peak
    });
    let result = f();
    done.store(true, Ordering::SeqCst);
    (result, sampler.join().unwrap())
}

/// Every PE sets one largest value under `key(rank)` at once; returns each PE's result.
fn all_set(clients: &[Arc<Client>], key: fn(u32) -> String) -> Vec<Result<(), String>> {
    let go = Arc::new(Barrier::new(clients.len()));
    let handles: Vec<_> = clients
        .iter()
        .map(|c| {
            let (c, go) = (Arc::clone(c), Arc::clone(&go));
            thread::spawn(move || {
                let value = vec![c.rank() as u8; wire::MAX_VALUE_LEN];
                go.wait();
                c.set(&key(c.rank()), &value).map_err(|e| e.to_string())
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// PEs of the job (holding its certificate) send the largest frames all at once, as the
/// store's budgets allow: its resident memory stays within the frame budget plus what it
/// stores, what it stores stays within the value budget (writes beyond it are refused, and
/// the store goes on serving), and once the values are deleted the memory goes back to the
/// system instead of staying with the store's connection threads.
#[test]
fn insiders_cannot_grow_the_store_past_its_bounds() {
    use shmem_store::tls;
    use shmem_store::{FRAME_BUDGET, VALUE_BUDGET};
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let _alone = measuring();
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["store_host", "--exact", "--nocapture", "--test-threads=1"])
        .env("SHMEM_TEST_STORE_HOST", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut host = Host(child);
    let pid = host.0.id();
    let mut lines = BufReader::new(host.0.stdout.take().unwrap()).lines();
    let mut port = 0u16;
    let mut bundle = String::new();
    let mut in_bundle = false;
    for line in lines.by_ref() {
        let line = line.unwrap();
        // The harness may have written the test's name on the same line.
        if let Some((_, p)) = line.split_once("PORT ") {
            port = p.trim().parse().unwrap();
        } else if line == "BUNDLE-BEGIN" {
            in_bundle = true;
        } else if line == "BUNDLE-END" {
            break;
        } else if in_bundle {
            bundle.push_str(&line);
            bundle.push('\n');
        }
    }
    assert_ne!(port, 0, "the store's host did not say its port");
    let pe = tls::identity_from_bundle(bundle.as_bytes()).unwrap();
    let addr = StoreAddr::parse(&format!("tcp://127.0.0.1:{port}"), None).unwrap();
    let dial = TcpDial {
        tls: Some((pe.client_config().unwrap(), addr.server_name())),
        addr,
        job: String::new(),
    };
    let clients: Vec<Arc<Client>> = (0..INSIDERS)
        .map(|rank| Arc::new(Client::connect_tcp(&dial, rank, INSIDERS, T).unwrap()))
        .collect();
    let before = rss_of(pid);
    let mib = |b: usize| b >> 20;

    // Every PE replaces the same key: one value is stored, the frames pass through.
    let (results, peak) = peak_rss_during(pid, || all_set(&clients, |_| "big".into()));
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let after = rss_of(pid);
    eprintln!(
        "{INSIDERS} frames of {} MiB to one key: the store's memory went from {} MiB to {} MiB \
         at the peak, {} MiB after",
        mib(wire::MAX_FRAME_LEN),
        mib(before),
        mib(peak),
        mib(after)
    );
    // Slack: connection threads, TLS buffers, the allocator's own.
    let slack = 16 << 20;
    assert!(
        peak <= before + FRAME_BUDGET + wire::MAX_VALUE_LEN + slack,
        "the store grew by {} MiB, beyond its frame budget ({} MiB) and one value",
        mib(peak - before),
        mib(FRAME_BUDGET)
    );
    assert!(
        after <= before + wire::MAX_VALUE_LEN + slack,
        "the store still holds {} MiB more once the frames are done, for one value of {} MiB",
        mib(after.saturating_sub(before)),
        mib(wire::MAX_VALUE_LEN)
    );

    // Every PE sets a key of its own: the values stored stop at the value budget.
    let (results, peak) = peak_rss_during(pid, || all_set(&clients, |r| format!("big/{r}")));
    let stored = results.iter().filter(|r| r.is_ok()).count();
    eprintln!(
        "{INSIDERS} values of {} MiB under keys of their own: {stored} stored, the store's \
         memory peaked at {} MiB",
        mib(wire::MAX_VALUE_LEN),
        mib(peak)
    );
    assert!(
        (1..INSIDERS as usize).contains(&stored),
        "{stored} stored: {results:?}"
    );
    assert!(stored * wire::MAX_VALUE_LEN <= VALUE_BUDGET);
    for r in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(r.contains("does not fit") && r.contains("at most"), "{r}");
    }
    assert!(
        peak <= before + FRAME_BUDGET + VALUE_BUDGET + slack,
        "the store grew by {} MiB, beyond its frame and value budgets ({} + {} MiB)",
        mib(peak - before),
        mib(FRAME_BUDGET),
        mib(VALUE_BUDGET)
    );

    // Deleted, the values give their memory back, and there is room again.
    assert!(clients[0].delete_prefix("big").unwrap() >= 1);
    let after = rss_of(pid);
    assert!(
        after <= before + slack,
        "the store still holds {} MiB more once every value is deleted",
        mib(after.saturating_sub(before))
    );
    let value = vec![7u8; wire::MAX_VALUE_LEN];
    clients[1].set("again", &value).unwrap();
    assert_eq!(clients[2].get("again", T).unwrap(), value);
    drop(host.0.stdin.take());
}
