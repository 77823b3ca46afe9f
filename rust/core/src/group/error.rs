//! The group API's errors: each names the call, the group and, where one is involved, the
//! member (rank and id) or the registration.

use std::time::Duration;

use shmem_store::BootstrapError;

use crate::transport::TransportError;

/// Every way a call of [`super::Group`] can fail.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GroupError {
    /// The store refused or failed a request of the call (the group is full, its size
    /// differs, the store cannot be reached, a wait on it timed out).
    #[error("group '{group}': {op}: {source}")]
    Store {
        /// The call.
        op: &'static str,
        /// The group.
        group: String,
        /// The store's error.
        source: Box<BootstrapError>,
    },
    /// The dynamic transport failed the call (no worker could be made, a peer's key is
    /// refused, an operation timed out).
    #[error("group '{group}': {op} (rank {rank}): {source}")]
    Transport {
        /// The call.
        op: &'static str,
        /// The group.
        group: String,
        /// The member the call was about (this member's own rank for local calls).
        rank: u32,
        /// The transport's error.
        source: Box<TransportError>,
    },
    /// The member the call addresses left the group or was reported down (its connection
    /// ended, or it was silent past its bound): its endpoint is torn down and nothing more
    /// reaches it.
    #[error("group '{group}': {op} to rank {rank} (member '{member}'): the member {why}")]
    Gone {
        /// The call.
        op: &'static str,
        /// The group.
        group: String,
        /// Its rank.
        rank: u32,
        /// Its id.
        member: String,
        /// What became of it (`left the group`, `is down: ...`).
        why: String,
    },
    /// No member holds the rank the call addresses.
    #[error("group '{group}': {op}: no member holds rank {rank}")]
    NoMember {
        /// The call.
        op: &'static str,
        /// The group.
        group: String,
        /// The rank.
        rank: u32,
    },
    /// The member addressed has no registration of that name (it never registered it, or
    /// withdrew it with [`super::Group::unregister`]).
    #[error("group '{group}': {op}: rank {rank} (member '{member}') has no registration '{name}'")]
    NoRegistration {
        /// The call.
        op: &'static str,
        /// The group.
        group: String,
        /// The member's rank.
        rank: u32,
        /// The member's id.
        member: String,
        /// The registration's name.
        name: String,
    },
    /// A call was given an argument it refuses.
    #[error("group '{group}': {op}: invalid argument {arg}={value:?}: {why}")]
    InvalidArgument {
        /// The call.
        op: &'static str,
        /// The group.
        group: String,
        /// The argument.
        arg: &'static str,
        /// Its value.
        value: String,
        /// Why it was refused.
        why: String,
    },
    /// Members still alive did not do their part of the call within its bound (a collective's
    /// round, the confirmation of a withdrawn registration).
    #[error(
        "group '{group}': {op} did not complete within {} s: members {missing:?} (ranks) did \
         not take part{}",
        after.as_secs_f64(),
        if down.is_empty() { String::new() } else { format!("; {down:?} went down or left meanwhile") }
    )]
    Timeout {
        /// The call, with its round where it has one.
        op: String,
        /// The group.
        group: String,
        /// The bound.
        after: Duration,
        /// Ranks alive that did not take part.
        missing: Vec<u32>,
        /// Ranks that went down or left during the call.
        down: Vec<u32>,
    },
}

impl GroupError {
    /// Whether the store refused a join because a member with the same id holds a rank of the
    /// group already (a live one, or one whose end the store has not seen yet).
    pub fn member_id_held(&self) -> bool {
        matches!(self, GroupError::Store { source, .. }
            if matches!(**source, BootstrapError::MemberIdHeld { .. }))
    }
}
