//! A group's collectives, through the store (each member's contribution is one value of it:
//! small data).
//!
//! Rounds are numbered across the group. Round `k`'s keys are under `c/<k>/`: `who`, its
//! members, written once (compare-and-swap from absent) by its first caller from the group's
//! members at that moment; `d/<rank>`, each member's contribution. `c/head` is one past the
//! highest round begun. A member takes part in the rounds in order, from the round after its
//! last one, or, when it has just joined, from `head` as it read it before joining: a round
//! whose `who` does not name it began before it joined and is skipped. Whoever begins round
//! `k` raises `head` and removes round `k - 2`'s keys: every member of round `k - 1` finished
//! round `k - 2` before it took part in `k - 1`, and round `k` begins only once one of them
//! has finished `k - 1`. So when `head` is at least `k + 2`, round `k` may have been removed
//! already: a member that finds its `who` gone skips it (it began before the member joined,
//! or the member would have been waited for).

use std::time::{Duration, Instant};

use shmem_store::{BootstrapError, Client};

use super::{lock, Group, GroupError, Waited};

/// What a collective gathered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gathered {
    /// The round's number in the group.
    pub round: u64,
    /// Each member's contribution, by rank (empty ones for a barrier).
    pub data: Vec<(u32, Vec<u8>)>,
    /// Ranks of the round that went down or left before they took part: not waited for.
    pub gone: Vec<u32>,
}

fn head_key(prefix: &str) -> String {
    format!("{prefix}c/head")
}

fn round_prefix(prefix: &str, round: u64) -> String {
    format!("{prefix}c/{round}/")
}

fn counter(v: &[u8]) -> u64 {
    <[u8; 8]>::try_from(v).map_or(0, u64::from_le_bytes)
}

/// One past the highest round the group has begun (0: none).
pub(super) fn head(client: &Client, prefix: &str) -> Result<u64, BootstrapError> {
    match client.watch(&head_key(prefix), None, Duration::ZERO) {
        Ok(Some(v)) => Ok(counter(&v)),
        Ok(None) | Err(BootstrapError::Timeout { .. }) => Ok(0),
        Err(e) => Err(e),
    }
}

/// Raises `head` to `to` unless it is there already.
fn raise_head(client: &Client, prefix: &str, to: u64) -> Result<(), BootstrapError> {
    let key = head_key(prefix);
    let mut expected: Option<Vec<u8>> = None;
    loop {
        let (swapped, current) = client.cas(&key, expected.as_deref(), &to.to_le_bytes())?;
        match current {
            _ if swapped => return Ok(()),
            Some(c) if counter(&c) >= to => return Ok(()),
            other => expected = other,
        }
    }
}

/// A round's members as one value: per member, its rank and its id's length (4 bytes each,
/// little-endian), then the id.
fn encode_members(members: &[(u32, String)]) -> Vec<u8> {
    let mut v = Vec::new();
    for (rank, id) in members {
        v.extend_from_slice(&rank.to_le_bytes());
        v.extend_from_slice(&(id.len() as u32).to_le_bytes());
        v.extend_from_slice(id.as_bytes());
    }
    v
}

fn decode_members(mut v: &[u8]) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    while v.len() >= 8 {
        let rank = u32::from_le_bytes(v[..4].try_into().expect("4 bytes"));
        let n = u32::from_le_bytes(v[4..8].try_into().expect("4 bytes")) as usize;
        let Some(id) = v.get(8..8 + n) else { break };
        out.push((rank, String::from_utf8_lossy(id).into_owned()));
        v = &v[8 + n..];
    }
    out
}

impl Group {
    /// Waits until every member of the round has called it, or went down or left (named in
    /// [`Gathered::gone`]); bounded by [`super::GroupOptions::timeout`], at which it fails
    /// naming the members alive that did not call it. See the module's documentation for
    /// which members a round holds.
    pub fn barrier(&self) -> Result<Gathered, GroupError> {
        self.collective("barrier", &[])
    }

    /// Gathers `data` from every member of the round, by rank; as [`Group::barrier`]
    /// otherwise. Contributions may differ in length; each is at most a store value.
    pub fn allgather(&self, data: &[u8]) -> Result<Gathered, GroupError> {
        self.collective("allgather", data)
    }

    fn collective(&self, op: &'static str, data: &[u8]) -> Result<Gathered, GroupError> {
        let inner = &self.inner;
        let store = |e| inner.store_err(op)(e);
        let client = &inner.client;
        let prefix = &inner.prefix;
        let deadline = Instant::now() + inner.timeout;
        let mut round = lock(&inner.round);
        let me = (inner.rank, inner.id.clone());
        let (k, members) = loop {
            let k = *round;
            let who = format!("{}who", round_prefix(prefix, k));
            let members = if head(client, prefix).map_err(store)? >= k + 2 {
                match client.watch(&who, None, Duration::ZERO) {
                    Ok(Some(v)) => decode_members(&v),
                    Ok(None) | Err(BootstrapError::Timeout { .. }) => Vec::new(),
                    Err(e) => return Err(store(e)),
                }
            } else {
                let now = client
                    .group_watch(&inner.name, u64::MAX, Duration::ZERO)
                    .map_err(store)?
                    .members;
                let (swapped, current) = client
                    .cas(&who, None, &encode_members(&now))
                    .map_err(store)?;
                if swapped {
                    raise_head(client, prefix, k + 1).map_err(store)?;
                    if k >= 2 {
                        client
                            .delete_prefix(&round_prefix(prefix, k - 2))
                            .map_err(store)?;
                    }
                    now
                } else {
                    decode_members(&current.unwrap_or_default())
                }
            };
            *round = k + 1;
            if members.contains(&me) {
                break (k, members);
            }
        };
        let data_key = |r: u32| format!("{}d/{r}", round_prefix(prefix, k));
        client.set(&data_key(me.0), data).map_err(store)?;
        let mut gathered = Gathered {
            round: k,
            data: Vec::with_capacity(members.len()),
            gone: Vec::new(),
        };
        let mut missing = Vec::new();
        for (r, id) in &members {
            let waited = inner.wait_key(op, &data_key(*r), None, deadline, || {
                inner.gone_error(op, *r, id).is_some()
            })?;
            match waited {
                Waited::Now(Some(v)) => gathered.data.push((*r, v)),
                Waited::GaveUp => gathered.gone.push(*r),
                Waited::Now(None) | Waited::Deadline => missing.push(*r),
            }
        }
        if missing.is_empty() {
            Ok(gathered)
        } else {
            Err(GroupError::Timeout {
                op: format!("{op} (round {k})"),
                group: inner.name.clone(),
                after: inner.timeout,
                missing,
                down: gathered.gone,
            })
        }
    }
}
