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
//! Rendezvous: PE 0 serves the job's store over TCP and the other PEs dial it, retrying until
//! the init timeout (`node`'s TCP meeting). With `ip_port`, PE 0 listens there and trust is the
//! user's: their certificates (`shmem_set_conf_store_tls`), or no TLS by choice, else start-up
//! fails naming `SHMEM_TLS_DISABLE`. With a unique id, PE 0 is the process that made the id and
//! serves on the socket `shmem_get_uniqueid` bound; PEs pin the store's certificate by the id's
//! fingerprint and prove membership with its secret ([`Trust::Pinned`]). Heap descriptors still
//! travel node-locally (`rendezvous`), so every PE of the job is on PE 0's node today.

use std::time::{Duration, Instant};

use crate::bootstrap::launcher::launch::{self, Launch, NodeLocal};
use crate::bootstrap::launcher::uniqueid::{self, UniqueId};
use crate::bootstrap::store::addr::StoreAddr;
use crate::bootstrap::store::tls::{self, Pinned, Trust};
use crate::bootstrap::store::{BootstrapError, Client};
use crate::error::{Error, LaunchError, Result};

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
            Meet::UniqueId(id) => format!("unique id {} (store {})", id.tag(), id.addr),
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

/// How this PE joins its job, and what it trusts when that is decided here: the launcher's
/// store under `shmemrun` (the attributes must then name the same PE and size), else the job's
/// own store over TCP. `tls_disable` is `SHMEM_TLS_DISABLE`.
pub(crate) fn launch(job: &Job, tls_disable: bool) -> Result<(Launch, Option<Trust>)> {
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
        return Ok((run, None));
    }
    if job.n_pes == 1 {
        return Ok((Launch::Alone, None));
    }
    let (launcher, tag, job_id, store, trust) = match &job.meet {
        Meet::Address(a) => {
            let addr = StoreAddr::parse(a, None).map_err(|_| Error::InvalidArgument {
                call: job.call,
                arg: "ip_port",
                value: a.clone(),
                reason: "expected tcp://IP:PORT or tcp6://[IP]:PORT",
            })?;
            if addr.ports.0 == 0 {
                return Err(Error::InvalidArgument {
                    call: job.call,
                    arg: "ip_port",
                    value: a.clone(),
                    reason: "PE 0 must listen at a port the other PEs know, not port 0",
                });
            }
            // Trust as the user set it up, decided where the store is opened.
            ("shmem_init_attr", "attr", a.clone(), addr, None)
        }
        Meet::UniqueId(id) => {
            let trust = pinned(job.call, job.my_pe, id, tls_disable)?;
            ("unique id", "uid", id.tag(), id.store_addr(), Some(trust))
        }
    };
    Ok((
        Launch::NodeLocal(NodeLocal {
            launcher,
            tag,
            my_pe: job.my_pe,
            n_pes: job.n_pes,
            job_id,
            kvs: None,
            store: Some(store),
        }),
        trust,
    ))
}

/// What PE `my_pe` of a unique id's job trusts (`call` started it: for messages). PE 0 must be
/// the process that made the id: it alone holds the listening socket and the certificate the id
/// pins.
pub(crate) fn pinned(call: &str, my_pe: u32, id: &UniqueId, tls_disable: bool) -> Result<Trust> {
    let server = if my_pe == 0 {
        let made = uniqueid::served_here(id).ok_or_else(|| {
            Error::Launch(LaunchError::UniqueIdOwner {
                call: call.to_string(),
                pe: my_pe,
                tag: id.tag(),
                store: id.addr,
            })
        })?;
        Some(made.map_err(|e| Error::os("the unique id's listening socket", e))?)
    } else if uniqueid::served_here(id).is_some() {
        // Only this process could serve the id's store, and as PE 0 it would.
        return Err(Error::Launch(LaunchError::UniqueIdOwner {
            call: call.to_string(),
            pe: my_pe,
            tag: id.tag(),
            store: id.addr,
        }));
    } else {
        None
    };
    let tls = !tls::off_by_choice(tls_disable, &id.store_addr(), my_pe == 0);
    Ok(Trust::Pinned(Pinned {
        fingerprint: id.fingerprint,
        secret: id.secret,
        tls,
        server,
    }))
}

/// A join refused for this PE's size, said the way the mismatch check says it: this PE's size
/// does not match the job PE 0 serves. Other failures to join pass unchanged.
pub(crate) fn refused_join(job: &Job, e: Error) -> Error {
    match e {
        Error::Bootstrap(e @ BootstrapError::SizeMismatch { .. }) => Error::Mismatch {
            pe: job.my_pe as i32,
            what: format!(
                "was given n_pes={} by {}, and PE 0's store does not take it ({e})",
                job.n_pes, job.call
            ),
        },
        e => e,
    }
}

/// Prefix of the store keys of the PEs' descriptions of their job (the PE number follows).
const JOB_PREFIX: &str = "shmem/attrs/";

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
    let mine = encode(job);
    let deadline = Instant::now() + timeout;
    let got = crate::bootstrap::gather::gather(
        store,
        JOB_PREFIX,
        "its job attributes",
        mine.as_bytes(),
        deadline,
    );
    let differs = (got.values.iter().enumerate()).find_map(|(pe, theirs)| {
        let theirs = String::from_utf8_lossy(theirs.as_deref()?).into_owned();
        let (name, t, m) = first_difference(&theirs, &mine)?;
        Some(Error::Mismatch {
            pe: pe as i32,
            what: format!(
                "{name} differs: PE {pe} was given {name}={t}, PE {} (this PE) {name}={m}",
                job.my_pe
            ),
        })
    });
    let seen = got.seen();
    let absent = got.error.map(|e| match e {
        Error::Bootstrap(BootstrapError::NotPublished { rank, .. }) => Error::Timeout {
            step: format!("{}: PE {rank} did not join the job", job.call),
            after: timeout,
            bound: "shm_init_timeout".into(),
            why: format!("; the store is {}", job.meet.describe()),
        },
        e => e,
    });
    // A difference among the PEs read comes first: a PE that could not be read is moot then.
    (seen, differs.or(absent).map_or(Ok(()), Err))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::bits::hex;

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
    fn attribute_jobs_meet_at_their_address() {
        let j = job(0, 2, 1);
        let (plan, trust) = match launch(&j, false).unwrap() {
            (Launch::NodeLocal(p), trust) => (p, trust),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            (plan.tag, plan.store.as_ref().map(|a| a.text.as_str())),
            ("attr", Some("tcp://127.0.0.1:9"))
        );
        assert!(trust.is_none());
        assert!(matches!(
            launch(&job(0, 1, 1), false).unwrap(),
            (Launch::Alone, None)
        ));
        let mut zero = job(1, 2, 1);
        zero.meet = Meet::Address("tcp://127.0.0.1:0".into());
        let e = launch(&zero, false).unwrap_err().to_string();
        assert!(
            e.contains("ip_port=tcp://127.0.0.1:0") && e.contains("port 0"),
            "{e}"
        );
    }

    #[test]
    fn unique_id_jobs_pin_the_store_and_pe0_must_be_the_maker() {
        let id = uniqueid::create(None).unwrap();
        let uid_job = |pe| Job {
            meet: Meet::UniqueId(id.clone()),
            ..job(pe, 2, 1)
        };
        let (plan, trust) = match launch(&uid_job(0), false).unwrap() {
            (Launch::NodeLocal(p), Some(t)) => (p, t),
            other => panic!("{other:?}"),
        };
        assert_eq!(plan.store, Some(id.store_addr()));
        assert!(!plan.job_id.contains(&hex(&id.secret)));
        let Trust::Pinned(p) = &trust else {
            panic!("{trust:?}")
        };
        assert!(p.tls && p.server.is_some() && p.fingerprint == id.fingerprint);
        // PE 1 of an id made elsewhere dials: no server part.
        let mut elsewhere = id.clone();
        elsewhere.secret[0] ^= 1;
        let pe1 = Job {
            meet: Meet::UniqueId(elsewhere),
            ..job(1, 2, 1)
        };
        match launch(&pe1, true).unwrap() {
            (_, Some(Trust::Pinned(p))) => assert!(p.server.is_none() && !p.tls),
            other => panic!("{other:?}"),
        }
        // The maker as PE 1: refused at once.
        let e = launch(&uid_job(1), false).unwrap_err().to_string();
        assert!(e.contains("must be PE 0") && e.contains("is PE 1"), "{e}");
        // PE 0 given an id another process made.
        let mut foreign = id.clone();
        foreign.secret[3] ^= 0x40;
        let e = launch(
            &Job {
                meet: Meet::UniqueId(foreign),
                ..job(0, 2, 1)
            },
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("PE 0 must be the process that called shmem_get_uniqueid"),
            "{e}"
        );
    }
}
