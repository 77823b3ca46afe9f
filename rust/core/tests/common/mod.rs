//! What shmem-core's tests share: a watchdog. Included by the integration tests (`mod
//! common;`) and by unit tests (`#[path]`).

use std::sync::mpsc;
use std::time::Duration;

/// Ends the test process if the test it guards runs past `limit` (a bound that only catches
/// hangs; child processes end with it when they watch their stdin); dropped at the test's end.
pub struct Watchdog(Option<mpsc::Sender<()>>);

impl Watchdog {
    /// Guards `test` for `limit`.
    pub fn new(test: &'static str, limit: Duration) -> Watchdog {
        let (tx, rx) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                eprintln!("{test}: still running after {limit:?}: hung, ending the process");
                std::process::abort();
            }
        });
        Watchdog(Some(tx))
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}
