//! The control store over TCP and TLS 1.3, end to end through the public API: PEs exchange
//! data; clients that are not part of the job (wrong CA, expired certificate, plain TCP to a
//! TLS store and back, malformed, truncated, oversized and random frames) are refused with a
//! clear reason while the store keeps serving the job.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use shmem_store::addr::StoreAddr;
use shmem_store::tls::{self, JobCredentials, TlsIdentity, Validity};
use shmem_store::wire::{self, Request};
use shmem_store::{Client, Server, TcpDial};

const T: Duration = Duration::from_secs(30);

/// A store of `n` PEs for `job` on a free loopback port; returns its address.
fn store(n: u32, job: &str, tls: Option<&TlsIdentity>) -> (Server, StoreAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (server, events) = Server::for_job(n, job);
    // Events are not under test here; keep the channel open.
    std::mem::forget(events);
    server
        .serve_tcp(listener, tls.map(|id| id.server_config().unwrap()))
        .unwrap();
    let addr = StoreAddr::parse(&format!("tcp://127.0.0.1:{port}"), None).unwrap();
    (server, addr)
}

fn creds() -> JobCredentials {
    tls::job_credentials(&["127.0.0.1".parse().unwrap()], Validity::for_a_job()).unwrap()
}

fn dial(addr: &StoreAddr, client: Option<&TlsIdentity>, job: &str) -> TcpDial {
    TcpDial {
        addr: addr.clone(),
        tls: client.map(|id| (id.client_config().unwrap(), addr.server_name())),
        job: job.into(),
    }
}

/// n PEs over `d`: values, counters, CAS, APPEND, barriers and allgathers, each PE checking
/// what the others wrote.
fn run_job(d: &TcpDial, n: u32) {
    let handles: Vec<_> = (0..n)
        .map(|rank| {
            let d = d.clone();
            thread::spawn(move || {
                let c = Client::connect_tcp(&d, rank, n, T).unwrap();
                c.set(&format!("v/{rank}"), &[rank as u8; 3]).unwrap();
                let peer = (rank + 1) % n;
                assert_eq!(c.get(&format!("v/{peer}"), T).unwrap(), [peer as u8; 3]);
                c.append("log", &[rank as u8]).unwrap();
                let (won, now) = c.cas("leader", None, &[rank as u8]).unwrap();
                assert!(now.is_some());
                if won {
                    assert_eq!(now.unwrap(), [rank as u8]);
                }
                for round in 0..3u8 {
                    c.barrier(T).unwrap();
                    let all = c.allgather(&[rank as u8, round], T).unwrap();
                    let want: Vec<Vec<u8>> = (0..n as u8).map(|r| vec![r, round]).collect();
                    assert_eq!(all, want);
                }
                let mut log = c.get("log", T).unwrap();
                log.sort();
                assert_eq!(log, (0..n as u8).collect::<Vec<_>>());
                c.goodbye().unwrap();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn pes_share_a_tls_store() {
    let c = creds();
    let (_server, addr) = store(4, "job", Some(&c.server));
    let pe = tls::identity_from_bundle(c.client_bundle.as_bytes()).unwrap();
    run_job(&dial(&addr, Some(&pe), "job"), 4);
}

#[test]
fn pes_share_a_plain_store_over_ipv6() {
    let Ok(listener) = TcpListener::bind("[::1]:0") else {
        eprintln!("skipped: no IPv6 loopback here");
        return;
    };
    let port = listener.local_addr().unwrap().port();
    let (server, events) = Server::for_job(3, "");
    std::mem::forget(events);
    server.serve_tcp(listener, None).unwrap();
    let addr = StoreAddr::parse(&format!("tcp6://[::1]:{port}"), None).unwrap();
    run_job(&dial(&addr, None, ""), 3);
}

#[test]
fn finished_rounds_are_collected() {
    let (_server, addr) = store(1, "", None);
    let c = Client::connect_tcp(&dial(&addr, None, ""), 0, 1, T).unwrap();
    for _ in 0..5 {
        c.barrier(T).unwrap();
        c.allgather(b"x", T).unwrap();
    }
    // Round 4 of the barrier is the only one left; every allgather round is gone.
    assert_eq!(c.delete_prefix("shmem/allgather/").unwrap(), 0);
    assert_eq!(c.delete_prefix("shmem/barrier/").unwrap(), 2);
}

fn connect_err(d: &TcpDial, rank: u32, n: u32) -> String {
    Client::connect_tcp(d, rank, n, Duration::from_secs(5))
        .expect_err("must be refused")
        .to_string()
}

#[test]
fn a_pe_of_another_ca_is_refused() {
    let ours = creds();
    let theirs = creds();
    let (_server, addr) = store(2, "", Some(&ours.server));
    let stranger = tls::identity_from_bundle(theirs.client_bundle.as_bytes()).unwrap();
    // Its CA does not know the store's certificate.
    let err = connect_err(&dial(&addr, Some(&stranger), ""), 0, 2);
    assert!(
        err.contains("TLS handshake with the store")
            && (err.contains("UnknownIssuer") || err.contains("BadSignature")),
        "{err}"
    );
    // It trusts the store, but the store does not trust its certificate.
    let mut half = stranger.clone();
    half.roots = ours.server.roots.clone();
    let err = connect_err(&dial(&addr, Some(&half), ""), 0, 2);
    assert!(
        err.contains("refused this PE's TLS certificate") || err.contains("closed"),
        "{err}"
    );
    // The job still runs.
    let pe = tls::identity_from_bundle(ours.client_bundle.as_bytes()).unwrap();
    run_job(&dial(&addr, Some(&pe), ""), 2);
}

#[test]
fn an_expired_store_certificate_is_refused() {
    let past = Validity {
        not_before: time::OffsetDateTime::now_utc() - time::Duration::days(10),
        not_after: time::OffsetDateTime::now_utc() - time::Duration::days(1),
    };
    let old = tls::job_credentials(&["127.0.0.1".parse().unwrap()], past).unwrap();
    let (_server, addr) = store(1, "", Some(&old.server));
    let pe = tls::identity_from_bundle(old.client_bundle.as_bytes()).unwrap();
    let err = connect_err(&dial(&addr, Some(&pe), ""), 0, 1);
    assert!(err.contains("certificate expired"), "{err}");
}

#[test]
fn plain_and_tls_ends_tell_each_other_why() {
    let c = creds();
    let (_tls_server, tls_addr) = store(1, "", Some(&c.server));
    let err = connect_err(&dial(&tls_addr, None, ""), 0, 1);
    assert!(
        err.contains("this store requires TLS") && err.contains("SHMEM_TLS_DISABLE"),
        "{err}"
    );
    let (_plain_server, plain_addr) = store(1, "", None);
    let pe = tls::identity_from_bundle(c.client_bundle.as_bytes()).unwrap();
    let err = connect_err(&dial(&plain_addr, Some(&pe), ""), 0, 1);
    assert!(
        err.contains("answers in plain TCP") && err.contains("SHMEM_TLS_DISABLE"),
        "{err}"
    );
}

#[test]
fn another_jobs_pe_is_refused() {
    let (_server, addr) = store(1, "mine", None);
    let err = connect_err(&dial(&addr, None, "theirs"), 0, 1);
    assert!(err.contains("serves job 'mine'"), "{err}");
}

/// Sends `bytes` on a fresh connection (after a valid HELLO as PE `hello_as` when given),
/// closes the sending side, and reads until the store closes: it must, and soon.
fn stray(addr: &StoreAddr, bytes: &[u8], hello_as: Option<(u32, u32)>) {
    let mut s = TcpStream::connect((addr.ip, addr.ports.0)).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    if let Some((rank, n_pes)) = hello_as {
        let hello = Request::Hello {
            version: wire::PROTOCOL_VERSION,
            rank,
            n_pes,
            job: String::new(),
        };
        let _ = s.write_all(&hello.encode().unwrap());
    }
    // The store may close first (a refused HELLO): write errors are fine.
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut sink = Vec::new();
    if let Err(e) = s.read_to_end(&mut sink) {
        assert_ne!(
            e.kind(),
            std::io::ErrorKind::WouldBlock,
            "store kept a stray open"
        );
    }
}

/// The committed corpus: (bytes, send a HELLO first).
fn corpus() -> Vec<(Vec<u8>, bool)> {
    let text = include_str!("corpus/store_frames.txt");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (hello, hex) = match l.strip_prefix("h ") {
                Some(rest) => (true, rest),
                None => (false, l),
            };
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            (bytes, hello)
        })
        .collect()
}

/// Deterministic random frames: some with a valid length prefix, some with a known op.
fn random_frames(count: usize) -> Vec<Vec<u8>> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..count)
        .map(|_| {
            let len = (next() % 48) as usize;
            let mut f: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if len >= 5 && next() % 2 == 0 {
                f[..4].copy_from_slice(&((len - 4) as u32).to_le_bytes());
                f[4] = [0x02, 0x03, 0x04, 0x05, 0x0a, 0x0b, 0x0c][(next() % 7) as usize];
            }
            f
        })
        .collect()
}

#[test]
fn strays_never_hurt_a_plain_store() {
    // PEs 0 and 1 are the job; rank 2 is left free for strays that know the protocol.
    let (_server, addr) = store(3, "", None);
    let d = dial(&addr, None, "");
    let a = Client::connect_tcp(&d, 0, 3, T).unwrap();
    let b = Client::connect_tcp(&d, 1, 3, T).unwrap();
    for (bytes, hello) in corpus() {
        stray(&addr, &bytes, hello.then_some((2, 3)));
    }
    for frame in random_frames(300) {
        stray(&addr, &frame, None);
    }
    // Oversized: a legal header announcing the largest frame, then less than that.
    let mut big = ((wire::MAX_FRAME_LEN) as u32).to_le_bytes().to_vec();
    big.push(0x02);
    big.extend(vec![0u8; 1 << 16]);
    stray(&addr, &big, None);
    a.set("still", b"here").unwrap();
    assert_eq!(b.get("still", T).unwrap(), b"here");
    assert_eq!(b.add("n", 2).unwrap(), 2);
}

#[test]
fn strays_never_reach_a_tls_store() {
    let c = creds();
    let (_server, addr) = store(2, "", Some(&c.server));
    for (bytes, hello) in corpus() {
        stray(&addr, &bytes, hello.then_some((0, 2)));
    }
    for frame in random_frames(100) {
        stray(&addr, &frame, None);
    }
    // No stray took a rank: the whole job still joins.
    let pe = tls::identity_from_bundle(c.client_bundle.as_bytes()).unwrap();
    run_job(&dial(&addr, Some(&pe), ""), 2);
}

#[test]
fn too_many_connections_are_refused_and_the_job_goes_on() {
    let (_server, addr) = store(1, "", None);
    let limit = 1 + shmem_store::EXTRA_TCP_CONNECTIONS;
    // Idle connections that never say HELLO hold their places for a while.
    let idle: Vec<TcpStream> = (0..limit)
        .map(|_| TcpStream::connect((addr.ip, addr.ports.0)).unwrap())
        .collect();
    thread::sleep(Duration::from_millis(200));
    // None of them has waited long enough to be evicted: the next one is refused at once, and
    // told why.
    let mut extra = TcpStream::connect((addr.ip, addr.ports.0)).unwrap();
    extra.set_read_timeout(Some(T)).unwrap();
    let mut said = Vec::new();
    let _ = extra.read_to_end(&mut said);
    let said = String::from_utf8_lossy(&said);
    assert!(said.contains("refused: store full"), "{said:?}");
    drop(idle);
    let d = dial(&addr, None, "");
    let c = Client::connect_tcp(&d, 0, 1, T).unwrap();
    c.set("k", b"v").unwrap();
}

#[test]
fn pes_retry_until_the_store_listens() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let addr = StoreAddr::parse(&format!("tcp://127.0.0.1:{port}"), None).unwrap();
    let d = dial(&addr, None, "");
    let pe = thread::spawn(move || Client::connect_tcp(&d, 0, 1, T).map(|c| c.set("x", b"1")));
    thread::sleep(Duration::from_millis(300));
    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
    let (server, events) = Server::for_job(1, "");
    std::mem::forget(events);
    server.serve_tcp(listener, None).unwrap();
    pe.join().unwrap().unwrap().unwrap();
    let _ = Arc::new(server);
}

#[test]
fn idle_strays_do_not_keep_late_pes_out() {
    let c = creds();
    let (_server, addr) = store(4, "job", Some(&c.server));
    // More idle connections than the store keeps for connections that have not joined.
    let idle: Vec<TcpStream> = (0..40)
        .map(|_| TcpStream::connect((addr.ip, addr.ports.0)).unwrap())
        .collect();
    // The PEs start late, while the strays still hold their connections.
    thread::sleep(Duration::from_millis(1500));
    let pe = tls::identity_from_bundle(c.client_bundle.as_bytes()).unwrap();
    let start = std::time::Instant::now();
    run_job(&dial(&addr, Some(&pe), "job"), 4);
    eprintln!(
        "4 late PEs joined past 40 idle strays in {:?}",
        start.elapsed()
    );
    drop(idle);
}

#[test]
fn a_pe_refused_as_store_full_tries_again() {
    for with_tls in [false, true] {
        let c = creds();
        let (_server, addr) = store(1, "", with_tls.then_some(&c.server));
        let limit = 1 + shmem_store::EXTRA_TCP_CONNECTIONS;
        let idle: Vec<TcpStream> = (0..limit)
            .map(|_| TcpStream::connect((addr.ip, addr.ports.0)).unwrap())
            .collect();
        // The strays are too fresh to be evicted: the PE is refused as "store full" until
        // the oldest has had its grace, then takes its place.
        let pe = tls::identity_from_bundle(c.client_bundle.as_bytes()).unwrap();
        let d = dial(&addr, with_tls.then_some(&pe), "");
        let start = std::time::Instant::now();
        let err = Client::connect_tcp(&d, 0, 1, Duration::from_millis(300))
            .expect_err("no place yet")
            .to_string();
        assert!(err.contains("store full"), "{err}");
        let client = Client::connect_tcp(&d, 0, 1, T).unwrap();
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_millis(500),
            "joined after {waited:?}: was it ever refused?"
        );
        client.set("k", b"v").unwrap();
        assert_eq!(client.get("k", T).unwrap(), b"v");
        drop(idle);
    }
}

/// Over plain TCP a stray can say HELLO as a PE that has not joined yet. The PE that comes
/// after is refused at once (on one port or a range of them), told which place was taken, by
/// whom, and that the store runs without TLS (what let the stray in); the other PEs still
/// join, and each reads what another wrote.
#[test]
fn a_pe_whose_place_a_stray_took_is_told_so_at_once() {
    for n in [2u32, 4] {
        let (_server, addr) = store(n, "", None);
        let taken = n - 1;
        let mut stray = TcpStream::connect((addr.ip, addr.ports.0)).unwrap();
        stray.set_read_timeout(Some(T)).unwrap();
        let hello = Request::Hello {
            version: wire::PROTOCOL_VERSION,
            rank: taken,
            n_pes: n,
            job: String::new(),
        };
        stray.write_all(&hello.encode().unwrap()).unwrap();
        let ack = wire::Reply::from_frame(&wire::read_frame(&mut stray).unwrap()).unwrap();
        assert!(matches!(ack, wire::Reply::HelloAck { .. }), "{ack:?}");
        let stray_at = stray.local_addr().unwrap();

        let mut d = dial(&addr, None, "");
        if n > 2 {
            // PEs given a range try its ports in order: this store is the job's, the search
            // ends here.
            d.addr.ports.1 = d.addr.ports.0 + 3;
        }
        let start = std::time::Instant::now();
        let err = Client::connect_tcp(&d, taken, n, T)
            .expect_err("its place is taken")
            .to_string();
        let waited = start.elapsed();
        assert!(waited < Duration::from_secs(10), "refused after {waited:?}");
        assert!(
            err.contains(&format!("PE {taken}'s place in this job is taken"))
                && err.contains(&format!(
                    "a connection from {stray_at} said HELLO as PE {taken} first"
                ))
                && err.contains("this store runs without TLS (SHMEM_TLS_DISABLE=1)"),
            "{err}"
        );
        let pes: Vec<_> = (0..taken)
            .map(|rank| {
                let d = d.clone();
                thread::spawn(move || {
                    let c = Client::connect_tcp(&d, rank, n, T).unwrap();
                    c.set(&format!("v/{rank}"), &[rank as u8; 2]).unwrap();
                    let peer = (rank + 1) % taken;
                    assert_eq!(c.get(&format!("v/{peer}"), T).unwrap(), [peer as u8; 2]);
                })
            })
            .collect();
        for pe in pes {
            pe.join().unwrap();
        }
    }
}
