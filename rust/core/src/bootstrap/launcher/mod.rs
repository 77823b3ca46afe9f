//! Who started this process and what it says about the job: the launchers' environments
//! ([`launch`]), their own key-value services (`kvs`: PMI-1 in `pmi1`, PMIx in `pmix`), and
//! jobs described by explicit attributes ([`attrs`]) or by a unique id ([`uniqueid`]).
//!
//! Must never reach the job's store itself: it only says where the store is and how to trust
//! it; `node` and `store` do the meeting.

pub(crate) mod attrs;
pub(crate) mod kvs;
pub(crate) mod launch;
mod pmi1;
mod pmix;
pub mod uniqueid;
pub use super::error::NotLoaded;
