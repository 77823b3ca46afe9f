//! The store's memory stays bounded when PEs of the job (insiders, holding its credentials)
//! announce many large frames at once: the bytes it buffers across all connections are
//! budgeted, and frames beyond the budget wait their turn. Its own test binary, so that the
//! process's resident memory measures this store alone.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use shmem_core::bootstrap::addr::StoreAddr;
use shmem_core::bootstrap::wire::{self, Reply, Request};
use shmem_core::bootstrap::{Client, Server, TcpDial};

const T: Duration = Duration::from_secs(60);

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
    let budget = shmem_core::bootstrap::FRAME_BUDGET;
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
