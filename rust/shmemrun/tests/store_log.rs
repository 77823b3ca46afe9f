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
/// the mode is "garbage".
fn job(mode: &str) -> Output {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shmemrun"));
    cmd.env("SHMEMRUN_STRAY_PE", mode)
        .env_remove(shmem_core::env::LOG_LEVEL)
        .env_remove(shmem_core::env::DEBUG)
        .args(["-n", "1"]);
    if mode != "garbage" {
        cmd.args(["--store", "tcp://127.0.0.1:0"]);
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
        std::env::var(shmem_core::env::RUN_STORE).expect("shmemrun gives the store's address");
    let addr = store.strip_prefix("tcp://").expect("a tcp:// address");
    let (count, linger) = match mode.as_str() {
        "one" => (1, Duration::from_millis(500)),
        // Two summary periods and more, so that every summary is written before the job ends.
        "flood" => (500, Duration::from_secs(11)),
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

/// Says HELLO on the inherited store socket, then sends a frame of an unknown op.
fn garbage_pe() {
    use shmem_core::bootstrap::wire::{self, Reply, Request};
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::net::UnixStream;
    let fd: i32 = std::env::var(shmem_core::env::RUN_FD)
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
        job: std::env::var(shmem_core::env::RUN_JOBID).unwrap_or_default(),
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
