//! What `shmemrun` writes about connections to its store that break the rules: with
//! `--store`, each refusal of a connection that is not part of the job is logged on its
//! stderr, and a flood of them is summarised instead of one line per connection; a PE that
//! breaks the protocol is named once.
//!
//! The PE is this test binary re-run by `shmemrun` (see [`stray_pe`]): it connects to the
//! store it was given as a stranger would, or speaks nonsense on its own connection.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::process::{Command, Output};
use std::time::Duration;

/// Only catches hangs.
const HANG: Duration = Duration::from_secs(60);

/// Runs this binary as the single PE of a job, in `mode`; the store listens on TCP unless
/// the mode is "garbage", without TLS in the modes that say "plain".
fn job(mode: &str) -> Output {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shmemrun"));
    cmd.env("SHMEMRUN_STRAY_PE", mode)
        .env_remove(shmem_base::env::LOG_LEVEL)
        .env_remove(shmem_base::env::DEBUG)
        .args(["-n", "1"]);
    if mode != "garbage" {
        cmd.args(["--store", "tcp://127.0.0.1:0"]);
    }
    if mode.contains("plain") {
        cmd.env(shmem_base::env::TLS_DISABLE, "1");
    } else {
        cmd.env_remove(shmem_base::env::TLS_DISABLE);
    }
    cmd.arg(exe)
        .args(["stray_pe", "--exact", "--nocapture", "--test-threads=1"]);
    common::run_watched(&mut cmd, HANG).0
}

/// Not a test of its own: the PE's body when `SHMEMRUN_STRAY_PE` says so.
#[test]
fn stray_pe() {
    let Ok(mode) = std::env::var("SHMEMRUN_STRAY_PE") else {
        return;
    };
    if mode == "garbage" {
        garbage_pe();
        return;
    }
    let store =
        std::env::var(shmem_base::env::RUN_STORE).expect("shmemrun gives the store's address");
    let addr = store.strip_prefix("tcp://").expect("a tcp:// address");
    if mode == "plain_impostor" {
        impostor_pe(addr);
        return;
    }
    let (count, linger) = match mode.as_str() {
        "one" => (1, Duration::from_millis(500)),
        // Two summary periods and more, so that every summary is written before the job ends.
        "flood" => (500, Duration::from_secs(11)),
        "flood_then_leave" => {
            flood_then_leave(addr);
            return;
        }
        "plain_silent" => {
            for _ in 0..3 {
                drop(TcpStream::connect(addr).unwrap());
            }
            std::thread::sleep(Duration::from_millis(500));
            return;
        }
        other => panic!("unknown mode {other}"),
    };
    for i in 0..count {
        let mut s = TcpStream::connect(addr).unwrap();
        // Not a TLS record, not a store frame: refused at once.
        let junk: Vec<u8> = (0..1000u32).map(|b| (b * 7 + i) as u8 | 0x80).collect();
        let _ = s.write_all(&junk);
    }
    std::thread::sleep(linger);
}

/// Strays that each wait for the store to close their connection (it has refused them by
/// then), then the job ends at once: well within one summary period of the first.
fn flood_then_leave(addr: &str) {
    use std::io::Read;
    let strays: Vec<TcpStream> = (0..FLOOD_THEN_LEAVE)
        .map(|i| {
            let mut s = TcpStream::connect(addr).unwrap();
            let junk: Vec<u8> = (0..1000u32).map(|b| (b * 7 + i) as u8 | 0x80).collect();
            let _ = s.write_all(&junk);
            s
        })
        .collect();
    for mut s in strays {
        s.set_read_timeout(Some(HANG)).unwrap();
        let _ = s.read_to_end(&mut Vec::new());
    }
}

/// Strays of [`flood_then_leave`].
const FLOOD_THEN_LEAVE: u32 = 100;

/// Takes its own place at the store with a bare HELLO, as a stray would, then joins as itself:
/// refused, it must learn why at once.
fn impostor_pe(addr: &str) {
    use shmem_store::addr::StoreAddr;
    use shmem_store::wire::{self, Reply, Request};
    use shmem_store::{Client, TcpDial};
    let mut stray = TcpStream::connect(addr).unwrap();
    stray.set_read_timeout(Some(HANG)).unwrap();
    let hello = Request::Hello {
        version: wire::PROTOCOL_VERSION,
        rank: 0,
        n_pes: 1,
        job: String::new(),
    };
    stray.write_all(&hello.encode().unwrap()).unwrap();
    let ack = Reply::from_frame(&wire::read_frame(&mut stray).unwrap()).unwrap();
    assert!(matches!(ack, Reply::HelloAck { .. }), "{ack:?}");
    let dial = TcpDial {
        addr: StoreAddr::parse(&format!("tcp://{addr}"), None).unwrap(),
        tls: None,
        job: std::env::var(shmem_base::env::RUN_JOBID).unwrap_or_default(),
    };
    let err = Client::connect_tcp(&dial, 0, 1, HANG).expect_err("its place is taken");
    eprintln!("\n{err}");
}

/// Says HELLO on the inherited store socket, then sends a frame of an unknown op.
fn garbage_pe() {
    use shmem_store::wire::{self, Reply, Request};
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::net::UnixStream;
    let fd: i32 = std::env::var(shmem_base::env::RUN_FD)
        .unwrap()
        .parse()
        .unwrap();
    // SAFETY: shmemrun hands this descriptor to the PE, and nothing else in this process owns
    // it.
    let mut sock = UnixStream::from(unsafe { OwnedFd::from_raw_fd(fd) });
    sock.set_read_timeout(Some(HANG)).unwrap();
    let hello = Request::Hello {
        version: wire::PROTOCOL_VERSION,
        rank: 0,
        n_pes: 1,
        job: std::env::var(shmem_base::env::RUN_JOBID).unwrap_or_default(),
    };
    sock.write_all(&hello.encode().unwrap()).unwrap();
    let ack = Reply::from_frame(&wire::read_frame(&mut sock).unwrap()).unwrap();
    assert!(matches!(ack, Reply::HelloAck { .. }), "{ack:?}");
    sock.write_all(&[1, 0, 0, 0, 0x42]).unwrap();
    let refusal = Reply::from_frame(&wire::read_frame(&mut sock).unwrap()).unwrap();
    assert!(matches!(refusal, Reply::Error(_)), "{refusal:?}");
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_stray_connection_is_logged() {
    let out = job("one");
    let err = stderr(&out);
    assert!(
        err.contains("refused a connection from 127.0.0.1:"),
        "no refusal on shmemrun's stderr:\n{err}"
    );
}

#[test]
fn a_flood_of_strays_is_summarised() {
    let out = job("flood");
    let err = stderr(&out);
    let refusals = err
        .lines()
        .filter(|l| l.contains("refused a connection from"))
        .count();
    let summarised: usize = err
        .lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once("store: ")?;
            let (n, _) = rest.split_once(" more connections refused in the last ")?;
            n.parse::<usize>().ok()
        })
        .sum();
    assert!(
        (1..=10).contains(&refusals),
        "{refusals} refusal lines for 500 strays:\n{err}"
    );
    assert_eq!(
        refusals + summarised,
        500,
        "every refusal is logged or counted in a summary:\n{err}"
    );
}

/// Refusals counted for a summary are written when the store closes, even when it closes
/// before the summary's period ends.
#[test]
fn a_flood_just_before_the_end_is_summarised() {
    let out = job("flood_then_leave");
    let err = stderr(&out);
    let refusals = err
        .lines()
        .filter(|l| l.contains("refused a connection from"))
        .count();
    let summarised: usize = err
        .lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once("store: ")?;
            let (n, _) = rest.split_once(" more connections refused ")?;
            n.parse::<usize>().ok()
        })
        .sum();
    assert!(
        err.contains("more connections refused before the store closed"),
        "no summary at the end:\n{err}"
    );
    assert_eq!(
        refusals + summarised,
        FLOOD_THEN_LEAVE as usize,
        "every refusal is logged or counted in a summary:\n{err}"
    );
}

/// On a plain-TCP store, a stranger that connects and closes without a word is refused and
/// logged like any other.
#[test]
fn strangers_that_say_nothing_are_logged() {
    let out = job("plain_silent");
    let err = stderr(&out);
    let silent = err
        .lines()
        .filter(|l| {
            l.contains("refused a connection from 127.0.0.1:")
                && l.contains("closed the connection without saying HELLO")
        })
        .count();
    assert_eq!(silent, 3, "{err}");
}

/// Over plain TCP, a second HELLO for a place already held is refused and logged at once,
/// and the PE refused is told which place was taken and that the store runs without TLS.
#[test]
fn a_taken_place_is_logged_and_told_at_once() {
    let start = std::time::Instant::now();
    let out = job("plain_impostor");
    let took = start.elapsed();
    let err = stderr(&out);
    let told = "PE 0's place in this job is taken: a connection from 127.0.0.1:";
    let logged = err
        .lines()
        .filter(|l| l.contains("refused a connection from 127.0.0.1:") && l.contains(told))
        .count();
    assert_eq!(logged, 1, "{err}");
    // The PE's own error (its line may be interleaved with shmemrun's).
    assert!(
        err.contains(&format!("the store refused PE 0: {told}"))
            && err.matches("this store runs without TLS").count() == 2,
        "the PE was not told:\n{err}"
    );
    assert!(took < Duration::from_secs(30), "the job took {took:?}");
}

#[test]
fn a_pe_that_breaks_the_protocol_is_named_once() {
    let out = job("garbage");
    let err = stderr(&out);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("unknown op code 0x42"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("PE 0 broke the store protocol: unknown op code 0x42"),
        "{err}"
    );
}
