//! Start-up allgathers that notice PEs the store refused (another job size at HELLO) and name
//! the PE that never published its part, instead of a bare timeout. Used by the steps every PE
//! must pass once (node identities, the attributes check); later exchanges use
//! [`Client::allgather`].

use std::time::Duration;

use super::{BootstrapError, Client};
use crate::error::Error;

/// Store key under which the store records why it refused PE `rank`'s HELLO (another job
/// size, or its place taken by another connection), for the PEs waiting for that PE at
/// start-up.
pub(crate) fn refused_key(rank: u32) -> String {
    format!("shmem/refused/{rank}")
}

/// What [`gather`] read: every PE's value (this PE's included) up to the first PE it could not
/// read, and why it could not.
pub(crate) struct Gathered {
    /// Indexed by PE; `None` for PEs not read.
    pub values: Vec<Option<Vec<u8>>>,
    /// The first PE that could not be read and why; `None` when every PE was.
    pub error: Option<Error>,
}

impl Gathered {
    /// The PEs whose values were read (this PE's included).
    pub fn seen(&self) -> Vec<u32> {
        (self.values.iter().enumerate())
            .filter(|(_, v)| v.is_some())
            .map(|(pe, _)| pe as u32)
            .collect()
    }
}

/// How long one GATHER of a start-up allgather waits before [`gather`] looks whether the
/// store refused the PE it waits for.
const REFUSAL_CHECK: Duration = Duration::from_millis(200);

/// A start-up allgather that notices PEs the store refused: publishes `mine` (which is `what`,
/// for messages: "its node identity") at `{prefix}{my PE}`, then reads every PE's value at
/// `{prefix}{pe}` with one GATHER at a time until `deadline`. While a PE's value is missing,
/// looks whether the store refused that PE's HELLO (an [`Error::Mismatch`] with the store's
/// reason); at the deadline, the first PE still missing has not published it
/// ([`BootstrapError::NotPublished`]). On failure the values of the PEs before the first one
/// missing are read one by one, so that the caller can compare them. The keys stay in the
/// store: start-up writes each once.
pub(crate) fn gather(
    store: &Client,
    prefix: &str,
    what: &'static str,
    mine: &[u8],
    deadline: std::time::Instant,
) -> Gathered {
    use std::time::Instant;
    let (me, n_pes) = (store.rank(), store.n_pes());
    let mut values = vec![None; n_pes as usize];
    values[me as usize] = Some(mine.to_vec());
    if let Err(e) = store.set(&format!("{prefix}{me}"), mine) {
        return Gathered {
            values,
            error: Some(e.into()),
        };
    }
    let started = Instant::now();
    let (missing, error) = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let pe = match store.gather(prefix, n_pes, left.min(REFUSAL_CHECK)) {
            Ok(all) => {
                return Gathered {
                    values: all.into_iter().map(Some).collect(),
                    error: None,
                }
            }
            Err(BootstrapError::Absent { rank, .. }) => rank,
            Err(e) => break (None, Error::from(e)),
        };
        if let Ok(why) = store.get(&refused_key(pe), Duration::ZERO) {
            let what = format!(
                "cannot join this PE's job (PE {me} of {n_pes}): {}",
                String::from_utf8_lossy(&why)
            );
            break (
                Some(pe),
                Error::Mismatch {
                    pe: pe as i32,
                    what,
                },
            );
        }
        if left.is_zero() {
            let after = started.elapsed();
            break (
                Some(pe),
                Error::Bootstrap(BootstrapError::NotPublished {
                    rank: pe,
                    what,
                    after,
                }),
            );
        }
    };
    for pe in (0..missing.unwrap_or(0)).filter(|&pe| pe != me) {
        match store.get(&format!("{prefix}{pe}"), Duration::ZERO) {
            Ok(v) => values[pe as usize] = Some(v),
            Err(_) => break,
        }
    }
    Gathered {
        values,
        error: Some(error),
    }
}
