//! What the shmemrun integration tests share: running a command with a watchdog.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `cmd` to completion with its output captured, killing it and failing the test if it
/// takes longer than `hang` (a bound that only catches hangs). Returns the output and the time
/// it took.
pub fn run_watched(cmd: &mut Command, hang: Duration) -> (Output, Duration) {
    let start = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("shmemrun starts");
    let pid = child.id() as i32;
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if finished.recv_timeout(hang).is_err() {
            // SAFETY: plain kill(2) of our own child, which has not been reaped yet (the
            // main thread is still waiting for it).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    let out = child.wait_with_output().expect("shmemrun output");
    let took = start.elapsed();
    let _ = done.send(());
    watchdog.join().unwrap();
    assert!(took < hang, "shmemrun (pid {pid}) hung for {took:?}");
    (out, took)
}
