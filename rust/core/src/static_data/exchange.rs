//! The job-wide exchange at init: every PE announces whether it moved its static data, how much
//! and which executable it runs; all decide from the same allgathered list whether static
//! targets are symmetric in this job (only if every PE moved its data and all run the same
//! executable), and if so hand their memfds to each other and map the peers' ranges.
//!
//! The peers' imports go through [`crate::device::host`]; this module never touches this
//! process's own range, which [`super::remap`] moved in place.

use super::{remap, NotMoved, PREPARED};
use crate::bootstrap::Bootstrap;
use crate::device::host::Host;
use crate::device::{self, Device, Placement};
use crate::error::{Error, Result};
use std::time::Duration;

/// Why, when the library constructor never ran (libshmem's core linked some other way).
const NOT_PREPARED: &str = "libshmem's constructor did not run, so global and static variables \
                            are not symmetric";
/// Why, in a process forked from a PE (its copy of the data is private since the fork).
const FORKED_CHILD: &str = "this process was forked from a PE, so its global and static \
                            variables are private to it";

/// What one PE tells the others at init.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Announce {
    /// `Err(reason)` when this PE did not move its static data.
    moved: std::result::Result<(), NotMoved>,
    /// Bytes of symmetric static data (0 when unknown).
    len: usize,
    /// Which executable this is: "build-id <hex>", or path, size and segment when it has none.
    identity: String,
}

impl Announce {
    fn encode(&self) -> Vec<u8> {
        let identity = self.identity.replace('\n', "?");
        match &self.moved {
            Ok(()) => format!("moved\n{}\n{identity}", self.len),
            Err(NotMoved(reason)) => format!("off\n{}\n{identity}\n{reason}", self.len),
        }
        .into_bytes()
    }

    fn decode(bytes: &[u8]) -> Option<Announce> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut parts = text.splitn(4, '\n');
        let state = parts.next()?;
        let len = parts.next()?.parse().ok()?;
        let identity = parts.next()?.to_string();
        let moved = match (state, parts.next()) {
            ("moved", None) => Ok(()),
            ("off", Some(reason)) => Err(NotMoved::from(reason)),
            _ => return None,
        };
        Some(Announce {
            moved,
            len,
            identity,
        })
    }
}

/// Why static data is not symmetric in this job.
#[derive(Debug, PartialEq, Eq)]
enum Off {
    /// Some PE did not move its static data (the reason names it when it is not this PE).
    Skipped(String),
    /// The PEs run different executables, or their static data differs in size.
    Different(String),
}

/// The job-wide verdict from every PE's announcement. Every PE computes it from the same
/// allgathered list, so all reach the same on/off answer; the reason is told from this PE's side.
fn verdict(all: &[Announce], my_pe: usize) -> std::result::Result<(), Off> {
    let mine = &all[my_pe];
    if let Err(NotMoved(reason)) = &mine.moved {
        return Err(Off::Skipped(reason.clone()));
    }
    if let Some((pe, reason)) = all
        .iter()
        .enumerate()
        .find_map(|(pe, a)| a.moved.as_ref().err().map(|r| (pe, r)))
    {
        return Err(Off::Skipped(format!("on PE {pe}, {reason}")));
    }
    for (pe, other) in all.iter().enumerate() {
        if other.identity != mine.identity {
            return Err(Off::Different(format!(
                "PEs run different executables: PE {pe} has {}, this PE {}",
                other.identity, mine.identity
            )));
        }
        if other.len != mine.len {
            return Err(Off::Different(format!(
                "PEs disagree on the size of their global and static variables: PE {pe} has \
                 {} bytes, this PE {}",
                other.len, mine.len
            )));
        }
    }
    Ok(())
}

/// Global and static variables of the job as this PE sees them.
#[derive(Debug)]
pub struct StaticData {
    /// This process's symmetric static range: start (0 when the executable has none).
    pub base: usize,
    /// Its length in bytes.
    pub size: usize,
    /// Where every PE's range is mapped here, indexed by PE; empty when static data is not
    /// symmetric in this job.
    pub bases: Vec<usize>,
    /// Why static data is not symmetric ("" when it is).
    pub off_reason: String,
    /// The peers' ranges, unmapped on drop.
    _maps: Vec<device::Segment>,
}

/// Exchanges static-data files with every PE (collective, right after the heap exchange) and
/// maps theirs; decides for the whole job whether static targets are symmetric.
pub fn exchange(bootstrap: &Bootstrap, timeout: Duration) -> Result<StaticData> {
    let (my_pe, n_pes) = (bootstrap.rank(), bootstrap.size());
    let prepared = PREPARED.get();
    for note in prepared.iter().flat_map(|p| &p.notes) {
        tracing::debug!("static data: {note}");
    }
    let range = prepared.and_then(|p| p.range);
    let (base, size) = range.map_or((0, 0), |r| (r.start, r.len));
    let moved = match prepared.map(|p| &p.moved) {
        None => Err(NotMoved::from(NOT_PREPARED)),
        Some(Err(reason)) => Err(reason.clone()),
        Some(Ok(_)) if remap::in_forked_child() => Err(NotMoved::from(FORKED_CHILD)),
        Some(Ok(fd)) => Ok(fd),
    };
    let mine = Announce {
        moved: moved.as_ref().map(|_| ()).map_err(NotMoved::clone),
        len: size,
        identity: prepared.map_or_else(|| "unknown executable".into(), |p| p.identity.clone()),
    };
    let all = (bootstrap.allgather(&mine.encode(), timeout))
        .map_err(|e| e.unshared("how it lays out global and static variables"))?
        .iter()
        .enumerate()
        .map(|(pe, bytes)| {
            Announce::decode(bytes).ok_or_else(|| Error::Mismatch {
                pe: pe as i32,
                what: "sent a static-data record this PE cannot read (a different libshmem \
                       version?)"
                    .into(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let off = |off_reason: String| StaticData {
        base,
        size,
        bases: Vec::new(),
        off_reason,
        _maps: Vec::new(),
    };
    match (verdict(&all, my_pe), moved) {
        (Err(Off::Different(reason)), _) => {
            if my_pe == 0 {
                tracing::warn!(
                    "{reason}; global and static variables are not symmetric in this job"
                );
            }
            Ok(off(reason))
        }
        (Err(Off::Skipped(reason)), _) => {
            tracing::debug!("global and static variables are not symmetric: {reason}");
            Ok(off(reason))
        }
        // The verdict is on only when this PE moved its data, so `moved` is Ok here.
        (Ok(()), Err(NotMoved(reason))) => Ok(off(reason)),
        (Ok(()), Ok(fd)) => {
            let mut bases = vec![0; n_pes];
            bases[my_pe] = base;
            let mut maps = Vec::new();
            {
                let exports = device::exchange(
                    bootstrap,
                    "data/",
                    Host.export_fd(fd)?,
                    "its global and static variables",
                    timeout,
                )?;
                // Other nodes' PEs keep base 0: only a transport reaches their static data.
                let node_peers = (exports.iter().enumerate())
                    .filter_map(|(pe, e)| e.as_ref().map(|e| (pe, e)))
                    .filter(|(pe, _)| *pe != my_pe);
                for (pe, theirs) in node_peers {
                    let len = Host.exported_len(theirs)?;
                    if len != size {
                        return Err(Error::Mismatch {
                            pe: pe as i32,
                            what: format!(
                                "its static-data file is {len} bytes, this PE's range {size}"
                            ),
                        });
                    }
                    let segment = Host.import(theirs, Placement::Anywhere)?;
                    bases[pe] = segment.addr();
                    maps.push(segment);
                }
            }
            tracing::debug!("global and static variables are symmetric: {size} bytes at {base:#x}");
            Ok(StaticData {
                base,
                size,
                bases,
                off_reason: String::new(),
                _maps: maps,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::static_data::OFF_BY_ENV;

    fn announce(moved: std::result::Result<(), &str>, len: usize, id: &str) -> Announce {
        Announce {
            moved: moved.map_err(NotMoved::from),
            len,
            identity: id.into(),
        }
    }

    #[test]
    fn announce_round_trips() {
        for a in [
            announce(Ok(()), 4096, "build-id ab"),
            announce(
                Err("a reason\nwith lines"),
                0,
                "no build-id, executable /x\ny",
            ),
        ] {
            let back = Announce::decode(&a.encode()).unwrap();
            assert_eq!(back.moved, a.moved);
            assert_eq!(back.len, a.len);
        }
        assert_eq!(Announce::decode(b"moved\nlots\nid"), None);
        assert_eq!(Announce::decode(b"maybe\n1\nid"), None);
    }

    #[test]
    fn verdict_is_on_when_every_pe_moved_the_same_executable() {
        let all = vec![announce(Ok(()), 8192, "build-id ab"); 4];
        for pe in 0..4 {
            assert_eq!(verdict(&all, pe), Ok(()));
        }
    }

    #[test]
    fn verdict_is_off_everywhere_when_one_pe_skipped() {
        let mut all = vec![announce(Ok(()), 8192, "build-id ab"); 4];
        all[2] = announce(Err(OFF_BY_ENV), 8192, "build-id ab");
        for pe in [0, 1, 3] {
            assert_eq!(
                verdict(&all, pe),
                Err(Off::Skipped(format!("on PE 2, {OFF_BY_ENV}")))
            );
        }
        assert_eq!(verdict(&all, 2), Err(Off::Skipped(OFF_BY_ENV.into())));
    }

    #[test]
    fn verdict_is_off_everywhere_for_different_executables() {
        let mut all = vec![announce(Ok(()), 8192, "build-id ab"); 4];
        all[3] = announce(Ok(()), 8192, "build-id cd");
        let Err(Off::Different(msg)) = verdict(&all, 0) else {
            panic!("not off")
        };
        assert_eq!(
            msg,
            "PEs run different executables: PE 3 has build-id cd, this PE build-id ab"
        );
        let Err(Off::Different(msg)) = verdict(&all, 3) else {
            panic!("not off")
        };
        assert!(
            msg.contains("PE 0 has build-id ab, this PE build-id cd"),
            "{msg}"
        );
        for pe in [1, 2] {
            assert!(matches!(verdict(&all, pe), Err(Off::Different(_))));
        }
        all[3] = announce(Ok(()), 4096, "build-id ab");
        assert!(matches!(verdict(&all, 1), Err(Off::Different(m)) if m.contains("4096 bytes")));
    }
}
