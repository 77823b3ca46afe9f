//! `shmemrun`'s memory while it serves the store to PEs of the job (holders of its
//! certificate) that each send one largest frame at once: it grows by no more than the
//! store's frame budget and the one value they all write, and gives the rest back once the
//! frames are done, whatever thread of it read them.
//!
//! The PEs are this test binary re-run by `shmemrun` (see [`memory_pe`]); PE 0 measures
//! `shmemrun`, its parent.

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shmem_store::addr::StoreAddr;
use shmem_store::wire::{MAX_FRAME_LEN, MAX_VALUE_LEN};
use shmem_store::{tls, Client, TcpDial, FRAME_BUDGET};

/// Only catches hangs.
const HANG: Duration = Duration::from_secs(120);

/// Bound of every store call of a PE.
const T: Duration = Duration::from_secs(60);

/// What `shmemrun` may hold beyond the budgets: its threads, TLS buffers, the allocator's
/// own.
const SLACK: usize = 16 << 20;

/// Resident memory of process `pid`, in bytes.
fn rss_of(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

fn env_u32(name: &str) -> u32 {
    std::env::var(name).unwrap().parse().unwrap()
}

/// Not a test of its own: the PE's body when `SHMEMRUN_MEMORY_PE` is set. Joins the job's
/// TLS store with the job's certificate; every PE then sets the same key to a largest value
/// at once, while PE 0 samples `shmemrun`'s memory. Every PE checks a value another wrote.
#[test]
fn memory_pe() {
    if std::env::var_os("SHMEMRUN_MEMORY_PE").is_none() {
        return;
    }
    let rank = env_u32(shmem_base::env::RUN_RANK);
    let n = env_u32(shmem_base::env::RUN_SIZE);
    let store = std::env::var(shmem_base::env::RUN_STORE).unwrap();
    let bundle_fd = env_u32(shmem_base::env::RUN_TLS_FD);
    let bundle = std::fs::read(format!("/proc/self/fd/{bundle_fd}")).unwrap();
    let pe = tls::identity_from_bundle(&bundle).unwrap();
    let addr = StoreAddr::parse(&store, None).unwrap();
    let dial = TcpDial {
        tls: Some((pe.client_config().unwrap(), addr.server_name())),
        addr,
        job: std::env::var(shmem_base::env::RUN_JOBID).unwrap_or_default(),
    };
    let c = Client::connect_tcp(&dial, rank, n, T).unwrap();
    let launcher = std::os::unix::process::parent_id();
    c.set(&format!("small/{rank}"), &[rank as u8; 3]).unwrap();
    c.barrier(T).unwrap();
    let before = rss_of(launcher);

    let sampling = Arc::new(AtomicBool::new(rank == 0));
    let sampler = {
        let sampling = Arc::clone(&sampling);
        std::thread::spawn(move || {
            let mut peak = 0;
            while sampling.load(Ordering::SeqCst) {
                peak = peak.max(rss_of(launcher));
                std::thread::sleep(Duration::from_millis(2));
            }
            peak
        })
    };
    c.barrier(T).unwrap();
    c.set("big", &vec![rank as u8; MAX_VALUE_LEN]).unwrap();
    c.barrier(T).unwrap();
    sampling.store(false, Ordering::SeqCst);
    let peak = sampler.join().unwrap();

    let peer = (rank + 1) % n;
    assert_eq!(c.get(&format!("small/{peer}"), T).unwrap(), [peer as u8; 3]);
    let big = c.get("big", T).unwrap();
    assert_eq!(big.len(), MAX_VALUE_LEN);
    assert!(
        (big[0] as u32) < n && big.iter().all(|&b| b == big[0]),
        "PE {rank}: the value is not one PE's"
    );
    if rank == 0 {
        // The last frames are freed after their replies: give the store a moment.
        std::thread::sleep(Duration::from_millis(200));
        let after = rss_of(launcher);
        let mib = |b: usize| b >> 20;
        println!(
            "{n} PEs each sent a {} MiB frame: shmemrun went from {} MiB to {} MiB at the peak, \
             {} MiB after",
            mib(MAX_FRAME_LEN),
            mib(before),
            mib(peak),
            mib(after)
        );
        assert!(
            peak <= before + FRAME_BUDGET + MAX_VALUE_LEN + SLACK,
            "shmemrun grew by {} MiB, beyond its frame budget ({} MiB) and one value",
            mib(peak.saturating_sub(before)),
            mib(FRAME_BUDGET)
        );
        assert!(
            after <= before + MAX_VALUE_LEN + SLACK,
            "shmemrun still holds {} MiB more once the frames are done, for one value of {} MiB",
            mib(after.saturating_sub(before)),
            mib(MAX_VALUE_LEN)
        );
    }
    c.barrier(T).unwrap();
    c.goodbye().unwrap();
}

#[test]
fn insiders_large_frames_leave_shmemrun_within_its_budget() {
    for n in [8u32, 16] {
        let exe = std::env::current_exe().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_shmemrun"));
        cmd.env("SHMEMRUN_MEMORY_PE", "1")
            .env_remove(shmem_base::env::TLS_DISABLE)
            .args(["-n", &n.to_string(), "--store", "tcp://127.0.0.1:0"])
            .arg(exe)
            .args(["memory_pe", "--exact", "--nocapture", "--test-threads=1"]);
        let (out, _) = common::run_watched(&mut cmd, HANG);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!(
            "{}",
            stdout
                .lines()
                .filter(|l| l.contains("shmemrun went"))
                .collect::<String>()
        );
        assert!(
            out.status.success(),
            "{n} PEs: shmemrun exited with {:?}\n{stdout}\n{stderr}",
            out.status
        );
        assert!(stdout.contains("shmemrun went from"), "{stdout}\n{stderr}");
    }
}
