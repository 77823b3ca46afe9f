//! Jobs described by explicit attributes instead of a launcher's environment: CANN's
//! `shmem_init_attr` (rank, size, heap size and a store address `ip_port`) and its unique-id
//! form (the address and secret come from `shmem_get_uniqueid`).
//!
//! Owns how such a PE finds its job (the rendezvous), the check that every PE was given the same
//! job (PE count, heap size, store), and leaving a job whose start failed without ending it for
//! the others, so that every PE reports its own error. Must never decide anything the launcher's
//! environment decides for `shmem_init`: under `shmemrun`, the launcher's store is used and the
//! attributes must agree with it.
//!
//! Rendezvous: every PE of the job is on this node today, so PE 0 serves the store on the
//! node-local abstract socket of `node`, named after the address (`ip_port`) or the unique id's
//! secret. The TCP store plugs in at [`launch`].

use std::time::{Duration, Instant};

use super::launch::{self, Launch, NodeLocal};
use super::uniqueid::UniqueId;
use super::{BootstrapError, Client};
use crate::error::{Error, Result};

/// How the PEs of an attribute-described job meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meet {
    /// `ip_port` of `shmem_set_attr`: `tcp://ip:port` or `tcp6://[ip]:port`.
    Address(String),
    /// A unique id from `shmem_get_uniqueid`.
    UniqueId(UniqueId),
}

impl Meet {
    /// What every PE must agree on, for the mismatch check and messages.
    fn describe(&self) -> String {
        match self {
            Meet::Address(a) => a.clone(),
            Meet::UniqueId(id) => format!("unique id {} (store {})", id.secret_hex(), id.addr),
        }
    }

    fn rendezvous(&self) -> (&'static str, &'static str, String) {
        match self {
            Meet::Address(a) => ("shmem_init_attr", "attr", a.clone()),
            Meet::UniqueId(id) => ("unique id", "uid", id.secret_hex()),
        }
    }
}

/// One PE's view of its job, from the attributes.
#[derive(Debug, Clone)]
pub struct Job {
    /// The public routine that started it, for messages.
    pub call: &'static str,
    /// This PE.
    pub my_pe: u32,
    /// PEs in the job.
    pub n_pes: u32,
    /// Bytes of symmetric heap per PE.
    pub heap_size: usize,
    /// How the PEs meet.
    pub meet: Meet,
}

/// How this PE joins its job: the launcher's store under `shmemrun` (the attributes must then
/// name the same PE and size), else the job's own rendezvous.
pub(crate) fn launch(job: &Job) -> Result<Launch> {
    if let Some(run) = launch::shmemrun()? {
        if run.my_pe() != job.my_pe || run.n_pes() != job.n_pes {
            return Err(Error::Mismatch {
                pe: job.my_pe as i32,
                what: format!(
                    "{} was given my_pe={}, n_pes={}, but shmemrun started this process as PE {} \
                     of {}",
                    job.call,
                    job.my_pe,
                    job.n_pes,
                    run.my_pe(),
                    run.n_pes()
                ),
            });
        }
        return Ok(run);
    }
    if job.n_pes == 1 {
        return Ok(Launch::Alone);
    }
    let (launcher, tag, job_id) = job.meet.rendezvous();
    Ok(Launch::NodeLocal(NodeLocal {
        launcher,
        tag,
        my_pe: job.my_pe,
        n_pes: job.n_pes,
        job_id,
        store: None,
    }))
}

/// A refused join, said the way the mismatch check says it: this PE's size does not match the
/// job PE 0 serves.
pub(crate) fn refused_join(job: &Job, e: Error) -> Error {
    match e {
        Error::Bootstrap(BootstrapError::Protocol {
            op: "connect",
            message,
        }) => Error::Mismatch {
            pe: job.my_pe as i32,
            what: format!(
                "was given n_pes={} by {}, and PE 0's store does not take it ({message})",
                job.n_pes, job.call
            ),
        },
        e => e,
    }
}

/// Store key of PE `pe`'s description of its job.
fn job_key(pe: u32) -> String {
    format!("shmem/attrs/{pe}")
}

fn encode(job: &Job) -> String {
    format!(
        "n_pes={}\nlocal_mem_size={}\nstore={}",
        job.n_pes,
        job.heap_size,
        job.meet.describe()
    )
}

/// The first field where `theirs` differs from `mine`, as `(name, theirs, mine)`.
fn first_difference<'a>(theirs: &'a str, mine: &'a str) -> Option<(&'a str, &'a str, &'a str)> {
    let fields = |s: &'a str| {
        s.lines()
            .filter_map(|l| l.split_once('='))
            .collect::<Vec<_>>()
    };
    let (t, m) = (fields(theirs), fields(mine));
    for &(name, mine_v) in &m {
        let theirs_v = t
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("(missing)", |f| f.1);
        if theirs_v != mine_v {
            return Some((name, theirs_v, mine_v));
        }
    }
    None
}

/// Checks that every PE was given the same job as this one (PE count, heap size, store).
/// Every PE publishes its description and reads everyone's, so every PE names the first PE
/// that differs and how. A PE whose size PE 0's store refused is named too (the store records
/// the refusal). Returns the PEs that published theirs (all, on success).
pub(crate) fn check(store: &Client, job: &Job, timeout: Duration) -> (Vec<u32>, Result<()>) {
    let deadline = Instant::now() + timeout;
    let mine = encode(job);
    let mut seen = vec![job.my_pe];
    if let Err(e) = store.set(&job_key(job.my_pe), mine.as_bytes()) {
        return (seen, Err(e.into()));
    }
    let mut first_error: Option<Error> = None;
    for pe in (0..job.n_pes).filter(|&pe| pe != job.my_pe) {
        let result = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match store.get(&job_key(pe), left.min(Duration::from_millis(100))) {
                Ok(v) => break Ok(v),
                Err(BootstrapError::Timeout { .. }) => {}
                Err(e) => break Err(Error::from(e)),
            }
            if let Ok(why) = store.get(&super::refused_key(pe), Duration::ZERO) {
                break Err(Error::Mismatch {
                    pe: pe as i32,
                    what: format!(
                        "cannot join this PE's job (PE {} of {}): {}",
                        job.my_pe,
                        job.n_pes,
                        String::from_utf8_lossy(&why)
                    ),
                });
            }
            if left.is_zero() {
                break Err(Error::Launch(format!(
                    "{}: PE {pe} did not join the job within {} s (shm_init_timeout); the store is {}",
                    job.call,
                    timeout.as_secs(),
                    job.meet.describe()
                )));
            }
        };
        match result {
            Ok(theirs) => {
                seen.push(pe);
                let theirs = String::from_utf8_lossy(&theirs).into_owned();
                if let Some((name, t, m)) = first_difference(&theirs, &mine) {
                    first_error.get_or_insert(Error::Mismatch {
                        pe: pe as i32,
                        what: format!(
                            "{} differs: PE {pe} was given {name}={t}, PE {} (this PE) {name}={m}",
                            name, job.my_pe
                        ),
                    });
                }
            }
            Err(e) => {
                first_error.get_or_insert(e);
                // A PE that cannot join ends the check: the others' descriptions are moot.
                break;
            }
        }
    }
    (seen, first_error.map_or(Ok(()), Err))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(pe: u32, n: u32, size: usize) -> Job {
        Job {
            call: "shmem_init_attr",
            my_pe: pe,
            n_pes: n,
            heap_size: size,
            meet: Meet::Address("tcp://127.0.0.1:9".into()),
        }
    }

    #[test]
    fn differences_are_named() {
        let a = encode(&job(0, 2, 1024));
        assert_eq!(first_difference(&a, &a), None);
        let b = encode(&job(1, 2, 2048));
        assert_eq!(
            first_difference(&b, &a),
            Some(("local_mem_size", "2048", "1024"))
        );
        let c = encode(&job(1, 3, 1024));
        assert_eq!(first_difference(&c, &a), Some(("n_pes", "3", "2")));
        let mut d = job(1, 2, 1024);
        d.meet = Meet::Address("tcp://127.0.0.1:10".into());
        assert_eq!(
            first_difference(&encode(&d), &a),
            Some(("store", "tcp://127.0.0.1:10", "tcp://127.0.0.1:9"))
        );
    }

    #[test]
    fn rendezvous_names_follow_the_meeting_point() {
        let j = job(0, 2, 1);
        let plan = match launch(&j).unwrap() {
            Launch::NodeLocal(p) => p,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            (plan.tag, plan.job_id.as_str()),
            ("attr", "tcp://127.0.0.1:9")
        );
        assert!(matches!(launch(&job(0, 1, 1)).unwrap(), Launch::Alone));
    }
}
