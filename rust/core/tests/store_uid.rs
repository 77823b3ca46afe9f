//! The store of a unique-id job end to end through the public API: PE 0 presents the
//! self-signed certificate the id pins and admits PEs by the id's secret. A stray with the wrong
//! secret, a client pinned to another certificate (a store with the wrong certificate, seen
//! from the PE), plain TCP and a HELLO without any job id are refused, without showing the
//! secret, while the job runs to its end; with TLS off by choice the secret is still checked.

use std::net::TcpListener;
use std::sync::mpsc::Receiver;
use std::thread;
use std::time::Duration;

use shmem_core::bootstrap::addr::StoreAddr;
use shmem_core::bootstrap::tls::{self, PinnedServer, Validity};
use shmem_core::bootstrap::{uniqueid, Client, Server, StoreEvent, TcpDial};

const T: Duration = Duration::from_secs(30);

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// A unique id's store of `n` PEs on a free loopback port: TLS with a fresh pinned certificate
/// (`tls`), or plain TCP. Returns the address, the fingerprint and the secret.
fn store(n: u32, tls: bool) -> (Server, Receiver<StoreEvent>, StoreAddr, [u8; 32], [u8; 16]) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (cert, key) =
        tls::pinned_certificate(&["127.0.0.1".parse().unwrap()], Validity::for_a_job()).unwrap();
    let fingerprint = tls::fingerprint(&cert);
    let secret: [u8; 16] = std::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ port as u8);
    let pinned = PinnedServer {
        listener,
        cert,
        key,
    };
    let (server, events) = Server::for_secret(n, &hex(&secret));
    let config = tls.then(|| pinned.config().unwrap());
    server.serve_tcp(pinned.listener, config).unwrap();
    let addr = StoreAddr::parse(&format!("tcp://127.0.0.1:{port}"), None).unwrap();
    (server, events, addr, fingerprint, secret)
}

/// How a PE dials: pinned to `fingerprint` (or plain TCP), saying `job` in HELLO.
fn dial(addr: &StoreAddr, fingerprint: Option<[u8; 32]>, job: &str) -> TcpDial {
    TcpDial {
        addr: addr.clone(),
        tls: fingerprint.map(|f| (tls::pinned_client_config(f).unwrap(), addr.server_name())),
        job: job.into(),
    }
}

fn refused(d: &TcpDial, rank: u32, n: u32) -> String {
    Client::connect_tcp(d, rank, n, Duration::from_secs(5))
        .expect_err("must be refused")
        .to_string()
}

/// `n` PEs join over `d`, exchange values and pass a barrier while `strays` runs, then say
/// goodbye.
fn run_job(d: &TcpDial, n: u32, strays: impl FnOnce()) {
    let clients: Vec<Client> = thread::scope(|s| {
        let joins: Vec<_> = (0..n)
            .map(|rank| s.spawn(move || Client::connect_tcp(d, rank, n, T).unwrap()))
            .collect();
        joins.into_iter().map(|j| j.join().unwrap()).collect()
    });
    strays();
    thread::scope(|s| {
        for (rank, c) in clients.iter().enumerate() {
            s.spawn(move || {
                c.set(&format!("v/{rank}"), &[rank as u8; 4]).unwrap();
                let peer = (rank + 1) % n as usize;
                assert_eq!(c.get(&format!("v/{peer}"), T).unwrap(), [peer as u8; 4]);
                c.barrier(T).unwrap();
                c.goodbye().unwrap();
            });
        }
    });
}

/// Every event the store sent: only the job's PEs, each saying goodbye, and no protocol error.
fn only_the_job(events: &Receiver<StoreEvent>, n: u32) {
    let mut goodbyes = Vec::new();
    while let Ok(e) = events.recv_timeout(Duration::from_millis(500)) {
        match e {
            StoreEvent::Goodbye { rank } => goodbyes.push(rank),
            StoreEvent::Disconnected { said_goodbye, .. } => assert!(said_goodbye),
            other => panic!("a stray reached the job: {other:?}"),
        }
    }
    goodbyes.sort();
    assert_eq!(goodbyes, (0..n).collect::<Vec<_>>());
}

#[test]
fn strays_are_refused_while_a_pinned_job_runs() {
    let (_server, events, addr, fingerprint, secret) = store(3, true);
    let job = hex(&secret);
    run_job(&dial(&addr, Some(fingerprint), &job), 3, || {
        // The right certificate, the wrong secret: refused by the store, which does not say
        // the secret.
        let mut wrong = secret;
        wrong[0] ^= 1;
        let e = refused(&dial(&addr, Some(fingerprint), &hex(&wrong)), 0, 3);
        assert!(e.contains("does not carry this job's secret"), "{e}");
        assert!(!e.contains(&job), "{e}");
        // No job id at all.
        let e = refused(&dial(&addr, Some(fingerprint), ""), 1, 3);
        assert!(e.contains("does not carry this job's secret"), "{e}");
        // The right secret, pinned to another certificate: the PE refuses the store (as it
        // would a store with the wrong certificate) and never sends the secret.
        let mut other = fingerprint;
        other[31] ^= 0x80;
        let e = refused(&dial(&addr, Some(other), &job), 2, 3);
        assert!(e.contains("not the one the unique id pins"), "{e}");
        // Plain TCP to the TLS store.
        let e = refused(&dial(&addr, None, &job), 0, 3);
        assert!(e.contains("this store requires TLS"), "{e}");
    });
    only_the_job(&events, 3);
}

#[test]
fn a_store_with_another_certificate_is_refused() {
    // Two ids' stores: a PE of the first, sent to the second, refuses it.
    let (_a, _ea, _addr_a, fingerprint_a, secret_a) = store(1, true);
    let (_b, events_b, addr_b, fingerprint_b, secret_b) = store(1, true);
    let e = refused(&dial(&addr_b, Some(fingerprint_a), &hex(&secret_a)), 0, 1);
    assert!(
        e.contains("TLS handshake with the store") && e.contains("not the one the unique id pins"),
        "{e}"
    );
    // The second store's own PE still joins.
    run_job(
        &dial(&addr_b, Some(fingerprint_b), &hex(&secret_b)),
        1,
        || {},
    );
    only_the_job(&events_b, 1);
}

#[test]
fn without_tls_the_secret_is_still_checked() {
    let (_server, events, addr, _fingerprint, secret) = store(2, false);
    let job = hex(&secret);
    run_job(&dial(&addr, None, &job), 2, || {
        let e = refused(&dial(&addr, None, &hex(&[7u8; 16])), 1, 2);
        assert!(
            e.contains("does not carry this job's secret") && !e.contains(&job),
            "{e}"
        );
    });
    only_the_job(&events, 2);
}

#[test]
fn a_made_id_serves_on_its_own_socket() {
    // shmem_get_uniqueid's part: the listener it bound is where the id points, and a PE pinned
    // to the id's fingerprint joins a store served on it.
    let id = uniqueid::create(None).unwrap();
    let made = uniqueid::served_here(&id).unwrap().unwrap();
    assert_eq!(tls::fingerprint(&made.cert), id.fingerprint);
    let (server, events) = Server::for_secret(2, &hex(&id.secret));
    server
        .serve_tcp(
            made.listener.try_clone().unwrap(),
            Some(made.config().unwrap()),
        )
        .unwrap();
    let addr = id.store_addr();
    run_job(
        &dial(&addr, Some(id.fingerprint), &hex(&id.secret)),
        2,
        || {},
    );
    only_the_job(&events, 2);
}
